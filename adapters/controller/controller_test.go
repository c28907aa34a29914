package controller

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/drivertest"
	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/tencent"
)

// server is a real kube-apiserver (TESTING.md §2) with TKE's TkeServiceConfig CRD, so the
// custom-kind watch runs as it does on TKE.
var server = apiserver.NewShared(apiserver.WithCRDPaths("../../providers/tencent/crds"))

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(server.Run(m))
}

// ipvs is an IPVS cluster whose kube-proxy supports prevent-loopback (providers/tencent tests).
var ipvs = core.ClusterProfile{Provider: tencent.Name, ProxyMode: core.ProxyModeIPVS, KubeProxyVersion: "v1.20.6-tke.12"}

var tkeConfigMaps = []types.NamespacedName{
	{Namespace: tencent.ControllerNamespace, Name: tencent.ServiceControllerConfigMap},
	{Namespace: tencent.ControllerNamespace, Name: tencent.IngressControllerConfigMap},
}

const wait = 30 * time.Second

// harness is one running controller on the shared server, watching one test's namespace.
type harness struct {
	t   testing.TB
	srv *apiserver.Server
	ns  string
	c   *Controller

	mu     sync.Mutex
	evals  map[objectID]int
	mapped []mapping
}

type mapping struct {
	kind string
	reqs []reconcile.Request
}

func start(t testing.TB, enforce bool) *harness {
	t.Helper()
	p, err := tencent.NewProvider(nil)
	if err != nil {
		t.Fatal(err)
	}
	return startWith(t, enforce, p, nil)
}

// startWith starts the controller; rbac, when set, is called with the harness before the
// manager is built and returns the rest.Config it runs with (an impersonated ServiceAccount);
// each of with changes the Options after the harness is made.
func startWith(t testing.TB, enforce bool, p core.Provider, rbac func(h *harness) (*rest.Config, string), with ...func(*harness, *Options)) *harness {
	t.Helper()
	return startCache(t, enforce, p, rbac, true, with...)
}

// startCache is startWith; ownNamespace restricts the manager's cache to the test's
// namespace, as every test but those of the cluster-wide cache does.
func startCache(t testing.TB, enforce bool, p core.Provider, rbac func(h *harness) (*rest.Config, string), ownNamespace bool, with ...func(*harness, *Options)) *harness {
	t.Helper()
	srv := server.Get(t)
	h := &harness{t: t, srv: srv, ns: srv.Namespace(t), evals: map[objectID]int{}}
	cfg, leaseNS := srv.Config(), ""
	if rbac != nil {
		cfg, leaseNS = rbac(h)
	}
	// Each test's manager sees only its namespace (Nodes are cluster-wide), so tests sharing
	// the server never reconcile each other's objects.
	var namespaces []string
	if ownNamespace {
		namespaces = []string{h.ns}
	}
	mo := ManagerOptions(ManagerConfig{MetricsAddr: "0", ProbeAddr: "0", ConfigMaps: tkeConfigMaps,
		LeaderElection: leaseNS != "", LeaderElectionNamespace: leaseNS, Namespaces: namespaces})
	mo.Cache.ByObject[&corev1.ConfigMap{}] = cache.ByObject{Namespaces: map[string]cache.Config{"kube-system": {}}}
	skip := true
	mo.Controller = config.Controller{SkipNameValidation: &skip} // several managers in one process
	mgr, err := manager.New(cfg, mo)
	if err != nil {
		t.Fatal(err)
	}
	opts := &Options{Profile: ipvs, Enforce: enforce, ConfigMaps: tkeConfigMaps,
		Custom:     []schema.GroupVersionKind{{Group: tencent.ServiceConfigGroup, Version: tencent.ServiceConfigVersion, Kind: tencent.ServiceConfigKind}},
		Registerer: prometheus.NewRegistry()}
	for _, w := range with {
		w(h, opts)
	}
	c, err := Setup(mgr, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.custom) != 1 {
		t.Fatalf("TkeServiceConfig is served but not watched: %v", c.custom)
	}
	h.c = c
	c.evaluated = func(id objectID) {
		h.mu.Lock()
		h.evals[id]++
		h.mu.Unlock()
	}
	c.mapped = func(kind string, reqs []reconcile.Request) {
		h.mu.Lock()
		h.mapped = append(h.mapped, mapping{kind, reqs})
		h.mu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return h
}

func (h *harness) evaluations(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.evals[objectID{Kind: "Service", NamespacedName: types.NamespacedName{Namespace: h.ns, Name: name}}]
}

// eventually polls cond until it holds or the deadline passes.
func (h *harness) eventually(what string, cond func() (bool, string)) {
	h.t.Helper()
	deadline := time.Now().Add(wait)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(50 * time.Millisecond)
	}
	h.t.Fatalf("timed out waiting for %s; last seen: %s", what, last)
}

