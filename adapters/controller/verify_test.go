package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/loopguard/loopguard/adapters/verify"
	"github.com/loopguard/loopguard/adapters/verify/kubeletsim"
	"github.com/loopguard/loopguard/adapters/verify/probe"
	"github.com/loopguard/loopguard/providers/tencent"
)

// The controller's verification (Options.Verify) runs against the real kube-apiserver with
// adapters/verify/kubeletsim playing the kubelet of every node: it binds nothing, so it watches the
// probe namespace, marks each probe Pod Running and terminates it with the real probe's
// report, run against a loopback server that stands for what a client on that node reaches
// at the LB's address (silent behind the loop, answering elsewhere).

// direct makes the CLB send to the Pods (TKE's direct access): a client on the backend's node
// always loops, one elsewhere never (with NodePort backends the verdict is a probability that
// depends on every node of the shared server).
var direct = map[string]string{tencent.AnnotationDirectAccess: "true"}

// verifyOptions are bounds short enough for a test.
func verifyOptions(probeNS string) *VerifyOptions {
	return &VerifyOptions{
		Probe: verify.Options{Image: "ghcr.io/loopguard/loopguard:test", Namespace: probeNS,
			Connections: 2, ConnectTimeout: 500 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, StartTimeout: 20 * time.Second},
		Gap: time.Millisecond,
		// The fix (an annotation) reaches the informer cache within milliseconds here; on a
		// cloud the LB takes longer, which is what the default minute is for.
		AfterFix: time.Second,
	}
}

// readyNode creates a Node the kubelet reports Ready (a probe Pod is pinned only to those).
func (h *harness) readyNode(name string) {
	h.t.Helper()
	h.node(name, nil)
	cs := h.srv.Client()
	n, err := cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	// Nodes are cluster-wide on the shared server: cordoned when the test ends, a later
	// test's verification never pins a probe Pod to this one, where its kubelet plays no part.
	h.t.Cleanup(func() {
		patch := []byte(`{"spec":{"unschedulable":true}}`)
		if _, err := cs.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			h.t.Errorf("cordon %s: %v", name, err)
		}
	})
}

// exposed creates Service name with annotations ann, an LB address (as the cloud controller
// would write it) and one ready backend on node.
func (h *harness) exposed(name, node string, ann map[string]string) {
	h.t.Helper()
	h.unaddressed(name, node, ann)
	h.address(name)
}

