package campaign_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
	tcclbtest "github.com/loopguard/loopguard/providers/tencent/clbtest"
)

var (
	serviceGVR = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	ingressGVR = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
	configGVR  = schema.GroupVersionResource{Group: tencent.ServiceConfigGroup, Version: tencent.ServiceConfigVersion, Resource: "tkeserviceconfigs"}
)

func gvrOf(kind string) schema.GroupVersionResource {
	switch kind {
	case "Service":
		return serviceGVR
	case "Ingress":
		return ingressGVR
	}
	return configGVR
}

func configKey(ns, name string) core.ObjectKey {
	return core.ObjectKey{APIVersion: tencent.ServiceConfigGVK.GroupVersion().String(), Kind: tencent.ServiceConfigKind, Namespace: ns, Name: name}
}

// leaf is one value somewhere in an object: a path of field names (string) and list indices
// (int).
type leaf struct {
	path  []any
	value any
}

func (l leaf) String() string {
	var b strings.Builder
	for i, p := range l.path {
		switch p := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", p)
		case string:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p)
		}
	}
	return b.String()
}

// flatten lists every leaf of v under prefix.
func flatten(prefix []any, v any, out *[]leaf) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			flatten(append(append([]any{}, prefix...), k), v[k], out)
		}
	case []any:
		for i, e := range v {
			flatten(append(append([]any{}, prefix...), i), e, out)
		}
	default:
		*out = append(*out, leaf{path: prefix, value: v})
	}
}

func lookup(obj map[string]any, path []any) (any, bool) {
	var cur any = obj
	for _, p := range path {
		switch p := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[p]; !ok {
				return nil, false
			}
		case int:
			l, ok := cur.([]any)
			if !ok || p >= len(l) {
				return nil, false
			}
			cur = l[p]
		}
	}
	return cur, true
}

// sameJSON compares values the way the API server stores them (an int64 and a float64 of the
// same number are equal).
func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// foreignWriter stands for everyone else who writes the fleet's objects: the users who
// created them (kubectl), a platform team's controller that keeps editing annotations,
// labels and TkeServiceConfig entries loopguard does not own, and someone in the CLB console.
// It remembers every value it owns, and check reports those that did not survive.
type foreignWriter struct {
	dyn  dynamic.Interface
	ns   string
	dice *dice
	rev  int

	// want holds, per object, the leaves others own, by their path's text.
	want map[core.ObjectKey]map[string]leaf
	// exists says which objects the campaign knows to exist (loopguard creates some).
	known map[core.ObjectKey]bool
	// ownConfig marks TkeServiceConfigs others wrote (their spec is others', apart from the
	// entries loopguard merges into); configs loopguard created have only foreign metadata.
	ownConfig map[core.ObjectKey]bool

	// The CLB console: listeners others own entirely, and listeners loopguard sets one
	// attribute of.
	cloud     *tcclbtest.Server
	listeners map[string]tcclbtest.Listener // by ID, as others left them
}

func newForeignWriter(dyn dynamic.Interface, ns string, d *dice, cloud *tcclbtest.Server) *foreignWriter {
	return &foreignWriter{dyn: dyn, ns: ns, dice: d, want: map[core.ObjectKey]map[string]leaf{}, known: map[core.ObjectKey]bool{},
		ownConfig: map[core.ObjectKey]bool{}, cloud: cloud, listeners: map[string]tcclbtest.Listener{}}
}

// remember records the leaves of obj under metadata.annotations, metadata.labels and spec as
// others' except the paths loopguard may set.
func (f *foreignWriter) remember(key core.ObjectKey, obj map[string]any, loopguards ...string) {
	skip := map[string]bool{}
	for _, p := range loopguards {
		skip[p] = true
	}
	var leaves []leaf
	for _, part := range [][]any{{"metadata", "annotations"}, {"metadata", "labels"}, {"spec"}} {
		if v, ok := lookup(obj, part); ok {
			flatten(part, v, &leaves)
		}
	}
	for _, l := range leaves {
		if !skip[l.String()] {
			f.set(key, l)
		}
	}
}

func (f *foreignWriter) set(key core.ObjectKey, l leaf) {
	if f.want[key] == nil {
		f.want[key] = map[string]leaf{}
	}
	f.want[key][l.String()] = l
}

// create creates obj as kubectl would (or, with apply, as a GitOps tool does with
// server-side apply) and remembers it as others'.
func (f *foreignWriter) create(ctx context.Context, u *unstructured.Unstructured, apply bool, loopguards ...string) error {
	key := core.ObjectKey{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: f.ns, Name: u.GetName()}
	u.SetNamespace(f.ns)
	r := f.dyn.Resource(gvrOf(u.GetKind())).Namespace(f.ns)
	var err error
	if apply {
		_, err = r.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "platform-gitops"})
	} else {
		_, err = r.Create(ctx, u, metav1.CreateOptions{FieldManager: "kubectl-create"})
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", key, err)
	}
	f.remember(key, u.Object, loopguards...)
	f.known[key] = true
	if u.GetKind() == tencent.ServiceConfigKind {
		f.ownConfig[key] = true
	}
	return nil
}

