package volcengine_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/loopguard/loopguard/adapters/kube"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/volcengine"
)

// These tests run the whole Reconciler with the VKE driver against a real kube-apiserver
// (TESTING.md §2); they skip when KUBEBUILDER_ASSETS is unset. No controllers run there, so
// the tests play the cloud-controller-manager themselves: they write
// status.loadBalancer.ingress through the status subresource, as the CCM does.
var server = apiserver.NewShared()

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(server.Run(m))
}

// vke is one test's cluster: a namespace, nodes, backends, client Pods and a host that gathers
// facts from the API server the way a live-cluster adapter does.
type vke struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	writer *kube.Writer
	ns     string
}

func newVKE(t *testing.T) *vke {
	t.Helper()
	srv := server.Get(t)
	w, err := kube.NewWriter(srv.Config(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return &vke{t: t, ctx: context.Background(), client: srv.Client(), writer: w, ns: srv.Namespace(t)}
}

func (v *vke) nodeName(s string) string { return v.ns + "-" + s }

// seed creates three nodes, the backends web-1 (node a) and web-2 (node b) with their
// EndpointSlice, the Deployment "client" and its Pods client-1 (node a) and client-2 (node c).
func (v *vke) seed() {
	v.t.Helper()
	for _, n := range []string{"a", "b", "c"} {
		nd := node(v.nodeName(n))
		nd.Labels["loopguard-test"] = v.ns
		if _, err := v.client.CoreV1().Nodes().Create(v.ctx, nd, metav1.CreateOptions{}); err != nil {
			v.t.Fatal(err)
		}
	}
	for _, p := range []*corev1.Pod{
		pod(v.ns, "web-1", v.nodeName("a"), map[string]string{"app": "web"}),
		pod(v.ns, "web-2", v.nodeName("b"), map[string]string{"app": "web"}),
		clientPod(v.ns, "client-1", v.nodeName("a")),
		clientPod(v.ns, "client-2", v.nodeName("c")),
	} {
		if _, err := v.client.CoreV1().Pods(v.ns).Create(v.ctx, p, metav1.CreateOptions{}); err != nil {
			v.t.Fatal(err)
		}
	}
	es := slice(v.ns, "web", map[string]string{"web-1": v.nodeName("a"), "web-2": v.nodeName("b")})
	if _, err := v.client.DiscoveryV1().EndpointSlices(v.ns).Create(v.ctx, es, metav1.CreateOptions{}); err != nil {
		v.t.Fatal(err)
	}
	one := int32(1)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: v.ns, Name: "client"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "client"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "client"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "curl", Image: "curlimages/curl:8.10.1"}}}}}}
	if _, err := v.client.AppsV1().Deployments(v.ns).Create(v.ctx, dep, metav1.CreateOptions{}); err != nil {
		v.t.Fatal(err)
	}
}

// cluster gathers what a live-cluster host gathers: this test's nodes, the namespace's Pods and
// EndpointSlices, and the prerequisites the server shows (ReadClusterFacts), over the profile.
func (v *vke) cluster(profile core.ClusterProfile) *core.Cluster {
	v.t.Helper()
	facts, err := volcengine.ReadClusterFacts(v.ctx, v.writer, v.client.Discovery(), core.ObjectKey{})
	if err != nil {
		v.t.Fatal(err)
	}
	facts.Apply(&profile)
	var objs []runtime.Object
	nodes, err := v.client.CoreV1().Nodes().List(v.ctx, metav1.ListOptions{LabelSelector: "loopguard-test=" + v.ns})
	if err != nil {
		v.t.Fatal(err)
	}
	for i := range nodes.Items {
		objs = append(objs, &nodes.Items[i])
	}
	pods, err := v.client.CoreV1().Pods(v.ns).List(v.ctx, metav1.ListOptions{})
	if err != nil {
		v.t.Fatal(err)
	}
	for i := range pods.Items {
		objs = append(objs, &pods.Items[i])
	}
	slices, err := v.client.DiscoveryV1().EndpointSlices(v.ns).List(v.ctx, metav1.ListOptions{})
	if err != nil {
		v.t.Fatal(err)
	}
	for i := range slices.Items {
		objs = append(objs, &slices.Items[i])
	}
	c, err := core.NewCluster(profile, objs...)
	if err != nil {
		v.t.Fatal(err)
	}
	return c
}

