package core

import (
	"maps"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Listing a Cluster's objects is for dialects that find an object by what it says about
// another, not by name: a Gateway API implementation's generated Service names its Gateway in
// labels (providers/gateway), a policy names its target in spec.targetRefs.

type serviceListKey struct{}

type customListKey struct{ group, kind string }

type configMapListKey struct{}

// ServiceList returns the known Services in namespace/name order. The slice is shared: do not
// modify it.
func (c *Cluster) ServiceList() []*corev1.Service {
	return c.Memo(serviceListKey{}, func() any {
		return byNamespaceName(slices.Collect(maps.Values(c.services)))
	}).([]*corev1.Service)
}

// CustomList returns the known objects of one API group and kind (any version), in
// namespace/name order. The slice is shared: do not modify it.
func (c *Cluster) CustomList(group, kind string) []*unstructured.Unstructured {
	return c.Memo(customListKey{group, kind}, func() any {
		var out []*unstructured.Unstructured
		for k, u := range c.custom {
			if k.group == group && k.kind == kind {
				out = append(out, u)
			}
		}
		return byNamespaceName(out)
	}).([]*unstructured.Unstructured)
}

// ConfigMapList returns the known ConfigMaps in namespace/name order: a dialect finds some by
// label (Istio's class defaults, gateway.istio.io/defaults-for-class). The slice is shared: do
// not modify it.
func (c *Cluster) ConfigMapList() []*corev1.ConfigMap {
	return c.Memo(configMapListKey{}, func() any {
		return byNamespaceName(slices.Collect(maps.Values(c.configMaps)))
	}).([]*corev1.ConfigMap)
}

// byNamespaceName sorts objects in namespace/name order, the order every list above returns.
func byNamespaceName[T metav1.Object](out []T) []T {
	sort.Slice(out, func(i, j int) bool {
		if out[i].GetNamespace() != out[j].GetNamespace() {
			return out[i].GetNamespace() < out[j].GetNamespace()
		}
		return out[i].GetName() < out[j].GetName()
	})
	return out
}
