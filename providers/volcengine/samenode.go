package volcengine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// This file makes seed 003's restriction of Proxy mode concrete: "the client Pod and the server
// Pod must not run on the same node". It finds every declared client Pod that shares a node
// with a ready backend now, and renders the scheduling change that keeps new client Pods away:
// required pod anti-affinity on kubernetes.io/hostname against the backends' labels.

// CoLocation is one declared client Pod on a node that runs ready backends of the Service.
type CoLocation struct {
	// Client is the Pod as namespace/name.
	Client string
	Node   string
	// Backends is the number of ready backends on that node; Total on all nodes.
	Backends, Total int
	// Backend is set when the client Pod is itself a backend of the Service (it calls its own
	// Service through the CLB); no scheduling rule can separate it from itself.
	Backend bool
}

func (c CoLocation) String() string {
	s := fmt.Sprintf("client Pod %s runs on node %s with %d of the %d ready backends", c.Client, c.Node, c.Backends, c.Total)
	if c.Backend {
		s += " (it is one of them)"
	}
	return s
}

// ClientSelector returns the selector of a Service's declared client Pods: its
// loopguard.io/clients annotation, else the profile's clients. It is nil when neither says.
func ClientSelector(svc *corev1.Service, p *core.ClusterProfile) (labels.Selector, error) {
	ov, errs := dialect.ReadOverrides(svc)
	if ov.Clients != nil {
		return ov.Clients, nil
	}
	for _, fe := range errs {
		if fe.Field == dialect.AnnotationPath(core.AnnotationClients).String() {
			return nil, dialect.Invalid(core.ObjectRef{Kind: "Service", Namespace: svc.Namespace, Name: svc.Name}, field.ErrorList{fe})
		}
	}
	if p == nil || p.Clients == "" {
		return nil, nil
	}
	sel, err := labels.Parse(p.Clients)
	if err != nil {
		return nil, dialect.Invalid(core.ObjectRef{Kind: core.ProfileKind}, field.ErrorList{field.Invalid(field.NewPath("clients"), p.Clients, err.Error())})
	}
	return sel, nil
}

// SameNode lists every declared client Pod (matching clients, in any namespace, as core's
// placement counts them) that runs on a node with ready backends of svc, in the Cluster's Pod
// order. Backends come from the Service's EndpointSlices, or its selector's Pods when no slice
// is known. It returns nil when clients is nil or nothing is co-located.
func SameNode(svc *corev1.Service, c *core.Cluster, clients labels.Selector) []CoLocation {
	if clients == nil || clients.Empty() || c == nil {
		return nil
	}
	pl := c.Placement(svc, labels.Nothing(), core.NodeFilter{})
	total := pl.TotalBackends()
	if total == 0 {
		return nil
	}
	var own labels.Selector
	if len(svc.Spec.Selector) > 0 {
		own = labels.SelectorFromSet(svc.Spec.Selector)
	}
	onNode := make(map[string]int, len(pl.Backends))
	for _, b := range pl.Backends {
		onNode[b.Node] = b.Count
	}
	var out []CoLocation
	for _, pod := range c.Pods() {
		node := pod.Spec.NodeName
		if node == "" || !clients.Matches(labels.Set(pod.Labels)) || !running(pod) {
			continue
		}
		if n := onNode[node]; n > 0 {
			out = append(out, CoLocation{Client: pod.Namespace + "/" + pod.Name, Node: node, Backends: n, Total: total,
				Backend: own != nil && pod.Namespace == svc.Namespace && own.Matches(labels.Set(pod.Labels))})
		}
	}
	return out
}

