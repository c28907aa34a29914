package controller

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
)

// deployNamespace is the namespace deploy/ installs into; the tests put the ServiceAccount and
// the Lease's Role into their own namespace instead.
const deployNamespace = "loopguard-system"

// installRBAC creates the ServiceAccount and exactly the RBAC objects of the deploy/ files
// (cluster-scoped names suffixed with the test's namespace, so tests sharing the server do
// not collide) and returns a configuration impersonating that ServiceAccount, and the
// namespace of its Lease.
func installRBAC(files ...string) func(h *harness) (*rest.Config, string) {
	return func(h *harness) (*rest.Config, string) {
		t, ctx, cs := h.t, context.Background(), h.srv.Client()
		if _, err := cs.CoreV1().ServiceAccounts(h.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "loopguard"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ns := func(n string) string {
			if n == deployNamespace {
				return h.ns
			}
			return n
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, doc := range bytes.Split(data, []byte("\n---")) {
				obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				switch o := obj.(type) {
				case *rbacv1.ClusterRole:
					o.Name += "-" + h.ns
					_, err = cs.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
				case *rbacv1.ClusterRoleBinding:
					o.Name += "-" + h.ns
					o.RoleRef.Name += "-" + h.ns
					for i := range o.Subjects {
						o.Subjects[i].Namespace = ns(o.Subjects[i].Namespace)
					}
					_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
				case *rbacv1.Role:
					o.Namespace = ns(o.Namespace)
					if o.Namespace != h.ns {
						o.Name += "-" + h.ns
					}
					_, err = cs.RbacV1().Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
				case *rbacv1.RoleBinding:
					o.Namespace = ns(o.Namespace)
					if o.Namespace != h.ns {
						o.Name += "-" + h.ns
						o.RoleRef.Name += "-" + h.ns
					}
					for i := range o.Subjects {
						o.Subjects[i].Namespace = ns(o.Subjects[i].Namespace)
					}
					_, err = cs.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
				default:
					t.Fatalf("%s: unexpected %T", f, obj)
				}
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
			}
		}
		cfg := h.srv.Config()
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + h.ns + ":loopguard",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + h.ns, "system:authenticated"}}
		// The server enforces RBAC: the ServiceAccount cannot do what the rules leave out.
		sa, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sa.CoreV1().Secrets(h.ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("listing Secrets as the ServiceAccount: %v, want Forbidden", err)
		}
		return cfg, h.ns
	}
}

