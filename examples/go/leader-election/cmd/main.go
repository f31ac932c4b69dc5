// An Ensemble operator meant to run as several replicas of one Deployment, on a controller-runtime manager with
// leader election: only the replica holding the Lease runs its controllers; the others wait to take over.
//
//	go run ./cmd --leader-elect=true    one replica acts at a time (the fix)
//	go run ./cmd --leader-elect=false   every replica acts (the bug, with two or more replicas)
//
// It reads its cluster from KUBECONFIG (or in-cluster config).
package main

import (
	"flag"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	academyv1 "settle.dev/examples/go/leader-election/api/v1"
	"settle.dev/examples/go/leader-election/internal/controller"
)

var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(academyv1.AddToScheme(scheme))
}

func main() {
	var enableLeaderElection bool
	var leaderElectionNamespace string
	var leaseDuration, renewDeadline, retryPeriod, slowReconcile time.Duration
	flag.BoolVar(&enableLeaderElection, "leader-elect", false, "elect a leader, so that one replica acts at a time")
	flag.StringVar(&leaderElectionNamespace, "leader-elect-namespace", "academy-lab", "the namespace of the leader election Lease")
	flag.DurationVar(&leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a lease holds without renewal")
	flag.DurationVar(&renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader tries to renew before giving up")
	flag.DurationVar(&retryPeriod, "leader-elect-retry-period", 2*time.Second, "how often to try to acquire or renew the lease")
	flag.DurationVar(&slowReconcile, "slow-reconcile", 0, "sleep this long after each child create")
	opts := zap.Options{Development: true}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	setupLog := ctrl.Log.WithName("setup")

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		LeaderElection:          enableLeaderElection,
		LeaderElectionID:        "ensemble.academy.settle.dev",
		LeaderElectionNamespace: leaderElectionNamespace,
		LeaseDuration:           &leaseDuration,
		RenewDeadline:           &renewDeadline,
		RetryPeriod:             &retryPeriod,
		// The manager stops right after it loses the lease; releasing it on a clean stop lets the next leader
		// start without waiting out the lease.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		setupLog.Error(err, "unable to create the manager")
		os.Exit(1)
	}
	reconciler := &controller.EnsembleReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), SlowReconcile: slowReconcile}
	if err := reconciler.SetupWithManager(mgr); err != nil {
		setupLog.Error(err, "unable to create the controller")
		os.Exit(1)
	}
	setupLog.Info("starting the manager", "leaderElection", enableLeaderElection, "replica", os.Getenv("POD_NAME"))
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "the manager stopped")
		os.Exit(1)
	}
}