// objectOf names the fleet object a request path is about, if any.
func (f *foreignWriter) objectOf(path string) (core.ObjectKey, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+3 < len(parts); i++ {
		if parts[i] != "namespaces" || parts[i+1] != f.ns {
			continue
		}
		name := parts[i+3]
		var key core.ObjectKey
		switch parts[i+2] {
		case "services":
			key = core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: f.ns, Name: name}
		case "ingresses":
			key = core.ObjectKey{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Namespace: f.ns, Name: name}
		case "tkeserviceconfigs":
			key = configKey(f.ns, name)
		default:
			return core.ObjectKey{}, false
		}
		return key, f.known[key]
	}
	return core.ObjectKey{}, false
}

// race edits the object a loopguard write is about to change, just before it reaches the
// server: an update loopguard read before then carries a stale resourceVersion.
func (f *foreignWriter) race(ctx context.Context, path string) bool {
	key, ok := f.objectOf(path)
	if !ok {
		return false
	}
	return f.edit(context.WithoutCancel(ctx), key) == nil
}

// edit changes what others own of one object: an annotation and a label on every kind, and
// on a TkeServiceConfig others wrote, its bandwidth and a listener entry's health check.
func (f *foreignWriter) edit(ctx context.Context, key core.ObjectKey) error {
	f.rev++
	rev := strconv.Itoa(f.rev)
	r := f.dyn.Resource(gvrOf(key.Kind)).Namespace(f.ns)
	if key.Kind == tencent.ServiceConfigKind && f.ownConfig[key] && f.dice.chance(0.5) {
		for range 5 {
			u, err := r.Get(ctx, key.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			bw := int64(50 + f.dice.intn(200))
			_ = unstructured.SetNestedField(u.Object, bw, "spec", "loadBalancer", "internetMaxBandwidthOut")
			edited := []leaf{{path: []any{"spec", "loadBalancer", "internetMaxBandwidthOut"}, value: bw}}
			for _, list := range []string{"l4Listeners", "l7Listeners"} {
				entries, _, _ := unstructured.NestedSlice(u.Object, "spec", "loadBalancer", list)
				for i, e := range entries {
					m, ok := e.(map[string]any)
					if !ok {
						continue
					}
					if _, ok := m["healthCheck"].(map[string]any); !ok {
						continue
					}
					iv := int64(5 + f.dice.intn(25))
					m["healthCheck"].(map[string]any)["intervalTime"] = iv
					edited = append(edited, leaf{path: []any{"spec", "loadBalancer", list, i, "healthCheck", "intervalTime"}, value: iv})
				}
				if len(entries) > 0 {
					_ = unstructured.SetNestedSlice(u.Object, entries, "spec", "loadBalancer", list)
				}
			}
			_, err = r.Update(ctx, u, metav1.UpdateOptions{FieldManager: "platform-team"})
			if apierrors.IsConflict(err) {
				continue
			}
			if err != nil {
				return err
			}
			for _, l := range edited {
				f.set(key, l)
			}
			return nil
		}
		return fmt.Errorf("edit %s: conflicts", key)
	}
	ann, label := "platform.example.com/rev", "platform-rev"
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q},"labels":{%q:%q}}}`, ann, rev, label, rev)
	if _, err := r.Patch(ctx, key.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "platform-team"}); err != nil {
		return err
	}
	f.set(key, leaf{path: []any{"metadata", "annotations", ann}, value: rev})
	f.set(key, leaf{path: []any{"metadata", "labels", label}, value: rev})
	return nil
}

// console changes, in the CLB console, attributes of a listener loopguard does not set.
func (f *foreignWriter) console(id string) error {
	l, ok := f.listeners[id]
	if !ok {
		return nil
	}
	name := fmt.Sprintf("console-%d", f.dice.intn(1000))
	if err := f.cloud.UpdateListener(id, func(x *tcclbtest.Listener) { x.Name = name }); err != nil {
		return err
	}
	l.Name = name
	f.listeners[id] = l
	return nil
}

// check returns what others own that is gone or changed: on the API server, and on the CLB
// apart from the one attribute loopguard sets on its listeners (owned: listener ID → attribute).
func (f *foreignWriter) check(ctx context.Context, owned map[string]string) ([]string, error) {
	var lost []string
	keys := make([]core.ObjectKey, 0, len(f.want))
	for k := range f.want {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, key := range keys {
		u, err := f.dyn.Resource(gvrOf(key.Kind)).Namespace(f.ns).Get(ctx, key.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", key, err)
		}
		names := make([]string, 0, len(f.want[key]))
		for n := range f.want[key] {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			l := f.want[key][n]
			got, ok := lookup(u.Object, l.path)
			if !ok || !sameJSON(got, l.value) {
				lost = append(lost, fmt.Sprintf("%s %s: want %v, got %v", key, n, l.value, got))
			}
		}
	}
	ids := make([]string, 0, len(f.listeners))
	for id := range f.listeners {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		want := f.listeners[id]
		got, ok := f.cloud.Listener(id)
		if !ok {
			lost = append(lost, "listener "+id+" is gone")
			continue
		}
		switch owned[id] {
		case "SnatEnable":
			want.SnatEnable = got.SnatEnable
		case "KeepaliveEnable":
			want.KeepaliveEnable = got.KeepaliveEnable
		}
		// AttrFlags carry SnatEnable; compare them without it.
		want.AttrFlags, got.AttrFlags = nil, nil
		want.CreateTime = got.CreateTime
		a, _ := json.Marshal(want)
		b, _ := json.Marshal(got)
		if string(a) != string(b) {
			lost = append(lost, fmt.Sprintf("listener %s: want %s, got %s", id, a, b))
		}
	}
	return lost, nil
}
