package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/loopguard/loopguard/core"
)

// facts builds the core.Cluster an evaluation reads from the informer cache: every Node and
// IngressClass, the named ConfigMaps, and the Services, EndpointSlices and custom objects of
// namespace ns ("" for every namespace). Of the Pods it reads those of ns (backends) and, in
// every namespace, those the client selector of one of objs matches (its core.AnnotationClients,
// else the profile's Clients): that is all an evaluation of objects of ns reads of Pods, and
// with 50,000 Pods cached, reading every one for each reconcile is most of its cost. With ns ""
// it reads every Pod. The cache's objects are shared, not copied: core only reads them
// (core.Cluster's contract).
func (c *Controller) facts(ctx context.Context, ns string, objs ...client.Object) (*core.Cluster, error) {
	cl, err := c.clusterFacts(ctx, ns)
	if err != nil {
		return nil, err
	}
	if err := c.addPods(ctx, cl, ns, objs); err != nil {
		return nil, err
	}
	return cl, nil
}

// addPods adds the Pods an evaluation of objs in ns reads (facts).
func (c *Controller) addPods(ctx context.Context, cl *core.Cluster, ns string, objs []client.Object) error {
	pods, err := listPods(ctx, c.cache, ns, nil)
	if err != nil {
		return fmt.Errorf("list Pods: %w", err)
	}
	for _, p := range pods {
		cl.Add(p)
	}
	if ns == "" {
		return nil
	}
	seen := map[string]bool{}
	for _, o := range objs {
		expr := c.profile.Clients
		if v, ok := o.GetAnnotations()[core.AnnotationClients]; ok {
			expr = v
		}
		if expr == "" || seen[expr] {
			continue
		}
		seen[expr] = true
		sel, err := labels.Parse(expr)
		if err != nil || sel.Empty() {
			continue // the evaluation reports the bad selector
		}
		clients, err := listPods(ctx, c.cache, "", sel)
		if err != nil {
			return fmt.Errorf("list client Pods: %w", err)
		}
		for _, p := range clients {
			if p.Namespace != ns {
				cl.Add(p)
			}
		}
	}
	return nil
}

// clusterFacts is facts without the Pods.
func (c *Controller) clusterFacts(ctx context.Context, ns string) (*core.Cluster, error) {
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