// unaddressed is exposed before the cloud's controller gave the Service an address.
func (h *harness) unaddressed(name, node string, ann map[string]string) {
	h.t.Helper()
	ctx, cs := context.Background(), h.srv.Client()
	ready := true
	if _, err := cs.DiscoveryV1().EndpointSlices(h.ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-a", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"172.16.0.21"}, NodeName: &node, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.service(name, ann)
}

// address gives Service name an LB address, as the cloud's controller would. The controller
// under test writes the same status (its conditions) meanwhile, so a read-then-update can meet
// a conflict: read again and retry, as a client does.
func (h *harness) address(name string) {
	h.t.Helper()
	ctx, cs := context.Background(), h.srv.Client()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		svc, err := cs.CoreV1().Services(h.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.10"}}
		_, err = cs.CoreV1().Services(h.ns).UpdateStatus(ctx, svc, metav1.UpdateOptions{FieldManager: "service-controller"})
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

func findType(s *corev1.Service, typ string) *metav1.Condition {
	for i := range s.Status.Conditions {
		if s.Status.Conditions[i].Type == typ {
			return &s.Status.Conditions[i]
		}
	}
	return nil
}

// verified waits for the Service's Verified condition.
func (h *harness) verified(name string) *metav1.Condition {
	h.t.Helper()
	var c *metav1.Condition
	h.eventually("the Verified condition on "+name, func() (bool, string) {
		s := h.get(name)
		c = findType(s, VerifiedConditionType)
		return c != nil, "conditions " + conditionsText(s)
	})
	return c
}

func conditionsText(s *corev1.Service) string {
	var out []string
	for _, c := range s.Status.Conditions {
		out = append(out, c.Type+"="+string(c.Status)+" "+c.Reason+": "+c.Message)
	}
	return strings.Join(out, "; ")
}

func (h *harness) probePodsLeft(ns string) []corev1.Pod {
	h.t.Helper()
	l, err := h.srv.Client().CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: verify.LabelManagedBy + "=" + verify.ManagedBy})
	if err != nil {
		h.t.Fatal(err)
	}
	return l.Items
}

// TestVerifyWhenAtRisk: with verification on, a Service whose verdict turns at-risk is
// verified: two probe Pods in the probe namespace, pinned to the backend's node and to the
// other, limited and owned by the controller's stand-in, marked as the controller's; what
// they observed (the loop from the backend's node, answers from the other) is recorded as
// the Service's Verified condition next to the LoopSafe one, under its own field manager,
// and counted; the Pods are gone afterwards.
func TestVerifyWhenAtRisk(t *testing.T) {
	srv := server.Get(t)
	probeNS := srv.Namespace(t)
	// The controller's own Pod in a cluster; a ConfigMap stands in for it.
	owner, err := srv.Client().CoreV1().ConfigMaps(probeNS).Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "loopguard-controller"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vo := verifyOptions(probeNS)
	vo.Probe.Owner = &metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}
	h := startWith(t, false, tke(t), nil, func(h *harness, o *Options) { o.Verify = vo })
	backend, other := h.ns+"-1", h.ns+"-2"
	h.readyNode(backend)
	h.readyNode(other)
	k := kubeletsim.Start(t, srv.Client(), probeNS, map[string]string{backend: kubeletsim.Listen(t, false), other: kubeletsim.Listen(t, true)}, nil)
	// At risk before the cloud gave it an address: nothing to probe, so no Pod and no
	// condition yet (a NotObserved one would stand for an hour).
	h.unaddressed("web", backend, direct)
	h.eventually("the verdict", func() (bool, string) {
		c := condition(h.get("web"))
		return c != nil && c.Reason == ReasonAtRisk, conditionsText(h.get("web"))
	})
	h.resync("web")
	if n := len(k.Seen()); n != 0 || findType(h.get("web"), VerifiedConditionType) != nil {
		t.Fatalf("verified without an LB address: %d probe Pods, %s", n, conditionsText(h.get("web")))
	}
	h.address("web")

	c := h.verified("web")
	if c.Status != metav1.ConditionTrue || c.Reason != ReasonVerifyAgrees {
		t.Errorf("Verified = %s %s: %s", c.Status, c.Reason, c.Message)
	}
	for _, want := range []string{"client on backend-node (node " + backend + "): predicted loops, observed loops",
		"client on other-node (node " + other + "): predicted works, observed works"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Verified message %q lacks %q", c.Message, want)
		}
	}
	svc := h.get("web")
	if lc := condition(svc); lc == nil || lc.Reason != ReasonAtRisk {
		t.Errorf("the LoopSafe condition went: %s", conditionsText(svc))
	}
	if !ownedBy(svc, VerifyFieldManager, "status", VerifiedConditionType) {
		t.Errorf("the Verified condition is not %s's: %+v", VerifyFieldManager, svc.ManagedFields)
	}
	if got := counter(h.c.verifier.runs.WithLabelValues("agrees")); got != 1 {
		t.Errorf("loopguard_verifications_total{result=agrees} = %v, want 1", got)
	}
	h.eventually("the probe Pods removed", func() (bool, string) {
		left := h.probePodsLeft(probeNS)
		return len(left) == 0, strings.Repeat("pod ", len(left))
	})
	seen := k.Seen()
	if len(seen) != 2 {
		t.Fatalf("%d probe Pods created, want 2", len(seen))
	}
	for _, p := range seen {
		side := p.Labels[verify.LabelSide]
		switch {
		case side == string(verify.BackendNode) && p.Spec.NodeName != backend, side == string(verify.OtherNode) && p.Spec.NodeName != other:
			t.Errorf("Pod %s: side %s pinned to %q", p.Name, side, p.Spec.NodeName)
		case p.Labels[LabelVerifyHost] != "controller" || p.Labels[verify.LabelServiceNamespace] != h.ns:
			t.Errorf("Pod %s labels %v", p.Name, p.Labels)
		case len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != owner.UID:
			t.Errorf("Pod %s owners %+v, want the controller's stand-in", p.Name, p.OwnerReferences)
		case p.Spec.ActiveDeadlineSeconds == nil || p.Spec.Containers[0].Resources.Limits.Memory().IsZero():
			t.Errorf("Pod %s is unbounded: %+v", p.Name, p.Spec)
		}
	}

	// Nothing new to verify on a resync: no more Pods.
	h.resync("web")
	h.resync("web")
	if n := len(k.Seen()); n != 2 {
		t.Errorf("a resync verified again: %d probe Pods", n)
	}
}

