package cloudprovider_test

import (
	"context"
	"errors"
	"github.com/google/go-cmp/cmp"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/cloud-provider/api"
	fakecloud "k8s.io/cloud-provider/fake"

	"github.com/loopguard/loopguard/adapters/cloudprovider"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/kubernetes"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

const lbID = "lb-web00001"

// newDirect is the TKE provider in direct mode on the official SDK against clbtest, behind a
// fake inner cloud: a CCM fork that owns its CLBs.
func newDirect(t *testing.T, allowlisted bool, opts ...cloudprovider.Option) (*clbtest.Server, *fakecloud.Cloud, *record.FakeRecorder, func() loadBalancer) {
	t.Helper()
	return newDirectWith(t, allowlisted, nil, opts...)
}

// newDirectWith is newDirect with the provider passed through wrap before Wrap gets it.
func newDirectWith(t *testing.T, allowlisted bool, wrap func(core.Provider) core.Provider, opts ...cloudprovider.Option) (*clbtest.Server, *fakecloud.Cloud, *record.FakeRecorder, func() loadBalancer) {
	t.Helper()
	srvOpts := &clbtest.Options{TaskDuration: time.Millisecond}
	if allowlisted {
		srvOpts.Allowlist = []clbtest.Capability{clbtest.L4SNAT}
	}
	srv, err := clbtest.Start(srvOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	if _, err := srv.AddLoadBalancer(clbtest.LoadBalancer{ID: lbID, Type: clbtest.LoadBalancerInternal, VIPs: []string{"10.0.0.10"}}); err != nil {
		t.Fatal(err)
	}
	for _, port := range []int64{80, 443} {
		if _, err := srv.AddListener(clbtest.Listener{LoadBalancerID: lbID, Protocol: "TCP", Port: port}); err != nil {
			t.Fatal(err)
		}
	}
	cpf := profile.NewClientProfile()
	cpf.HttpProfile.Endpoint = srv.Endpoint()
	cpf.HttpProfile.Scheme = "HTTP"
	client, err := clb.NewClient(common.NewCredential(clbtest.DefaultSecretID, clbtest.DefaultSecretKey), clbtest.DefaultRegion, cpf)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tencent.NewProvider(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: client, TaskPollInterval: time.Millisecond,
		Backoff: tencent.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond, Budget: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	profile := core.ClusterProfile{Provider: tencent.Name, KubernetesVersion: "v1.37.2", ProxyMode: core.ProxyModeIPVS, KubeProxyVersion: "v1.20.6-tke.12"}
	if allowlisted {
		profile.Allowlists = []core.Capability{tencent.CapL4SNAT}
	}
	inner := &fakecloud.Cloud{ExternalIP: net.ParseIP("10.0.0.10"), Provider: "fake", Exists: true}
	rec := record.NewFakeRecorder(100)
	all := append([]cloudprovider.Option{cloudprovider.WithProfile(profile), cloudprovider.WithEventRecorder(rec),
		cloudprovider.WithPolicy(core.Policy{Prefer: core.PreferLBFeatures, AllowTickets: true})}, opts...)
	if wrap != nil {
		p = wrap(p)
	}
	wrapped := cloudprovider.Wrap(inner, p, all...)
	return srv, inner, rec, func() loadBalancer {
		lb, ok := wrapped.LoadBalancer()
		if !ok {
			t.Fatal("the wrapped cloud has no LoadBalancer")
		}
		return lb
	}
}

type loadBalancer interface {
	EnsureLoadBalancer(ctx context.Context, clusterName string, service *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error)
	UpdateLoadBalancer(ctx context.Context, clusterName string, service *corev1.Service, nodes []*corev1.Node) error
	EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, service *corev1.Service) error
}

func tkeService(ann map[string]string) *corev1.Service {
	a := map[string]string{tencent.AnnotationInternalSubnet: "subnet-1a2b3c4d", tencent.AnnotationLoadBalancerID: lbID}
	for k, v := range ann {
		a[k] = v
	}
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: a},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
}

// withStatus is svc as stored after the service controller published st.
func withStatus(svc *corev1.Service, st *corev1.LoadBalancerStatus) *corev1.Service {
	svc.Status.LoadBalancer = *st.DeepCopy()
	return svc
}

func nodes() []*corev1.Node {
	return []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}}
}

