package core

import (
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/loopguard/loopguard/internal/ingress"
)

// Well-known labels the placement logic reads.
const (
	// labelServiceName links an EndpointSlice to its Service.
	labelServiceName = discoveryv1.LabelServiceName
	// labelExcludeFromLB marks nodes the service controller leaves out of LB backends.
	labelExcludeFromLB = corev1.LabelNodeExcludeBalancers
	// labelHostname is the topology key that separates Pods by node.
	labelHostname = corev1.LabelHostname
)

type nsName struct{ ns, name string }

// Cluster holds what is known about one cluster: the profile and the objects that give
// placement and versions (Nodes, Services, EndpointSlices, Pods, ConfigMaps). It is built once
// and read by many evaluations; it is not safe for concurrent mutation.
type Cluster struct {
	Profile ClusterProfile

	nodes      map[string]*corev1.Node
	nodeOrder  []string
	services   map[nsName]*corev1.Service
	configMaps map[nsName]*corev1.ConfigMap
	slices     map[nsName][]*discoveryv1.EndpointSlice
	pods       []*corev1.Pod
	custom     map[customKey]*unstructured.Unstructured
	classes    map[string]*networkingv1.IngressClass
	clients    labels.Selector

	// Derived views, computed on first use. After NewCluster and Add, a Cluster is only read,
	// and may be read by many goroutines at once (the CLI evaluates objects in parallel).
	sortedOnce  sync.Once
	sortedNodes []*corev1.Node
	memo        sync.Map
}

type customKey struct{ group, kind, ns, name string }

// NewCluster indexes objects for evaluation. Objects of other kinds are ignored; the caller
// evaluates Services and Ingresses separately.
func NewCluster(profile ClusterProfile, objs ...runtime.Object) (*Cluster, error) {
	// The maps are sized from the objects: growing them one object at a time was most of
	// what indexing 10,000 Services allocated.
	var nodes, services, slices int
	for _, o := range objs {
		switch o.(type) {
		case *corev1.Node:
			nodes++
		case *corev1.Service:
			services++
		case *discoveryv1.EndpointSlice:
			slices++
		}
	}
	c := &Cluster{
		Profile:    profile,
		nodes:      make(map[string]*corev1.Node, nodes),
		nodeOrder:  make([]string, 0, nodes),
		services:   make(map[nsName]*corev1.Service, services),
		configMaps: map[nsName]*corev1.ConfigMap{},
		slices:     make(map[nsName][]*discoveryv1.EndpointSlice, slices),
		custom:     map[customKey]*unstructured.Unstructured{},
		classes:    map[string]*networkingv1.IngressClass{},
	}
	if profile.Clients != "" {
		sel, err := labels.Parse(profile.Clients)
		if err != nil {
			return nil, invalid(ObjectRef{Kind: ProfileKind}, field.ErrorList{field.Invalid(field.NewPath("clients"), profile.Clients, err.Error())})
		}
		c.clients = sel
	}
	for _, o := range objs {
		c.Add(o)
	}
	return c, nil
}

// WithProfile returns a Cluster with another profile that shares this one's indexed objects
// (they are only read), for a host that learns facts the profile did not declare, such as an
// allowlist granted since.
func (c *Cluster) WithProfile(p ClusterProfile) (*Cluster, error) {
	cc := &Cluster{
		Profile: p, nodes: c.nodes, nodeOrder: c.nodeOrder, services: c.services, configMaps: c.configMaps,
		slices: c.slices, pods: c.pods, custom: c.custom, classes: c.classes, clients: c.clients,
	}
	if p.Clients != c.Profile.Clients {
		cc.clients = nil
		if p.Clients != "" {
			sel, err := labels.Parse(p.Clients)
			if err != nil {
				return nil, invalid(ObjectRef{Kind: ProfileKind}, field.ErrorList{field.Invalid(field.NewPath("clients"), p.Clients, err.Error())})
			}
			cc.clients = sel
		}
	}
	return cc, nil
}

// Add indexes one object. Add all objects before the first evaluation: a Cluster being read
// must not be changed.
func (c *Cluster) Add(obj runtime.Object) {
	switch o := obj.(type) {
	case *corev1.Node:
		if _, ok := c.nodes[o.Name]; !ok {
			c.nodeOrder = append(c.nodeOrder, o.Name)
		}
		c.nodes[o.Name] = o
	case *corev1.Service:
		c.services[nsName{o.Namespace, o.Name}] = o
	case *corev1.ConfigMap:
		c.configMaps[nsName{o.Namespace, o.Name}] = o
	case *discoveryv1.EndpointSlice:
		if svc := o.Labels[labelServiceName]; svc != "" {
			k := nsName{o.Namespace, svc}
			c.slices[k] = append(c.slices[k], o)
		}
	case *corev1.Pod:
		c.pods = append(c.pods, o)
	case *networkingv1.IngressClass:
		c.classes[o.Name] = o
	case *unstructured.Unstructured:
		gvk := o.GroupVersionKind()
		c.custom[customKey{gvk.Group, gvk.Kind, o.GetNamespace(), o.GetName()}] = o
	}
}