func tke(t *testing.T) core.Provider {
	p, err := tencent.NewProvider(nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRBACReportOnly runs report-only mode as deploy/base's ServiceAccount, with leader
// election, with exactly its RBAC: a missing verb leaves an informer unsynced or a write
// forbidden, and the verdict never appears.
func TestRBACReportOnly(t *testing.T) {
	reportOnly(t, startWith(t, false, tke(t), installRBAC("../../deploy/base/rbac.yaml")))
}

// TestRBACEnforce runs enforcing mode as the ServiceAccount with deploy/enforce's RBAC.
func TestRBACEnforce(t *testing.T) {
	enforcing(t, startWith(t, true, tke(t), installRBAC("../../deploy/base/rbac.yaml", "../../deploy/components/enforce/rbac.yaml")))
}

// deploy/ as kustomize renders it (every overlay, run as the rendered ServiceAccount) is
// tested by the deploy/test module, which keeps kustomize out of this module's go.mod.

// withoutRule writes, into a temporary folder, the RBAC file with the ClusterRole's rule for
// resource taken out (an operator's trimmed copy), and returns the copy's path. The other
// objects are kept as they are.
func withoutRule(t *testing.T, file, resource string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	removed := 0
	docs := bytes.Split(data, []byte("\n---"))
	for i, doc := range docs {
		var role rbacv1.ClusterRole
		if err := yaml.Unmarshal(doc, &role); err != nil || role.Kind != "ClusterRole" {
			continue
		}
		kept := role.Rules[:0]
		for _, r := range role.Rules {
			if slices.Contains(r.Resources, resource) {
				if len(r.Resources) != 1 {
					t.Fatalf("%s: the rule for %s grants %v too", file, resource, r.Resources)
				}
				removed++
				continue
			}
			kept = append(kept, r)
		}
		role.Rules = kept
		if docs[i], err = yaml.Marshal(&role); err != nil {
			t.Fatal(err)
		}
		docs[i] = append([]byte("\n"), docs[i]...)
	}
	if removed != 1 {
		t.Fatalf("%s: %d ClusterRole rules for %s, want 1", file, removed, resource)
	}
	out := filepath.Join(t.TempDir(), filepath.Base(file))
	if err := os.WriteFile(out, bytes.Join(docs, []byte("\n---")), 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGatewayWithoutTheConfigMapRule runs the Gateway reconciler with deploy/base's RBAC minus
// the ClusterRole's rule on configmaps, as an operator who trimmed it would. An Istio Gateway,
// whose class defaults and parameters are ConfigMaps, is not judged without them: its verdict
// stays the one written before, and a Warning Event on it names each ConfigMap not read, the
// verb and resource refused, and the rule to grant. The controller keeps running: a Gateway
// that needs no ConfigMap is judged and re-judged meanwhile, and once the rule is granted the
// Istio Gateway is judged with its ConfigMaps, without a restart.
func TestGatewayWithoutTheConfigMapRule(t *testing.T) {
	e := newGatewayEnv(t, []string{"shop", "istio-system", "envoy-gateway-system"})
	const subnet = "service.kubernetes.io/qcloud-loadbalancer-internal-subnetid"
	e.create(gatewayClassesRes, "", `{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: istio},
  spec: {controllerName: istio.io/gateway-controller}}`)
	e.create(gatewayClassesRes, "", `{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: eg},
  spec: {controllerName: gateway.envoyproxy.io/gatewayclass-controller}}`)
	e.create(gatewaysRes, "shop", `{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: mesh, namespace: shop},
  spec: {gatewayClassName: istio, infrastructure: {annotations: {`+subnet+`: subnet-3f9a2c1d}, parametersRef: {group: "", kind: ConfigMap, name: mesh-options}},
    listeners: [{name: http, port: 80, protocol: HTTP}]}}`)
	e.create(gatewaysRes, "shop", `{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: web, namespace: shop},
  spec: {gatewayClassName: eg, infrastructure: {annotations: {`+subnet+`: subnet-3f9a2c1d}}, listeners: [{name: http, port: 80, protocol: HTTP}]}}`)
	// The verdict the controller wrote before the rule was trimmed, under its field manager.
	const previous = ReasonNoLoop + ": judged before the rule was trimmed"
	force := true
	if _, err := e.dyn.Resource(gatewaysRes).Namespace("shop").Apply(e.ctx, "mesh", verdictPatch(&unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": "shop", "name": "mesh"}}}, map[string]string{AnnotationVerdict: previous}),
		metav1.ApplyOptions{FieldManager: VerdictFieldManager, Force: force}); err != nil {
		t.Fatal(err)
	}
	// The class defaults set the remedy: judged with them the Gateway is safe, without them at
	// risk; either would replace the previous verdict.
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	e.create(configMaps, "istio-system", `{apiVersion: v1, kind: ConfigMap, metadata: {name: istio-default-gatewayclass-istio, namespace: istio-system,
  labels: {gateway.istio.io/defaults-for-class: istio}},
  data: {service: "metadata: {annotations: {service.cloud.tencent.com/prevent-loopback: \"true\"}}"}}`)

	g := e.startGateways(&Options{Profile: ipvs}, withoutRule(t, "../../deploy/base/rbac.yaml", "configmaps"))

	verdicts := func() string { return "mesh=" + e.verdict("shop", "mesh") + " | web=" + e.verdict("shop", "web") }
	until(t, e.ctx, "Gateway web, which needs no ConfigMap, judged", func() bool {
		return strings.HasPrefix(e.verdict("shop", "web"), ReasonAtRisk+":")
	}, verdicts)
	var note string
	until(t, e.ctx, "a "+ReasonConfigMapsUnreadable+" Event on Gateway mesh", func() bool {
		list, err := e.cs.EventsV1().Events("shop").List(e.ctx, metav1.ListOptions{FieldSelector: "regarding.name=mesh"})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range list.Items {
			if ev.Reason == ReasonConfigMapsUnreadable && ev.Type == corev1.EventTypeWarning && ev.Regarding.Kind == "Gateway" {
				note = ev.Note
				return true
			}
		}
		return false
	}, func() string { return verdicts() })
	for _, want := range []string{
		"ConfigMap shop/mesh-options", `the ConfigMaps of istio-system labelled gateway.istio.io/defaults-for-class`, // what was not read
		`cannot list resource "configmaps"`,                     // the verb and resource refused, in the API server's words
		"list and watch on configmaps", "deploy/base/rbac.yaml", // the rule to grant
		"the verdict is left as it was",
	} {
		if !strings.Contains(note, want) {
			t.Errorf("the Event's note does not say %q: %s", want, note)
		}
	}
	if v := e.verdict("shop", "mesh"); v != previous {
		t.Errorf("Gateway mesh's verdict without its ConfigMaps: %q, want the previous one kept, %q", v, previous)
	}
	// The webhook says so too, within the 2 s deploy/components/webhooks gives it (the API
	// server ignores a later answer): a refused list fails the read at once instead of
	// waiting out configMapSyncTimeout.
	review := []byte(`{"apiVersion":"gateway.networking.k8s.io/v1","kind":"Gateway","metadata":{"name":"mesh","namespace":"shop"},"spec":{"gatewayClassName":"istio",` +
		`"infrastructure":{"annotations":{"` + subnet + `":"subnet-3f9a2c1d"}},"listeners":[{"name":"http","port":80,"protocol":"HTTP"}]}}`)
	start := time.Now()
	resp := g.validate(e.ctx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Update, Namespace: "shop", Name: "mesh",
		Kind: metav1.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "Gateway"}, Object: runtime.RawExtension{Raw: review}}}, &WebhookOptions{})
	if took := time.Since(start); !resp.Allowed || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "the ConfigMaps of istio-system") || took > 2*time.Second {
		t.Errorf("webhook on Gateway mesh without the rule: allowed %v, warnings %q, after %v; want admitted within 2 s, warning that its ConfigMaps are unreadable", resp.Allowed, resp.Warnings, took)
	}

	// Still running: a change to the other Gateway is judged.
	patch := []byte(`{"spec":{"infrastructure":{"annotations":{"service.cloud.tencent.com/prevent-loopback":"true"}}}}`)
	if _, err := e.dyn.Resource(gatewaysRes).Namespace("shop").Patch(e.ctx, "web", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	until(t, e.ctx, "Gateway web re-judged after the failures", func() bool {
		return strings.HasPrefix(e.verdict("shop", "web"), ReasonNoLoop+":")
	}, verdicts)
	if v := e.verdict("shop", "mesh"); v != previous {
		t.Errorf("Gateway mesh's verdict without its ConfigMaps: %q, want the previous one kept, %q", v, previous)
	}

	// One Event for the problem, not one per retry (the recorder would have made the repeats a
	// series by now: the reconcile was retried, with backoff, all along).
	list, err := e.cs.EventsV1().Events("shop").List(e.ctx, metav1.ListOptions{FieldSelector: "regarding.name=mesh,reason=" + ReasonConfigMapsUnreadable})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Errorf("%d %s Events on Gateway mesh, want one", len(list.Items), ReasonConfigMapsUnreadable)
	} else if s := list.Items[0].Series; s != nil {
		t.Errorf("the %s Event on Gateway mesh was recorded %d times, want once", ReasonConfigMapsUnreadable, s.Count)
	}

	// The operator grants the rule again: the informers' retried lists succeed and the Gateway
	// is judged with its class defaults.
	grant := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "loopguard-configmaps-granted"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}}}}
	if _, err := e.cs.RbacV1().ClusterRoles().Create(e.ctx, grant, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.RbacV1().ClusterRoleBindings().Create(e.ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: grant.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: grant.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "loopguard", Namespace: "loopguard-gw"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	until(t, e.ctx, "Gateway mesh judged with its class defaults once the rule is granted", func() bool {
		v := e.verdict("shop", "mesh")
		return v != previous && strings.HasPrefix(v, ReasonNoLoop+":")
	}, verdicts)
}