func snatOn(t *testing.T, srv *clbtest.Server, port int64) bool {
	t.Helper()
	for _, l := range srv.Snapshot().Listeners {
		if l.LoadBalancerID == lbID && l.Port == port {
			return l.SnatEnable
		}
	}
	t.Fatalf("no listener on port %d", port)
	return false
}

// TestDirectModeTurnsListenerSNATOn: after EnsureLoadBalancer the Service's CLB listener has
// SNAT on (read back by the driver) and the other listener is untouched; the status says
// Proxy; a second sync makes no write call; deleting turns SNAT off again before the inner
// delete.
func TestDirectModeTurnsListenerSNATOn(t *testing.T) {
	srv, inner, _, lb := newDirect(t, true)
	ctx := context.Background()
	st, err := lb().EnsureLoadBalancer(ctx, "c", tkeService(nil), nodes())
	if err != nil {
		t.Fatal(err)
	}
	if !snatOn(t, srv, 80) || snatOn(t, srv, 443) {
		t.Errorf("SNAT on 80: %v (want on), on 443: %v (want untouched)", snatOn(t, srv, 80), snatOn(t, srv, 443))
	}
	if m := st.Ingress[0].IPMode; m == nil || *m != corev1.LoadBalancerIPModeProxy {
		t.Errorf("status %+v, want ipMode Proxy", st.Ingress)
	}
	writes := len(srv.Writes())
	if _, err := lb().EnsureLoadBalancer(ctx, "c", tkeService(nil), nodes()); err != nil {
		t.Fatal(err)
	}
	if err := lb().UpdateLoadBalancer(ctx, "c", tkeService(nil), nodes()); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Writes()); n != writes {
		t.Errorf("a second sync wrote %d more times", n-writes)
	}
	// The service controller deletes the Service it stored, with the status it published.
	if err := lb().EnsureLoadBalancerDeleted(ctx, "c", withStatus(tkeService(nil), st)); err != nil {
		t.Fatal(err)
	}
	if snatOn(t, srv, 80) {
		t.Error("EnsureLoadBalancerDeleted left SNAT on")
	}
	if inner.Calls[len(inner.Calls)-1] != "delete" {
		t.Errorf("the inner delete was not called last: %v", inner.Calls)
	}
}

// countingDialect counts the translations of a provider's dialect.
type countingDialect struct {
	core.Dialect
	n atomic.Int32
}

func (d *countingDialect) Translate(obj runtime.Object, c *core.Cluster) (*core.Result, error) {
	d.n.Add(1)
	return d.Dialect.Translate(obj, c)
}

// TestOneEvaluationPerSync: a sync that plans through the driver translates the Service
// once, not once for the status and again for the plan.
func TestOneEvaluationPerSync(t *testing.T) {
	counting := &countingDialect{}
	_, _, _, lb := newDirectWith(t, true, func(p core.Provider) core.Provider {
		drv, _ := p.Driver()
		counting.Dialect = p.Dialect()
		return core.NewProvider(counting, drv)
	})
	var published *corev1.LoadBalancerStatus
	for i, call := range []func() error{
		func() error {
			var err error
			published, err = lb().EnsureLoadBalancer(context.Background(), "c", tkeService(nil), nodes())
			return err
		},
		// The nodes changed: the Service as stored, with the status the first sync published.
		func() error {
			return lb().UpdateLoadBalancer(context.Background(), "c", withStatus(tkeService(nil), published), nodes())
		},
	} {
		counting.n.Store(0)
		if err := call(); err != nil {
			t.Fatal(err)
		}
		if n := counting.n.Load(); n != 1 {
			t.Errorf("sync %d translated the Service %d times, want 1", i+1, n)
		}
	}
}