func (v *vke) reconciler(policy core.Policy, opts *volcengine.DriverOptions) *core.Reconciler {
	v.t.Helper()
	if opts == nil {
		opts = &volcengine.DriverOptions{}
	}
	opts.ServerVersion = v.client.Discovery()
	drv, err := volcengine.NewDriver(opts)
	if err != nil {
		v.t.Fatal(err)
	}
	return core.NewReconciler(core.NewProvider(drv.Dialect(), drv), &core.ReconcilerOptions{ClusterWriter: v.writer, Policy: policy, RetryDelay: 3 * time.Second})
}

func (v *vke) manifest(ann map[string]string) *corev1.Service {
	s := svcManifest(ann)
	s.Namespace = v.ns
	return s
}

func (v *vke) get(name string) *corev1.Service {
	v.t.Helper()
	s, err := v.client.CoreV1().Services(v.ns).Get(v.ctx, name, metav1.GetOptions{})
	if err != nil {
		v.t.Fatal(err)
	}
	return s
}

// ccm plays the cloud-controller-manager: it publishes the CLB address with an ipMode through
// the status subresource.
func (v *vke) ccm(name, ip string, mode corev1.LoadBalancerIPMode) {
	v.t.Helper()
	s := v.get(name)
	s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip, IPMode: &mode}}
	if _, err := v.client.CoreV1().Services(v.ns).UpdateStatus(v.ctx, s, metav1.UpdateOptions{FieldManager: "cloud-controller-manager"}); err != nil {
		v.t.Fatal(err)
	}
}

// createAsUser creates a Service the way kubectl create does, under another field manager.
func (v *vke) createAsUser(s *corev1.Service) *corev1.Service {
	v.t.Helper()
	got, err := v.client.CoreV1().Services(v.ns).Create(v.ctx, s, metav1.CreateOptions{FieldManager: "kubectl-create"})
	if err != nil {
		v.t.Fatal(err)
	}
	return got
}

func wantRetry(t *testing.T, err error, contains string) {
	t.Helper()
	var re *core.RetryError
	if !errors.As(err, &re) || re.After != 3*time.Second {
		t.Fatalf("err = %v, want a RetryError after 3s", err)
	}
	if !strings.Contains(err.Error(), contains) {
		t.Errorf("err = %v\nwant it to say %q", err, contains)
	}
}

