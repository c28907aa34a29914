package volcengine_test

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/drivertest"
	"github.com/loopguard/loopguard/providers/volcengine"
)

const clients = "app=client"

var (
	proxyWithClients = map[string]string{volcengine.AnnotationIPMode: volcengine.IPModeProxy, core.AnnotationClients: clients}
	preferLB         = core.Policy{Prefer: core.PreferLBFeatures}
)

type planCase struct {
	input *corev1.Service
	// inCluster are the live objects the reader sees (Services, ConfigMaps, Deployments).
	inCluster []runtime.Object
	// cluster are the objects the host gathered into the core.Cluster; nil means placement("shop").
	cluster []runtime.Object
	profile func(*core.ClusterProfile)
	policy  core.Policy
	opts    volcengine.DriverOptions
	offline bool
	// blocked lists the kinds p.Blocked matches; empty means not blocked.
	blocked []string
}

func planCases() map[string]planCase {
	createdVIP := live(svcManifest(nil), corev1.LoadBalancerIPModeVIP)
	createdProxy := live(svcManifest(proxyWithClients), corev1.LoadBalancerIPModeProxy)
	proxyAnnotatedVIPStatus := live(svcManifest(proxyWithClients), corev1.LoadBalancerIPModeVIP)
	separatedClients := []runtime.Object{node("node-a"), node("node-b"), node("node-c"),
		pod("shop", "web-1", "node-a", map[string]string{"app": "web"}), pod("shop", "web-2", "node-b", map[string]string{"app": "web"}),
		slice("shop", "web", map[string]string{"web-1": "node-a", "web-2": "node-b"}),
		withAntiAffinity(clientPod("shop", "client-2", "node-c"))}
	oldKubernetes := volcengine.ServerVersionFunc(func() (*version.Info, error) { return &version.Info{GitVersion: "v1.29.4"}, nil })
	return map[string]planCase{
		"create default VIP":                {input: svcManifest(nil)},
		"create Proxy with node separation": {input: svcManifest(proxyWithClients), policy: preferLB},
		"create Proxy when the decision is VIP": {input: svcManifest(map[string]string{volcengine.AnnotationIPMode: volcengine.IPModeProxy}),
			blocked: []string{"precondition"}},
		"create Proxy with an old cloud-controller-manager": {input: svcManifest(proxyWithClients), policy: preferLB,
			profile: func(p *core.ClusterProfile) { p.CCMVersion = "v1.42.0" }, blocked: []string{"precondition"}},
		"create Proxy on an API server older than v1.30": {input: svcManifest(proxyWithClients), policy: preferLB,
			opts: volcengine.DriverOptions{ServerVersion: oldKubernetes}, blocked: []string{"precondition"}},
		"create Proxy with every prerequisite unknown": {input: svcManifest(map[string]string{volcengine.AnnotationIPMode: volcengine.IPModeProxy, core.AnnotationLBScope: "public"}),
			profile: func(p *core.ClusterProfile) { *p = core.ClusterProfile{} }, blocked: []string{"precondition"}},
		"create Proxy refused while clients share nodes": {input: svcManifest(proxyWithClients), policy: preferLB,
			opts: volcengine.DriverOptions{RefuseCoLocatedProxy: true}, blocked: []string{"precondition"}},
		// An offline plan is a plan; only applying it needs a cluster writer.
		"create Proxy offline": {input: svcManifest(proxyWithClients), policy: preferLB, offline: true},

		"existing VIP, manifest asks for Proxy": {input: svcManifest(proxyWithClients), policy: preferLB,
			inCluster: []runtime.Object{createdVIP}, blocked: []string{"immutable"}},
		"existing VIP, manifest asks for Proxy, replacement allowed": {input: svcManifest(proxyWithClients),
			policy: core.Policy{Prefer: core.PreferLBFeatures, AllowDisruptive: true}, inCluster: []runtime.Object{createdVIP}},
		"existing Proxy, switch to VIP allowed": {input: createdProxy, policy: core.Policy{AllowDisruptive: true},
			inCluster: []runtime.Object{createdProxy}},
		"existing Proxy, default policy": {input: createdProxy, inCluster: []runtime.Object{createdProxy}},
		"existing Proxy without declared clients": {input: withAnn(createdProxy, core.AnnotationClients, ""),
			inCluster: []runtime.Object{withAnn(createdProxy, core.AnnotationClients, "")}},
		"existing Proxy, separated and in effect": {input: withETPLocal(createdProxy), inCluster: []runtime.Object{withETPLocal(createdProxy)},
			cluster: separatedClients},
		"replacement of a Service on a reused CLB": {input: svcManifest(proxyWithClients, reused),
			policy:    core.Policy{Prefer: core.PreferLBFeatures, AllowDisruptive: true},
			inCluster: []runtime.Object{live(svcManifest(nil, reused), corev1.LoadBalancerIPModeVIP)}, blocked: []string{"unsupported"}},
		"replacement name taken": {input: svcManifest(proxyWithClients), policy: core.Policy{Prefer: core.PreferLBFeatures, AllowDisruptive: true},
			inCluster: []runtime.Object{createdVIP, renamed(live(svcManifest(nil), corev1.LoadBalancerIPModeVIP), "web-proxy")}, blocked: []string{"conflict"}},
		"already replaced": {input: svcManifest(proxyWithClients), policy: preferLB,
			inCluster: []runtime.Object{withAnn(renamed(createdProxy, "web-proxy"), volcengine.AnnotationReplaces, "web")}},

		"status VIP under Proxy, CCM version unknown": {input: proxyAnnotatedVIPStatus, inCluster: []runtime.Object{proxyAnnotatedVIPStatus},
			profile: func(p *core.ClusterProfile) { p.CCMVersion = "" }},
		"status VIP under Proxy, CCM new enough": {input: proxyAnnotatedVIPStatus, inCluster: []runtime.Object{proxyAnnotatedVIPStatus},
			blocked: []string{"immutable"}},
		"status VIP under Proxy, CCM too old": {input: proxyAnnotatedVIPStatus, inCluster: []runtime.Object{proxyAnnotatedVIPStatus},
			profile: func(p *core.ClusterProfile) { p.CCMVersion = "v1.40.1" }, blocked: []string{"precondition"}},
	}
}