// TestReportOnlyWritesNoCLB: report-only returns the inner status exactly as the cloud gave
// it and writes nothing.
func TestReportOnlyWritesNoCLB(t *testing.T) {
	srv, inner, _, lb := newDirect(t, true, cloudprovider.ReportOnly())
	st, err := lb().EnsureLoadBalancer(context.Background(), "c", tkeService(nil), nodes())
	if err != nil {
		t.Fatal(err)
	}
	if len(srv.Writes()) != 0 || snatOn(t, srv, 80) {
		t.Errorf("report-only wrote %v", srv.Writes())
	}
	want, _ := inner.EnsureLoadBalancer(context.Background(), "c", tkeService(nil), nodes())
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("report-only changed the status (-cloud +returned):\n%s", diff)
	}
}

// TestOptOut: a Service annotated loopguard.io/ignore gets the inner status untouched.
func TestOptOut(t *testing.T) {
	srv, _, _, lb := newDirect(t, true)
	st, err := lb().EnsureLoadBalancer(context.Background(), "c", tkeService(map[string]string{cloudprovider.AnnotationIgnore: "true"}), nodes())
	if err != nil {
		t.Fatal(err)
	}
	if st.Ingress[0].IPMode != nil || len(srv.Calls()) != 0 {
		t.Errorf("an opted-out Service was handled: status %+v, calls %v", st.Ingress, srv.Calls())
	}
}

// TestNotAllowlistedFailsOpen: without the allowlist nothing is written, the sync succeeds
// with the cloud's status as it is, and a Warning Event names what to ask support for; with
// WithFailClosed the sync fails with the same words.
func TestNotAllowlistedFailsOpen(t *testing.T) {
	srv, inner, rec, lb := newDirect(t, false)
	st, err := lb().EnsureLoadBalancer(context.Background(), "c", tkeService(nil), nodes())
	if err != nil {
		t.Fatalf("the sync failed: %v", err)
	}
	want, _ := inner.EnsureLoadBalancer(context.Background(), "c", tkeService(nil), nodes())
	if len(st.Ingress) != 1 || st.Ingress[0].IP != want.Ingress[0].IP {
		t.Errorf("status %+v, want the cloud's %+v", st.Ingress, want.Ingress)
	}
	if m := st.Ingress[0].IPMode; m != nil && *m != corev1.LoadBalancerIPModeVIP {
		t.Errorf("ipMode %s published for a plan loopguard did not carry out", *m)
	}
	if len(srv.Writes()) != 0 {
		t.Errorf("wrote %v", srv.Writes())
	}
	if ev := events(rec); !strings.Contains(ev, cloudprovider.EventBlocked) || !strings.Contains(ev, "CLB Layer 4 SNAT capability") {
		t.Errorf("events %q: want %s naming the support request", ev, cloudprovider.EventBlocked)
	}

	_, _, _, closed := newDirect(t, false, cloudprovider.WithFailClosed())
	_, err = closed().EnsureLoadBalancer(context.Background(), "c", tkeService(nil), nodes())
	if !errors.Is(err, core.ErrNotAllowlisted) || !strings.Contains(err.Error(), "CLB Layer 4 SNAT capability") {
		t.Fatalf("fail-closed error %v: want not-allowlisted naming the support request", err)
	}
}

