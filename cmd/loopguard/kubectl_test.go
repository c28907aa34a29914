package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/loopguard/loopguard/core"
)

func TestUserCommands(t *testing.T) {
	deploy := &core.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "client"}
	svc := &core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "shop", Name: "web"}
	f := func(names ...string) []core.PathElem {
		out := make([]core.PathElem, len(names))
		for i, n := range names {
			out[i] = core.PathElem{Field: n}
		}
		return out
	}
	cases := []struct {
		name string
		c    core.Change
		want string
	}{
		{"a field on a Service", core.Change{By: core.WriterUser, Object: svc, Edits: []core.Edit{{Path: f("spec", "externalTrafficPolicy"), Value: "Local"}}},
			`run: kubectl patch -n shop service web --type=merge -p '{"spec":{"externalTrafficPolicy":"Local"}}'`},
		{"a list on a Deployment, with a quote in a value", core.Change{By: core.WriterUser, Object: deploy, Edits: []core.Edit{{Path: f("spec", "template", "spec", "x"), Value: []any{"it's"}}}},
			`run: kubectl patch -n shop deployment.apps client --type=merge -p '{"spec":{"template":{"spec":{"x":["it'\''s"]}}}}'`},
		{"two edits merge into one patch", core.Change{By: core.WriterUser, Object: svc, Edits: []core.Edit{
			{Path: f("metadata", "annotations", "a.example/x"), Value: "1"}, {Path: f("metadata", "labels", "b"), Value: "2"}}},
			`run: kubectl patch -n shop service web --type=merge -p '{"metadata":{"annotations":{"a.example/x":"1"},"labels":{"b":"2"}}}'`},
		{"create-only: the patch goes where the object is defined", core.Change{By: core.WriterUser, Object: &core.ObjectKey{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "debug"}, CreateOnly: true,
			Edits: []core.Edit{{Path: f("spec", "affinity"), Value: map[string]any{"x": "y"}}}},
			`add to its definition, then recreate it: {"spec":{"affinity":{"x":"y"}}}`},
		{"delete", core.Change{By: core.WriterUser, Object: svc, Delete: true}, `run: kubectl delete -n shop service web`},
		{"a cluster-scoped object", core.Change{By: core.WriterUser, Object: &core.ObjectKey{APIVersion: "v1", Kind: "Node", Name: "n1"}, Delete: true}, `run: kubectl delete node n1`},
		{"a list element selected by key has no merge patch", core.Change{By: core.WriterUser, Object: svc,
			Edits: []core.Edit{{Path: []core.PathElem{{Field: "spec"}, {Field: "l4Listeners"}, {Keys: map[string]any{"port": 80}}, {Field: "snatEnable"}}, Value: true}}}, ""},
		{"no object (a support ticket)", core.Change{By: core.WriterUser, Resource: "Service shop/web", To: "ask for SNAT"}, ""},
		{"an object and no edits", core.Change{By: core.WriterUser, Object: svc, To: "Service shop/web-2"}, ""},
	}
	for _, tc := range cases {
		pc := changeOf(&tc.c)
		if got := userCommand(&pc); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

func TestCheckCommands(t *testing.T) {
	svc := core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "shop", Name: "web"}
	f := func(s string) core.PathElem { return core.PathElem{Field: s} }
	cases := []struct {
		name string
		c    core.Check
		want string
	}{
		{"each ingress point", core.Check{Object: svc, Each: []core.PathElem{f("status"), f("loadBalancer"), f("ingress")}, Edit: core.Edit{Path: []core.PathElem{f("ipMode")}}},
			`see: kubectl get -n shop service web -o jsonpath='{.status.loadBalancer.ingress[*].ipMode}'`},
		{"an annotation: dots escaped", core.Check{Object: svc, Edit: core.Edit{Path: []core.PathElem{f("metadata"), f("annotations"), f("service.beta.kubernetes.io/x")}}},
			`see: kubectl get -n shop service web -o jsonpath='{.metadata.annotations.service\.beta\.kubernetes\.io/x}'`},
		{"a keyed step has no template", core.Check{Object: svc, Edit: core.Edit{Path: []core.PathElem{f("spec"), {Keys: map[string]any{"port": 80}}, f("x")}}}, ""},
	}
	for _, tc := range cases {
		pc := checksOf([]core.Check{tc.c})[0]
		if got := checkCommand(&pc); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// The patch plan prints for a client Deployment is one the API server accepts as kubectl
// patch --type=merge sends it, and it leaves the Deployment with every term it had plus the
// one against the backends: the command is right, not only well formed.
func TestPrintedPatchOnARealAPIServer(t *testing.T) {
	srv := server.Get(t)
	ns := srv.Namespace(t)
	// The VKE example, with the billing client Pod made by a Deployment's ReplicaSet and
	// already keeping one term of its own, which the patch must keep.
	dir := t.TempDir()
	for _, f := range []string{"nodes.yaml", "profile.yaml", "services.yaml", "pods.yaml"} {
		b, err := os.ReadFile(filepath.Join(repoRoot, "examples/volcengine", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "pods.yaml" {
			bare := "metadata: {name: billing-7c9d4-x2v8n, namespace: orders, labels: {app: billing}}\nspec:\n"
			if !strings.Contains(string(b), bare) {
				t.Fatalf("examples/volcengine/pods.yaml no longer has %q", bare)
			}
			b = []byte(strings.Replace(string(b), bare, `metadata:
  name: billing-7c9d4-x2v8n
  namespace: orders
  labels: {app: billing, pod-template-hash: 7c9d4}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: billing-7c9d4, uid: u1, controller: true}]
spec:
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {topologyKey: topology.kubernetes.io/zone, labelSelector: {matchLabels: {app: billing}}}
`, 1))
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The line the user reads under the Deployment's change, as the table prints it.
	stdout, stderr, code := runCLI(t, "", "plan", "-f", dir, "--prefer", "lb-features")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var cmd string
	for _, line := range strings.Split(stdout, "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "run: kubectl patch -n orders deployment.apps billing ") {
			cmd = l
		}
	}
	prefix := "run: kubectl patch -n orders deployment.apps billing --type=merge -p '"
	if !strings.HasPrefix(cmd, prefix) || !strings.HasSuffix(cmd, "'") {
		t.Fatalf("the Deployment's command = %q, want it to start %q", cmd, prefix)
	}
	patch := strings.TrimSuffix(strings.TrimPrefix(cmd, prefix), "'")

	cs, err := kubernetes.NewForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	labels := map[string]string{"app": "billing"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "billing", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
					{TopologyKey: "topology.kubernetes.io/zone", LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}}}},
				Containers: []corev1.Container{{Name: "billing", Image: "registry.example.com/billing:2.4"}}}}}}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cs.AppsV1().Deployments(ns).Patch(ctx, "billing", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldValidation: "Strict"}) // as kubectl patch sends it
	if err != nil {
		t.Fatalf("the API server refused the printed patch %s: %v", patch, err)
	}
	want := []corev1.PodAffinityTerm{
		{TopologyKey: "topology.kubernetes.io/zone", LabelSelector: &metav1.LabelSelector{MatchLabels: labels}},
		{TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ledger"}}},
	}
	terms := got.Spec.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if diff := cmp.Diff(want, terms); diff != "" {
		js, _ := json.Marshal(terms)
		t.Errorf("terms after the patch (-want +got):\n%s\n%s", diff, js)
	}
}
