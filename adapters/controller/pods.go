package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cachedPod is what the informer cache keeps of a Pod: what core.Cluster reads (name,
// namespace, labels, node, anti-affinity, phase and readiness) in 288 bytes, where a
// corev1.Pod struct takes 1,280 however little of it is set: 50 MB less with 50,000 Pods
// (docs/controller.md, "Scale (measured)").
// Its strings that repeat from Pod to Pod (namespace, node, label keys and values) are
// interned.
//
// The manager's cache then holds cachedPods for corev1.Pod: a Get or List of Pods through
// the manager's client fails ("cache had type ..."); the controller reads them with
// listPods.
type cachedPod struct {
	metav1.ObjectMeta
	NodeName string
	Phase    corev1.PodPhase
	// Ready is the status of the Pod's Ready condition, "" when it has none.
	Ready    corev1.ConditionStatus
	Affinity *corev1.Affinity
	// Containers holds, for Traefik's Pods only, the arguments that are its static
	// configuration: the Service it publishes Gateways from and its entry points
	// (providers/gateway, docs/gateway.md). Every other Pod keeps none.
	Containers []corev1.Container
}

var _ client.Object = (*cachedPod)(nil)

// GetObjectKind: a cachedPod carries no TypeMeta (32 bytes less per Pod); nothing reads the
// kind of a cached object.
func (p *cachedPod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies what a cachedPod holds.
func (p *cachedPod) DeepCopyObject() runtime.Object {
	out := *p
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if p.Affinity != nil {
		out.Affinity = p.Affinity.DeepCopy()
	}
	if p.Containers != nil {
		out.Containers = make([]corev1.Container, len(p.Containers))
		for i := range p.Containers {
			p.Containers[i].DeepCopyInto(&out.Containers[i])
		}
	}
	return &out
}

// pod is the corev1.Pod that core.Cluster reads; it shares the cachedPod's labels and
// affinity (read-only, as every cached object).
func (p *cachedPod) pod() *corev1.Pod {
	out := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, Labels: p.Labels,
			ResourceVersion: p.ResourceVersion},
		Spec:   corev1.PodSpec{NodeName: p.NodeName, Affinity: p.Affinity, Containers: p.Containers},
		Status: corev1.PodStatus{Phase: p.Phase},
	}
	if p.Ready != "" {
		out.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: p.Ready}}
	}
	return out
}

// podCompactor is the Pod informer's transform (compact). Pods with equal labels (the
// replicas of one workload) share one labels map: a small map costs about 300 bytes, as much
// again as the cachedPod itself.
type podCompactor struct {
	mu sync.Mutex
	// sets holds the labels maps handed out, by their canonical text; it is emptied when it
	// reaches maxLabelSets, so what it keeps of Pods long gone stays bounded (the cached Pods
	// keep their maps).
	sets map[string]map[string]string
}

// maxLabelSets bounds podCompactor.sets: at most about 1 MB of maps no Pod holds any more.
// The replicas of a workload arrive together (a list returns them in name order, a rollout
// creates them in a burst), so sharing works with far fewer sets than a cluster has.
const maxLabelSets = 4096

func newPodCompactor() *podCompactor { return &podCompactor{sets: map[string]map[string]string{}} }

// compact makes a *corev1.Pod a *cachedPod before it enters the cache. Anything else (an
// object already transformed) passes unchanged.
func (pc *podCompactor) compact(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	c := &cachedPod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: intern(p.Namespace), UID: p.UID,
			ResourceVersion: p.ResourceVersion, Labels: pc.labels(p.Labels)},
		NodeName: intern(p.Spec.NodeName),
		Phase:    corev1.PodPhase(intern(string(p.Status.Phase))),
		Affinity: p.Spec.Affinity,
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			c.Ready = cond.Status
		}
	}
	c.Containers = traefikArgs(p)
	return c, nil
}

