// Package controller holds the Greeter reconciler.
package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	demov1 "example.com/greeter/api/v1"
)

// GreeterReconciler keeps one ConfigMap per Greeter holding its greeting, and reports it in the status.
type GreeterReconciler struct {
	client.Client
	Scheme *runtime.Scheme
	// CreateOnly makes the ConfigMap once and never updates it (the bug of the drill's create-only variant): a changed
	// salutation, or a ConfigMap someone else edited, stays wrong.
	CreateOnly bool
}

// +kubebuilder:rbac:groups=demo.settle.dev,resources=greeters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=demo.settle.dev,resources=greeters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch

// Greeting is the text a Greeter's ConfigMap holds.
func Greeting(spec demov1.GreeterSpec) string {
	salutation := spec.Salutation
	if salutation == "" {
		salutation = "Hello"
	}
	return fmt.Sprintf("%s, %s!", salutation, spec.Name)
}

// Reconcile writes the ConfigMap for the Greeter named in req, then its status. It is level-based: it reads the
// Greeter afresh and converges whatever state it finds, so a lost or repeated event does no harm.
func (r *GreeterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	greeter := &demov1.Greeter{}
	if err := r.Get(ctx, req.NamespacedName, greeter); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !greeter.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	greeting := Greeting(greeter.Spec)
	configMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: greeter.Name + "-greeting", Namespace: greeter.Namespace}}
	mutate := func() error {
		configMap.Labels = map[string]string{"greeter": greeter.Name}
		configMap.Data = map[string]string{"greeting": greeting}
		return controllerutil.SetControllerReference(greeter, configMap, r.Scheme)
	}
	var op controllerutil.OperationResult
	var err error
	if r.CreateOnly {
		op, err = createIfMissing(ctx, r.Client, configMap, mutate)
	} else {
		op, err = controllerutil.CreateOrUpdate(ctx, r.Client, configMap, mutate)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if op != controllerutil.OperationResultNone {
		log.Info("wrote the greeting", "configmap", configMap.Name, "operation", op)
	}
	if greeter.Status.ObservedGeneration == greeter.Generation && greeter.Status.Greeting == greeting && meta.IsStatusConditionTrue(greeter.Status.Conditions, "Ready") {
		return ctrl.Result{}, nil
	}
	greeter.Status.ObservedGeneration = greeter.Generation
	greeter.Status.Greeting = greeting
	meta.SetStatusCondition(&greeter.Status.Conditions, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "GreetingWritten", ObservedGeneration: greeter.Generation,
		Message: "the ConfigMap " + configMap.Name + " holds the greeting",
	})
	if err := r.Status().Update(ctx, greeter); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{Requeue: true}, nil
		}
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// createIfMissing creates obj (after mutate) unless it exists, and leaves an existing one as it is.
func createIfMissing(ctx context.Context, c client.Client, obj client.Object, mutate func() error) (controllerutil.OperationResult, error) {
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err == nil {
		return controllerutil.OperationResultNone, nil
	} else if !apierrors.IsNotFound(err) {
		return controllerutil.OperationResultNone, err
	}
	if err := mutate(); err != nil {
		return controllerutil.OperationResultNone, err
	}
	return controllerutil.OperationResultCreated, c.Create(ctx, obj)
}

// SetupWithManager watches Greeters and the ConfigMaps they own.
func (r *GreeterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&demov1.Greeter{}).
		Owns(&corev1.ConfigMap{}).
		Named("greeter").
		Complete(r)
}
