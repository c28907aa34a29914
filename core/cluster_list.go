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

type customByNamespaceKey struct{ group, kind string }

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

// CustomListIn returns the known objects of one API group and kind in one namespace, in name
// order: a policy applies to the targets of its own namespace only, so a dialect that resolves
// each target's policies reads those of its namespace rather than every one in the cluster
// (with 5,000 Gateways, scanning all policies for each was most of assess's time). The slice
// is shared: do not modify it.
func (c *Cluster) CustomListIn(group, kind, ns string) []*unstructured.Unstructured {
	byNS := c.Memo(customByNamespaceKey{group, kind}, func() any {
		m := map[string][]*unstructured.Unstructured{}
		for _, u := range c.CustomList(group, kind) { // in namespace/name order
			m[u.GetNamespace()] = append(m[u.GetNamespace()], u)
		}
		return m
	}).(map[string][]*unstructured.Unstructured)
	return byNS[ns]
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