// TestVerifyAfterFix: enforcing, the controller writes the fix, waits AfterFix, and verifies
// the Service against its new verdict; here the fix holds (every client is answered).
func TestVerifyAfterFix(t *testing.T) {
	srv := server.Get(t)
	probeNS := srv.Namespace(t)
	h := startWith(t, true, tke(t), nil, func(h *harness, o *Options) { o.Verify = verifyOptions(probeNS) })
	backend, other := h.ns+"-1", h.ns+"-2"
	h.readyNode(backend)
	h.readyNode(other)
	kubeletsim.Start(t, srv.Client(), probeNS, map[string]string{backend: kubeletsim.Listen(t, true), other: kubeletsim.Listen(t, true)}, nil)
	h.exposed("web", backend, direct)

	c := h.verified("web")
	if c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "client on backend-node (node "+backend+"): predicted works, observed works") {
		t.Errorf("Verified = %s %s: %s", c.Status, c.Reason, c.Message)
	}
	if lc := condition(h.get("web")); lc == nil || lc.Reason != ReasonNoLoop {
		t.Errorf("LoopSafe = %+v, want the fix's NoLoop", lc)
	}
}

// TestVerifyDisagreement: what the probes observe contradicts the verdict (the backend's node
// is answered though the verdict says it loops): the condition says so, False.
func TestVerifyDisagreement(t *testing.T) {
	srv := server.Get(t)
	probeNS := srv.Namespace(t)
	h := startWith(t, false, tke(t), nil, func(h *harness, o *Options) { o.Verify = verifyOptions(probeNS) })
	backend, other := h.ns+"-1", h.ns+"-2"
	h.readyNode(backend)
	h.readyNode(other)
	kubeletsim.Start(t, srv.Client(), probeNS, map[string]string{backend: kubeletsim.Listen(t, true), other: kubeletsim.Listen(t, true)}, nil)
	h.exposed("web", backend, direct)
	c := h.verified("web")
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonVerifyDisagrees || !strings.Contains(c.Message, "predicted loops, observed works") {
		t.Errorf("Verified = %s %s: %s", c.Status, c.Reason, c.Message)
	}
	if got := counter(h.c.verifier.runs.WithLabelValues("disagrees")); got != 1 {
		t.Errorf("loopguard_verifications_total{result=disagrees} = %v, want 1", got)
	}
}

// TestVerifyOffByDefault: without Options.Verify the same at-risk Service gets its verdict
// and nothing else: no probe Pod, no Verified condition.
func TestVerifyOffByDefault(t *testing.T) {
	srv := server.Get(t)
	h := start(t, false)
	if h.c.verifier != nil {
		t.Fatal("a verifier without Options.Verify")
	}
	backend := h.ns + "-1"
	h.readyNode(backend)
	h.readyNode(h.ns + "-2")
	k := kubeletsim.Start(t, srv.Client(), h.ns, map[string]string{backend: kubeletsim.Listen(t, false)}, nil)
	h.exposed("web", backend, direct)
	h.eventually("the verdict", func() (bool, string) {
		c := condition(h.get("web"))
		return c != nil && c.Reason == ReasonAtRisk, conditionsText(h.get("web"))
	})
	h.resync("web")
	if n := len(k.Seen()); n != 0 || len(h.probePodsLeft(h.ns)) != 0 {
		t.Errorf("%d probe Pods created with verification off", n)
	}
	if c := findType(h.get("web"), VerifiedConditionType); c != nil {
		t.Errorf("a Verified condition with verification off: %+v", c)
	}
}

