// Package v1 holds the Ensemble API, academy.settle.dev/v1.
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the Ensemble kind.
	GroupVersion = schema.GroupVersion{Group: "academy.settle.dev", Version: "v1"}

	// SchemeBuilder registers the kinds of this group version with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this group version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
