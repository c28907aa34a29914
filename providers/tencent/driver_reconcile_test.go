package tencent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
	"github.com/loopguard/loopguard/core/drivertest"
	"github.com/loopguard/loopguard/providers/tencent"
)

// withoutRV drops what the store changes on every write, and compares values by their JSON
// meaning (an int64 port written by loopguard equals the float64 a YAML decoder produced).
func withoutRV(u *unstructured.Unstructured) any {
	c := u.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "metadata", "resourceVersion")
	return jsonMeaning(c.Object)
}

func jsonMeaning(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// configAfterSNAT is configYAML after loopguard turned SNAT on for TCP:80 and UDP:53: the tcp
// entry's snatEnable flips, a UDP:53 entry is appended, nothing else moves.
const configAfterSNAT = `
apiVersion: cloud.tencent.com/v1alpha1
kind: TkeServiceConfig
metadata:
  name: web-cfg
  namespace: default
  labels: {team: a}
  annotations: {note: hand-written}
spec:
  futureField: {keep: me}
  loadBalancer:
    internetMaxBandwidthOut: 100
    l4Listeners:
    - protocol: TCP
      port: 443
      scheduler: WRR
    - protocol: tcp
      port: 80
      session: {enable: true, sessionExpireTime: 3600}
      healthCheck: {enable: true, intervalTime: 10, sourceIpType: 1}
      snatEnable: true
    - protocol: UDP
      port: 5353
      snatEnable: true
    - protocol: UDP
      port: 53
      snatEnable: true
    l7Listeners:
    - protocol: HTTP
      port: 8080
      keepaliveEnable: 0
      domains:
      - domain: a.example.com
        rules: [{url: /, scheduler: WRR}]
`

// TestReconcileL4SNATKeepsForeignFields runs the whole Reconciler over a fake cluster: the
// merge keeps every other field and listener, and a second run writes nothing, whether it
// decides from a stale cluster (lb-snat again, the live config says done) or a fresh one.
func TestReconcileL4SNATKeepsForeignFields(t *testing.T) {
	d := newDriver(t, nil)
	svc := privateService("web", map[string]string{tencent.AnnotationServiceConfig: "web-cfg"}, "TCP/80", "UDP/53")
	cfg := fromYAML(t, configYAML)
	mem := newMemCluster(toUnstructured(t, svc), cfg)
	c := cluster(t, ipvsProfile(tencent.CapL4SNAT), svc, cfg)
	r := core.NewReconciler(core.NewProvider(d.Dialect(), d), &core.ReconcilerOptions{ClusterWriter: mem, Policy: snatPolicy})

	out, err := r.Reconcile(context.Background(), svc, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Written) != 1 {
		t.Fatalf("written %v, want the one config update", out.Written)
	}
	live, _ := mem.Get(context.Background(), drivertest.KeyOf(cfg))
	if diff := cmp.Diff(jsonMeaning(fromYAML(t, configAfterSNAT).Object), withoutRV(live)); diff != "" {
		t.Errorf("config after reconcile (-want +got):\n%s", diff)
	}
	writes := mem.Writes()

	// Stale cluster: the dialect still reads the old config and decides lb-snat again.
	out, err = r.Reconcile(context.Background(), svc, c)
	if err != nil || len(out.Written) != 0 || out.Plan.Decision.Remedy != core.LBSourceNAT {
		t.Fatalf("second run (stale): written %v, decision %s, err %v", out.Written, out.Plan.Decision.Remedy, err)
	}
	// Fresh cluster: nothing loops any more.
	out, err = r.Reconcile(context.Background(), svc, cluster(t, ipvsProfile(tencent.CapL4SNAT), svc, live))
	if err != nil || len(out.Written) != 0 || out.Plan.Decision.Remedy != core.RemedyNone {
		t.Fatalf("second run (fresh): written %v, decision %s, err %v", out.Written, out.Plan.Decision.Remedy, err)
	}
	if got := mem.Writes(); len(got) != len(writes) {
		t.Errorf("second runs wrote %v", got[len(writes):])
	}
}

// TestReconcileCreatesConfigThenReference: with no config, the config is created first and
// the Service references it after; the Service's other annotations stay.
func TestReconcileCreatesConfigThenReference(t *testing.T) {
	d := newDriver(t, nil)
	svc := privateService("web", map[string]string{"team": "a"}, "TCP/80")
	mem := newMemCluster(toUnstructured(t, svc))
	r := core.NewReconciler(core.NewProvider(d.Dialect(), d), &core.ReconcilerOptions{ClusterWriter: mem, Policy: snatPolicy})
	if _, err := r.Reconcile(context.Background(), svc, cluster(t, ipvsProfile(tencent.CapL4SNAT), svc)); err != nil {
		t.Fatal(err)
	}
	want := []string{"create TkeServiceConfig default/web-loopguard", "apply Service default/web"}
	if diff := cmp.Diff(want, mem.Writes()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	live, _ := mem.Get(context.Background(), core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "default", Name: "web"})
	ann := live.GetAnnotations()
	if ann[tencent.AnnotationServiceConfig] != "web-loopguard" || ann["team"] != "a" || ann[tencent.AnnotationInternalSubnet] == "" {
		t.Errorf("Service annotations %v", ann)
	}
	cfg, _ := mem.Get(context.Background(), core.ObjectKey{APIVersion: tencent.ServiceConfigAPIVersion, Kind: tencent.ServiceConfigKind, Namespace: "default", Name: "web-loopguard"})
	parsed, errs := tencent.ParseServiceConfig(cfg)
	if len(errs) > 0 || len(parsed.L4Listeners) != 1 || !parsed.L4Listeners[0].SNAT() {
		t.Errorf("created config %v (%v)", cfg.Object, errs)
	}

	// Second run, from the live Service: the config is referenced and done.
	typed, err := dialect.TypedFromUnstructured(live)
	if err != nil {
		t.Fatal(err)
	}
	n := len(mem.Writes())
	out, err := r.Reconcile(context.Background(), typed, cluster(t, ipvsProfile(tencent.CapL4SNAT), typed, cfg))
	if err != nil || len(out.Written) != 0 || len(mem.Writes()) != n {
		t.Errorf("second run: written %v, err %v", out.Written, err)
	}
}

// TestReconcileRetriesConflict: another writer changes the config between loopguard's read and
// its update; the update conflicts, the Reconciler reads again and both changes survive.
func TestReconcileRetriesConflict(t *testing.T) {
	d := newDriver(t, nil)
	svc := privateService("web", map[string]string{tencent.AnnotationServiceConfig: "web-cfg"}, "TCP/80")
	cfg := fromYAML(t, configYAML)
	mem := newMemCluster(toUnstructured(t, svc), cfg)
	mem.OnNextUpdate(func(m *drivertest.Cluster, _ *unstructured.Unstructured) {
		other, _ := m.Get(context.Background(), drivertest.KeyOf(cfg))
		_ = unstructured.SetNestedField(other.Object, int64(200), "spec", "loadBalancer", "internetMaxBandwidthOut")
		m.Put(other)
	})
	r := core.NewReconciler(core.NewProvider(d.Dialect(), d), &core.ReconcilerOptions{ClusterWriter: mem, Policy: snatPolicy})
	objs := []runtime.Object{svc, cfg}
	if _, err := r.Reconcile(context.Background(), svc, cluster(t, ipvsProfile(tencent.CapL4SNAT), objs...)); err != nil {
		t.Fatal(err)
	}
	want := []string{"update TkeServiceConfig default/web-cfg", "update TkeServiceConfig default/web-cfg"}
	if diff := cmp.Diff(want, mem.Writes()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	live, _ := mem.Get(context.Background(), drivertest.KeyOf(cfg))
	bw, _, _ := unstructured.NestedInt64(live.Object, "spec", "loadBalancer", "internetMaxBandwidthOut")
	parsed, _ := tencent.ParseServiceConfig(live)
	if bw != 200 || parsed == nil || !parsed.L4(tencent.ListenerKey{Protocol: "TCP", Port: 80}).SNAT() {
		t.Errorf("after the retry: bandwidth %d, config %v", bw, live.Object)
	}
}
