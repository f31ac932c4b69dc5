// Package controller reconciles Ensembles whose children are interchangeable: each child ConfigMap gets a generated
// name, so only their number matters, and creating one is not idempotent.
package controller

import (
	"context"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	academyv1 "settle.dev/examples/go/leader-election/api/v1"
)

// childLabel names the Ensemble a child ConfigMap belongs to.
const childLabel = "ensemble"

// EnsembleReconciler keeps spec.voices children with generated names. It counts them through the API reader (a
// live list, not the cache), so one reconciler never double-counts: its reconciles of one Ensemble run one at a
// time and each starts from the children that exist. Two processes reconciling at once do not have that: both
// count the same children and both create the missing ones. That is what leader election is for.
type EnsembleReconciler struct {
	client.Client
	// APIReader reads from the API server, bypassing the cache (the manager's GetAPIReader).
	APIReader client.Reader
	Scheme    *runtime.Scheme
	// SlowReconcile is slept after each child create.
	SlowReconcile time.Duration
}

// Reconcile creates or deletes children until there are spec.voices of them, then reports the count.
func (r *EnsembleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	var ensemble academyv1.Ensemble
	if err := r.Get(ctx, req.NamespacedName, &ensemble); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var children corev1.ConfigMapList
	if err := r.APIReader.List(ctx, &children, client.InNamespace(req.Namespace), client.MatchingLabels{childLabel: ensemble.Name}); err != nil {
		return ctrl.Result{}, err
	}
	voices := int(ensemble.Spec.Voices)
	count := len(children.Items)
	for ; count < voices; count++ {
		if err := r.createChild(ctx, &ensemble); err != nil {
			return ctrl.Result{}, err
		}
		log.Info("created a child", "children", count+1, "voices", voices)
		time.Sleep(r.SlowReconcile)
	}
	if count > voices {
		// The newest go first, as a ReplicaSet scales down.
		sort.Slice(children.Items, func(i, j int) bool {
			return children.Items[j].CreationTimestamp.Before(&children.Items[i].CreationTimestamp)
		})
		for i := 0; count > voices; i, count = i+1, count-1 {
			if err := r.Delete(ctx, &children.Items[i]); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, err
			}
		}
	}
	ready := int32(count)
	if ensemble.Status.ReadyVoices == ready && ensemble.Status.ObservedGeneration == ensemble.Generation {
		return ctrl.Result{}, nil
	}
	ensemble.Status.ReadyVoices = ready
	ensemble.Status.ObservedGeneration = ensemble.Generation
	return ctrl.Result{}, r.Status().Update(ctx, &ensemble)
}

func (r *EnsembleReconciler) createChild(ctx context.Context, ensemble *academyv1.Ensemble) error {
	child := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: ensemble.Name + "-voice-",
			Namespace:    ensemble.Namespace,
			Labels:       map[string]string{childLabel: ensemble.Name},
		},
		Data: map[string]string{"ensemble": ensemble.Name},
	}
	if err := controllerutil.SetControllerReference(ensemble, child, r.Scheme); err != nil {
		return err
	}
	return r.Create(ctx, child)
}

// SetupWithManager watches Ensembles and the ConfigMaps they own.
func (r *EnsembleReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&academyv1.Ensemble{}).
		Owns(&corev1.ConfigMap{}).
		Named("ensemble").
		Complete(r)
}