// TestRBACVerify runs report-only mode with verification as deploy/base's ServiceAccount with
// exactly base's RBAC and deploy/components/verify's (the probe namespace is the
// controller's own, as the component sets it): the verification runs and is recorded, and
// the ServiceAccount may create Pods nowhere else.
func TestRBACVerify(t *testing.T) {
	srv := server.Get(t)
	var probeNS string
	h := startWith(t, false, tke(t), installRBAC("../../deploy/base/rbac.yaml", "../../deploy/components/verify/rbac.yaml"),
		func(h *harness, o *Options) { probeNS = h.ns; o.Verify = verifyOptions(h.ns) })
	backend, other := h.ns+"-1", h.ns+"-2"
	h.readyNode(backend)
	h.readyNode(other)
	kubeletsim.Start(t, srv.Client(), probeNS, map[string]string{backend: kubeletsim.Listen(t, false), other: kubeletsim.Listen(t, true)}, nil)
	h.exposed("web", backend, direct)
	if c := h.verified("web"); c.Reason != ReasonVerifyAgrees {
		t.Errorf("Verified = %s %s: %s", c.Status, c.Reason, c.Message)
	}
	sa := "system:serviceaccount:" + h.ns + ":loopguard"
	for _, verb := range []string{"create", "delete"} {
		r, err := srv.Client().AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: sa, Groups: []string{"system:serviceaccounts", "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: verb, Resource: "pods"}}}, metav1.CreateOptions{})
		if err != nil || r.Status.Allowed {
			t.Errorf("the ServiceAccount may %s Pods outside the probe namespace (%v)", verb, err)
		}
	}
}

// TestVerifiedCondition: how a run becomes the condition.
func TestVerifiedCondition(t *testing.T) {
	works := &verify.Observation{Behaviour: verify.Works, Connections: 2, Counts: map[probe.Outcome]int{probe.OK: 2}}
	loops := &verify.Observation{Behaviour: verify.Loops, Connections: 2, Counts: map[probe.Outcome]int{probe.NoAnswer: 2}}
	backend := func(obs *verify.Observation, agree bool, err string) verify.PlacementReport {
		return verify.PlacementReport{Side: verify.BackendNode, Node: "n1", Predicted: verify.Prediction{Behaviour: verify.Loops}, Observed: obs, Agree: agree, Error: err}
	}
	other := verify.PlacementReport{Side: verify.OtherNode, Node: "n2", Predicted: verify.Prediction{Behaviour: verify.Works}, Observed: works, Agree: true}
	noOther := verify.PlacementReport{Side: verify.OtherNode, Predicted: verify.Prediction{Behaviour: verify.Unpredicted}, Error: "every node a probe Pod may run on holds a backend"}
	run := func(agree, disagree, errs int, ps ...verify.PlacementReport) verify.Report {
		return verify.Report{Exposures: []verify.ExposureReport{{Placements: ps}}, Agree: agree, Disagree: disagree, Errors: errs}
	}
	tests := map[string]struct {
		rep     verify.Report
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		"both agree": {run(2, 0, 0, backend(loops, true, ""), other), metav1.ConditionTrue, ReasonVerifyAgrees,
			"client on backend-node (node n1): predicted loops, observed loops (2 no-answer); client on other-node (node n2): predicted works, observed works (2 ok)"},
		"one disagrees": {run(1, 1, 0, backend(works, false, ""), other), metav1.ConditionFalse, ReasonVerifyDisagrees, "predicted loops, observed works (2 ok)"},
		"every node holds a backend": {run(1, 0, 1, backend(loops, true, ""), noOther), metav1.ConditionTrue, ReasonVerifyAgrees,
			"client on other-node (node none): predicted unknown, not observed: every node a probe Pod may run on holds a backend"},
		"a Pod never started": {run(1, 0, 1, backend(nil, false, "probe Pod did not start"), other), metav1.ConditionUnknown, ReasonVerifyNotObserved,
			"client on backend-node (node n1): predicted loops, not observed: probe Pod did not start"},
		"a Pod left behind": {run(2, 0, 1, backend(loops, true, "could not delete probe Pod"), other), metav1.ConditionUnknown, ReasonVerifyNotObserved, "observed loops"},
		"nothing observed":  {run(0, 0, 1, noOther), metav1.ConditionUnknown, ReasonVerifyNotObserved, "node none"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v := verifiedCondition(tc.rep)
			if v.status != tc.status || v.reason != tc.reason || !strings.Contains(v.message, tc.message) {
				t.Errorf("got %s %s: %s\nwant %s %s containing %q", v.status, v.reason, v.message, tc.status, tc.reason, tc.message)
			}
		})
	}
}