func reused(s *corev1.Service) { s.Annotations[volcengine.AnnotationLoadBalancerID] = "clb-reused0001" }

func renamed(s *corev1.Service, name string) *corev1.Service {
	s = s.DeepCopy()
	s.Name = name
	return s
}

func withETPLocal(s *corev1.Service) *corev1.Service {
	s = s.DeepCopy()
	s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	return s
}

func withAntiAffinity(p *corev1.Pod) *corev1.Pod {
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
		{TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}
	return p
}

// planFor runs the case through the Reconciler's Plan (Translate, Assess, Decide, the driver,
// and the Reconciler's validation), as a host does.
func planFor(t *testing.T, tc planCase) (*core.Plan, *drivertest.Cluster) {
	t.Helper()
	profile := readyProfile()
	if tc.profile != nil {
		tc.profile(&profile)
	}
	objs := tc.cluster
	if objs == nil {
		objs = placement("shop")
	}
	c, err := core.NewCluster(profile, objs...)
	if err != nil {
		t.Fatal(err)
	}
	opts := tc.opts
	drv, err := volcengine.NewDriver(&opts)
	if err != nil {
		t.Fatal(err)
	}
	mem := newMem(tc.inCluster...)
	ropts := &core.ReconcilerOptions{Policy: tc.policy}
	if !tc.offline {
		ropts.ClusterWriter = mem
	}
	r := core.NewReconciler(core.NewProvider(drv.Dialect(), drv), ropts)
	p, err := r.Plan(context.Background(), tc.input, c)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return p, mem
}

var goldenName = regexp.MustCompile(`[^a-z0-9]+`)

// TestDriverPlans renders each plan to testdata/plans/<case>.golden: the changes with their
// edits and templates, the rendered anti-affinity patches, the checks with what pending means,
// the notes, and why a plan is blocked.
func TestDriverPlans(t *testing.T) {
	for name, tc := range planCases() {
		t.Run(name, func(t *testing.T) {
			p, mem := planFor(t, tc)
			if got := errorKinds(p.Blocked.Err()); !slices.Equal(got, tc.blocked) {
				t.Errorf("blocked = %v (%v), want kinds %v", got, p.Blocked, tc.blocked)
			}
			if len(mem.Writes()) != 0 {
				t.Errorf("planning wrote %v", mem.Writes())
			}
			golden(t, strings.Trim(goldenName.ReplaceAllString(strings.ToLower(name), "-"), "-"), renderPlan(p))
			// Planning only observes: the same inputs give the same plan.
			again, _ := planFor(t, tc)
			if diff := cmp.Diff(renderPlan(p), renderPlan(again)); diff != "" {
				t.Errorf("a second plan differs:\n%s", diff)
			}
		})
	}
}

// Every blocked plan of the table writes nothing when applied, and every error is a typed one.
func TestDriverBlockedPlansWriteNothing(t *testing.T) {
	for name, tc := range planCases() {
		if len(tc.blocked) == 0 || tc.offline {
			continue
		}
		t.Run(name, func(t *testing.T) {
			p, mem := planFor(t, tc)
			drv, _ := volcengine.NewDriver(&tc.opts)
			r := core.NewReconciler(core.NewProvider(drv.Dialect(), drv), &core.ReconcilerOptions{ClusterWriter: mem, Policy: tc.policy})
			_, err := r.Apply(context.Background(), p)
			if err == nil || len(mem.Writes()) != 0 {
				t.Errorf("apply: %v, writes %v; want an error and no write", err, mem.Writes())
			}
			var pe *core.PreconditionError
			if slices.Contains(tc.blocked, "precondition") && !errors.As(err, &pe) {
				t.Errorf("err = %v, want a *core.PreconditionError", err)
			}
		})
	}
}