// A Service that does not exist yet is created with its ip-mode in the creating write, with the
// manifest's other annotations; the anti-affinity patch the plan renders is accepted by the API
// server as is; the check waits for the CCM, and a second run writes nothing.
func TestAPIServerCreatesServiceWithIPMode(t *testing.T) {
	v := newVKE(t)
	v.seed()
	r := v.reconciler(preferLB, nil)
	svc := v.manifest(proxyWithClients)
	out, err := r.Reconcile(v.ctx, svc, v.cluster(readyProfile()))
	wantRetry(t, err, "has not published the CLB's address yet")
	if len(out.Written) != 1 || !out.Written[0].Create {
		t.Fatalf("written = %v, want the create", out.Written)
	}
	wantCodes(t, out.Plan.Notes, volcengine.CodeCoLocated, volcengine.CodeProxyProbability)

	got := v.get("web")
	for k, want := range map[string]string{
		volcengine.AnnotationIPMode:   volcengine.IPModeProxy,
		"team.example.com/owner":      "payments",
		core.AnnotationClients:        clients,
		volcengine.AnnotationSubnetID: "subnet-2fe1a9p0s0w0g5oxruvdfpmm",
	} {
		if got.Annotations[k] != want {
			t.Errorf("annotation %s = %q, want %q", k, got.Annotations[k], want)
		}
	}
	if got.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		t.Errorf("externalTrafficPolicy = %s, want Local (node separation on NodePorts)", got.Spec.ExternalTrafficPolicy)
	}
	if got.ManagedFields[0].Manager != core.FieldManager {
		t.Errorf("manager = %s, want %s", got.ManagedFields[0].Manager, core.FieldManager)
	}

	// The user's step: the change's edits as a merge patch, applied as is.
	if len(out.ForUser) != 1 || out.ForUser[0].Object.Kind != "Deployment" {
		t.Fatalf("for the user: %v, want the Deployment's anti-affinity", out.ForUser)
	}
	patch := mergePatchOf(t, &out.ForUser[0])
	dep, err := v.client.AppsV1().Deployments(v.ns).Patch(v.ctx, "client", types.MergePatchType, patch, metav1.PatchOptions{FieldValidation: "Strict"})
	if err != nil {
		t.Fatalf("the API server refused the rendered patch %s: %v", patch, err)
	}
	terms := dep.Spec.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if len(terms) != 1 || terms[0].TopologyKey != corev1.LabelHostname || terms[0].LabelSelector.MatchLabels["app"] != "web" {
		t.Errorf("patched anti-affinity = %+v", terms)
	}

	// Before the CCM acts, another run writes nothing and still waits.
	out, err = r.Reconcile(v.ctx, svc, v.cluster(readyProfile()))
	wantRetry(t, err, "has not published")
	if len(out.Written) != 0 {
		t.Errorf("second run wrote %v", out.Written)
	}
	v.ccm("web", "172.16.8.20", corev1.LoadBalancerIPModeProxy)
	out, err = r.Reconcile(v.ctx, svc, v.cluster(readyProfile()))
	if err != nil || len(out.Written) != 0 {
		t.Errorf("after the CCM: %v, written %v", err, out.Written)
	}
}

// Creating with the default VIP mode writes the annotation explicitly and checks it.
func TestAPIServerCreatesVIPService(t *testing.T) {
	v := newVKE(t)
	r := v.reconciler(core.Policy{}, nil)
	svc := v.manifest(nil)
	_, err := r.Reconcile(v.ctx, svc, v.cluster(readyProfile()))
	wantRetry(t, err, "ipMode not yet VIP")
	if got := v.get("web"); got.Annotations[volcengine.AnnotationIPMode] != volcengine.IPModeVIP {
		t.Errorf("annotations = %v", got.Annotations)
	}
	v.ccm("web", "172.16.8.21", corev1.LoadBalancerIPModeVIP)
	if _, err := r.Reconcile(v.ctx, svc, v.cluster(readyProfile())); err != nil {
		t.Error(err)
	}
}

// An existing VIP Service whose manifest now asks for Proxy: the plan is a replacement, the
// default policy refuses it, and nothing is written.
func TestAPIServerRefusesChangingAnExistingService(t *testing.T) {
	v := newVKE(t)
	v.seed()
	v.createAsUser(v.manifest(nil))
	v.ccm("web", "172.16.8.22", corev1.LoadBalancerIPModeVIP)
	before := v.get("web")

	r := v.reconciler(preferLB, nil)
	out, err := r.Reconcile(v.ctx, v.manifest(proxyWithClients), v.cluster(readyProfile()))
	if !errors.Is(err, core.ErrImmutable) || !strings.Contains(err.Error(), "allow disruptive changes") {
		t.Fatalf("err = %v, want ErrImmutable asking to allow disruptive changes", err)
	}
	if len(out.Written) != 0 {
		t.Errorf("written = %v", out.Written)
	}
	if !out.Plan.Changes[0].Disruptive || out.Plan.Changes[0].Object.Name != "web-proxy" {
		t.Errorf("plan: %v", out.Plan)
	}
	if !strings.Contains(out.Plan.Changes[0].Reason.Message, "a second CLB with a new address") {
		t.Errorf("the plan does not say what the replacement costs: %s", out.Plan.Changes[0].Reason.Message)
	}
	after := v.get("web")
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the existing Service was written: %v", after)
	}
	if _, err := v.client.CoreV1().Services(v.ns).Get(v.ctx, "web-proxy", metav1.GetOptions{}); err == nil {
		t.Error("a replacement was created although the policy does not allow it")
	}
}

