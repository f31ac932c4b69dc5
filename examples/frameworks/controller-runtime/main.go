// The Ensemble operator of examples/frameworks on controller-runtime, as a probe of what the library does after a
// failed Reconcile, a lost response or a closed watch. The Ensemble is read as unstructured (no Go types); each
// Ensemble's child ConfigMaps (alpha-voice-0 .. alpha-voice-N-1) follow spec.voices.
//
//	go run .              level: Reconcile creates whichever children are missing; on an error it asks for itself
//	                      again after 500 ms (its own retry, as the Node.js stacks' level handlers)
//	go run . --no-retry   level, returning the error: what happens next is controller-runtime's doing
//	go run . --delta      the update handler creates new - old children; nothing else does any work
//
// It reads its cluster from KUBECONFIG.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

var ensembleGVK = schema.GroupVersionKind{Group: "academy.settle.dev", Version: "v1", Kind: "Ensemble"}

const retryAfter = 500 * time.Millisecond

func newEnsemble() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ensembleGVK)
	return u
}

type reconciler struct {
	client.Client
	noRetry bool
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	err := r.sync(ctx, req)
	if err == nil || r.noRetry {
		return ctrl.Result{}, err
	}
	logf.FromContext(ctx).Error(err, "reconcile failed; trying again", "after", retryAfter)
	return ctrl.Result{RequeueAfter: retryAfter}, nil
}

func (r *reconciler) sync(ctx context.Context, req ctrl.Request) error {
	ensemble := newEnsemble()
	if err := r.Get(ctx, req.NamespacedName, ensemble); err != nil {
		return client.IgnoreNotFound(err)
	}
	voices, _, _ := unstructured.NestedInt64(ensemble.Object, "spec", "voices")
	for index := int64(0); index < voices; index++ {
		if err := r.createChild(ctx, ensemble, index); err != nil {
			return err
		}
	}
	return r.setStatus(ctx, ensemble, voices)
}

// createChild creates one child unless it exists (its name is its identity), owned by the Ensemble.
func (r *reconciler) createChild(ctx context.Context, ensemble *unstructured.Unstructured, index int64) error {
	name := fmt.Sprintf("%s-voice-%d", ensemble.GetName(), index)
	var existing corev1.ConfigMap
	err := r.Get(ctx, client.ObjectKey{Namespace: ensemble.GetNamespace(), Name: name}, &existing)
	if err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	child := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ensemble.GetNamespace(),
			Labels:          map[string]string{"ensemble": ensemble.GetName()},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ensemble, ensembleGVK)},
		},
		Data: map[string]string{"voice": fmt.Sprint(index)},
	}
	if err := r.Create(ctx, child); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// setStatus writes status.readyVoices and observedGeneration unless they say so already (so the writes of a run do
// not depend on how the events of its own creates were batched).
func (r *reconciler) setStatus(ctx context.Context, ensemble *unstructured.Unstructured, ready int64) error {
	current, _, _ := unstructured.NestedInt64(ensemble.Object, "status", "readyVoices")
	observed, _, _ := unstructured.NestedInt64(ensemble.Object, "status", "observedGeneration")
	if current == ready && observed == ensemble.GetGeneration() {
		return nil
	}
	patch := client.MergeFrom(ensemble.DeepCopy())
	if err := unstructured.SetNestedField(ensemble.Object, ready, "status", "readyVoices"); err != nil {
		return err
	}
	if err := unstructured.SetNestedField(ensemble.Object, ensemble.GetGeneration(), "status", "observedGeneration"); err != nil {
		return err
	}
	return r.Status().Patch(ctx, ensemble, patch)
}

// deltaUpdate is the bug: the children to create are new - old, known only to this event.
func (r *reconciler) deltaUpdate(ctx context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	before, _, _ := unstructured.NestedInt64(e.ObjectOld.(*unstructured.Unstructured).Object, "spec", "voices")
	ensemble := e.ObjectNew.(*unstructured.Unstructured).DeepCopy()
	after, _, _ := unstructured.NestedInt64(ensemble.Object, "spec", "voices")
	for index := before; index < after; index++ {
		if err := r.createChild(ctx, ensemble, index); err != nil {
			logf.FromContext(ctx).Error(err, "creating a child", "index", index)
			return
		}
	}
	if after != before {
		if err := r.setStatus(ctx, ensemble, after); err != nil {
			logf.FromContext(ctx).Error(err, "writing the status")
		}
	}
}

func main() {
	delta := flag.Bool("delta", false, "create new - old children in the update handler (the bug)")
	noRetry := flag.Bool("no-retry", false, "return a reconcile's error to controller-runtime instead of asking again after 500 ms")
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	log := ctrl.Log.WithName("setup")
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		log.Error(err, "creating the manager")
		os.Exit(1)
	}
	r := &reconciler{Client: mgr.GetClient(), noRetry: *noRetry}
	builder := ctrl.NewControllerManagedBy(mgr).Named("ensemble")
	if *delta {
		builder = builder.Watches(newEnsemble(), handler.Funcs{UpdateFunc: r.deltaUpdate})
	} else {
		builder = builder.For(newEnsemble()).Owns(&corev1.ConfigMap{})
	}
	if err := builder.Complete(r); err != nil {
		log.Error(err, "creating the controller")
		os.Exit(1)
	}
	log.Info("starting", "delta", *delta, "noRetry", *noRetry)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "the manager stopped")
		os.Exit(1)
	}
}