// The prerequisites that fall short are each a *core.PreconditionError naming the component,
// what it is and what ip-mode needs.
func TestDriverPrerequisiteErrors(t *testing.T) {
	tc := planCases()["create Proxy with every prerequisite unknown"]
	p, _ := planFor(t, tc)
	var got []string
	for _, err := range p.Blocked.Err().(interface{ Unwrap() []error }).Unwrap() {
		var pe *core.PreconditionError
		if !errors.As(err, &pe) {
			t.Fatalf("%v is not a PreconditionError", err)
		}
		got = append(got, pe.Component+" "+pe.Need)
	}
	want := []string{"Kubernetes >= v1.30", "network model VPC-CNI with IPVlan Pod interfaces and eBPF service forwarding", "cloud-controller-manager >= v1.43.0"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("precondition errors (-want +got):\n%s", diff)
	}

	tc = planCases()["create Proxy on an API server older than v1.30"]
	p, _ = planFor(t, tc)
	var pe *core.PreconditionError
	if !errors.As(p.Blocked.Err(), &pe) || pe.Have != "v1.29.4" || pe.Component != "Kubernetes" {
		t.Errorf("blocked = %v; want Kubernetes v1.29.4 from the server, not the profile's v1.32.2", p.Blocked)
	}
	wantCodes(t, p.Notes, volcengine.CodeServerVersion)
}

func TestDriverRejectsBadIPMode(t *testing.T) {
	for _, v := range []string{"proxy", "PROXY", "vip", "ipvs", ""} {
		svc := svcManifest(map[string]string{volcengine.AnnotationIPMode: "x"})
		svc.Annotations[volcengine.AnnotationIPMode] = v
		c, _ := core.NewCluster(readyProfile(), placement("shop")...)
		drv, _ := volcengine.NewDriver(nil)
		r := core.NewReconciler(core.NewProvider(drv.Dialect(), drv), &core.ReconcilerOptions{ClusterWriter: newMem()})
		_, err := r.Plan(context.Background(), svc, c)
		if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), `supported values: "VIP", "Proxy"`) {
			t.Errorf("%q through the Reconciler: err = %v, want ErrInvalid listing the accepted values", v, err)
		}
		// The driver checks on its own too, for hosts that call it directly.
		res := &core.Result{Exposure: core.Exposure{Object: core.ObjectRef{Kind: "Service", Namespace: "shop", Name: "web"}}}
		_, err = drv.Plan(context.Background(), &core.PlanRequest{Object: svc, Cluster: c, Result: res})
		if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), `supported values: "VIP", "Proxy"`) {
			t.Errorf("%q through the driver: err = %v", v, err)
		}
	}
}

// Reconciling twice writes once: the first run creates (and waits for the controller), the
// second finds everything in place.
func TestDriverReconcileIsIdempotent(t *testing.T) {
	for _, name := range []string{"create default VIP", "create Proxy with node separation", "existing VIP, manifest asks for Proxy, replacement allowed", "existing Proxy, default policy"} {
		t.Run(name, func(t *testing.T) {
			tc := planCases()[name]
			profile := readyProfile()
			c, _ := core.NewCluster(profile, placement("shop")...)
			drv, _ := volcengine.NewDriver(nil)
			mem := newMem(tc.inCluster...)
			r := core.NewReconciler(core.NewProvider(drv.Dialect(), drv), &core.ReconcilerOptions{ClusterWriter: mem, Policy: tc.policy})
			out, err := r.Reconcile(context.Background(), tc.input, c)
			var re *core.RetryError
			if err != nil && !errors.As(err, &re) {
				t.Fatalf("first run: %v, want success or a RetryError while the controller has not set ipMode", err)
			}
			written := len(mem.Writes())
			if written == 0 || len(out.Written) != written {
				t.Fatalf("first run wrote %v (outcome %d)", mem.Writes(), len(out.Written))
			}
			if err != nil {
				chk := out.Plan.Checks[0]
				if !strings.Contains(err.Error(), chk.Pending) {
					t.Errorf("the retry does not say what pending means: %v", err)
				}
				setStatus(mem, chk.Object.Namespace, chk.Object.Name, "172.16.8.99", corev1.LoadBalancerIPMode(chk.Edit.Value.(string)))
			}
			out, err = r.Reconcile(context.Background(), tc.input, c)
			if err != nil {
				t.Fatalf("second run: %v", err)
			}
			if len(mem.Writes()) != written || len(out.Written) != 0 || !out.Plan.Empty() || out.Plan.Blocked != nil {
				t.Errorf("second run wrote %v, plan %v", mem.Writes()[written:], out.Plan)
			}
		})
	}
}