// IngressClass returns an IngressClass by name, or nil; dialects read its spec.controller to
// tell whether an Ingress with spec.ingressClassName is theirs.
func (c *Cluster) IngressClass(name string) *networkingv1.IngressClass { return c.classes[name] }

// Custom returns an object of a kind the core has no type for (a cloud's CRD such as
// TkeServiceConfig), by API group, kind, namespace and name; nil when unknown.
func (c *Cluster) Custom(group, kind, ns, name string) *unstructured.Unstructured {
	return c.custom[customKey{group, kind, ns, name}]
}

// Node returns a node by name, or nil.
func (c *Cluster) Node(name string) *corev1.Node { return c.nodes[name] }

// Nodes returns the known nodes in name order. The slice is shared: do not modify it.
func (c *Cluster) Nodes() []*corev1.Node {
	c.sortedOnce.Do(func() {
		names := append([]string(nil), c.nodeOrder...)
		sort.Strings(names)
		c.sortedNodes = make([]*corev1.Node, len(names))
		for i, n := range names {
			c.sortedNodes[i] = c.nodes[n]
		}
	})
	return c.sortedNodes
}

// Memo returns the value compute returns for key, computed once per Cluster; dialects use it
// for facts derived from all nodes (node kinds) so they are not recomputed for every object.
// Safe for concurrent use; compute must be pure, since two goroutines may both run it once.
func (c *Cluster) Memo(key any, compute func() any) any {
	if v, ok := c.memo.Load(key); ok {
		return v
	}
	v, _ := c.memo.LoadOrStore(key, compute())
	return v
}

// Service returns a Service by namespace and name, or nil.
func (c *Cluster) Service(ns, name string) *corev1.Service { return c.services[nsName{ns, name}] }

// ConfigMap returns a ConfigMap by namespace and name, or nil.
func (c *Cluster) ConfigMap(ns, name string) *corev1.ConfigMap { return c.configMaps[nsName{ns, name}] }

// Pods returns the known Pods.
func (c *Cluster) Pods() []*corev1.Pod { return c.pods }

// NodeFilter says which nodes an LB sends NodePort connections to. The zero NodeFilter is the
// service controller's default: every node not labelled
// node.kubernetes.io/exclude-from-external-load-balancers. Key names what Match selects, so a
// Cluster computes the answer once for all the objects that share it instead of once per
// object; filters with the same Key must select the same nodes. An empty Key with a Match is
// evaluated every time.
type NodeFilter struct {
	Key   string
	Match func(*corev1.Node) bool
}

// Placement computes where a Service's backends and the declared clients run.
// clientSelector overrides the profile's client selector when non-nil (an object annotation).
// Backends come from EndpointSlices, or from Pods matching the Service's selector when no
// slice is known; nodes behind the LB are the known nodes that pass behindLB.
func (c *Cluster) Placement(svc *corev1.Service, clientSelector labels.Selector, behindLB NodeFilter) Placement {
	var p Placement
	p.LBNodes = c.lbNodes(behindLB)
	p.NodesBehindLB = len(p.LBNodes)
	p.Backends = c.backends(svc)
	c.addClients(&p, []*corev1.Service{svc}, clientSelector)
	return p
}

// IngressPlacement is Placement for the union of an Ingress's backend Services.
func (c *Cluster) IngressPlacement(backends []*corev1.Service, clientSelector labels.Selector, behindLB NodeFilter) Placement {
	var p Placement
	p.LBNodes = c.lbNodes(behindLB)
	p.NodesBehindLB = len(p.LBNodes)
	counts := map[string]int{}
	known := false
	for _, svc := range backends {
		for _, b := range c.backends(svc) {
			counts[b.Node] += b.Count
			known = true
		}
	}
	if known {
		p.Backends = sortedCounts(counts)
	}
	c.addClients(&p, backends, clientSelector)
	return p
}

// IngressBackends returns the Services an Ingress routes to, as far as they are known.
func (c *Cluster) IngressBackends(ing *networkingv1.Ingress) []*corev1.Service {
	var out []*corev1.Service
	for _, name := range ingress.BackendNames(ing) {
		if s := c.Service(ing.Namespace, name); s != nil {
			out = append(out, s)
		}
	}
	return out
}

// lbNodes names the known nodes the LB sends to, in name order; nil when no node is known.
func (c *Cluster) lbNodes(f NodeFilter) []string {
	if len(c.nodes) == 0 {
		return nil
	}
	match := f.Match
	if match == nil {
		match, f.Key = notExcluded, "\x00default"
	}
	if f.Key == "" {
		return c.filterNodes(match)
	}
	return c.Memo(lbNodesKey(f.Key), func() any { return c.filterNodes(match) }).([]string)
}

type lbNodesKey string

func (c *Cluster) filterNodes(match func(*corev1.Node) bool) []string {
	out := []string{}
	for _, n := range c.Nodes() {
		if match(n) {
			out = append(out, n.Name)
		}
	}
	return out
}

