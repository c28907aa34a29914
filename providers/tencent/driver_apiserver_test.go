package tencent_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/loopguard/loopguard/adapters/kube"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/tencent"
)

// server is a real kube-apiserver with the project's TkeServiceConfig CRD (crds/), shared by
// the tests of this file; they skip when KUBEBUILDER_ASSETS is unset (TESTING.md §2).
var server = apiserver.NewShared(apiserver.WithCRDPaths("crds"))

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(server.Run(m))
}

var configGVR = schema.GroupVersionResource{Group: tencent.ServiceConfigGroup, Version: tencent.ServiceConfigVersion, Resource: "tkeserviceconfigs"}

// live is one test's namespace on the real server, with loopguard's writer and a separate
// client standing for other writers (kubectl, TKE's controllers).
type live struct {
	t      *testing.T
	ns     string
	writer *kube.Writer
	dyn    dynamic.Interface
	srv    *apiserver.Server
}

func newLive(t *testing.T) *live {
	t.Helper()
	srv := server.Get(t)
	w, err := kube.NewWriter(srv.Config(), nil)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	return &live{t: t, ns: srv.Namespace(t), writer: w, dyn: dyn, srv: srv}
}

// createService creates svc in the namespace as kubectl would (another field manager).
func (l *live) createService(svc *corev1.Service) *corev1.Service {
	l.t.Helper()
	svc = svc.DeepCopy()
	svc.Namespace = l.ns
	got, err := l.srv.Client().CoreV1().Services(l.ns).Create(context.Background(), svc, metav1.CreateOptions{FieldManager: "kubectl"})
	if err != nil {
		l.t.Fatal(err)
	}
	got.APIVersion, got.Kind = "v1", "Service"
	return got
}

func (l *live) createConfig(doc string) *unstructured.Unstructured {
	l.t.Helper()
	u := fromYAML(l.t, doc)
	u.SetNamespace(l.ns)
	got, err := l.dyn.Resource(configGVR).Namespace(l.ns).Create(context.Background(), u, metav1.CreateOptions{FieldManager: "kubectl"})
	if err != nil {
		l.t.Fatal(err)
	}
	return got
}

