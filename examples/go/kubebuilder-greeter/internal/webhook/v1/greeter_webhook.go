// Package v1 holds the Greeter's validating webhook, as kubebuilder lays out webhooks.
package v1

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	demov1 "example.com/greeter/api/v1"
)

// +kubebuilder:webhook:path=/validate-demo-settle-dev-v1-greeter,mutating=false,failurePolicy=fail,sideEffects=None,groups=demo.settle.dev,resources=greeters,verbs=create;update,versions=v1,name=vgreeter-v1.kb.io,admissionReviewVersions=v1

// SetupGreeterWebhookWithManager registers the validating webhook with the manager's webhook server.
func SetupGreeterWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &demov1.Greeter{}).WithValidator(&GreeterValidator{}).Complete()
}

// GreeterValidator keeps spec.name as it was created: the greeting's ConfigMap is named for whom it greets.
type GreeterValidator struct{}

// ValidateCreate refuses a salutation of more than one line.
func (v *GreeterValidator) ValidateCreate(_ context.Context, greeter *demov1.Greeter) (admission.Warnings, error) {
	return nil, validateSalutation(greeter)
}

// ValidateUpdate refuses a change of spec.name.
func (v *GreeterValidator) ValidateUpdate(_ context.Context, oldGreeter, greeter *demov1.Greeter) (admission.Warnings, error) {
	if oldGreeter.Spec.Name != greeter.Spec.Name {
		return nil, apierrors.NewInvalid(demov1.GroupVersion.WithKind("Greeter").GroupKind(), greeter.Name,
			field.ErrorList{field.Forbidden(field.NewPath("spec", "name"), "is immutable")})
	}
	return nil, validateSalutation(greeter)
}

// ValidateDelete allows every delete.
func (v *GreeterValidator) ValidateDelete(_ context.Context, _ *demov1.Greeter) (admission.Warnings, error) {
	return nil, nil
}

func validateSalutation(greeter *demov1.Greeter) error {
	for _, r := range greeter.Spec.Salutation {
		if r == '\n' {
			return apierrors.NewInvalid(demov1.GroupVersion.WithKind("Greeter").GroupKind(), greeter.Name,
				field.ErrorList{field.Invalid(field.NewPath("spec", "salutation"), greeter.Spec.Salutation, "must be one line")})
		}
	}
	return nil
}
