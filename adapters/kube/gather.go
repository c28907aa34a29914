package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	// ConfigMaps names, given everything else read, the ConfigMaps to read besides
	// kube-system's (whatever Namespace says): the ones a Gateway names as its parameters
	// (providers/gateway ConfigMaps). Each named one is read with a GET (one that does not
	// exist is skipped), each selected namespace with a labelled list; no other ConfigMap is.
	ConfigMaps func(read []runtime.Object) []ConfigMapRef
}

// ConfigMapRef names ConfigMaps to read: the one called Name in Namespace, or, when Name is
// empty, those of Namespace that LabelSelector selects.
type ConfigMapRef struct {
	Namespace, Name, LabelSelector string
}

// Gather reads the objects loopguard evaluates from a live cluster: Services, Ingresses,
// IngressClasses, Nodes, EndpointSlices, Pods, ConfigMaps in kube-system (cloud controller
// versions), the custom resources asked for and the ConfigMaps those name. It only reads.
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
	if opts.ConfigMaps != nil {
		more, err := configMaps(ctx, cs, opts.ConfigMaps(out))
		if err != nil {
			return nil, err
		}
		add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), more)
	}
	return out, nil
}

// configMaps reads the ConfigMaps refs name, leaving out kube-system's, which Gather has
// read. Reading only those, rather than every ConfigMap of the Gateways' namespaces, keeps
// scan from pulling a namespace's other (possibly large) ConfigMaps and needs no list
// permission beyond the selected namespaces.
func configMaps(ctx context.Context, cs kubernetes.Interface, refs []ConfigMapRef) ([]runtime.Object, error) {
	var out []runtime.Object
	seen := map[string]bool{}
	keep := func(cm *corev1.ConfigMap) {
		if k := cm.Namespace + "/" + cm.Name; cm.Namespace != metav1.NamespaceSystem && !seen[k] {
			seen[k] = true
			out = append(out, cm)
		}
	}
	for _, r := range refs {
		if r.Name != "" {
			cm, err := cs.CoreV1().ConfigMaps(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("get ConfigMap %s/%s: %w", r.Namespace, r.Name, err)
			}
			keep(cm)
			continue
		}
		list, err := cs.CoreV1().ConfigMaps(r.Namespace).List(ctx, metav1.ListOptions{LabelSelector: r.LabelSelector})
		if err != nil {
			return nil, fmt.Errorf("list ConfigMaps in %s (%s): %w", r.Namespace, r.LabelSelector, err)
		}
		for i := range list.Items {
			keep(&list.Items[i])
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
