package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// GatherOptions say what to read from a live cluster. A nil *GatherOptions reads everything in
// every namespace.
type GatherOptions struct {
	// Namespace limits Services, Ingresses, EndpointSlices, Pods and custom objects to one
	// namespace; Nodes, IngressClasses and the cloud controllers' ConfigMaps in kube-system
	// are always read.
	Namespace string
	// Custom lists extra namespaced resources to read as unstructured (a cloud's CRDs, such
	// as TKE's TkeServiceConfig). A resource the cluster does not serve is skipped.
	Custom []schema.GroupVersionResource
	// ClusterCustom lists extra cluster-scoped resources to read as unstructured (Gateway
	// API's GatewayClasses); read whatever Namespace says.
	ClusterCustom []schema.GroupVersionResource
}

// Gather reads the objects loopguard evaluates from a live cluster: Services, Ingresses,
// IngressClasses, Nodes, EndpointSlices, Pods, ConfigMaps in kube-system (cloud controller
// versions) and the custom resources asked for. It only reads.
func Gather(ctx context.Context, cfg *rest.Config, opts *GatherOptions) ([]runtime.Object, error) {
	if opts == nil {
		opts = &GatherOptions{}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ns := opts.Namespace
	var out []runtime.Object
	add := func(gvk schema.GroupVersionKind, items []runtime.Object) {
		for _, o := range items {
			// Items of a typed list carry no TypeMeta; give them theirs so every object
			// says what it is, as decoded YAML does.
			o.GetObjectKind().SetGroupVersionKind(gvk)
			out = append(out, o)
		}
	}
	lo := metav1.ListOptions{}
	svcs, err := cs.CoreV1().Services(ns).List(ctx, lo)
	if err != nil {
		return nil, fmt.Errorf("list Services: %w", err)
	}
	add(corev1.SchemeGroupVersion.WithKind("Service"), ptrs(svcs.Items))
	ings, err := cs.NetworkingV1().Ingresses(ns).List(ctx, lo)
	if err != nil {
		return nil, fmt.Errorf("list Ingresses: %w", err)
	}
	add(networkingv1.SchemeGroupVersion.WithKind("Ingress"), ptrs(ings.Items))
	classes, err := cs.NetworkingV1().IngressClasses().List(ctx, lo)
	if err != nil {
		return nil, fmt.Errorf("list IngressClasses: %w", err)
	}
	add(networkingv1.SchemeGroupVersion.WithKind("IngressClass"), ptrs(classes.Items))
	nodes, err := cs.CoreV1().Nodes().List(ctx, lo)
	if err != nil {
		return nil, fmt.Errorf("list Nodes: %w", err)
	}
	add(corev1.SchemeGroupVersion.WithKind("Node"), ptrs(nodes.Items))
	slices, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, lo)
	if err != nil {
		return nil, fmt.Errorf("list EndpointSlices: %w", err)
	}
	add(discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), ptrs(slices.Items))
	pods, err := cs.CoreV1().Pods(ns).List(ctx, lo)
	if err != nil {
		return nil, fmt.Errorf("list Pods: %w", err)
	}
	add(corev1.SchemeGroupVersion.WithKind("Pod"), ptrs(pods.Items))
	cms, err := cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).List(ctx, lo)
	if err != nil {
		return nil, fmt.Errorf("list ConfigMaps in kube-system: %w", err)
	}
	add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), ptrs(cms.Items))

	if len(opts.Custom)+len(opts.ClusterCustom) > 0 {
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		for i, gvr := range append(append([]schema.GroupVersionResource(nil), opts.Custom...), opts.ClusterCustom...) {
			r := dyn.Resource(gvr)
			var list *unstructured.UnstructuredList
			if i < len(opts.Custom) {
				list, err = r.Namespace(ns).List(ctx, lo)
			} else {
				list, err = r.List(ctx, lo)
			}
			if err != nil {
				if isNotServed(err) {
					continue
				}
				return nil, fmt.Errorf("list %s: %w", gvr.Resource, err)
			}
			for i := range list.Items {
				out = append(out, &list.Items[i])
			}
		}
	}
	return out, nil
}

func ptrs[T any, P interface {
	*T
	runtime.Object
}](items []T) []runtime.Object {
	out := make([]runtime.Object, len(items))
	for i := range items {
		out[i] = P(&items[i])
	}
	return out
}
