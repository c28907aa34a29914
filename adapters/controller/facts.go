package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/loopguard/loopguard/core"
)

// facts builds the core.Cluster an evaluation reads from the informer cache: every Node,
// IngressClass and Pod (declared clients may run in any namespace), the named ConfigMaps, and
// the Services, EndpointSlices and custom objects of namespace ns ("" for every namespace).
// The cache's objects are shared, not copied: core only reads them (core.Cluster's contract).
func (c *Controller) facts(ctx context.Context, ns string) (*core.Cluster, error) {
	var objs []runtime.Object
	shared := client.UnsafeDisableDeepCopy
	inNS := client.InNamespace(ns)

	var nodes corev1.NodeList
	if err := c.cache.List(ctx, &nodes, shared); err != nil {
		return nil, fmt.Errorf("list Nodes: %w", err)
	}
	for i := range nodes.Items {
		objs = append(objs, &nodes.Items[i])
	}
	var classes networkingv1.IngressClassList
	if err := c.cache.List(ctx, &classes, shared); err != nil {
		return nil, fmt.Errorf("list IngressClasses: %w", err)
	}
	for i := range classes.Items {
		objs = append(objs, &classes.Items[i])
	}
	var pods corev1.PodList
	if err := c.cache.List(ctx, &pods, shared); err != nil {
		return nil, fmt.Errorf("list Pods: %w", err)
	}
	for i := range pods.Items {
		objs = append(objs, &pods.Items[i])
	}
	var svcs corev1.ServiceList
	if err := c.cache.List(ctx, &svcs, shared, inNS); err != nil {
		return nil, fmt.Errorf("list Services: %w", err)
	}
	for i := range svcs.Items {
		objs = append(objs, &svcs.Items[i])
	}
	var slices discoveryv1.EndpointSliceList
	if err := c.cache.List(ctx, &slices, shared, inNS); err != nil {
		return nil, fmt.Errorf("list EndpointSlices: %w", err)
	}
	for i := range slices.Items {
		objs = append(objs, &slices.Items[i])
	}
	for _, key := range c.cms {
		var cm corev1.ConfigMap
		if err := c.cache.Get(ctx, key, &cm); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("get ConfigMap %s: %w", key, err)
		}
		objs = append(objs, &cm)
	}
	for _, gvk := range c.custom {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.cache.List(ctx, list, shared, inNS); err != nil {
			return nil, fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			// Unstructured objects from the cache carry their apiVersion and kind.
			objs = append(objs, &list.Items[i])
		}
	}
	return core.NewCluster(c.profile, objs...)
}