// With disruptive changes allowed, the replacement is created beside the old Service from the
// manifest, keeps foreign annotations, gets its own allocations; the old Service is untouched
// and the user is told to move clients and delete it.
func TestAPIServerReplacesWhenAllowed(t *testing.T) {
	v := newVKE(t)
	v.seed()
	v.createAsUser(v.manifest(nil))
	v.ccm("web", "172.16.8.23", corev1.LoadBalancerIPModeVIP)
	old := v.get("web")

	r := v.reconciler(core.Policy{Prefer: core.PreferLBFeatures, AllowDisruptive: true}, nil)
	m := v.manifest(proxyWithClients)
	out, err := r.Reconcile(v.ctx, m, v.cluster(readyProfile()))
	wantRetry(t, err, "web-proxy: status.loadBalancer.ingress[*].ipMode not yet Proxy")
	if len(out.Written) != 1 || out.Written[0].Object.Name != "web-proxy" {
		t.Fatalf("written = %v", out.Written)
	}
	moved := false
	for _, ch := range out.ForUser {
		moved = moved || (ch.Object.Name == "web" && ch.Delete && strings.Contains(ch.Reason.Message, "Delete the old Service "+v.ns+"/web yourself"))
	}
	if !moved {
		t.Errorf("for the user: %v, want the step that moves clients and deletes web", out.ForUser)
	}
	repl := v.get("web-proxy")
	if repl.Annotations[volcengine.AnnotationIPMode] != volcengine.IPModeProxy || repl.Annotations[volcengine.AnnotationReplaces] != "web" ||
		repl.Annotations["team.example.com/owner"] != "payments" {
		t.Errorf("replacement annotations = %v", repl.Annotations)
	}
	if repl.Spec.ClusterIP == old.Spec.ClusterIP || repl.Spec.Ports[0].NodePort == old.Spec.Ports[0].NodePort {
		t.Errorf("the replacement shares allocations with the old Service: %v / %v", repl.Spec, old.Spec)
	}
	if after := v.get("web"); after.ResourceVersion != old.ResourceVersion {
		t.Error("the old Service was written")
	}

	// Converges: nothing more to write; once the CCM publishes Proxy, nothing pending.
	out, err = r.Reconcile(v.ctx, m, v.cluster(readyProfile()))
	wantRetry(t, err, "not yet Proxy")
	if len(out.Written) != 0 {
		t.Errorf("second run wrote %v", out.Written)
	}
	v.ccm("web-proxy", "172.16.8.24", corev1.LoadBalancerIPModeProxy)
	if out, err = r.Reconcile(v.ctx, m, v.cluster(readyProfile())); err != nil || len(out.Written) != 0 {
		t.Errorf("after the CCM: %v, written %v", err, out.Written)
	}

	// The user moves clients and deletes the old Service: the stale manifest creates nothing.
	if err := v.client.CoreV1().Services(v.ns).Delete(v.ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err = r.Reconcile(v.ctx, m, v.cluster(readyProfile()))
	if err != nil || len(out.Written) != 0 {
		t.Errorf("after deleting the old Service: %v, written %v", err, out.Written)
	}
	wantCodes(t, out.Plan.Notes, volcengine.CodePlanReplace)
}

// A controller reconciling the live object: its Proxy Service is replaced by a VIP one that
// copies every annotation other managers put on it, and nothing the API server allocated.
func TestAPIServerReplacementCopiesForeignAnnotations(t *testing.T) {
	v := newVKE(t)
	v.seed()
	v.createAsUser(v.manifest(proxyWithClients))
	v.ccm("web", "172.16.8.25", corev1.LoadBalancerIPModeProxy)
	annotate := []byte(`{"metadata":{"annotations":{"monitoring.example.com/scrape":"true"}}}`)
	if _, err := v.client.CoreV1().Services(v.ns).Patch(v.ctx, "web", types.MergePatchType, annotate, metav1.PatchOptions{FieldManager: "kubectl-annotate"}); err != nil {
		t.Fatal(err)
	}
	r := v.reconciler(core.Policy{AllowDisruptive: true}, nil)
	out, err := r.Reconcile(v.ctx, v.get("web"), v.cluster(readyProfile()))
	wantRetry(t, err, "web-vip")
	if len(out.Written) != 1 || out.Plan.Decision.Remedy != core.InterceptVIP {
		t.Fatalf("written %v, decision %s", out.Written, out.Plan.Decision.Remedy)
	}
	repl := v.get("web-vip")
	for k, want := range map[string]string{"monitoring.example.com/scrape": "true", "team.example.com/owner": "payments",
		volcengine.AnnotationIPMode: volcengine.IPModeVIP, volcengine.AnnotationReplaces: "web"} {
		if repl.Annotations[k] != want {
			t.Errorf("replacement annotation %s = %q, want %q", k, repl.Annotations[k], want)
		}
	}
	if len(repl.Finalizers) != 0 || len(repl.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("the replacement inherited the old Service's finalizers or status: %v %v", repl.Finalizers, repl.Status)
	}
}

// Verification: the plan waits for status ipMode and says why; when the status shows the other
// mode and the CCM's version is not known, it is still a retry that names the next step.
func TestAPIServerStatusIPModeCheck(t *testing.T) {
	v := newVKE(t)
	v.seed()
	r := v.reconciler(preferLB, nil)
	m := v.manifest(proxyWithClients)
	_, err := r.Reconcile(v.ctx, m, v.cluster(readyProfile()))
	wantRetry(t, err, "has not published the CLB's address yet")

	// An old CCM publishes the address without honouring Proxy (the API server defaults
	// ipMode to VIP for it). A host that does not know the CCM's version is told so.
	s := v.get("web")
	s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "172.16.8.26"}}
	if _, err := v.client.CoreV1().Services(v.ns).UpdateStatus(v.ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := v.get("web").Status.LoadBalancer.Ingress[0].IPMode; got == nil || *got != corev1.LoadBalancerIPModeVIP {
		t.Fatalf("the API server did not default ipMode to VIP: %v", got)
	}
	unknownCCM := readyProfile()
	unknownCCM.CCMVersion = ""
	_, err = r.Reconcile(v.ctx, v.get("web"), v.cluster(unknownCCM))
	wantRetry(t, err, "the status shows ipMode VIP but the annotation asks for Proxy: the cloud-controller-manager is older than v1.43.0")

	// With a CCM declared too old, the plan fails before anything, naming the component.
	oldCCM := readyProfile()
	oldCCM.CCMVersion = "v1.42.3"
	_, err = r.Reconcile(v.ctx, v.get("web"), v.cluster(oldCCM))
	var pe *core.PreconditionError
	if !errors.As(err, &pe) || pe.Component != "cloud-controller-manager" || pe.Have != "v1.42.3" {
		t.Errorf("err = %v, want the CCM precondition", err)
	}

	// A current CCM publishes Proxy: verified.
	v.ccm("web", "172.16.8.26", corev1.LoadBalancerIPModeProxy)
	if _, err := r.Reconcile(v.ctx, m, v.cluster(readyProfile())); err != nil {
		t.Error(err)
	}
}