// notExcluded is the default NodeFilter: the service controller leaves out nodes labelled
// node.kubernetes.io/exclude-from-external-load-balancers.
func notExcluded(n *corev1.Node) bool {
	_, excluded := n.Labels[labelExcludeFromLB]
	return !excluded
}

// backends counts ready endpoints per node; nil when nothing is known.
func (c *Cluster) backends(svc *corev1.Service) []NodeBackends {
	if slices := c.slices[nsName{svc.Namespace, svc.Name}]; len(slices) > 0 {
		counts := map[string]int{}
		seen := map[string]bool{}
		for _, s := range slices {
			for _, ep := range s.Endpoints {
				if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
					continue
				}
				// Dual-stack Services have one slice per family for the same Pod.
				key := endpointKey(&ep)
				if seen[key] {
					continue
				}
				seen[key] = true
				node := ""
				if ep.NodeName != nil {
					node = *ep.NodeName
				}
				counts[node]++
			}
		}
		return sortedCounts(counts)
	}
	if len(svc.Spec.Selector) == 0 || len(c.pods) == 0 {
		return nil
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	counts := map[string]int{}
	for _, pod := range c.pods {
		if pod.Namespace == svc.Namespace && pod.Spec.NodeName != "" && podReady(pod) && sel.Matches(labels.Set(pod.Labels)) {
			counts[pod.Spec.NodeName]++
		}
	}
	if len(counts) == 0 {
		return nil
	}
	return sortedCounts(counts)
}

func endpointKey(ep *discoveryv1.Endpoint) string {
	if ep.TargetRef != nil && ep.TargetRef.UID != "" {
		return string(ep.TargetRef.UID)
	}
	if ep.TargetRef != nil {
		return ep.TargetRef.Namespace + "/" + ep.TargetRef.Name
	}
	if len(ep.Addresses) > 0 {
		return ep.Addresses[0]
	}
	return ""
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != "" && p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	// Manifests written by hand carry no status: count them as placed where they say.
	return true
}

func sortedCounts(m map[string]int) []NodeBackends {
	out := make([]NodeBackends, 0, len(m))
	for n, c := range m {
		out = append(out, NodeBackends{Node: n, Count: c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// addClients fills ClientNodes and Separated from the declared client Pods.
func (c *Cluster) addClients(p *Placement, backends []*corev1.Service, sel labels.Selector) {
	if sel == nil {
		sel = c.clients
	}
	if sel == nil || sel.Empty() {
		return
	}
	separated := true
	found := false
	for _, pod := range c.pods {
		if !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		found = true
		if pod.Spec.NodeName != "" {
			p.ClientNodes = append(p.ClientNodes, pod.Spec.NodeName)
		}
		if !keptApart(pod, backends, c.pods) {
			separated = false
		}
	}
	if !found {
		return
	}
	if p.ClientNodes == nil {
		p.ClientNodes = []string{}
	}
	p.Separated = factOf(separated)
}

// keptApart reports whether a required pod anti-affinity on hostname keeps the client Pod off
// every node that runs a backend of the given Services, in either direction: the client avoids
// the backends' labels, or every backend Pod avoids the client's labels.
func keptApart(client *corev1.Pod, backends []*corev1.Service, pods []*corev1.Pod) bool {
	for _, svc := range backends {
		if len(svc.Spec.Selector) == 0 {
			return false
		}
		backendLabels := labels.Set(svc.Spec.Selector)
		if avoids(client, backendLabels, svc.Namespace) {
			continue
		}
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		all, any := true, false
		for _, b := range pods {
			if b.Namespace != svc.Namespace || !sel.Matches(labels.Set(b.Labels)) {
				continue
			}
			any = true
			if !avoids(b, labels.Set(client.Labels), client.Namespace) {
				all = false
				break
			}
		}
		if !any || !all {
			return false
		}
	}
	return true
}

// avoids reports whether pod has a required anti-affinity term on the hostname topology that
// matches Pods with the given labels in namespace ns.
func avoids(pod *corev1.Pod, target labels.Set, ns string) bool {
	aff := pod.Spec.Affinity
	if aff == nil || aff.PodAntiAffinity == nil {
		return false
	}
	for _, term := range aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if term.TopologyKey != labelHostname || term.LabelSelector == nil {
			continue
		}
		if !termNamespaceMatches(&term, pod.Namespace, ns) {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err != nil || sel.Empty() {
			continue
		}
		if sel.Matches(target) {
			return true
		}
	}
	return false
}

func termNamespaceMatches(term *corev1.PodAffinityTerm, own, target string) bool {
	if term.NamespaceSelector != nil {
		// An empty namespace selector means all namespaces; anything else needs namespace
		// labels this package does not index, so only the empty one is trusted.
		return len(term.NamespaceSelector.MatchLabels) == 0 && len(term.NamespaceSelector.MatchExpressions) == 0
	}
	if len(term.Namespaces) == 0 {
		return own == target
	}
	for _, n := range term.Namespaces {
		if n == target {
			return true
		}
	}
	return false
}
