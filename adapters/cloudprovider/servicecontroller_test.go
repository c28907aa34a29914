package cloudprovider_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	servicecontroller "k8s.io/cloud-provider/controllers/service"
	fakecloud "k8s.io/cloud-provider/fake"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/component-base/featuregate"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	lgcloud "github.com/loopguard/loopguard/adapters/cloudprovider"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// modern is a cluster whose kube-proxy honours ipMode and whose API server stores it.
var modern = core.ClusterProfile{KubernetesVersion: "v1.37.2", ProxyMode: core.ProxyModeIPTables, KubeProxyVersion: "v1.37.2"}

// lbCall is one call the service controller made on the decorated LoadBalancer.
type lbCall struct {
	op    string // ensure, update, delete
	svc   string
	nodes []string
	start time.Time
	end   time.Time
	err   error
}

// spy stands between the service controller and the decorated cloud: it records every
// load-balancer call when it returns, and serializes them, because k8s.io/cloud-provider/fake
// writes its maps and slices without a lock while the controller's service and node workers
// call the cloud from two goroutines.
type spy struct {
	cloudprovider.Interface
	mu    sync.Mutex
	calls []lbCall
}

func (s *spy) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	lb, ok := s.Interface.LoadBalancer()
	if !ok {
		return nil, false
	}
	return &spyLB{LoadBalancer: lb, s: s}, true
}

// locked runs fn while no load-balancer call is under way (to read the inner fake).
func (s *spy) locked(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn()
}

func (s *spy) record(c lbCall) {
	c.end = time.Now()
	s.calls = append(s.calls, c)
}

// find returns the calls op made for the Service named svc.
func (s *spy) find(op, svc string) []lbCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []lbCall
	for _, c := range s.calls {
		if c.op == op && c.svc == svc {
			out = append(out, c)
		}
	}
	return out
}

type spyLB struct {
	cloudprovider.LoadBalancer
	s *spy
}

func nodeNames(nodes []*corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out
}

func (l *spyLB) GetLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	return l.LoadBalancer.GetLoadBalancer(ctx, cluster, svc)
}

func (l *spyLB) EnsureLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	start := time.Now()
	st, err := l.LoadBalancer.EnsureLoadBalancer(ctx, cluster, svc, nodes)
	l.s.record(lbCall{op: "ensure", svc: svc.Name, nodes: nodeNames(nodes), start: start, err: err})
	return st, err
}

func (l *spyLB) UpdateLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) error {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	start := time.Now()
	err := l.LoadBalancer.UpdateLoadBalancer(ctx, cluster, svc, nodes)
	l.s.record(lbCall{op: "update", svc: svc.Name, nodes: nodeNames(nodes), start: start, err: err})
	return err
}

func (l *spyLB) EnsureLoadBalancerDeleted(ctx context.Context, cluster string, svc *corev1.Service) error {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	start := time.Now()
	err := l.LoadBalancer.EnsureLoadBalancerDeleted(ctx, cluster, svc)
	l.s.record(lbCall{op: "delete", svc: svc.Name, start: start, err: err})
	return err
}

// statusPatches counts, per Service name, the patches that write status.loadBalancer: the
// ones the service controller makes when the status it got differs from the stored one (its
// finalizer goes through the same status subresource, without a loadBalancer field).
type statusPatches struct {
	mu sync.Mutex
	n  map[string]int
}

func (p *statusPatches) count(svc string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[svc]
}

// counting is the transport of one controller's client, counting into p.
type counting struct {
	rt http.RoundTripper
	p  *statusPatches
}

