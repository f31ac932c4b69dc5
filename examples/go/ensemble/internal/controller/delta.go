package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	academyv1 "settle.dev/examples/go/ensemble/api/v1"
)

// DeltaHandler is the seed exercise's delta mode (the bug): the Ensemble's update handler creates new - old
// children itself, inline, and nothing else does any work. The number of children to create exists only in the
// event being delivered: a kill mid-scale-up loses the rest, since after the restart the initial list brings Create
// events (ignored), and resyncs and the operator's own status writes bring updates whose voices did not change.
type DeltaHandler struct {
	Reconciler *EnsembleReconciler
}

// SetupWithManager watches Ensembles through the delta handler alone.
func (d *DeltaHandler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("ensemble-delta").
		Watches(&academyv1.Ensemble{}, handler.Funcs{UpdateFunc: d.update}).
		Complete(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		}))
}

func (d *DeltaHandler) update(ctx context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	before, okOld := e.ObjectOld.(*academyv1.Ensemble)
	cached, okNew := e.ObjectNew.(*academyv1.Ensemble)
	if !okOld || !okNew {
		return
	}
	// The event's objects are the cache's: the handler works on a copy.
	after := cached.DeepCopy()
	log := logf.FromContext(ctx).WithValues("ensemble", client.ObjectKeyFromObject(after))
	r := d.Reconciler
	oldVoices, newVoices := int(before.Spec.Voices), int(after.Spec.Voices)
	if oldVoices == newVoices {
		return
	}
	for index := oldVoices; index < newVoices; index++ {
		if err := r.createChild(ctx, after, index); err != nil {
			log.Error(err, "creating a child", "index", index)
			return
		}
		log.Info("created a child", "index", index)
		time.Sleep(r.SlowReconcile)
	}
	for index := newVoices; index < oldVoices; index++ {
		child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: childName(after.Name, index), Namespace: after.Namespace}}
		if err := r.Delete(ctx, child); client.IgnoreNotFound(err) != nil {
			log.Error(err, "deleting a child", "child", child.Name)
			return
		}
	}
	patch := client.MergeFrom(after.DeepCopy())
	after.Status.ReadyVoices = int32(newVoices)
	after.Status.ObservedGeneration = after.Generation
	if err := r.Status().Patch(ctx, after, patch); err != nil {
		log.Error(err, "writing the status")
	}
}