// running: a Pod that has finished cannot open connections; a manifest without status counts.
func running(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// SeparationPatch is the scheduling change for one client workload: the complete required
// anti-affinity list after the change (the Pods' existing terms plus one against the
// backends), as a patch. The list has no merge key, so a patch replaces it whole; that is why
// the existing terms are in it. How to apply it (a kubectl command, a manifest edit) is the
// renderer's business: the CLI prints a kubectl patch.
type SeparationPatch struct {
	// Workload is the object to change: a Deployment, StatefulSet, DaemonSet or ReplicaSet,
	// or, when the Pods have no such controller, the controller or Pod itself (Patchable false).
	Workload core.ObjectKey
	// Patchable is false for objects whose Pod template cannot be patched in place (a Job, a
	// bare Pod): the term must go into whatever creates them.
	Patchable bool
	// Pods are the client Pods the change covers, as namespace/name.
	Pods []string
	// Term is the term added; Terms the complete list after the change.
	Term  corev1.PodAffinityTerm
	Terms []corev1.PodAffinityTerm
	// Path is the field changed, Patch the change as a JSON merge patch (and, the list having
	// no merge key, as a strategic merge patch too).
	Path  []core.PathElem
	Patch string
}

// SeparationPatches renders, for every workload of declared client Pods that does not already
// keep away from the backends of svc, the anti-affinity change that does. Pods that are
// backends of svc themselves are left out (nothing separates a Pod from itself). It returns nil
// when svc has no selector: there are no backend labels to keep away from.
func SeparationPatches(svc *corev1.Service, c *core.Cluster, clients labels.Selector) []SeparationPatch {
	if clients == nil || clients.Empty() || c == nil || len(svc.Spec.Selector) == 0 {
		return nil
	}
	own := labels.SelectorFromSet(svc.Spec.Selector)
	byKey := map[core.ObjectKey]*SeparationPatch{}
	var order []core.ObjectKey
	for _, pod := range c.Pods() {
		if !clients.Matches(labels.Set(pod.Labels)) || !running(pod) {
			continue
		}
		if pod.Namespace == svc.Namespace && own.Matches(labels.Set(pod.Labels)) {
			continue
		}
		if avoidsBackends(pod, svc) {
			continue
		}
		key, patchable := workloadOf(pod)
		sp, ok := byKey[key]
		if !ok {
			sp = newSeparationPatch(pod, svc, key, patchable)
			byKey[key] = sp
			order = append(order, key)
		}
		sp.Pods = append(sp.Pods, pod.Namespace+"/"+pod.Name)
	}
	out := make([]SeparationPatch, 0, len(order))
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	return out
}

func newSeparationPatch(pod *corev1.Pod, svc *corev1.Service, key core.ObjectKey, patchable bool) *SeparationPatch {
	term := corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: maps(svc.Spec.Selector)},
		TopologyKey:   corev1.LabelHostname,
	}
	if pod.Namespace != svc.Namespace {
		term.Namespaces = []string{svc.Namespace}
	}
	var terms []corev1.PodAffinityTerm
	if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
	}
	terms = append(terms, term)
	sp := &SeparationPatch{Workload: key, Patchable: patchable, Term: term, Terms: terms}
	anti := []core.PathElem{dialect.F("affinity"), dialect.F("podAntiAffinity"), dialect.F("requiredDuringSchedulingIgnoredDuringExecution")}
	body := map[string]any{"affinity": map[string]any{"podAntiAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": terms}}}
	var patch any = map[string]any{"spec": body}
	sp.Path = append([]core.PathElem{dialect.F("spec")}, anti...)
	if key.Kind != "Pod" {
		patch = map[string]any{"spec": map[string]any{"template": map[string]any{"spec": body}}}
		sp.Path = append([]core.PathElem{dialect.F("spec"), dialect.F("template"), dialect.F("spec")}, anti...)
	}
	js, _ := json.Marshal(patch) // maps and API types always marshal
	sp.Patch = string(js)
	return sp
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// workloadOf finds the object whose Pod template makes pod. A ReplicaSet named
// <deployment>-<pod-template-hash> belongs to that Deployment (the Deployment controller names
// them so and labels their Pods with the hash).
func workloadOf(pod *corev1.Pod) (core.ObjectKey, bool) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return core.ObjectKey{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name}, false
	}
	key := core.ObjectKey{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: pod.Namespace, Name: ref.Name}
	switch ref.Kind {
	case "ReplicaSet":
		if h := pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; h != "" {
			if name, ok := strings.CutSuffix(ref.Name, "-"+h); ok && name != "" {
				return core.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: pod.Namespace, Name: name}, true
			}
		}
		return key, true
	case "Deployment", "StatefulSet", "DaemonSet":
		return key, true
	}
	return key, false
}

// avoidsBackends reports whether the Pod already has a required anti-affinity term on the
// hostname topology that matches the backends' labels in their namespace (as the core's
// placement reads it).
func avoidsBackends(pod *corev1.Pod, svc *corev1.Service) bool {
	a := pod.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil {
		return false
	}
	target := labels.Set(svc.Spec.Selector)
	for i := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		term := &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i]
		if term.TopologyKey != corev1.LabelHostname || term.LabelSelector == nil {
			continue
		}
		switch {
		case term.NamespaceSelector != nil:
			if len(term.NamespaceSelector.MatchLabels) > 0 || len(term.NamespaceSelector.MatchExpressions) > 0 {
				continue
			}
		case len(term.Namespaces) == 0:
			if pod.Namespace != svc.Namespace {
				continue
			}
		case !slices.Contains(term.Namespaces, svc.Namespace):
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err == nil && !sel.Empty() && sel.Matches(target) {
			return true
		}
	}
	return false
}

// probability renders a core probability for people: "0.5 (1 in 2)".
func probability(p core.Probability) string {
	if !p.Known() {
		return "unknown"
	}
	v := p.Value()
	if v > 0 && v < 1 {
		if n := 1 / v; n == float64(int(n)) {
			return p.String() + " (1 in " + strconv.Itoa(int(n)) + ")"
		}
	}
	return p.String()
}
