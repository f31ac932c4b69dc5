// Package controller reconciles Ensembles: each Ensemble owns spec.voices child ConfigMaps.
package controller

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	academyv1 "settle.dev/examples/go/ensemble/api/v1"
)

// childLabel names the Ensemble a child ConfigMap belongs to.
const childLabel = "ensemble"

// EnsembleReconciler makes an Ensemble's children match its spec.voices, whatever event woke it: the input is the
// Ensemble and the children as they are now, so a restart loses nothing.
type EnsembleReconciler struct {
	client.Client
	Scheme *runtime.Scheme
	// SlowReconcile is slept after each child create (the seed exercise's --slow-reconcile: it widens the window in
	// which a kill lands mid-scale-up).
	SlowReconcile time.Duration
}

// Reconcile creates the missing children, deletes those past spec.voices, and reports what it found.
func (r *EnsembleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	var ensemble academyv1.Ensemble
	if err := r.Get(ctx, req.NamespacedName, &ensemble); err != nil {
		// Gone: its children go with it (they are owned), so there is nothing to do.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var children corev1.ConfigMapList
	if err := r.List(ctx, &children, client.InNamespace(req.Namespace), client.MatchingLabels{childLabel: ensemble.Name}); err != nil {
		return ctrl.Result{}, err
	}
	voices := int(ensemble.Spec.Voices)
	have := map[int]bool{}
	for i := range children.Items {
		child := &children.Items[i]
		index, ok := voiceIndex(ensemble.Name, child.Name)
		if !ok {
			continue
		}
		if index >= voices {
			if err := r.Delete(ctx, child); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, err
			}
			log.Info("deleted a child past spec.voices", "child", child.Name)
			continue
		}
		have[index] = true
	}
	for index := 0; index < voices; index++ {
		if have[index] {
			continue
		}
		if err := r.createChild(ctx, &ensemble, index); err != nil {
			return ctrl.Result{}, err
		}
		have[index] = true
		log.Info("created a child", "index", index)
		time.Sleep(r.SlowReconcile)
	}
	ready := int32(len(have))
	if ensemble.Status.ReadyVoices == ready && ensemble.Status.ObservedGeneration == ensemble.Generation {
		return ctrl.Result{}, nil
	}
	ensemble.Status.ReadyVoices = ready
	ensemble.Status.ObservedGeneration = ensemble.Generation
	// A conflict (someone changed the Ensemble since the cache saw it) is an error: the request comes back with
	// backoff and the next Reconcile starts from the newer Ensemble.
	if err := r.Status().Update(ctx, &ensemble); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// createChild creates child <name>-voice-<index>, owned by the Ensemble. One that exists already counts as created:
// its name is the whole of its identity.
func (r *EnsembleReconciler) createChild(ctx context.Context, ensemble *academyv1.Ensemble, index int) error {
	child := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      childName(ensemble.Name, index),
			Namespace: ensemble.Namespace,
			Labels:    map[string]string{childLabel: ensemble.Name},
		},
		Data: map[string]string{"voice": strconv.Itoa(index)},
	}
	if err := controllerutil.SetControllerReference(ensemble, child, r.Scheme); err != nil {
		return err
	}
	if err := r.Create(ctx, child); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// SetupWithManager watches Ensembles and the ConfigMaps they own: a child's change wakes its owner.
func (r *EnsembleReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&academyv1.Ensemble{}).
		Owns(&corev1.ConfigMap{}).
		Named("ensemble").
		Complete(r)
}

func childName(ensemble string, index int) string {
	return fmt.Sprintf("%s-voice-%d", ensemble, index)
}

// voiceIndex is the index in a child's name, if the name is one of the ensemble's children's.
func voiceIndex(ensemble, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, ensemble+"-voice-")
	if !ok {
		return 0, false
	}
	index, err := strconv.Atoi(rest)
	return index, err == nil && index >= 0
}