func TestDriverReplacementTemplate(t *testing.T) {
	old := live(svcManifest(proxyWithClients, func(s *corev1.Service) {
		s.Spec.LoadBalancerIP = "172.16.8.20"
		s.Spec.HealthCheckNodePort = 31000
		s.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = `{"kind":"Service"}`
		yes := true
		s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "u", Controller: &yes}}
	}), corev1.LoadBalancerIPModeProxy)
	tc := planCase{input: old, inCluster: []runtime.Object{old}, policy: core.Policy{AllowDisruptive: true}}
	p, _ := planFor(t, tc)
	if p.Blocked != nil || len(p.Changes) == 0 || !p.Changes[0].Disruptive {
		t.Fatalf("plan: %s", renderPlan(p))
	}
	tmpl := p.Changes[0].Template
	ann := tmpl.GetAnnotations()
	for _, k := range []string{"team.example.com/owner", core.AnnotationClients, volcengine.AnnotationSubnetID, volcengine.AnnotationAddressType} {
		if ann[k] != old.Annotations[k] {
			t.Errorf("annotation %s = %q, want it copied (%q)", k, ann[k], old.Annotations[k])
		}
	}
	if _, ok := ann["kubectl.kubernetes.io/last-applied-configuration"]; ok {
		t.Error("kubectl's last-applied-configuration describes the old Service and must not be copied")
	}
	for _, f := range [][]string{{"spec", "clusterIP"}, {"spec", "clusterIPs"}, {"spec", "healthCheckNodePort"}, {"spec", "loadBalancerIP"},
		{"status"}, {"metadata", "uid"}, {"metadata", "ownerReferences"}, {"metadata", "finalizers"}, {"metadata", "creationTimestamp"}} {
		cur := tmpl.Object
		var ok bool
		var v any = cur
		for _, step := range f {
			m, _ := v.(map[string]any)
			v, ok = m[step]
		}
		if ok {
			t.Errorf("%s copied into the replacement: %v", strings.Join(f, "."), v)
		}
	}
	ports := tmpl.Object["spec"].(map[string]any)["ports"].([]any)
	if _, ok := ports[0].(map[string]any)["nodePort"]; ok {
		t.Error("nodePort copied: it would collide with the old Service's")
	}
	if !strings.Contains(p.Changes[0].Reason.Message, "spec.loadBalancerIP 172.16.8.20") {
		t.Errorf("the reason does not say the requested address is not copied: %s", p.Changes[0].Reason.Message)
	}
}

func TestDriverApplyCloudAndOptions(t *testing.T) {
	drv, err := volcengine.NewDriver(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drv.ApplyCloud(context.Background(), &core.Change{By: core.WriterCloud}); !errors.Is(err, core.ErrUnsupported) {
		t.Errorf("ApplyCloud = %v, want ErrUnsupported", err)
	}
	if _, err := volcengine.NewDriver(&volcengine.DriverOptions{CCMDeployment: core.ObjectKey{Kind: "DaemonSet", Name: "x"}}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("NewDriver with a bad CCMDeployment = %v, want ErrInvalid", err)
	}
	if _, err := drv.Plan(context.Background(), &core.PlanRequest{}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("Plan without a result = %v", err)
	}
	got := volcengine.DefaultReplacementName(renamed(svcManifest(nil), strings.Repeat("a", 62)), core.PathProxy)
	if len(got) > 63 || !strings.HasSuffix(got, "-proxy") {
		t.Errorf("DefaultReplacementName = %q (%d characters)", got, len(got))
	}
}

// A Driver holds no state between plans: many goroutines may plan with one (run with -race).
func TestDriverConcurrentPlans(t *testing.T) {
	cases := planCases()
	drv, _ := volcengine.NewDriver(nil)
	done := make(chan error)
	n := 0
	for name, tc := range cases {
		if tc.opts.ServerVersion != nil || tc.opts.RefuseCoLocatedProxy || tc.offline {
			continue
		}
		n++
		go func() {
			profile := readyProfile()
			if tc.profile != nil {
				tc.profile(&profile)
			}
			c, _ := core.NewCluster(profile, placement("shop")...)
			r := core.NewReconciler(core.NewProvider(drv.Dialect(), drv), &core.ReconcilerOptions{ClusterWriter: newMem(tc.inCluster...), Policy: tc.policy})
			_, err := r.Plan(context.Background(), tc.input, c)
			if err != nil {
				err = errors.New(name + ": " + err.Error())
			}
			done <- err
		}()
	}
	for range n {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
