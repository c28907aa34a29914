package gateway_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/gateway"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// decode reads multi-document YAML: the core kinds the Cluster indexes as typed objects, the
// rest (Gateway API, the implementations' CRDs) as unstructured, as adapters/manifest does.
func decode(t *testing.T, docs string) []runtime.Object {
	t.Helper()
	var out []runtime.Object
	for _, doc := range strings.Split(docs, "\n---\n") {
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("decode: %v\n%s", err, doc)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		var typed runtime.Object
		switch u.GetKind() {
		case "Service":
			typed = &corev1.Service{}
		case "Node":
			typed = &corev1.Node{}
		case "Pod":
			typed = &corev1.Pod{}
		case "ConfigMap":
			typed = &corev1.ConfigMap{}
		case "EndpointSlice":
			typed = &discoveryv1.EndpointSlice{}
		}
		if typed == nil {
			out = append(out, u)
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, typed); err != nil {
			t.Fatalf("convert %s: %v", u.GetName(), err)
		}
		out = append(out, typed)
	}
	return out
}

// readExample reads examples/gateway, whose README shows what assess prints for it.
func readExample(t *testing.T) (core.ClusterProfile, []runtime.Object) {
	t.Helper()
	dir := filepath.Join("..", "..", "examples", "gateway")
	var objs []runtime.Object
	var profile core.ClusterProfile
	for _, f := range []string{"nodes.yaml", "gateways.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, decode(t, string(b))...)
	}
	b, err := os.ReadFile(filepath.Join(dir, "profile.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := core.ParseProfile("profile.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	profile = *p
	return profile, objs
}

func find(t *testing.T, objs []runtime.Object, kind, ns, name string) runtime.Object {
	t.Helper()
	for _, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		u := unstructured.Unstructured{Object: m}
		k := o.GetObjectKind().GroupVersionKind().Kind
		if k == "" {
			k = u.GetKind()
		}
		if k == kind && u.GetNamespace() == ns && u.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s/%s", kind, ns, name)
	return nil
}

func toYAML(t *testing.T, m map[string]any) string {
	t.Helper()
	b, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// judgeWeb evaluates Gateway edge/web among objs with the Gateway layer over the Kubernetes
// dialect, as assess does; err is the evaluation's (bad input, for the tests that look for it).
func judgeWeb(t *testing.T, objs []runtime.Object) (*core.Result, error) {
	t.Helper()
	c, err := core.NewCluster(core.ClusterProfile{}, objs...)
	if err != nil {
		t.Fatal(err)
	}
	return core.Evaluate(gateway.NewDialect(kubernetes.NewDialect(nil), nil), find(t, objs, "Gateway", "edge", "web"), c, core.Policy{})
}

// wantInvalid fails the test unless err is bad input whose text says want.
func wantInvalid(t *testing.T, err error, want string) {
	t.Helper()
	if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want bad input saying %q", err, want)
	}
}
