package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// EnsembleSpec is what the user asks for: how many voices (child ConfigMaps) the ensemble has.
type EnsembleSpec struct {
	Voices int32 `json:"voices"`
}

// EnsembleStatus is what the operator last saw.
type EnsembleStatus struct {
	ReadyVoices        int32 `json:"readyVoices,omitempty"`
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// Ensemble owns spec.voices child ConfigMaps named <name>-voice-<i>.
type Ensemble struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EnsembleSpec   `json:"spec,omitempty"`
	Status EnsembleStatus `json:"status,omitempty"`
}

// EnsembleList is a list of Ensembles.
type EnsembleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Ensemble `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Ensemble{}, &EnsembleList{})
}

// The deep copies are written by hand (controller-gen would generate them): spec and status hold only values, so
// copying the struct and deep-copying the metadata is a deep copy.

// DeepCopyInto copies e into out.
func (e *Ensemble) DeepCopyInto(out *Ensemble) {
	*out = *e
	out.TypeMeta = e.TypeMeta
	e.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
}

// DeepCopy returns a copy of e.
func (e *Ensemble) DeepCopy() *Ensemble {
	if e == nil {
		return nil
	}
	out := new(Ensemble)
	e.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (e *Ensemble) DeepCopyObject() runtime.Object {
	return e.DeepCopy()
}

// DeepCopyInto copies l into out.
func (l *EnsembleList) DeepCopyInto(out *EnsembleList) {
	*out = *l
	out.TypeMeta = l.TypeMeta
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Ensemble, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopyObject implements runtime.Object.
func (l *EnsembleList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := new(EnsembleList)
	l.DeepCopyInto(out)
	return out
}
