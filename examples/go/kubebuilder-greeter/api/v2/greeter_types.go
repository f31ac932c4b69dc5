// Package v2 holds the Greeter API at version v2, served beside v1 (the storage version) and converted through
// the conversion webhook: v2 names whom it greets `recipient` where v1 says `name`.
package v2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// GroupVersion names this package's API group and version.
var GroupVersion = schema.GroupVersion{Group: "demo.settle.dev", Version: "v2"}

// SchemeBuilder registers the Greeter kinds; AddToScheme adds them to a scheme.
var (
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}
	AddToScheme   = SchemeBuilder.AddToScheme
)

// GreeterSpec is what the user asks for: a ConfigMap holding a greeting for Recipient.
type GreeterSpec struct {
	// Recipient is who is greeted (v1's name).
	Recipient string `json:"recipient"`
	// Salutation opens the greeting; the CRD defaults it to "Hello".
	Salutation string `json:"salutation,omitempty"`
}

// GreeterStatus is what the controller observed when it last wrote the ConfigMap.
type GreeterStatus struct {
	// ObservedGeneration is the generation whose spec the ConfigMap holds.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Greeting is the text written, for the printer column.
	Greeting string `json:"greeting,omitempty"`
	// Conditions holds Ready.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Greeter is the Schema for the greeters API at v2.
type Greeter struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GreeterSpec   `json:"spec,omitempty"`
	Status GreeterStatus `json:"status,omitempty"`
}

// GreeterList is a list of Greeters.
type GreeterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Greeter `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Greeter{}, &GreeterList{})
}

// DeepCopyInto copies the receiver into out.
func (in *Greeter) DeepCopyInto(out *Greeter) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = in.Spec
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a copy of the receiver.
func (in *Greeter) DeepCopy() *Greeter {
	if in == nil {
		return nil
	}
	out := new(Greeter)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *Greeter) DeepCopyObject() runtime.Object { return in.DeepCopy() }

// DeepCopyInto copies the receiver into out.
func (in *GreeterStatus) DeepCopyInto(out *GreeterStatus) {
	*out = *in
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// DeepCopyInto copies the receiver into out.
func (in *GreeterList) DeepCopyInto(out *GreeterList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]Greeter, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a copy of the receiver.
func (in *GreeterList) DeepCopy() *GreeterList {
	if in == nil {
		return nil
	}
	out := new(GreeterList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *GreeterList) DeepCopyObject() runtime.Object { return in.DeepCopy() }
