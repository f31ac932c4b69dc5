// The Ensemble operator on client-go alone, in the shape of Kubernetes' sample-controller: shared informer
// factories, listers, a rate-limited workqueue and workers running processNextWorkItem. An Ensemble (a custom
// resource, read through the dynamic client) owns spec.voices child ConfigMaps.
//
//	go run .                   a failed sync goes back on the queue with backoff (the fix)
//	go run . --forget-failed   a failed sync is logged and its key forgotten (the bug: it shows only when a
//	                           request fails, e.g. under settle drill's fail-500)
//
// It reads its cluster from KUBECONFIG.
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "path to a kubeconfig")
	namespace := flag.String("namespace", "academy-lab", "the namespace whose Ensembles this controller keeps")
	resync := flag.Duration("resync", 0, "the informers' resync period (0: none)")
	forgetFailed := flag.Bool("forget-failed", false, "log a failed sync and forget its key instead of requeueing it (the bug)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := klog.FromContext(ctx)

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		logger.Error(err, "building the client config")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	kubeClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		logger.Error(err, "building the kubernetes clientset")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	dynamicClient, err := dynamic.NewForConfig(cfg)
	if err != nil {
		logger.Error(err, "building the dynamic client")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}

	kubeInformerFactory := kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, *resync, kubeinformers.WithNamespace(*namespace))
	ensembleInformerFactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dynamicClient, *resync, *namespace, nil)

	controller := NewController(ctx, kubeClient, dynamicClient,
		kubeInformerFactory.Core().V1().ConfigMaps(),
		ensembleInformerFactory.ForResource(ensembleResource),
		*forgetFailed)

	// Start runs each informer in its own goroutine; the controller waits for their caches before its workers run.
	kubeInformerFactory.Start(ctx.Done())
	ensembleInformerFactory.Start(ctx.Done())

	if err := controller.Run(ctx, 1); err != nil {
		logger.Error(err, "running the controller")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
}