// TestDirectModeWritesOnlyTheServicesCLB: a Service whose annotation names another Service's
// CLB (its VIP is not in the status the cloud returned) gets nothing written to that CLB, its
// status as the cloud returned it, and an Event saying why.
func TestDirectModeWritesOnlyTheServicesCLB(t *testing.T) {
	srv, _, rec, lb := newDirect(t, true)
	if _, err := srv.AddLoadBalancer(clbtest.LoadBalancer{ID: "lb-other", Type: clbtest.LoadBalancerInternal, VIPs: []string{"10.0.0.99"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.AddListener(clbtest.Listener{LoadBalancerID: "lb-other", Protocol: "TCP", Port: 80}); err != nil {
		t.Fatal(err)
	}
	svc := tkeService(map[string]string{tencent.AnnotationLoadBalancerID: "lb-other"})
	st, err := lb().EnsureLoadBalancer(context.Background(), "c", svc, nodes())
	if err != nil {
		t.Fatalf("the sync failed: %v", err)
	}
	if len(srv.Writes()) != 0 {
		t.Errorf("wrote to a CLB that is not the Service's: %v", srv.Writes())
	}
	if len(st.Ingress) != 1 || st.Ingress[0].IP != "10.0.0.10" {
		t.Errorf("status %+v", st.Ingress)
	}
	if ev := events(rec); !strings.Contains(ev, cloudprovider.EventBlocked) || !strings.Contains(ev, "lb-other") || !strings.Contains(ev, "not this object's") {
		t.Errorf("events %q: want %s naming the CLB", ev, cloudprovider.EventBlocked)
	}
	// Deleting it takes nothing back from the other Service's CLB either.
	if err := lb().EnsureLoadBalancerDeleted(context.Background(), "c", withStatus(svc, st)); err != nil {
		t.Fatal(err)
	}
	if len(srv.Writes()) != 0 {
		t.Errorf("the delete wrote to a CLB that is not the Service's: %v", srv.Writes())
	}
}

// events drains a FakeRecorder.
func events(rec *record.FakeRecorder) string {
	var out []string
	for {
		select {
		case ev := <-rec.Events:
			out = append(out, ev)
		default:
			return strings.Join(out, "\n")
		}
	}
}

// TestRetryErrorIsCloudProvidersRetryError: a Service whose CLB is not known yet is a
// cloud-provider api.RetryError with loopguard's delay, so the service controller requeues
// after it rather than backing off.
func TestRetryErrorIsCloudProvidersRetryError(t *testing.T) {
	_, _, _, lb := newDirect(t, true)
	svc := tkeService(nil)
	delete(svc.Annotations, tencent.AnnotationLoadBalancerID)
	_, err := lb().EnsureLoadBalancer(context.Background(), "c", svc, nodes())
	var re *api.RetryError
	if !errors.As(err, &re) || re.RetryAfter() <= 0 {
		t.Fatalf("error %v: want an api.RetryError with a delay", err)
	}
}

// TestPassesThrough: everything but LoadBalancer is the inner provider's.
func TestPassesThrough(t *testing.T) {
	inner := &fakecloud.Cloud{Provider: "fake-cloud", DisableRoutes: true}
	w := cloudprovider.Wrap(inner, kubernetes.NewProvider(nil))
	if w.ProviderName() != "fake-cloud" || w.HasClusterID() != inner.HasClusterID() {
		t.Errorf("ProviderName %q", w.ProviderName())
	}
	if _, ok := w.Routes(); ok {
		t.Error("Routes should pass through as disabled")
	}
	if _, ok := w.Instances(); !ok {
		t.Error("Instances should pass through")
	}
	inner.DisableLoadBalancers = true
	if _, ok := w.LoadBalancer(); ok {
		t.Error("no inner LoadBalancer, yet the wrapper has one")
	}
}

// BenchmarkEnsureLoadBalancer is the decorator's own cost per EnsureLoadBalancer with the
// fake inner cloud and the plain Kubernetes provider (no API round trip).
func BenchmarkEnsureLoadBalancer(b *testing.B) {
	proxy := corev1.LoadBalancerIPModeProxy
	inner := &fakecloud.Cloud{ExternalIP: net.ParseIP("192.0.2.10"), BalancerIPMode: &proxy, Provider: "fake"}
	svc := lbService("shop", "web", map[string]string{core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "false"})
	ns := nodes()
	ctx := context.Background()
	bare, _ := inner.LoadBalancer()
	wrapped, _ := cloudprovider.Wrap(inner, kubernetes.NewProvider(nil), cloudprovider.WithProfile(modern)).LoadBalancer()
	for _, bc := range []struct {
		name string
		lb   interface {
			EnsureLoadBalancer(context.Context, string, *corev1.Service, []*corev1.Node) (*corev1.LoadBalancerStatus, error)
		}
	}{{"inner", bare}, {"wrapped", wrapped}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				inner.Calls, inner.EnsureCalls = inner.Calls[:0], inner.EnsureCalls[:0]
				if _, err := bc.lb.EnsureLoadBalancer(ctx, "c", svc, ns); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