func (c counting) RoundTrip(req *http.Request) (*http.Response, error) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	if req.Method == http.MethodPatch && len(parts) >= 2 && parts[len(parts)-1] == "status" && slices.Contains(parts, "services") && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"loadBalancer"`)) {
			c.p.mu.Lock()
			c.p.n[parts[len(parts)-2]]++
			c.p.mu.Unlock()
		}
	}
	return c.rt.RoundTrip(req)
}

// orderedNodes hands the service controller its Node informer with every event taken
// through a lock first. The upstream controller writes its service cache's entries
// (cachedService.state, in processServiceCreateOrUpdate) without the cache's lock, while its
// node worker reads them under it (allServices): a Node event during a Service's sync is a
// data race inside the controller itself. Taking each Node event through the spy's lock, which
// every sync holds while it calls the cloud, orders a Node event after the sync before it; the
// harness starts with no Nodes, so that a controller (re)starting with Services finds no Node
// events racing its first syncs.
type orderedNodes struct {
	coreinformers.NodeInformer
	after *sync.Mutex
}

func (n orderedNodes) Informer() cache.SharedIndexInformer {
	return orderedInformer{SharedIndexInformer: n.NodeInformer.Informer(), after: n.after}
}

type orderedInformer struct {
	cache.SharedIndexInformer
	after *sync.Mutex
}

func (i orderedInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, p time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(orderedHandler{h: h, after: i.after}, p)
}

type orderedHandler struct {
	h     cache.ResourceEventHandler
	after *sync.Mutex
}

// wait is an empty critical section: it orders the event after the sync holding the lock.
func (o orderedHandler) wait() { o.after.Lock(); o.after.Unlock() }

func (o orderedHandler) OnAdd(obj any, initial bool) { o.wait(); o.h.OnAdd(obj, initial) }
func (o orderedHandler) OnUpdate(old, cur any)       { o.wait(); o.h.OnUpdate(old, cur) }
func (o orderedHandler) OnDelete(obj any)            { o.wait(); o.h.OnDelete(obj) }

// server is the package's one real API server. Each harness has a namespace of its own and
// the service controller watches only that namespace's Services; Nodes are cluster-wide, so
// tests that use the server do not run in parallel, and each harness deletes the Nodes it
// added (see newHarness). One server instead of one per test: under CI's load a start took
// up to 30 s, and the package started nineteen.
var server = apiserver.NewShared()

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(server.Run(m))
}

// harness is the upstream service controller run against the package's real API server, in
// a namespace of its own.
type harness struct {
	t       *testing.T
	srv     *apiserver.Server
	ns      string
	nodes   []string // the Nodes this harness added, deleted when the test ends
	spy     *spy
	patches *statusPatches
	events  *record.FakeRecorder
	seen    []string // the Events waitEvent has read
	stop    func()
	restart func() // run again with the same cloud
}

// newHarness gives the test a namespace on the package's API server, with no Nodes: see
// orderedNodes. A Node left by an earlier test is a harness bug, and fails the test here
// rather than as a stray UpdateLoadBalancer later.
func newHarness(t *testing.T) *harness {
	t.Helper()
	srv := server.Get(t)
	nodes, err := srv.Client().CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 0 {
		t.Fatalf("the API server has %d Nodes left by an earlier test (%s); each harness starts with none", len(nodes.Items), nodes.Items[0].Name)
	}
	h := &harness{t: t, srv: srv, ns: srv.Namespace(t), events: record.NewFakeRecorder(1000)}
	// Registered before run's cleanup, so it runs after the controller has stopped.
	t.Cleanup(func() {
		for _, name := range h.nodes {
			err := srv.Client().CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete Node %s: %v", name, err)
			}
		}
	})
	return h
}

func (h *harness) addNode(name string) {
	h.t.Helper()
	h.createNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}})
}

// createNode creates a Node and deletes it when the test ends.
func (h *harness) createNode(node *corev1.Node) {
	h.t.Helper()
	if _, err := h.srv.Client().CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.nodes = append(h.nodes, node.Name)
}

// run starts the service controller with inner wrapped by p (stopping a running one first);
// the spy and the patch counts carry over, as for a restarted cloud-controller-manager.
func (h *harness) run(inner cloudprovider.Interface, p core.Provider, opts ...lgcloud.Option) {
	h.t.Helper()
	if h.stop != nil {
		h.stop()
	}
	h.restart = func() { h.run(inner, p, opts...) }
	cfg := h.srv.Config()
	if h.patches == nil {
		h.patches = &statusPatches{n: map[string]int{}}
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return counting{rt: rt, p: h.patches} })
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	wrapped := lgcloud.Wrap(inner, p, append([]lgcloud.Option{lgcloud.WithEventRecorder(h.events)}, opts...)...)
	// Services of this harness's namespace only: the server is shared, and the Services of
	// tests before keep their finalizers there after their controllers stopped.
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(h.ns))
	wrapped.(cloudprovider.InformerUser).SetInformers(factory)
	if h.spy == nil {
		h.spy = &spy{}
	}
	h.spy.locked(func() { h.spy.Interface = wrapped })
	nodes := orderedNodes{NodeInformer: factory.Core().V1().Nodes(), after: &h.spy.mu}
	ctrl, err := servicecontroller.New(h.spy, client, factory.Core().V1().Services(), nodes, "test", featuregate.NewFeatureGate())
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctrl.Run(ctx, 1, controllersmetrics.NewControllerManagerMetrics("loopguard-test"))
	}()
	h.stop = func() {
		cancel()
		<-done
		factory.Shutdown()
		h.stop = nil
	}
	h.t.Cleanup(func() {
		if h.stop != nil {
			h.stop()
		}
	})
}

func (h *harness) create(svc *corev1.Service) {
	h.t.Helper()
	svc.Namespace = h.ns
	if _, err := h.srv.Client().CoreV1().Services(h.ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// annotate sets one annotation on a Service (a change the service controller syncs).
func (h *harness) annotate(name, key, value string) {
	h.t.Helper()
	patch := []byte(`{"metadata":{"annotations":{"` + key + `":"` + value + `"}}}`)
	if _, err := h.srv.Client().CoreV1().Services(h.ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// eventually polls cond until it holds (30 s at most).
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		h.t.Fatalf("never: %s", what)
	}
}

// waitStatus waits until the Service's status satisfies ok.
func (h *harness) waitStatus(name string, ok func(*corev1.Service) bool) *corev1.Service {
	h.t.Helper()
	var got *corev1.Service
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		s, err := h.srv.Client().CoreV1().Services(h.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = s
		return ok(s), nil
	})
	if err != nil {
		h.t.Fatalf("Service %s/%s status never became as expected: %+v", h.ns, name, got.Status.LoadBalancer)
	}
	return got
}

// waitGone waits until the Service is deleted (its finalizer removed).
func (h *harness) waitGone(name string) {
	h.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := h.srv.Client().CoreV1().Services(h.ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		h.t.Fatalf("Service %s was never deleted: its finalizer stayed", name)
	}
}

func (h *harness) delete(name string) {
	h.t.Helper()
	if err := h.srv.Client().CoreV1().Services(h.ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

func lbService(ns, name string, ann map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
}

func ipModeIs(mode corev1.LoadBalancerIPMode) func(*corev1.Service) bool {
	return func(s *corev1.Service) bool {
		in := s.Status.LoadBalancer.Ingress
		return len(in) == 1 && in[0].IPMode != nil && *in[0].IPMode == mode
	}
}

// newFake is the upstream fake cloud saying Proxy for every load balancer.
func newFake() *fakecloud.Cloud {
	proxy := corev1.LoadBalancerIPModeProxy
	return &fakecloud.Cloud{ExternalIP: net.ParseIP("192.0.2.10"), BalancerIPMode: &proxy, Provider: "fake", Exists: true}
}

// atRisk is a private LB that keeps the client address, whose backends need nothing from
// the LB (declared: without it the cloud's Proxy stands): loopguard intercepts its VIP (VIP).
func atRisk(name string) *corev1.Service {
	return lbService("", name, map[string]string{core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "false",
		core.AnnotationBackendExpects: "none"})
}

// TestServiceControllerPublishesDecidedIPMode: inside the real service controller, a private
// LB that keeps the client address (declared with loopguard.io annotations) gets ipMode VIP
// (intercept-vip), although the inner cloud said Proxy; a Service loopguard finds no risk for
// keeps the inner Proxy; the status the decorator returns equals the stored one, so the
// controller has nothing to patch on the next sync; deleting the Service runs
// EnsureLoadBalancerDeleted on the inner cloud and the finalizer is removed.
func TestServiceControllerPublishesDecidedIPMode(t *testing.T) {
	h := newHarness(t)
	inner := newFake()
	h.run(inner, kubernetes.NewProvider(nil), lgcloud.WithProfile(modern))
	ctx := context.Background()

	h.create(atRisk("web"))
	h.create(lbService("", "snat", map[string]string{core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "true"}))
	web := h.waitStatus("web", ipModeIs(corev1.LoadBalancerIPModeVIP))
	h.waitStatus("snat", ipModeIs(corev1.LoadBalancerIPModeProxy))

	// What the decorator returns for the stored Service is what is stored: no patch next sync.
	// (A cloud of its own: the running controller's is the spy's to call.)
	lb, _ := lgcloud.Wrap(newFake(), kubernetes.NewProvider(nil), lgcloud.WithProfile(modern)).LoadBalancer()
	again, err := lb.EnsureLoadBalancer(ctx, "test", web, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !servicehelper.LoadBalancerStatusEqual(&web.Status.LoadBalancer, again) {
		t.Errorf("a second sync returns %+v, stored %+v: the controller would patch every sync", again, web.Status.LoadBalancer)
	}

	if !slices.Contains(web.Finalizers, servicehelper.LoadBalancerCleanupFinalizer) {
		t.Errorf("the service controller did not add its finalizer: %v", web.Finalizers)
	}
	h.delete("web")
	h.waitGone("web")
	h.spy.locked(func() {
		if !slices.Contains(inner.Calls, "delete") {
			t.Errorf("EnsureLoadBalancerDeleted never reached the inner cloud: calls %v", inner.Calls)
		}
	})
	if d := h.spy.find("delete", "web"); len(d) != 1 || d[0].err != nil {
		t.Errorf("EnsureLoadBalancerDeleted calls %+v, want one that succeeded", d)
	}
}

// TestServiceControllerPatchesStatusOncePerChange counts the controller's status patches of
// one Service. The upstream controller's periodic resync (30 s, fixed) re-enqueues a Service
// only when it changed (needsUpdate), so the syncs that could re-patch are forced here: three
// annotation changes loopguard does not read and a restart of the controller (which syncs
// every Service), each a full EnsureLoadBalancer. None patches the status; a change that
// turns the decision (source NAT declared: Proxy) patches it exactly once more.
func TestServiceControllerPatchesStatusOncePerChange(t *testing.T) {
	h := newHarness(t)
	inner := newFake()
	h.run(inner, kubernetes.NewProvider(nil), lgcloud.WithProfile(modern))
	h.create(atRisk("web"))
	h.waitStatus("web", ipModeIs(corev1.LoadBalancerIPModeVIP))
	h.eventually("the first sync is recorded", func() bool { return len(h.spy.find("ensure", "web")) == 1 })

	syncs := 1
	for i := range 3 {
		h.annotate("web", "example.com/touched", string(rune('a'+i)))
		syncs++
		h.eventually("the annotation change is synced", func() bool { return len(h.spy.find("ensure", "web")) == syncs })
	}
	h.restart()
	syncs++
	h.eventually("the restarted controller syncs the Service", func() bool { return len(h.spy.find("ensure", "web")) == syncs })

	// A change of the decision: the controller handles one Service at a time, so once this
	// patch is visible every earlier sync of it, and any patch it made, is done.
	h.annotate("web", core.AnnotationLBSourceNAT, "true")
	h.waitStatus("web", ipModeIs(corev1.LoadBalancerIPModeProxy))
	if n := h.patches.count("web"); n != 2 {
		t.Errorf("%d status patches over %d syncs and one change of the decision, want 2 (creation, change)", n, syncs+1)
	}
	for _, c := range h.spy.find("ensure", "web") {
		if c.err != nil {
			t.Errorf("a sync failed: %v", c.err)
		}
	}
}

// TestServiceControllerNodeChanges: adding and removing a Node reaches the cloud through the
// decorator's UpdateLoadBalancer with the new set of nodes, and the status stays as it was,
// unpatched.
func TestServiceControllerNodeChanges(t *testing.T) {
	h := newHarness(t)
	inner := newFake()
	h.run(inner, kubernetes.NewProvider(nil), lgcloud.WithProfile(modern))
	h.create(atRisk("web"))
	before := h.waitStatus("web", ipModeIs(corev1.LoadBalancerIPModeVIP))
	h.eventually("the first sync is recorded", func() bool { return len(h.spy.find("ensure", "web")) == 1 })

	hasUpdate := func(nodes ...string) func() bool {
		return func() bool {
			return slices.ContainsFunc(h.spy.find("update", "web"), func(c lbCall) bool { return c.err == nil && slices.Equal(c.nodes, nodes) })
		}
	}
	h.addNode("node-a")
	h.eventually("UpdateLoadBalancer with node-a", hasUpdate("node-a"))
	h.addNode("node-b")
	h.eventually("UpdateLoadBalancer with node-a, node-b", hasUpdate("node-a", "node-b"))
	h.addNode("node-c")
	h.eventually("UpdateLoadBalancer with node-a, node-b, node-c", hasUpdate("node-a", "node-b", "node-c"))
	if err := h.srv.Client().CoreV1().Nodes().Delete(context.Background(), "node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("UpdateLoadBalancer with node-b, node-c", hasUpdate("node-b", "node-c"))
	h.spy.locked(func() {
		var last []string
		for _, u := range inner.UpdateCalls {
			last = nodeNames(u.Hosts)
		}
		if !slices.Equal(last, []string{"node-b", "node-c"}) {
			t.Errorf("the inner cloud's last UpdateLoadBalancer had nodes %v", last)
		}
	})
	after := h.waitStatus("web", ipModeIs(corev1.LoadBalancerIPModeVIP))
	if !servicehelper.LoadBalancerStatusEqual(&before.Status.LoadBalancer, &after.Status.LoadBalancer) {
		t.Errorf("status %+v after the node changes, %+v before", after.Status.LoadBalancer, before.Status.LoadBalancer)
	}
	if n := h.patches.count("web"); n != 1 {
		t.Errorf("%d status patches, want 1: node changes do not touch the status", n)
	}
	if n := len(h.spy.find("ensure", "web")); n != 1 {
		t.Errorf("%d EnsureLoadBalancer calls: node changes go through UpdateLoadBalancer", n)
	}
}