func (h *harness) node(name string, lbls map[string]string) {
	h.t.Helper()
	_, err := h.srv.Client().CoreV1().Nodes().Create(context.Background(),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) service(name string, ann map[string]string) {
	h.t.Helper()
	a := map[string]string{tencent.AnnotationInternalSubnet: "subnet-1a2b3c4d"}
	for k, v := range ann {
		a[k] = v
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: a},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
	if _, err := h.srv.Client().CoreV1().Services(h.ns).Create(context.Background(), svc, metav1.CreateOptions{FieldManager: "kubectl"}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) get(name string) *corev1.Service {
	h.t.Helper()
	s, err := h.srv.Client().CoreV1().Services(h.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func condition(s *corev1.Service) *metav1.Condition {
	for i := range s.Status.Conditions {
		if s.Status.Conditions[i].Type == ConditionType {
			return &s.Status.Conditions[i]
		}
	}
	return nil
}

// touch changes a label as kubectl would: the Service's informer event makes the controller
// reconcile it again with nothing that matters changed (a resync).
func (h *harness) touch(name, value string) {
	h.t.Helper()
	patch := []byte(`{"metadata":{"labels":{"touched":"` + value + `"}}}`)
	if _, err := h.srv.Client().CoreV1().Services(h.ns).Patch(context.Background(), name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: "kubectl"}); err != nil {
		h.t.Fatal(err)
	}
}

// resync touches the Service and waits until the controller has evaluated it again.
func (h *harness) resync(name string) {
	h.t.Helper()
	before := h.evaluations(name)
	h.touch(name, time.Now().Format("150405.000000"))
	h.eventually("a reconcile after the touch", func() (bool, string) {
		n := h.evaluations(name)
		return n > before, "evaluations " + strconv.Itoa(n)
	})
}

func (h *harness) events(name string) []eventsv1.Event {
	h.t.Helper()
	list, err := h.srv.Client().EventsV1().Events(h.ns).List(context.Background(),
		metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("regarding.name", name).String()})
	if err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

func reasons(evs []eventsv1.Event) string {
	var r []string
	for _, e := range evs {
		r = append(r, e.Reason+"("+e.Note+")")
	}
	return strings.Join(r, ", ")
}

func counter(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// ownedBy reports whether manager owns a field of obj's status (the condition) or metadata.
func ownedBy(s *corev1.Service, manager, subresource, field string) bool {
	for _, mf := range s.ManagedFields {
		if mf.Manager == manager && mf.Subresource == subresource && mf.FieldsV1 != nil && strings.Contains(string(mf.FieldsV1.Raw), field) {
			return true
		}
	}
	return false
}

// TestReportOnlyConditionAndOneEventPerVerdict: in the default mode the controller writes
// only its status condition (under loopguard's field manager, on the status subresource),
// leaves the Service's annotations alone, records one Event for the verdict, and neither
// writes nor records anything when a resync finds the same verdict.
func TestReportOnlyConditionAndOneEventPerVerdict(t *testing.T) {
	reportOnly(t, start(t, false))
}

func reportOnly(t *testing.T, h *harness) {
	for _, n := range []string{"-1", "-2", "-3"} {
		h.node(h.ns+n, nil)
	}
	h.service("web", nil)

	h.eventually("the condition", func() (bool, string) {
		c := condition(h.get("web"))
		if c == nil {
			return false, "no condition"
		}
		return c.Reason == ReasonAtRisk && c.Status == metav1.ConditionFalse, c.Reason + ": " + c.Message
	})
	svc := h.get("web")
	if !ownedBy(svc, core.FieldManager, "status", ConditionType) {
		t.Errorf("the condition is not owned by %q on the status subresource: %+v", core.FieldManager, svc.ManagedFields)
	}
	if _, ok := svc.Annotations[tencent.AnnotationPreventLoopback]; ok || len(svc.Annotations) != 1 {
		t.Errorf("report-only mode changed the annotations: %v", svc.Annotations)
	}
	h.eventually("one Event for the verdict", func() (bool, string) {
		evs := h.events("web")
		return len(evs) == 1 && evs[0].Reason == ReasonAtRisk, reasons(evs)
	})
	ev := h.events("web")[0]
	if ev.ReportingController != core.FieldManager || ev.Type != corev1.EventTypeWarning || ev.Regarding.Kind != "Service" {
		t.Errorf("event = controller %q type %q regarding %q", ev.ReportingController, ev.Type, ev.Regarding.Kind)
	}
	writes := counter(h.c.metrics.writes.WithLabelValues("verdict"))

	h.resync("web")
	h.resync("web")
	if got := counter(h.c.metrics.writes.WithLabelValues("verdict")); got != writes {
		t.Errorf("a resync wrote the verdict again: %v writes, want %v", got, writes)
	}
	if got := counter(h.c.metrics.writes.WithLabelValues("cluster")); got != 0 {
		t.Errorf("report-only mode wrote %v plan changes", got)
	}
	after := h.get("web")
	if condition(after).LastTransitionTime != condition(svc).LastTransitionTime {
		t.Errorf("the condition moved on a resync")
	}
	if evs := h.events("web"); len(evs) != 1 {
		t.Errorf("events after resyncs = %s, want the one verdict", reasons(evs))
	}
	var g dto.Metric
	if err := h.c.metrics.exposures.WithLabelValues(tencent.Name, string(core.RiskAtRisk), "intercept-vip").Write(&g); err != nil || g.GetGauge().GetValue() != 1 {
		t.Errorf("loopguard_exposures{tencent,at-risk,intercept-vip} = %v (%v)", g.GetGauge().GetValue(), err)
	}
}

// TestEnforceWritesPreventLoopbackOnce: in enforcing mode the plan (TKE's prevent-loopback
// annotation, in an IPVS cluster whose kube-proxy supports it) is written under loopguard's
// field manager, the verdict follows (no loop), and a second pass writes nothing.
func TestEnforceWritesPreventLoopbackOnce(t *testing.T) {
	enforcing(t, start(t, true))
}

func enforcing(t *testing.T, h *harness) {
	for _, n := range []string{"-1", "-2"} {
		h.node(h.ns+n, nil)
	}
	h.service("web", nil)

	h.eventually("the prevent-loopback annotation and a no-loop verdict", func() (bool, string) {
		s := h.get("web")
		c := condition(s)
		state := "annotation " + s.Annotations[tencent.AnnotationPreventLoopback]
		if c != nil {
			state += "; " + c.Reason + ": " + c.Message
		}
		return s.Annotations[tencent.AnnotationPreventLoopback] == "true" && c != nil && c.Reason == ReasonNoLoop, state
	})
	svc := h.get("web")
	if !ownedBy(svc, core.FieldManager, "", tencent.AnnotationPreventLoopback) {
		t.Errorf("prevent-loopback is not owned by %q: %+v", core.FieldManager, svc.ManagedFields)
	}
	if got := counter(h.c.metrics.writes.WithLabelValues(string(core.WriterCluster))); got != 1 {
		t.Errorf("cluster writes = %v, want 1", got)
	}
	h.eventually("a Changed Event", func() (bool, string) {
		evs := h.events("web")
		for _, e := range evs {
			if e.Reason == "Changed" && strings.Contains(e.Note, tencent.AnnotationPreventLoopback) {
				return true, ""
			}
		}
		return false, reasons(evs)
	})

	h.resync("web")
	if got := counter(h.c.metrics.writes.WithLabelValues(string(core.WriterCluster))); got != 1 {
		t.Errorf("the second pass wrote: cluster writes = %v, want 1", got)
	}
	if s := h.get("web"); !equalExceptLabel(s, svc) {
		t.Errorf("the second pass changed the Service")
	}
}

// equalExceptLabel compares what loopguard could have written: annotations and the condition.
func equalExceptLabel(a, b *corev1.Service) bool {
	if len(a.Annotations) != len(b.Annotations) {
		return false
	}
	for k, v := range a.Annotations {
		if b.Annotations[k] != v {
			return false
		}
	}
	ca, cb := condition(a), condition(b)
	return ca != nil && cb != nil && *ca == *cb
}

// TestNodeChangeReevaluatesAffectedServicesOnly: two Services whose CLBs bind different node
// pools (TKE's backends-label annotation). A new node in pool a re-evaluates Service a only;
// a label no dialect reads re-evaluates nothing.
func TestNodeChangeReevaluatesAffectedServicesOnly(t *testing.T) {
	h := start(t, false)
	h.node(h.ns+"-a1", map[string]string{"pool": h.ns + "-a"})
	h.node(h.ns+"-b1", map[string]string{"pool": h.ns + "-b"})
	h.service("svc-a", map[string]string{tencent.AnnotationBackendsLabel: "pool=" + h.ns + "-a"})
	h.service("svc-b", map[string]string{tencent.AnnotationBackendsLabel: "pool=" + h.ns + "-b"})
	for _, name := range []string{"svc-a", "svc-b"} {
		h.eventually("the verdict of "+name, func() (bool, string) {
			c := condition(h.get(name))
			return c != nil, "none"
		})
	}
	before := condition(h.get("svc-b"))
	mark := func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.mapped)
	}
	// enqueued waits for the Node watch's next mapping for Services and returns it.
	enqueued := func(from int) []reconcile.Request {
		var got []reconcile.Request
		h.eventually("the Node change's mapping", func() (bool, string) {
			h.mu.Lock()
			defer h.mu.Unlock()
			for _, m := range h.mapped[from:] {
				if m.kind == "Service" {
					got = m.reqs
					return true, ""
				}
			}
			return false, "no mapping"
		})
		return got
	}

	m := mark()
	h.node(h.ns+"-a2", map[string]string{"pool": h.ns + "-a"})
	got := enqueued(m)
	if len(got) != 1 || got[0].Name != "svc-a" {
		t.Fatalf("a new node in pool a enqueued %v, want svc-a only", got)
	}
	h.eventually("svc-a's verdict with two nodes behind its CLB", func() (bool, string) {
		c := condition(h.get("svc-a"))
		return strings.Contains(c.Message, "50%"), c.Message
	})
	if after := condition(h.get("svc-b")); *after != *before {
		t.Errorf("svc-b's condition changed: %v → %v", before, after)
	}

	m = mark()
	patch := []byte(`{"metadata":{"labels":{"team":"payments"}}}`)
	if _, err := h.srv.Client().CoreV1().Nodes().Patch(context.Background(), h.ns+"-b1", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := enqueued(m); len(got) != 0 {
		t.Errorf("a label no dialect reads enqueued %v", got)
	}
}

// TestIngressVerdictAnnotation: an Ingress has no status conditions; its verdict is an
// annotation under loopguard's field manager.
func TestIngressVerdictAnnotation(t *testing.T) {
	h := start(t, false)
	h.node(h.ns+"-1", nil)
	h.service("web", nil)
	prefix := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "shop", Annotations: map[string]string{tencent.AnnotationIngressSubnet: "subnet-1a2b3c4d"}},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{
			HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}},
		}}}}}
	if _, err := h.srv.Client().NetworkingV1().Ingresses(h.ns).Create(context.Background(), ing, metav1.CreateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	h.eventually("the verdict annotation", func() (bool, string) {
		got, err := h.srv.Client().NetworkingV1().Ingresses(h.ns).Get(context.Background(), "shop", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		v := got.Annotations[AnnotationVerdict]
		owned := false
		for _, mf := range got.ManagedFields {
			owned = owned || (mf.Manager == core.FieldManager && strings.Contains(string(mf.FieldsV1.Raw), AnnotationVerdict))
		}
		return v != "" && owned, v
	})
	h.eventually("one Event for the Ingress", func() (bool, string) {
		evs := h.events("shop")
		return len(evs) == 1, reasons(evs)
	})
}

// TestRetryAndConflictRequeue: a core.RetryError from the cloud requeues after its delay and
// a conflict requeues at once, neither with a Warning Event nor a reconcile error; the
// change is retried until it is written. The driver stands in for a cloud whose task is still
// running (TESTING.md §4 has the real CLB servers; the requeue is the controller's).
func TestRetryAndConflictRequeue(t *testing.T) {
	dialect := tencent.NewDialect(nil)
	const delay = 300 * time.Millisecond
	var mu sync.Mutex
	var calls []time.Time
	drv := drivertest.DriverFuncs{
		PlanFn: func(_ context.Context, req *core.PlanRequest) (*core.Plan, error) {
			return &core.Plan{Object: req.Result.Assessment.Object, Decision: req.Result.Decision, Changes: []core.Change{
				{By: core.WriterCloud, Resource: "clb listener lbl-1 of lb-1", Field: "SnatEnable", To: "true"}}}, nil
		},
		ApplyCloudFn: func(context.Context, *core.Change) (core.ApplyResult, error) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, time.Now())
			switch len(calls) {
			case 1:
				return core.ApplyResult{}, &core.RetryError{After: delay, Msg: "task still running"}
			case 2:
				return core.ApplyResult{}, &core.KindError{Kind: core.ErrConflict, Msg: "listener changed in between"}
			case 3:
				return core.ApplyResult{Wrote: true}, nil
			}
			return core.ApplyResult{}, nil
		},
	}
	h := startWith(t, true, core.NewProvider(dialect, drv), nil)
	h.node(h.ns+"-1", nil)
	h.service("web", nil)
	h.eventually("the change written after a retry and a conflict", func() (bool, string) {
		return counter(h.c.metrics.writes.WithLabelValues(string(core.WriterCloud))) == 1, ""
	})
	mu.Lock()
	if len(calls) < 3 || calls[1].Sub(calls[0]) < delay {
		t.Errorf("calls %v: the retry came before its delay of %v", calls, delay)
	}
	mu.Unlock()
	if got := counter(h.c.metrics.errors.WithLabelValues("Service")); got != 0 {
		t.Errorf("reconcile errors = %v, want 0 (retry and conflict are requeues, not errors)", got)
	}
	h.eventually("a Changed Event", func() (bool, string) {
		evs := h.events("web")
		for _, e := range evs {
			if e.Reason == "Changed" {
				return true, ""
			}
		}
		return false, reasons(evs)
	})
	for _, e := range h.events("web") {
		if strings.HasSuffix(e.Reason, "Failed") {
			t.Errorf("a requeue recorded a failure Event: %s %s", e.Reason, e.Note)
		}
	}
}