func (l *live) config(name string) *unstructured.Unstructured {
	l.t.Helper()
	u, err := l.dyn.Resource(configGVR).Namespace(l.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	return u
}

func (l *live) service(name string) *corev1.Service {
	l.t.Helper()
	s, err := l.srv.Client().CoreV1().Services(l.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	s.APIVersion, s.Kind = "v1", "Service"
	return s
}

// reconcile runs the whole Reconciler with a Cluster built from the live objects given.
func (l *live) reconcile(w core.ClusterWriter, prof core.ClusterProfile, pol core.Policy, obj runtime.Object, objs ...runtime.Object) (*core.Outcome, error) {
	l.t.Helper()
	d := newDriver(l.t, nil)
	r := core.NewReconciler(core.NewProvider(d.Dialect(), d), &core.ReconcilerOptions{ClusterWriter: w, Policy: pol})
	return r.Reconcile(context.Background(), obj, cluster(l.t, prof, append([]runtime.Object{obj}, objs...)...))
}

// ownPart is what a config means apart from what the server maintains.
func ownPart(u *unstructured.Unstructured) any {
	return jsonMeaning(map[string]any{"spec": u.Object["spec"], "labels": u.GetLabels(), "annotations": u.GetAnnotations()})
}

// TestAPIServerL4SNATMerge: merging snatEnable into a referenced config on a real API server
// keeps every other field, listener, label and annotation; a second reconcile writes nothing.
func TestAPIServerL4SNATMerge(t *testing.T) {
	l := newLive(t)
	svc := l.createService(privateService("web", map[string]string{tencent.AnnotationServiceConfig: "web-cfg", "team": "a"}, "TCP/80", "UDP/53"))
	cfg := l.createConfig(configYAML)

	out, err := l.reconcile(l.writer, ipvsProfile(tencent.CapL4SNAT), snatPolicy, svc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Written) != 1 || out.Written[0].Object.Kind != tencent.ServiceConfigKind {
		t.Fatalf("written %v", out.Written)
	}
	after := l.config("web-cfg")
	if diff := cmp.Diff(ownPart(fromYAML(t, configAfterSNAT)), ownPart(after)); diff != "" {
		t.Errorf("config after reconcile (-want +got):\n%s", diff)
	}
	if v, _, _ := unstructured.NestedSlice(after.Object, "spec", "loadBalancer", "l4Listeners"); len(v) != 4 {
		t.Errorf("l4Listeners %v", v)
	}

	// Second run, with the live objects: nothing loops, nothing is written.
	svcRV, cfgRV := l.service("web").ResourceVersion, after.GetResourceVersion()
	out, err = l.reconcile(l.writer, ipvsProfile(tencent.CapL4SNAT), snatPolicy, l.service("web"), after)
	if err != nil || len(out.Written) != 0 {
		t.Fatalf("second run: written %v, err %v", out.Written, err)
	}
	// Second run, deciding from the stale objects: lb-snat again, and still nothing to write.
	out, err = l.reconcile(l.writer, ipvsProfile(tencent.CapL4SNAT), snatPolicy, svc, cfg)
	if err != nil || len(out.Written) != 0 || out.Plan.Decision.Remedy != core.LBSourceNAT {
		t.Fatalf("stale second run: decision %s, written %v, err %v", out.Plan.Decision.Remedy, out.Written, err)
	}
	if l.service("web").ResourceVersion != svcRV || l.config("web-cfg").GetResourceVersion() != cfgRV {
		t.Error("a second reconcile changed a resourceVersion")
	}
}

// TestAPIServerCreatesConfig: a Service without a config gets web-loopguard, then the
// reference; the annotations kubectl owns stay, and loopguard's field manager owns only the
// one it set.
func TestAPIServerCreatesConfig(t *testing.T) {
	l := newLive(t)
	svc := l.createService(privateService("web", map[string]string{"team": "a"}, "TCP/80"))
	out, err := l.reconcile(l.writer, ipvsProfile(tencent.CapL4SNAT), snatPolicy, svc)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Written) != 2 || out.Written[0].Object.Kind != tencent.ServiceConfigKind || out.Written[1].Object.Kind != "Service" {
		t.Fatalf("written %v, want the config, then the Service", out.Written)
	}
	got := l.service("web")
	if got.Annotations[tencent.AnnotationServiceConfig] != "web-loopguard" || got.Annotations["team"] != "a" || got.Annotations[tencent.AnnotationInternalSubnet] == "" {
		t.Errorf("annotations %v", got.Annotations)
	}
	assertOwnsOnly(t, got.ManagedFields, "f:"+tencent.AnnotationServiceConfig)
	cfg := l.config("web-loopguard")
	parsed, errs := tencent.ParseServiceConfig(cfg)
	if len(errs) > 0 || len(parsed.L4Listeners) != 1 || !parsed.L4(tencent.ListenerKey{Protocol: "TCP", Port: 80}).SNAT() {
		t.Errorf("created config %v (%v)", cfg.Object, errs)
	}
	if cfg.GetAnnotations()[tencent.AnnotationConfigOwner] != "Service/web" {
		t.Errorf("created config annotations %v", cfg.GetAnnotations())
	}

	rvs := [2]string{got.ResourceVersion, cfg.GetResourceVersion()}
	out, err = l.reconcile(l.writer, ipvsProfile(tencent.CapL4SNAT), snatPolicy, got, cfg)
	if err != nil || len(out.Written) != 0 {
		t.Fatalf("second run: written %v, err %v", out.Written, err)
	}
	if rvs != [2]string{l.service("web").ResourceVersion, l.config("web-loopguard").GetResourceVersion()} {
		t.Error("a second reconcile changed a resourceVersion")
	}
}

// assertOwnsOnly checks that loopguard's field manager owns exactly one annotation.
func assertOwnsOnly(t *testing.T, mf []metav1.ManagedFieldsEntry, field string) {
	t.Helper()
	for _, e := range mf {
		if e.Manager != core.FieldManager {
			continue
		}
		s := string(e.FieldsV1.Raw)
		if !strings.Contains(s, field) || strings.Count(s, `"f:`) != 3 { // f:metadata, f:annotations, the one
			t.Errorf("loopguard owns %s, want only %s", s, field)
		}
		return
	}
	t.Errorf("no managedFields entry for %s", core.FieldManager)
}

// racingWriter changes the config through another client just before loopguard's first
// update, so that update carries a stale resourceVersion.
type racingWriter struct {
	*kube.Writer
	race func()
}

func (w *racingWriter) Update(ctx context.Context, u *unstructured.Unstructured) error {
	if w.race != nil {
		w.race()
		w.race = nil
	}
	return w.Writer.Update(ctx, u)
}

// TestAPIServerConflictRetried: a concurrent writer makes the real server answer 409; the
// Reconciler reads again, and both writers' changes are in the result.
func TestAPIServerConflictRetried(t *testing.T) {
	l := newLive(t)
	svc := l.createService(privateService("web", map[string]string{tencent.AnnotationServiceConfig: "web-cfg"}, "TCP/80"))
	cfg := l.createConfig(configYAML)
	conflicts := 0
	w := &racingWriter{Writer: l.writer, race: func() {
		other := l.config("web-cfg")
		_ = unstructured.SetNestedField(other.Object, int64(200), "spec", "loadBalancer", "internetMaxBandwidthOut")
		if _, err := l.dyn.Resource(configGVR).Namespace(l.ns).Update(context.Background(), other, metav1.UpdateOptions{FieldManager: "tke-service-controller"}); err != nil {
			t.Error(err)
		}
	}}
	counting := &conflictCounter{ClusterWriter: w, n: &conflicts}
	if _, err := l.reconcile(counting, ipvsProfile(tencent.CapL4SNAT), snatPolicy, svc, cfg); err != nil {
		t.Fatal(err)
	}
	if conflicts != 1 {
		t.Errorf("%d conflicts, want the one the race caused", conflicts)
	}
	after := l.config("web-cfg")
	bw, _, _ := unstructured.NestedInt64(after.Object, "spec", "loadBalancer", "internetMaxBandwidthOut")
	parsed, _ := tencent.ParseServiceConfig(after)
	if bw != 200 || parsed == nil || !parsed.L4(tencent.ListenerKey{Protocol: "TCP", Port: 80}).SNAT() {
		t.Errorf("after the retry: bandwidth %d, config %v", bw, after.Object["spec"])
	}
}

type conflictCounter struct {
	core.ClusterWriter
	n *int
}

func (c *conflictCounter) Update(ctx context.Context, u *unstructured.Unstructured) error {
	err := c.ClusterWriter.Update(ctx, u)
	if errors.Is(err, core.ErrConflict) {
		*c.n++
	}
	return err
}

// TestAPIServerInterceptVIP: prevent-loopback by server-side apply on a real server; the other
// annotations stay with their manager; a second run writes nothing.
func TestAPIServerInterceptVIP(t *testing.T) {
	l := newLive(t)
	svc := l.createService(privateService("web", map[string]string{"team": "a", "owner": "payments"}, "TCP/80"))
	out, err := l.reconcile(l.writer, ipvsProfile(), core.Policy{}, svc)
	if err != nil || len(out.Written) != 1 {
		t.Fatalf("written %v, err %v", out.Written, err)
	}
	got := l.service("web")
	want := map[string]string{"team": "a", "owner": "payments", tencent.AnnotationInternalSubnet: "subnet-1a2b3c4d", tencent.AnnotationPreventLoopback: "true"}
	if diff := cmp.Diff(want, got.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	assertOwnsOnly(t, got.ManagedFields, "f:"+tencent.AnnotationPreventLoopback)
	rv := got.ResourceVersion
	out, err = l.reconcile(l.writer, ipvsProfile(), core.Policy{}, got)
	if err != nil || len(out.Written) != 0 || out.Plan.Decision.Remedy != core.RemedyNone || l.service("web").ResourceVersion != rv {
		t.Fatalf("second run: decision %s, written %v, err %v", out.Plan.Decision.Remedy, out.Written, err)
	}
}

// TestAPIServerL7 writes layer-7 SNAT into an -auto-ingress-config on the real server:
// snatEnable: true from controller v2.9.0, keepaliveEnable: 1 (an integer, which the CRD's
// schema enforces) before.
func TestAPIServerL7(t *testing.T) {
	for _, tc := range []struct{ version, field string }{{"v2.9.0", "snatEnable"}, {"v2.8.3", "keepaliveEnable"}} {
		t.Run(tc.version, func(t *testing.T) {
			l := newLive(t)
			ing := privateIngress("web", map[string]string{tencent.AnnotationIngressServiceConfigAuto: "true"})
			ing.Namespace = l.ns
			cfg := l.createConfig(`
apiVersion: cloud.tencent.com/v1alpha1
kind: TkeServiceConfig
metadata: {name: web-auto-ingress-config}
spec:
  loadBalancer:
    l7Listeners:
    - protocol: HTTP
      port: 80
      domains: [{domain: web.example.com, rules: [{url: /, healthCheck: {enable: true}}]}]
`)
			prof := ipvsProfile(tencent.CapL7SNAT, tencent.CapKeepalive)
			prof.IngressControllerVersion = tc.version
			out, err := l.reconcile(l.writer, prof, core.Policy{}, ing, cfg)
			if err != nil || len(out.Written) != 1 {
				t.Fatalf("written %v, err %v", out.Written, err)
			}
			after := l.config("web-auto-ingress-config")
			list, _, _ := unstructured.NestedSlice(after.Object, "spec", "loadBalancer", "l7Listeners")
			entry, _ := list[0].(map[string]any)
			switch tc.field {
			case "snatEnable":
				if entry["snatEnable"] != true {
					t.Errorf("entry %v", entry)
				}
			default:
				if n, ok := entry["keepaliveEnable"].(int64); !ok || n != 1 {
					t.Errorf("keepaliveEnable = %#v, want the integer 1", entry["keepaliveEnable"])
				}
			}
			if _, ok := entry["domains"]; !ok || len(list) != 1 {
				t.Errorf("the listener's domains or the list changed: %v", list)
			}
			// Second run with the live config: nothing loops, nothing is written.
			rv := after.GetResourceVersion()
			out, err = l.reconcile(l.writer, prof, core.Policy{}, ing, after)
			if err != nil || len(out.Written) != 0 || l.config("web-auto-ingress-config").GetResourceVersion() != rv {
				t.Errorf("second run: decision %s, written %v, err %v", out.Plan.Decision.Remedy, out.Written, err)
			}
		})
	}
}

// TestAPIServerCRDTypesKeepalive: the CRD holds keepaliveEnable to an integer, so the tests above
// would catch loopguard writing a boolean.
func TestAPIServerCRDTypesKeepalive(t *testing.T) {
	l := newLive(t)
	u := fromYAML(t, `
apiVersion: cloud.tencent.com/v1alpha1
kind: TkeServiceConfig
metadata: {name: bad}
spec: {loadBalancer: {l7Listeners: [{protocol: HTTP, port: 80, keepaliveEnable: true}]}}`)
	_, err := l.dyn.Resource(configGVR).Namespace(l.ns).Create(context.Background(), u, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "keepaliveEnable") {
		t.Errorf("create with keepaliveEnable: true: %v, want a schema error", err)
	}
}

// TestAPIServerInterceptVIPRespectsOwner: prevent-loopback: "false" written by another manager
// is that manager's; server-side apply without force reports the conflict and loopguard does
// not overwrite it.
func TestAPIServerInterceptVIPRespectsOwner(t *testing.T) {
	l := newLive(t)
	svc := l.createService(privateService("web", map[string]string{tencent.AnnotationPreventLoopback: "false"}, "TCP/80"))
	_, err := l.reconcile(l.writer, ipvsProfile(), core.Policy{}, svc)
	if !errors.Is(err, core.ErrConflict) {
		t.Fatalf("error %v, want a conflict", err)
	}
	if v := l.service("web").Annotations[tencent.AnnotationPreventLoopback]; v != "false" {
		t.Errorf("annotation = %q, want the owner's \"false\"", v)
	}
}
