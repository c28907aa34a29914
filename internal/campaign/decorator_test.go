package campaign_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	cloudprovider "k8s.io/cloud-provider"
	servicecontroller "k8s.io/cloud-provider/controllers/service"
	fakecloud "k8s.io/cloud-provider/fake"
	"k8s.io/component-base/featuregate"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"

	lgcloud "github.com/loopguard/loopguard/adapters/cloudprovider"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// Fault rates of the decorator leg, per call into loopguard's code.
const (
	pDecPanic = 0.10 // the dialect or the driver panics
	pDecError = 0.10 // the driver fails
	pDecRetry = 0.10 // the driver says the load balancer is busy (a RetryError)
	pDecClean = 0.50 // taking back loopguard's changes fails on delete
)

// faulty wraps the plain provider with faults drawn from the campaign's dice: loopguard's own
// code misbehaving, as the host sees it.
type faulty struct {
	core.Provider
	dice                     *dice
	panics, errs, retries, n *atomic.Int64
}

func (f faulty) Dialect() core.Dialect { return faultyDialect{Dialect: f.Provider.Dialect(), f: f} }
func (f faulty) Driver() (core.Driver, bool) {
	drv, _ := f.Provider.Driver()
	return faultyDriver{Driver: drv, f: f}, true
}

type faultyDialect struct {
	core.Dialect
	f faulty
}

func (d faultyDialect) Translate(obj runtime.Object, c *core.Cluster) (*core.Result, error) {
	if d.f.dice.chance(pDecPanic / 2) {
		d.f.panics.Add(1)
		panic("campaign: the dialect panics")
	}
	return d.Dialect.Translate(obj, c)
}

type faultyDriver struct {
	core.Driver
	f faulty
}

func (d faultyDriver) Plan(ctx context.Context, req *core.PlanRequest) (*core.Plan, error) {
	d.f.n.Add(1)
	switch x := d.f.dice.intn(1000); {
	case x < int(1000*pDecPanic/2):
		d.f.panics.Add(1)
		panic("campaign: the driver panics")
	case x < int(1000*(pDecPanic/2+pDecError)):
		d.f.errs.Add(1)
		return nil, &core.KindError{Kind: core.ErrUnsupported, Msg: "campaign: the driver fails"}
	case x < int(1000*(pDecPanic/2+pDecError+pDecRetry)):
		d.f.retries.Add(1)
		return nil, &core.RetryError{After: 50 * time.Millisecond, Msg: "campaign: the load balancer is busy"}
	}
	return d.Driver.Plan(ctx, req)
}

func (d faultyDriver) PlanRemoval(context.Context, *core.PlanRequest) (*core.Plan, error) {
	if d.f.dice.chance(pDecClean) {
		d.f.errs.Add(1)
		return nil, &core.KindError{Kind: core.ErrUnauthenticated, Msg: "campaign: the cloud refuses the cleanup"}
	}
	return &core.Plan{Removal: true}, nil
}

// lockedCloud serializes the fake cloud's calls: k8s.io/cloud-provider/fake writes its maps
// without a lock while the controller's service and node workers call it.
type lockedCloud struct {
	*fakecloud.Cloud
	mu sync.Mutex
}

func (c *lockedCloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return &lockedLB{c: c}, true }

type lockedLB struct{ c *lockedCloud }

func (l *lockedLB) GetLoadBalancer(ctx context.Context, n string, s *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	return l.c.Cloud.GetLoadBalancer(ctx, n, s)
}
func (l *lockedLB) GetLoadBalancerName(ctx context.Context, n string, s *corev1.Service) string {
	return l.c.Cloud.GetLoadBalancerName(ctx, n, s)
}
func (l *lockedLB) EnsureLoadBalancer(ctx context.Context, n string, s *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	return l.c.Cloud.EnsureLoadBalancer(ctx, n, s, nodes)
}
func (l *lockedLB) UpdateLoadBalancer(ctx context.Context, n string, s *corev1.Service, nodes []*corev1.Node) error {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	return l.c.Cloud.UpdateLoadBalancer(ctx, n, s, nodes)
}
func (l *lockedLB) EnsureLoadBalancerDeleted(ctx context.Context, n string, s *corev1.Service) error {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	return l.c.Cloud.EnsureLoadBalancerDeleted(ctx, n, s)
}