// TestVerdictTakenBackWhenNoLongerExposed: a Service turned ClusterIP loses loopguard's
// condition and leaves the exposure gauge; no other status field is touched.
func TestVerdictTakenBackWhenNoLongerExposed(t *testing.T) {
	h := start(t, false)
	h.node(h.ns+"-1", nil)
	h.service("web", nil)
	h.eventually("the condition", func() (bool, string) { return condition(h.get("web")) != nil, "none" })
	patch := []byte(`{"spec":{"type":"ClusterIP"}}`)
	if _, err := h.srv.Client().CoreV1().Services(h.ns).Patch(context.Background(), "web", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	h.eventually("the condition gone", func() (bool, string) {
		c := condition(h.get("web"))
		if c == nil {
			return true, ""
		}
		return false, c.Reason
	})
	var g dto.Metric
	if err := h.c.metrics.exposures.WithLabelValues(tencent.Name, string(core.RiskAtRisk), "intercept-vip").Write(&g); err != nil || g.GetGauge().GetValue() != 0 {
		t.Errorf("loopguard_exposures still counts the Service: %v (%v)", g.GetGauge().GetValue(), err)
	}
}

// TestClientPodReevaluatesTheObjectsThatDeclareIt: a Pod selected by a Service's
// loopguard.io/clients annotation re-evaluates that Service only; with the cluster-wide cache
// (compact Pods, read from the informer's store) as with a namespace-restricted one.
func TestClientPodReevaluatesTheObjectsThatDeclareIt(t *testing.T) {
	// The cluster-wide run first: a later one would find the other's Service declaring the
	// same clients.
	for _, tc := range []struct {
		name         string
		ownNamespace bool
	}{{"cluster-wide cache", false}, {"namespace cache", true}} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tencent.NewProvider(nil)
			if err != nil {
				t.Fatal(err)
			}
			clientPodReevaluates(t, startCache(t, false, p, nil, tc.ownNamespace))
		})
	}
}

func clientPodReevaluates(t *testing.T, h *harness) {
	h.node(h.ns+"-1", nil)
	h.service("web", map[string]string{core.AnnotationClients: "app=client"})
	h.service("other", nil)
	for _, name := range []string{"web", "other"} {
		h.eventually("the verdict of "+name, func() (bool, string) { return condition(h.get(name)) != nil, "none" })
	}
	h.mu.Lock()
	from := len(h.mapped)
	h.mu.Unlock()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "client", Labels: map[string]string{"app": "client"}},
		Spec: corev1.PodSpec{NodeName: h.ns + "-1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := h.srv.Client().CoreV1().Pods(h.ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []reconcile.Request
	h.eventually("the Pod's mapping", func() (bool, string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, m := range h.mapped[from:] {
			if m.kind == "Service" && len(m.reqs) > 0 {
				got = m.reqs
				return true, ""
			}
		}
		return false, "none"
	})
	if len(got) != 1 || got[0].Name != "web" {
		t.Errorf("the client Pod enqueued %v, want web only", got)
	}
	h.eventually("web's verdict counting its declared client", func() (bool, string) {
		c := condition(h.get("web"))
		return c != nil && c.Message != "" && h.evaluations("web") > 1, c.Message
	})
}
