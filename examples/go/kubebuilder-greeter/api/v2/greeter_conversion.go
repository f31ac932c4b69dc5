package v2

import (
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	demov1 "example.com/greeter/api/v1"
)

// ConvertTo converts this Greeter (a spoke) to the hub, v1: recipient becomes name.
func (src *Greeter) ConvertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*demov1.Greeter)
	dst.ObjectMeta = src.ObjectMeta
	dst.Spec.Name = src.Spec.Recipient
	dst.Spec.Salutation = src.Spec.Salutation
	dst.Status = demov1.GreeterStatus{
		ObservedGeneration: src.Status.ObservedGeneration,
		Greeting:           src.Status.Greeting,
		Conditions:         src.Status.Conditions,
	}
	return nil
}

// ConvertFrom converts the hub, v1, to this Greeter: name becomes recipient.
func (dst *Greeter) ConvertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*demov1.Greeter)
	dst.ObjectMeta = src.ObjectMeta
	dst.Spec.Recipient = src.Spec.Name
	dst.Spec.Salutation = src.Spec.Salutation
	dst.Status = GreeterStatus{
		ObservedGeneration: src.Status.ObservedGeneration,
		Greeting:           src.Status.Greeting,
		Conditions:         src.Status.Conditions,
	}
	return nil
}
