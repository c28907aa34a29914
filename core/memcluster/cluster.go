package memcluster

import (
	"context"
	"sort"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loopguard/loopguard/core"
)

// Cluster is an in-memory core.ClusterWriter. It is safe for concurrent use.
type Cluster struct {
	mu        sync.Mutex
	objs      map[core.ObjectKey]*unstructured.Unstructured
	rv        int
	writes    []string
	conflicts int
	onUpdate  func(*Cluster, *unstructured.Unstructured)
}

var _ core.ClusterWriter = (*Cluster)(nil)

// NewCluster returns a Cluster holding copies of objs.
func NewCluster(objs ...*unstructured.Unstructured) *Cluster {
	c := &Cluster{objs: map[core.ObjectKey]*unstructured.Unstructured{}}
	for _, o := range objs {
		c.putLocked(o)
	}
	return c
}

// KeyOf returns the key of an unstructured object.
func KeyOf(u *unstructured.Unstructured) core.ObjectKey {
	return core.ObjectKey{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

// ToUnstructured converts a typed object with its TypeMeta set, or one of the kinds
// loopguard reads (Service, Ingress, ConfigMap, Pod, Node, EndpointSlice), to unstructured.
func ToUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.DeepCopy(), nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetKind() == "" {
		if gvk, ok := kindOf(obj); ok {
			u.SetGroupVersionKind(gvk)
		}
	}
	return u, nil
}

func (c *Cluster) putLocked(u *unstructured.Unstructured) {
	c.rv++
	u = u.DeepCopy()
	u.SetResourceVersion(strconv.Itoa(c.rv))
	c.objs[KeyOf(u)] = u
}

// Put stores an object as another writer would, with a new resourceVersion.
func (c *Cluster) Put(u *unstructured.Unstructured) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(u)
}

// Objects returns copies of every object, ordered by key.
func (c *Cluster) Objects() []*unstructured.Unstructured {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]core.ObjectKey, 0, len(c.objs))
	for k := range c.objs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].String() < keys[j].String() || keys[i].String() == keys[j].String() && keys[i].APIVersion < keys[j].APIVersion
	})
	out := make([]*unstructured.Unstructured, len(keys))
	for i, k := range keys {
		out[i] = c.objs[k].DeepCopy()
	}
	return out
}

// Writes lists the writes made through the core.ClusterWriter methods ("apply Service ns/a").
func (c *Cluster) Writes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.writes...)
}

// InjectConflicts makes the next n Updates fail with core.ErrConflict after another writer
// changed the object (its labels gain "drivertest/touched").
func (c *Cluster) InjectConflicts(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conflicts = n
}

// OnNextUpdate runs hook once, before the next Update is applied: a concurrent writer.
func (c *Cluster) OnNextUpdate(hook func(*Cluster, *unstructured.Unstructured)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onUpdate = hook
}

// Get returns a copy of the object, or (nil, nil).
func (c *Cluster) Get(_ context.Context, k core.ObjectKey) (*unstructured.Unstructured, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o, ok := c.objs[k]; ok {
		return o.DeepCopy(), nil
	}
	return nil, nil
}

// Apply merges the partial object into the live one map by map (lists are replaced, as the
// API server does for lists without merge keys), or creates it.
func (c *Cluster) Apply(_ context.Context, u *unstructured.Unstructured) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, "apply "+KeyOf(u).String())
	live, ok := c.objs[KeyOf(u)]
	if !ok {
		c.putLocked(u)
		return nil
	}
	merged := live.DeepCopy()
	mergeMaps(merged.Object, u.DeepCopy().Object)
	c.putLocked(merged)
	return nil
}

func mergeMaps(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeMaps(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// Update replaces the object when its resourceVersion is current, else core.ErrConflict.
func (c *Cluster) Update(_ context.Context, u *unstructured.Unstructured) error {
	c.mu.Lock()
	hook := c.onUpdate
	c.onUpdate = nil
	c.mu.Unlock()
	if hook != nil {
		hook(c, u)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, "update "+KeyOf(u).String())
	live, ok := c.objs[KeyOf(u)]
	if !ok {
		return &core.KindError{Kind: core.ErrConflict, Msg: "not found"}
	}
	if c.conflicts > 0 {
		c.conflicts--
		other := live.DeepCopy()
		labels := other.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels["drivertest/touched"] = strconv.Itoa(c.rv)
		other.SetLabels(labels)
		c.putLocked(other)
		return &core.KindError{Kind: core.ErrConflict, Msg: "the object has been modified; please apply your changes to the latest version"}
	}
	if live.GetResourceVersion() != u.GetResourceVersion() {
		return &core.KindError{Kind: core.ErrConflict, Msg: "the object has been modified; please apply your changes to the latest version"}
	}
	c.putLocked(u)
	return nil
}

// Create stores a new object; core.ErrConflict when it exists.
func (c *Cluster) Create(_ context.Context, u *unstructured.Unstructured) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, "create "+KeyOf(u).String())
	if _, ok := c.objs[KeyOf(u)]; ok {
		return &core.KindError{Kind: core.ErrConflict, Msg: "already exists"}
	}
	c.putLocked(u)
	return nil
}

// Delete deletes an object if it still has the resourceVersion of u (core.ErrConflict
// otherwise); an object already gone is success.
func (c *Cluster) Delete(_ context.Context, u *unstructured.Unstructured) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := KeyOf(u)
	c.writes = append(c.writes, "delete "+k.String())
	cur, ok := c.objs[k]
	if !ok {
		return nil
	}
	if rv := u.GetResourceVersion(); rv != "" && rv != cur.GetResourceVersion() {
		return &core.KindError{Kind: core.ErrConflict, Msg: "the object changed since it was read"}
	}
	delete(c.objs, k)
	return nil
}

// kindOf names the kinds loopguard reads, whose list items come without TypeMeta.
func kindOf(obj runtime.Object) (schema.GroupVersionKind, bool) {
	switch obj.(type) {
	case *corev1.Service:
		return corev1.SchemeGroupVersion.WithKind("Service"), true
	case *corev1.ConfigMap:
		return corev1.SchemeGroupVersion.WithKind("ConfigMap"), true
	case *corev1.Pod:
		return corev1.SchemeGroupVersion.WithKind("Pod"), true
	case *corev1.Node:
		return corev1.SchemeGroupVersion.WithKind("Node"), true
	case *networkingv1.Ingress:
		return networkingv1.SchemeGroupVersion.WithKind("Ingress"), true
	case *discoveryv1.EndpointSlice:
		return discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), true
	}
	return schema.GroupVersionKind{}, false
}