// Foreign annotations and fields survive loopguard's writes on an existing Service, and a field
// another manager owns is left to that manager: loopguard never forces.
func TestAPIServerKeepsForeignFields(t *testing.T) {
	v := newVKE(t)
	v.seed()
	gitops, err := kube.NewWriter(server.Get(t).Config(), &kube.Options{FieldManager: "platform-gitops"})
	if err != nil {
		t.Fatal(err)
	}
	// Created in Proxy mode by a GitOps tool with server-side apply, without an
	// externalTrafficPolicy of its own: the defaulted Cluster belongs to nobody.
	if err := gitops.Apply(v.ctx, toU(v.manifest(proxyWithClients))); err != nil {
		t.Fatal(err)
	}
	v.ccm("web", "172.16.8.27", corev1.LoadBalancerIPModeProxy)
	r := v.reconciler(core.Policy{}, nil)
	out, err := r.Reconcile(v.ctx, v.get("web"), v.cluster(readyProfile()))
	if err != nil {
		t.Fatal(err)
	}
	if out.Plan.Decision.Remedy != core.NodeSeparation || len(out.Written) != 1 || out.Written[0].Field != "spec.externalTrafficPolicy" {
		t.Fatalf("decision %s, written %v", out.Plan.Decision.Remedy, out.Written)
	}
	got := v.get("web")
	if got.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal || got.Annotations["team.example.com/owner"] != "payments" ||
		got.Annotations[volcengine.AnnotationIPMode] != volcengine.IPModeProxy || len(got.Status.LoadBalancer.Ingress) != 1 {
		t.Errorf("after the write: spec %v, annotations %v, status %v", got.Spec.ExternalTrafficPolicy, got.Annotations, got.Status)
	}
	managers := map[string]bool{}
	for _, mf := range got.ManagedFields {
		managers[mf.Manager] = true
	}
	if !managers["platform-gitops"] || !managers[core.FieldManager] {
		t.Errorf("managers = %v, want loopguard next to platform-gitops", managers)
	}
	if out, err := r.Reconcile(v.ctx, v.get("web"), v.cluster(readyProfile())); err != nil || len(out.Written) != 0 {
		t.Errorf("second run: %v, written %v", err, out.Written)
	}

	// Created with kubectl create (a client-side write owns even the defaulted Cluster): the
	// change is the user's, with the command, and nothing is written.
	m := v.manifest(proxyWithClients)
	m.Name = "web2"
	v.createAsUser(m)
	es := slice(v.ns, "web2", map[string]string{"web-1": v.nodeName("a")})
	if _, err := v.client.DiscoveryV1().EndpointSlices(v.ns).Create(v.ctx, es, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	v.ccm("web2", "172.16.8.28", corev1.LoadBalancerIPModeProxy)
	before := v.get("web2")
	out, err = r.Reconcile(v.ctx, before, v.cluster(readyProfile()))
	if err != nil || len(out.Written) != 0 {
		t.Fatalf("reconcile: %v, written %v", err, out.Written)
	}
	var etp *core.Change
	for i := range out.ForUser {
		if out.ForUser[i].Field == "spec.externalTrafficPolicy" {
			etp = &out.ForUser[i]
		}
	}
	if etp == nil || !strings.Contains(etp.Reason.Message, `"kubectl-create"`) {
		t.Fatalf("for the user: %v, want the externalTrafficPolicy change naming its owner", out.ForUser)
	}
	if after := v.get("web2"); after.ResourceVersion != before.ResourceVersion {
		t.Error("a field another manager owns was written")
	}
	// The change the plan gives works as written.
	patch := mergePatchOf(t, etp)
	if _, err := v.client.CoreV1().Services(v.ns).Patch(v.ctx, "web2", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-patch", FieldValidation: "Strict"}); err != nil {
		t.Fatalf("the API server refused the rendered patch %s: %v", patch, err)
	}
	if out, err := r.Reconcile(v.ctx, v.get("web2"), v.cluster(readyProfile())); err != nil || len(out.Written) != 0 || len(out.ForUser) != 1 {
		t.Errorf("after the user's patch: %v, written %v, for the user %v (want only the anti-affinity)", err, out.Written, out.ForUser)
	}
}

// The Kubernetes prerequisite comes from the server (v1.37.2 here), whatever the profile says;
// the network model and the CCM's version are read from the cluster where the profile is
// silent.
func TestAPIServerPrerequisitesFromTheCluster(t *testing.T) {
	v := newVKE(t)
	v.seed()
	cms := []*corev1.ConfigMap{
		configMap("cello-config", map[string]string{"conf": `{"networkMode":"eni_shared"}`}),
		configMap("cilium-config", map[string]string{"enable-policy": "never"}),
	}
	for _, cm := range cms {
		if _, err := v.client.CoreV1().ConfigMaps("kube-system").Create(v.ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = v.client.CoreV1().ConfigMaps("kube-system").Delete(context.Background(), cm.Name, metav1.DeleteOptions{})
		})
	}
	one := int32(1)
	labels := map[string]string{"app.kubernetes.io/name": "cloud-controller-manager"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cloud-controller-manager"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "cloud-controller-manager", Image: "open-registry-cn-beijing.cr.volces.com/vke/cloud-controller-manager:v1.43.1-public"}}}}}}
	if _, err := v.client.AppsV1().Deployments("kube-system").Create(v.ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = v.client.AppsV1().Deployments("kube-system").Delete(context.Background(), dep.Name, metav1.DeleteOptions{})
	})

	// The profile says only the policy, and a wrong Kubernetes version.
	profile := core.ClusterProfile{KubernetesVersion: "v1.28.0"}
	c := v.cluster(profile)
	if p := c.Profile; p.KubernetesVersion != "v1.37.2" || p.CCMVersion != "v1.43.1-public" || p.Dataplane.CNI != "vpc-cni" ||
		p.Dataplane.PodInterface != "ipvlan" || p.ProxyMode != core.ProxyModeEBPF {
		t.Fatalf("profile from the cluster = %+v", p)
	}
	r := v.reconciler(preferLB, nil)
	out, err := r.Reconcile(v.ctx, v.manifest(proxyWithClients), c)
	wantRetry(t, err, "has not published")
	if len(out.Written) != 1 || out.Plan.Blocked != nil {
		t.Errorf("written %v, blocked %v", out.Written, out.Plan.Blocked)
	}
	if got := v.get("web").Annotations[volcengine.AnnotationIPMode]; got != volcengine.IPModeProxy {
		t.Errorf("ip-mode = %q", got)
	}

	// The same manifest under another name, with the profile claiming a server older than
	// v1.30: the driver asks the server and plans anyway.
	m := v.manifest(proxyWithClients)
	m.Name = "web-second"
	old := v.cluster(core.ClusterProfile{})
	old.Profile.KubernetesVersion = "v1.29.0" // what an outdated profile file would say
	p, err := r.Plan(v.ctx, m, old)
	if err != nil {
		t.Fatal(err)
	}
	wantCodes(t, p.Notes, volcengine.CodeServerVersion)
	var pe *core.PreconditionError
	if errors.As(p.Blocked.Err(), &pe) && pe.Component == "Kubernetes" {
		t.Errorf("blocked on the profile's Kubernetes version although the server reports v1.37.2: %v", p.Blocked)
	}
}

// mergePatchOf is a user change's edits as a JSON merge patch: the edits made on an empty
// object, which is what a renderer prints (the CLI's kubectl patch --type=merge).
func mergePatchOf(t *testing.T, ch *core.Change) []byte {
	t.Helper()
	if ch.CreateOnly || len(ch.Edits) == 0 {
		t.Fatalf("%s: no edits to make on the live object", ch)
	}
	obj := map[string]any{}
	for _, e := range ch.Edits {
		if _, err := e.ApplyTo(obj); err != nil {
			t.Fatal(err)
		}
	}
	js, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