// labels returns a labels map equal to in, shared with the cached Pods that have the same.
// A podCompactor without sets (a zero one) shares nothing.
func (pc *podCompactor) labels(in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	if pc.sets == nil {
		return internLabels(in)
	}
	keys := make([]string, 0, len(in))
	n := 0
	for k, v := range in {
		keys = append(keys, k)
		n += len(k) + len(v) + 2
	}
	slices.Sort(keys)
	var b strings.Builder
	b.Grow(n)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(in[k])
		b.WriteByte(0)
	}
	key := b.String()
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if m, ok := pc.sets[key]; ok {
		return m
	}
	if len(pc.sets) >= maxLabelSets {
		clear(pc.sets)
	}
	m := internLabels(in)
	pc.sets[key] = m
	return m
}

// intern returns the one copy of s that every cached Pod shares; it is freed once no object
// holds it.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

func internLabels(in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[intern(k)] = intern(v)
	}
	return out
}

// podState is what placement reads of a Pod, from a cached Pod of either form.
type podState struct {
	node  string
	phase corev1.PodPhase
	ready bool
}

func stateOf(o client.Object) podState {
	switch p := o.(type) {
	case *cachedPod:
		return podState{node: p.NodeName, phase: p.Phase, ready: p.Ready == corev1.ConditionTrue}
	case *corev1.Pod:
		return podState{node: p.Spec.NodeName, phase: p.Status.Phase, ready: podReady(p)}
	}
	return podState{}
}

// listPods returns the cached Pods of namespace ns ("" for every namespace) that sel selects
// (nil for all) as the corev1.Pods core.Cluster reads. From the manager's cache it reads the
// Pod informer's store, which holds cachedPods (ManagerOptions); from any other reader (a
// cache built without ManagerOptions' transform, a fake client) it lists corev1.Pods.
func listPods(ctx context.Context, r client.Reader, ns string, sel labels.Selector) ([]*corev1.Pod, error) {
	if store, ok := podStore(ctx, r); ok {
		var items []any
		if ns == "" {
			items = store.List()
		} else {
			var err error
			if items, err = store.ByIndex(toolscache.NamespaceIndex, ns); err != nil {
				return nil, err
			}
		}
		out := make([]*corev1.Pod, 0, len(items))
		for _, it := range items {
			switch p := it.(type) {
			case *cachedPod:
				if sel == nil || sel.Matches(labels.Set(p.Labels)) {
					out = append(out, p.pod())
				}
			case *corev1.Pod:
				if sel == nil || sel.Matches(labels.Set(p.Labels)) {
					out = append(out, p)
				}
			default:
				return nil, fmt.Errorf("the Pod cache holds a %T", it)
			}
		}
		return out, nil
	}
	opts := []client.ListOption{client.UnsafeDisableDeepCopy, client.InNamespace(ns)}
	if sel != nil {
		opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, opts...); err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, len(pods.Items))
	for i := range pods.Items {
		out[i] = &pods.Items[i]
	}
	return out, nil
}

// podStore returns the Pod informer's store when r is an informer cache (the manager's).
func podStore(ctx context.Context, r client.Reader) (toolscache.Indexer, bool) {
	informers, ok := r.(cache.Informers)
	if !ok {
		return nil, false
	}
	// Blocking until the informer has synced, as the cache's List does: a reconcile that runs
	// before the Pod informer has listed (SetupGateways alone starts it on first use) would
	// otherwise read no Pods and judge without Traefik's arguments or any client placement.
	inf, err := informers.GetInformer(ctx, &corev1.Pod{}, cache.BlockUntilSynced(true))
	if err != nil {
		return nil, false
	}
	si, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil, false
	}
	return si.GetIndexer(), true
}

// traefikArgs keeps, per container, the arguments that configure Traefik's Gateway provider and
// entry points; nil for any other Pod.
func traefikArgs(p *corev1.Pod) []corev1.Container {
	var out []corev1.Container
	for _, c := range p.Spec.Containers {
		var kept []string
		for _, a := range append(append([]string(nil), c.Command...), c.Args...) {
			if l := strings.ToLower(a); strings.HasPrefix(l, "--providers.kubernetesgateway") || strings.HasPrefix(l, "--entrypoints.") {
				kept = append(kept, a)
			}
		}
		if len(kept) > 0 {
			out = append(out, corev1.Container{Name: c.Name, Args: kept})
		}
	}
	return out
}
