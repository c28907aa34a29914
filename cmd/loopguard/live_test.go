package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/loopguard/loopguard/adapters/kube"
	"github.com/loopguard/loopguard/adapters/manifest"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/tencent"
)

// server is one real kube-apiserver for the package's live tests (scan, apply), with the
// project's TkeServiceConfig CRD; tests that need none never start it. The CRD path is made
// absolute now, because tests change directory before the server starts.
var server = apiserver.NewShared(apiserver.WithCRDPaths(mustAbs("../../providers/tencent/crds")))

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return a
}

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(server.Run(m))
}

// liveCluster is a namespace of the shared server holding the TKE example's objects, and a
// kubeconfig file that points at the server, as a user's would.
type liveCluster struct {
	cfg        *rest.Config
	ns         string
	kubeconfig string
	dyn        dynamic.Interface
}

const testContext = "envtest"

// writeKubeconfig writes a kubeconfig for cfg with one context, testContext.
func writeKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts[testContext] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = testContext
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// newLiveCluster creates the objects of examples/manifests (but the ClusterProfile, which is
// no Kubernetes object) in a new namespace, in place of shop, as "kubectl" would: the Nodes
// and kube-system's ConfigMaps once per server.
func newLiveCluster(t *testing.T) *liveCluster {
	t.Helper()
	srv := server.Get(t)
	lc := &liveCluster{cfg: srv.Config(), ns: srv.Namespace(t)}
	lc.kubeconfig = writeKubeconfig(t, lc.cfg)
	lc.cfg.WarningHandler = rest.NoWarnings{} // the example's deprecated ingress.class, on creation
	var err error
	if lc.dyn, err = dynamic.NewForConfig(lc.cfg); err != nil {
		t.Fatal(err)
	}
	fast := rest.CopyConfig(lc.cfg)
	fast.QPS, fast.Burst = -1, 0 // no client-side limit for the fixture's few dozen creates
	w, err := kube.NewWriter(fast, &kube.Options{FieldManager: "kubectl"})
	if err != nil {
		t.Fatal(err)
	}
	var r manifest.Reader
	set, errs := r.Read(filepath.Join(repoRootAbs, "examples/manifests"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	ctx := context.Background()
	for _, o := range set.Objects {
		raw, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			t.Fatal(err)
		}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "status")
		shared := u.GetNamespace() == "" || u.GetNamespace() == "kube-system"
		if u.GetNamespace() == "shop" {
			u.SetNamespace(lc.ns)
		}
		if err := w.Create(ctx, u); err != nil && !(shared && errors.Is(err, core.ErrConflict)) {
			t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	return lc
}

// repoRootAbs is the repository root, whatever directory a test is in.
var repoRootAbs = mustAbs(repoRoot)

// run runs the CLI against the cluster with the example's profile.
func (lc *liveCluster) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	args = append(args, "--kubeconfig", lc.kubeconfig, "-n", lc.ns, "--profile", filepath.Join(repoRootAbs, "examples/manifests/profile.yaml"))
	stdout, stderr, code = runCLI(t, "", args...)
	// The kubeconfig's credentials never show.
	for _, secret := range [][]byte{lc.cfg.KeyData, lc.cfg.CertData, []byte(lc.cfg.BearerToken)} {
		if s := strings.TrimSpace(string(secret)); s != "" && (strings.Contains(stdout, s) || strings.Contains(stderr, s)) {
			t.Errorf("%v printed a credential of the kubeconfig", args)
		}
	}
	if strings.Contains(stdout+stderr, "PRIVATE KEY") {
		t.Errorf("%v printed a private key", args)
	}
	return stdout, stderr, code
}

var (
	servicesGVR = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	ingressGVR  = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
)

// versions are the resourceVersions of every object apply may write in the namespace: equal
// before and after means nothing was written.
func (lc *liveCluster) versions(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, gvr := range []schema.GroupVersionResource{servicesGVR, ingressGVR, tkeServiceConfigs} {
		list, err := lc.dyn.Resource(gvr).Namespace(lc.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range list.Items {
			out[u.GetKind()+"/"+u.GetName()] = u.GetResourceVersion()
		}
	}
	return out
}

func (lc *liveCluster) get(t *testing.T, gvr schema.GroupVersionResource, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := lc.dyn.Resource(gvr).Namespace(lc.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func decodePlan(t *testing.T, out string) *PlanReport {
	t.Helper()
	var rep PlanReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not a plan report: %v\n%s", err, out)
	}
	checkPlanContract(t, out)
	return &rep
}

func findPlan(t *testing.T, rep *PlanReport, kind, name string) *ObjectPlan {
	t.Helper()
	for i := range rep.Plans {
		if rep.Plans[i].Object.Kind == kind && rep.Plans[i].Object.Name == name {
			return &rep.Plans[i]
		}
	}
	t.Fatalf("no plan for %s %s", kind, name)
	return nil
}

// TestScanAndApplyOnARealAPIServer walks a user through the TKE example on a real
// kube-apiserver: scan finds the at-risk Service; apply --dry-run writes nothing; apply writes
// the prevent-loopback annotation and nothing else, leaving every other annotation; a second
// apply writes nothing and says so; a blocked plan writes nothing and exits 3.
func TestScanAndApplyOnARealAPIServer(t *testing.T) {
	lc := newLiveCluster(t)
	t.Chdir(repoRoot)
	ns := lc.ns
	const preventLoopback = tencent.AnnotationPreventLoopback

	// A foreign annotation another manager adds after creation.
	svcs := lc.dyn.Resource(servicesGVR).Namespace(ns)
	checkout := lc.get(t, servicesGVR, "checkout")
	ann := checkout.GetAnnotations()
	ann["team.example.com/owner"] = "payments"
	checkout.SetAnnotations(ann)
	if _, err := svcs.Update(context.Background(), checkout, metav1.UpdateOptions{FieldManager: "platform-team"}); err != nil {
		t.Fatal(err)
	}

	t.Run("scan", func(t *testing.T) {
		stdout, stderr, code := lc.run(t, "scan", "-o", "json")
		if code != exitOK {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
		var rep Report
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatal(err)
		}
		checkContract(t, stdout)
		byName := map[string]Result{}
		for _, r := range rep.Results {
			byName[r.Object.Kind+"/"+r.Object.Name] = r
			if r.Object.Namespace != ns || r.Location != "context "+testContext {
				t.Errorf("%s: namespace %q, location %q; want %q, %q", r.Object.Name, r.Object.Namespace, r.Location, ns, "context "+testContext)
			}
		}
		got := byName["Service/checkout"]
		if got.Risk != "at-risk" || got.Decision.Remedy != "intercept-vip" {
			t.Errorf("Service checkout: risk %s, remedy %s; want at-risk, intercept-vip", got.Risk, got.Decision.Remedy)
		}
		if len(rep.Results) != 6 || rep.Summary.AtRisk != 2 || rep.Cluster.Provider != "tencent" {
			t.Errorf("%d results, %d at risk, provider %s; want the example's 6, 2, tencent", len(rep.Results), rep.Summary.AtRisk, rep.Cluster.Provider)
		}
		// client-go's standard rules: $KUBECONFIG when --kubeconfig is not given.
		t.Setenv("KUBECONFIG", lc.kubeconfig)
		viaEnv, stderr, code := runCLI(t, "", "scan", "-n", ns, "--profile", filepath.Join(repoRootAbs, "examples/manifests/profile.yaml"), "-o", "json")
		if code != exitOK || viaEnv != stdout {
			t.Errorf("scan with $KUBECONFIG: exit %d, stderr %s, same report: %v", code, stderr, viaEnv == stdout)
		}
		// The report is assess's: the table too.
		table, _, code := lc.run(t, "scan", "--fail-on-risk")
		if code != exitAtRisk {
			t.Errorf("scan --fail-on-risk: exit %d, want %d", code, exitAtRisk)
		}
		if !strings.Contains(table, "Service "+ns+"/checkout      tencent   at-risk  intermittent") {
			t.Errorf("the table does not show checkout at risk:\n%s", table)
		}
	})

	t.Run("dry run writes nothing", func(t *testing.T) {
		before := lc.versions(t)
		stdout, stderr, code := lc.run(t, "apply", "--dry-run", "-o", "json")
		if code != exitOK {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
		rep := decodePlan(t, stdout)
		if !rep.DryRun || rep.Kind != ApplyReportKind || rep.Mode != "live" {
			t.Errorf("dryRun %v, kind %s, mode %s", rep.DryRun, rep.Kind, rep.Mode)
		}
		p := findPlan(t, rep, "Service", "checkout")
		if p.Status != StatusPlanned || len(p.Changes) != 1 || p.Changes[0].Field != `metadata.annotations["`+preventLoopback+`"]` || len(p.Written) != 0 {
			t.Errorf("checkout: status %s, changes %+v, written %d; want one planned annotation, nothing written", p.Status, p.Changes, len(p.Written))
		}
		if rep.Summary.Written != 0 {
			t.Errorf("a dry run wrote %d changes", rep.Summary.Written)
		}
		if after := lc.versions(t); !equalMaps(before, after) {
			t.Errorf("a dry run changed objects: %v → %v", before, after)
		}
	})

	t.Run("apply writes the annotation and keeps the others", func(t *testing.T) {
		before := lc.versions(t)
		stdout, stderr, code := lc.run(t, "apply", "-o", "json")
		if code != exitOK {
			t.Fatalf("exit %d, stderr:\n%s\n%s", code, stderr, stdout)
		}
		rep := decodePlan(t, stdout)
		p := findPlan(t, rep, "Service", "checkout")
		if p.Status != StatusApplied || len(p.Written) != 1 || p.Written[0].To != "true" {
			t.Errorf("checkout: status %s, written %+v; want applied, the annotation", p.Status, p.Written)
		}
		ing := findPlan(t, rep, "Ingress", "web-internal")
		if ing.Status != StatusUserAction || len(ing.ForUser) != 1 || ing.ForUser[0].By != "user" {
			t.Errorf("web-internal: status %s, for the user %+v; want user-action with one change", ing.Status, ing.ForUser)
		}
		if rep.Summary.Written != 1 || rep.Summary.Applied != 1 {
			t.Errorf("summary %+v; want 1 written, 1 applied", rep.Summary)
		}
		got := lc.get(t, servicesGVR, "checkout").GetAnnotations()
		want := map[string]string{
			preventLoopback:                  "true",
			"team.example.com/owner":         "payments",
			tencent.AnnotationInternalSubnet: "subnet-3f9a2c1d",
		}
		if !equalMaps(got, want) {
			t.Errorf("checkout's annotations: %v, want %v", got, want)
		}
		// Only checkout changed.
		after := lc.versions(t)
		for k, v := range before {
			if k != "Service/checkout" && after[k] != v {
				t.Errorf("%s was written", k)
			}
		}
		// Server-side apply as loopguard: it owns the annotation it wrote, and no other.
		for _, mf := range lc.get(t, servicesGVR, "checkout").GetManagedFields() {
			if mf.Manager == core.FieldManager {
				if mf.Operation != metav1.ManagedFieldsOperationApply || !strings.Contains(string(mf.FieldsV1.Raw), preventLoopback) ||
					strings.Contains(string(mf.FieldsV1.Raw), "team.example.com") {
					t.Errorf("loopguard's managed fields: %s %s", mf.Operation, mf.FieldsV1.Raw)
				}
			}
		}
	})

	t.Run("a second apply writes nothing", func(t *testing.T) {
		before := lc.versions(t)
		stdout, stderr, code := lc.run(t, "apply")
		if code != exitOK {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
		if !strings.Contains(stdout, "Nothing written: every change loopguard makes is already in place.") {
			t.Errorf("the second apply does not say it wrote nothing:\n%s", stdout)
		}
		if !strings.Contains(stdout, "Service "+ns+"/checkout      tencent   none     none → VIP               up-to-date") || strings.Contains(stdout, "applied:") {
			t.Errorf("the second apply's table:\n%s", stdout)
		}
		if after := lc.versions(t); !equalMaps(before, after) {
			t.Errorf("the second apply changed objects: %v → %v", before, after)
		}
	})

	t.Run("a blocked plan writes nothing and exits 3", func(t *testing.T) {
		before := lc.versions(t)
		// Preferring the LB's features moves the Ingress to layer-7 SNAT, which needs an
		// allowlist the profile does not grant.
		stdout, stderr, code := lc.run(t, "apply", "--object", "Ingress/"+ns+"/web-internal", "--prefer", "lb-features", "--allow-tickets", "-o", "json")
		if code != exitBlocked {
			t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitBlocked, stderr)
		}
		rep := decodePlan(t, stdout)
		if len(rep.Plans) != 1 {
			t.Fatalf("--object planned %d objects, want 1", len(rep.Plans))
		}
		p := &rep.Plans[0]
		if p.Status != StatusBlocked || p.Blocked == nil || p.Blocked.Kind != "not-allowlisted" || p.Blocked.Capability != string(tencent.CapL7SNAT) || p.Blocked.Ask == "" {
			t.Errorf("web-internal: status %s, blocked %+v; want not-allowlisted clb-l7-snat with what to ask", p.Status, p.Blocked)
		}
		if after := lc.versions(t); !equalMaps(before, after) {
			t.Errorf("a blocked plan changed objects: %v → %v", before, after)
		}
	})

	t.Run("layer-4 SNAT creates a TkeServiceConfig, once", func(t *testing.T) {
		// checkout is resolved now; a second private Service in front of the same Pods, with
		// the LB's features preferred, gets SNAT (clb-l4-snat is granted in the profile).
		fresh := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": "checkout2", "namespace": ns,
				"annotations": map[string]any{tencent.AnnotationInternalSubnet: "subnet-3f9a2c1d"}},
			"spec": map[string]any{"type": "LoadBalancer", "selector": map[string]any{"app": "checkout"},
				"ports": []any{map[string]any{"name": "http", "port": int64(80), "targetPort": int64(8080), "protocol": "TCP"}}}}}
		if _, err := svcs.Create(context.Background(), fresh, metav1.CreateOptions{FieldManager: "kubectl"}); err != nil {
			t.Fatal(err)
		}
		args := []string{"apply", "--object", "Service/" + ns + "/checkout2", "--prefer", "lb-features", "-o", "json"}
		stdout, stderr, code := lc.run(t, args...)
		if code != exitOK {
			t.Fatalf("exit %d, stderr:\n%s\n%s", code, stderr, stdout)
		}
		p := decodePlan(t, stdout).Plans[0]
		if p.Decision.Remedy != "lb-snat" || p.Status != StatusApplied || len(p.Written) != 2 {
			t.Fatalf("checkout2: remedy %s, status %s, written %+v; want lb-snat applied with 2 changes", p.Decision.Remedy, p.Status, p.Written)
		}
		cfg := lc.get(t, tkeServiceConfigs, "checkout2"+tencent.ConfigSuffix)
		l4, _, _ := unstructured.NestedSlice(cfg.Object, "spec", "loadBalancer", "l4Listeners")
		if len(l4) != 1 || l4[0].(map[string]any)["snatEnable"] != true {
			t.Errorf("the TkeServiceConfig's listeners: %v", l4)
		}
		if ref := lc.get(t, servicesGVR, "checkout2").GetAnnotations()[tencent.AnnotationServiceConfig]; ref != "checkout2"+tencent.ConfigSuffix {
			t.Errorf("checkout2 references %q", ref)
		}
		before := lc.versions(t)
		stdout, _, code = lc.run(t, args...)
		if code != exitOK || decodePlan(t, stdout).Summary.Written != 0 {
			t.Errorf("the second apply: exit %d, %s", code, stdout)
		}
		if after := lc.versions(t); !equalMaps(before, after) {
			t.Errorf("the second apply changed objects: %v → %v", before, after)
		}
	})

	t.Run("an object that does not exist", func(t *testing.T) {
		stdout, stderr, code := lc.run(t, "apply", "--object", "Service/"+ns+"/absent")
		if code != exitInput || !strings.Contains(stderr, "Service "+ns+"/absent: no such object in the cluster") {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
		// Nothing was checked, so nothing may be claimed to be in place.
		if strings.Contains(stdout, "already in place") || !strings.Contains(stdout, "Nothing written: nothing was planned.") {
			t.Errorf("apply of a missing object says:\n%s", stdout)
		}
	})
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}
