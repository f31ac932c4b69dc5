//go:build settlebench

// envtest's Start() to Stop(), timed for settle's bench (`npm run bench -- envtest`, which builds with the tag
// settlebench). By default on the control plane KUBEBUILDER_ASSETS names. With SETTLE_BENCH_SERVE set to a command
// (e.g. "node bin/settle.js"), the same steps on `settle serve` started directly: each round starts
// `<command> serve --port 0 --kubeconfig-out FILE`, runs envtest against it as an existing cluster (the CRDs installed
// and waited for as before), and stops it with SIGTERM. Each round prints one line "startstop <nanoseconds>".
package controller

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

func TestEnvtestStartStop(t *testing.T) {
	rounds, err := strconv.Atoi(os.Getenv("SETTLE_BENCH_ROUNDS"))
	if err != nil || rounds < 1 {
		rounds = 3
	}
	serve := strings.Fields(os.Getenv("SETTLE_BENCH_SERVE"))
	for round := 0; round < rounds; round++ {
		env := &envtest.Environment{
			CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
			ErrorIfCRDPathMissing: true,
		}
		start := time.Now()
		var server *exec.Cmd
		if len(serve) > 0 {
			kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
			server = exec.Command(serve[0], append(serve[1:], "serve", "--port", "0", "--kubeconfig-out", kubeconfig)...)
			stdout, err := server.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := server.Start(); err != nil {
				t.Fatalf("round %d: starting settle serve: %v", round, err)
			}
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil || !strings.Contains(line, "listening on") {
				t.Fatalf("round %d: settle serve said %q (%v)", round, line, err)
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			existing := true
			env.UseExistingCluster = &existing
			env.Config = cfg
		}
		if _, err := env.Start(); err != nil {
			t.Fatalf("round %d: Start: %v", round, err)
		}
		if err := env.Stop(); err != nil {
			t.Fatalf("round %d: Stop: %v", round, err)
		}
		if server != nil {
			_ = server.Process.Signal(syscall.SIGTERM)
			_ = server.Wait()
		}
		fmt.Printf("startstop %d\n", time.Since(start).Nanoseconds())
	}
}