// TestDecoratorCampaign is the decorator's leg of the campaign: the upstream service
// controller, against the real API server, syncs Services of every kind loopguard meets
// (intercepted, PROXY protocol, source NAT, unknown facts, a typo in an annotation) through a
// decorated cloud whose loopguard part panics, fails and is busy at random. The inner cloud
// never fails, so a Service left without an address is loopguard's doing: there must be none,
// the controller must never crash, and deleting half the Services with cleanups failing must
// remove every finalizer.
func TestDecoratorCampaign(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(envSeed); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", envSeed, s, err)
		}
		seed = n
	}
	srv := server.Get(t)
	ns := srv.Namespace(t)
	client := srv.Client()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var panics, errs, retries, calls atomic.Int64
	p := faulty{Provider: kubernetes.NewProvider(nil), dice: newDice(seed), panics: &panics, errs: &errs, retries: &retries, n: &calls}
	inner := &lockedCloud{Cloud: &fakecloud.Cloud{ExternalIP: net.ParseIP("192.0.2.50"), Provider: "fake", Exists: true}}
	wrapped := lgcloud.Wrap(inner, p, lgcloud.WithProfile(core.ClusterProfile{KubernetesVersion: "v1.37.2", ProxyMode: core.ProxyModeIPTables, KubeProxyVersion: "v1.37.2"}))
	factory := informers.NewSharedInformerFactory(client, 0)
	wrapped.(cloudprovider.InformerUser).SetInformers(factory)
	ctrl, err := servicecontroller.New(wrapped, client, factory.Core().V1().Services(), factory.Core().V1().Nodes(), "campaign", featuregate.NewFeatureGate())
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctrl.Run(ctx, 2, controllersmetrics.NewControllerManagerMetrics("loopguard-campaign"))
	}()
	defer func() { cancel(); <-done; factory.Shutdown() }()

	kinds := []map[string]string{
		{core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "false", core.AnnotationBackendExpects: "none"},
		{core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "false"},
		{core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "true"},
		{"load-balancer.hetzner.cloud/uses-proxyprotocol": "true"},
		{core.AnnotationLBScope: "privat"}, // a typo
		nil,                                // nothing known
	}
	const n = 60
	for i := range n {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("svc-%02d", i), Annotations: kinds[i%len(kinds)]},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
		if _, err := client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	without := func() []string {
		list, err := client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return []string{err.Error()}
		}
		var out []string
		for _, s := range list.Items {
			if len(s.Status.LoadBalancer.Ingress) == 0 {
				out = append(out, s.Name)
			}
		}
		return out
	}
	start := time.Now()
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		return len(without()) == 0, nil
	})
	left := without()
	took := time.Since(start)

	for i := 0; i < n; i += 2 {
		if err := client.CoreV1().Services(ns).Delete(ctx, fmt.Sprintf("svc-%02d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var stuck []string
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		stuck = stuck[:0]
		for i := 0; i < n; i += 2 {
			name := fmt.Sprintf("svc-%02d", i)
			if _, err := client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				stuck = append(stuck, name)
			}
		}
		return len(stuck) == 0, nil
	})

	fmt.Printf("decorator: %d Services, %d plans, %d faults injected (%d panics, %d errors, %d busy), %d left without an address because of loopguard, %d deletes blocked (seed %d, %s)\n",
		n, calls.Load(), panics.Load()+errs.Load()+retries.Load(), panics.Load(), errs.Load(), retries.Load(), len(left), len(stuck), seed, took.Round(time.Millisecond))
	if len(left) > 0 {
		t.Errorf("Services without an address after 90 s: %v", left)
	}
	if len(stuck) > 0 {
		t.Errorf("Services whose delete never finished: %v", stuck)
	}
	if panics.Load() == 0 || errs.Load() == 0 || retries.Load() == 0 {
		t.Errorf("the dice injected too little to prove anything: %d panics, %d errors, %d busy", panics.Load(), errs.Load(), retries.Load())
	}
}
