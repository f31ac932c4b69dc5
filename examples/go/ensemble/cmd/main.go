// The Ensemble operator on controller-runtime: a manager, one controller, the kubebuilder layout.
//
//	go run ./cmd                          level-triggered: Reconcile creates whichever children are missing (the fix)
//	go run ./cmd --delta-mode             the update handler creates new - old children (the bug)
//	go run ./cmd --slow-reconcile=300ms   sleep after each child create
//
// It reads its cluster from KUBECONFIG (or in-cluster config), as any controller-runtime manager does.
package main

import (
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	academyv1 "settle.dev/examples/go/ensemble/api/v1"
	"settle.dev/examples/go/ensemble/internal/controller"
)

var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(academyv1.AddToScheme(scheme))
}

func main() {
	var deltaMode bool
	var slowReconcile = flag.Duration("slow-reconcile", 0, "sleep this long after each child create")
	flag.BoolVar(&deltaMode, "delta-mode", false, "create new - old children in the update handler (the bug) instead of reconciling")
	opts := zap.Options{Development: true}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	setupLog := ctrl.Log.WithName("setup")

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme: scheme,
		// No metrics or health endpoints: a drill runs several operators side by side, and none of them needs a port.
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		setupLog.Error(err, "unable to create the manager")
		os.Exit(1)
	}
	reconciler := &controller.EnsembleReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), SlowReconcile: *slowReconcile}
	if deltaMode {
		err = (&controller.DeltaHandler{Reconciler: reconciler}).SetupWithManager(mgr)
	} else {
		err = reconciler.SetupWithManager(mgr)
	}
	if err != nil {
		setupLog.Error(err, "unable to create the controller")
		os.Exit(1)
	}
	setupLog.Info("starting the manager", "deltaMode", deltaMode, "slowReconcile", slowReconcile.String())
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "the manager stopped")
		os.Exit(1)
	}
}
