package kube_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/loopguard/loopguard/adapters/kube"
	"github.com/loopguard/loopguard/adapters/manifest"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
)

var tkeServiceConfigs = schema.GroupVersionResource{Group: "cloud.tencent.com", Version: "v1alpha1", Resource: "tkeserviceconfigs"}

// TestGatherSeesWhatTheYAMLSays writes a cluster's manifests to a real API server, reads them
// back with Gather, and requires loopguard to reach the same verdicts and decisions from both:
// whatever the server adds (defaults, UIDs, NodePorts, managed fields) must not change them.
func TestGatherSeesWhatTheYAMLSays(t *testing.T) {
	srv := server.Get(t)
	ns := srv.Namespace(t)
	ctx := context.Background()
	w, err := kube.NewWriter(srv.Config(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var r manifest.Reader
	set, errs := r.Read("testdata/tke-cluster.yaml")
	if len(errs) > 0 || len(set.Profiles) != 1 {
		t.Fatalf("read fixture: %v (profiles %d)", errs, len(set.Profiles))
	}
	profile := *set.Profiles[0].Profile
	var fromYAML []runtime.Object
	for _, o := range set.Objects {
		obj := o.Object.DeepCopyObject()
		if m, ok := obj.(interface{ SetNamespace(string) }); ok && obj.GetObjectKind().GroupVersionKind().Kind != "Node" {
			m.SetNamespace(ns)
		}
		fromYAML = append(fromYAML, obj)
		u := &unstructured.Unstructured{}
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		if err := u.UnmarshalJSON(raw); err != nil {
			t.Fatal(err)
		}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "status")
		if err := w.Create(ctx, u); err != nil {
			t.Fatalf("create %s: %v", u.GetName(), err)
		}
	}
	live, err := kube.Gather(ctx, srv.Config(), &kube.GatherOptions{Namespace: ns, Custom: []schema.GroupVersionResource{tkeServiceConfigs}})
	if err != nil {
		t.Fatal(err)
	}
	// Other tests share the server; keep the Nodes of this fixture only.
	var mine []runtime.Object
	for _, o := range live {
		if n, ok := o.(interface{ GetName() string }); ok && o.GetObjectKind().GroupVersionKind().Kind == "Node" && n.GetName()[:7] != "gather-" {
			continue
		}
		mine = append(mine, o)
	}
	want := evaluate(t, profile, fromYAML)
	got := evaluate(t, profile, mine)
	if len(want) != 4 {
		t.Fatalf("evaluated %d objects from YAML, want 4", len(want))
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(core.Probability{})); diff != "" {
		t.Errorf("verdicts from the live cluster differ from the YAML's (-yaml +live):\n%s", diff)
	}
}

type verdict struct {
	Exposure   core.Exposure
	Assessment core.Assessment
	Decision   core.Decision
}

func evaluate(t *testing.T, p core.ClusterProfile, objs []runtime.Object) map[string]verdict {
	t.Helper()
	c, err := core.NewCluster(p, objs...)
	if err != nil {
		t.Fatal(err)
	}
	d := tencent.NewDialect(nil)
	out := map[string]verdict{}
	for _, o := range objs {
		switch k := o.GetObjectKind().GroupVersionKind().Kind; k {
		case "Service", "Ingress":
			res, err := core.Evaluate(d, o, c, p.Policy)
			if err != nil {
				t.Fatalf("evaluate %s: %v", k, err)
			}
			out[res.Exposure.Object.String()] = verdict{res.Exposure, res.Assessment, res.Decision}
		}
	}
	return out
}

// TestGatherReadsTheConfigMapsNamed: besides kube-system's, Gather reads exactly the
// ConfigMaps GatherOptions.ConfigMaps names once it has read the rest (the one a Gateway's
// parametersRef names, GET; Istio's class defaults, a labelled list), skips a named one that
// does not exist, and reads a served custom resource (Cilium's CiliumGatewayClassConfig) while
// skipping one the server does not serve.
func TestGatherReadsTheConfigMapsNamed(t *testing.T) {
	srv := server.Get(t)
	gwNS, istioNS := srv.Namespace(t), srv.Namespace(t)
	ctx := context.Background()
	cs := srv.Client()
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "mesh-options"}, Data: map[string]string{"service": "{}"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: gwNS, Name: "unrelated"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: istioNS, Name: "defaults", Labels: map[string]string{"gateway.istio.io/defaults-for-class": "istio"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: istioNS, Name: "istio-ca-root-cert"}},
	} {
		if _, err := cs.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dyn, err := dynamic.NewForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	cgcc := schema.GroupVersionResource{Group: "cilium.io", Version: "v2alpha1", Resource: "ciliumgatewayclassconfigs"}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumGatewayClassConfig",
		"metadata": map[string]any{"name": "cfg"}, "spec": map[string]any{"service": map[string]any{"type": "NodePort"}}}}
	if _, err := dyn.Resource(cgcc).Namespace(gwNS).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	notServed := schema.GroupVersionResource{Group: "gateway.envoyproxy.io", Version: "v1alpha1", Resource: "envoyproxies"}
	var sawCGCC bool
	objs, err := kube.Gather(ctx, srv.Config(), &kube.GatherOptions{Namespace: gwNS, Custom: []schema.GroupVersionResource{notServed, cgcc},
		ConfigMaps: func(read []runtime.Object) []kube.ConfigMapRef {
			for _, o := range read {
				if o.GetObjectKind().GroupVersionKind().Kind == "CiliumGatewayClassConfig" {
					sawCGCC = true
				}
			}
			return []kube.ConfigMapRef{{Namespace: gwNS, Name: "mesh-options"}, {Namespace: gwNS, Name: "missing"},
				{Namespace: istioNS, LabelSelector: "gateway.istio.io/defaults-for-class"}}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !sawCGCC {
		t.Error("the ConfigMaps callback did not see the CiliumGatewayClassConfig read before it")
	}
	var got []string
	for _, o := range objs {
		cm, ok := o.(*corev1.ConfigMap)
		if !ok || cm.Namespace == metav1.NamespaceSystem {
			continue
		}
		if cm.GetObjectKind().GroupVersionKind().Kind != "ConfigMap" {
			t.Errorf("ConfigMap %s/%s read without its kind", cm.Namespace, cm.Name)
		}
		got = append(got, cm.Namespace+"/"+cm.Name)
	}
	if want := []string{gwNS + "/mesh-options", istioNS + "/defaults"}; !cmp.Equal(got, want) {
		t.Errorf("ConfigMaps read outside kube-system: %v, want %v", got, want)
	}
}
