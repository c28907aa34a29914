package cloudprovider_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
	fakecloud "k8s.io/cloud-provider/fake"

	lgcloud "github.com/loopguard/loopguard/adapters/cloudprovider"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

// tkeCloud is a small cloud-controller-manager cloud of its own on the official Tencent SDK,
// the inner cloud a TKE fork would have: EnsureLoadBalancer buys a private CLB for a Service
// (CreateLoadBalancer, named after the Service, ClientToken its UID) and a listener for each
// port (CreateListener), waiting for each task; EnsureLoadBalancerDeleted deletes the CLB.
// Backends are not modelled (clbtest holds no targets), so UpdateLoadBalancer has nothing to
// do. Everything but LoadBalancer is the upstream fake's.
type tkeCloud struct {
	*fakecloud.Cloud
	clb *clb.Client
	vpc string

	mu  sync.Mutex
	ids map[types.UID]string
}

func (c *tkeCloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return c, true }

var _ cloudprovider.LoadBalancer = (*tkeCloud)(nil)

// lbID is the Service's CLB, for loopguard's driver in direct mode: a fork knows its own.
func (c *tkeCloud) lbID(obj runtime.Object) (string, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return "", nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids[svc.UID], nil
}

func (c *tkeCloud) GetLoadBalancerName(_ context.Context, _ string, svc *corev1.Service) string {
	return cloudprovider.DefaultLoadBalancerName(svc)
}

// find returns the Service's CLB: remembered, or looked up by name (after a restart).
func (c *tkeCloud) find(ctx context.Context, svc *corev1.Service) (*clb.LoadBalancer, error) {
	name := c.GetLoadBalancerName(ctx, "", svc)
	req := clb.NewDescribeLoadBalancersRequest()
	req.LoadBalancerName = common.StringPtr(name)
	resp, err := c.clb.DescribeLoadBalancersWithContext(ctx, req)
	if err != nil {
		return nil, err
	}
	for _, lb := range resp.Response.LoadBalancerSet {
		if *lb.LoadBalancerName == name {
			c.mu.Lock()
			c.ids[svc.UID] = *lb.LoadBalancerId
			c.mu.Unlock()
			return lb, nil
		}
	}
	return nil, nil
}

func (c *tkeCloud) wait(ctx context.Context, requestID string) error {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		req := clb.NewDescribeTaskStatusRequest()
		req.TaskId = common.StringPtr(requestID)
		resp, err := c.clb.DescribeTaskStatusWithContext(ctx, req)
		if err != nil {
			return err
		}
		switch *resp.Response.Status {
		case 0:
			return nil
		case 1:
			return fmt.Errorf("CLB task %s failed: %s", requestID, *resp.Response.Message)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return api.NewRetryError("CLB task "+requestID+" still running", time.Second)
}

func (c *tkeCloud) GetLoadBalancer(ctx context.Context, _ string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	lb, err := c.find(ctx, svc)
	if err != nil || lb == nil {
		return nil, false, err
	}
	return &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: *lb.LoadBalancerVips[0]}}}, true, nil
}

func (c *tkeCloud) EnsureLoadBalancer(ctx context.Context, _ string, svc *corev1.Service, _ []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	lb, err := c.find(ctx, svc)
	if err != nil {
		return nil, err
	}
	if lb == nil {
		req := clb.NewCreateLoadBalancerRequest()
		req.LoadBalancerType = common.StringPtr(clbtest.LoadBalancerInternal)
		req.LoadBalancerName = common.StringPtr(c.GetLoadBalancerName(ctx, "", svc))
		req.VpcId = common.StringPtr(c.vpc)
		req.SubnetId = common.StringPtr(svc.Annotations[tencent.AnnotationInternalSubnet])
		req.ClientToken = common.StringPtr(string(svc.UID))
		resp, err := c.clb.CreateLoadBalancerWithContext(ctx, req)
		if err != nil {
			return nil, err
		}
		if err := c.wait(ctx, *resp.Response.RequestId); err != nil {
			return nil, err
		}
		if lb, err = c.find(ctx, svc); err != nil || lb == nil {
			return nil, fmt.Errorf("the CLB of %s/%s is not there after its creation: %v", svc.Namespace, svc.Name, err)
		}
	}
	lreq := clb.NewDescribeListenersRequest()
	lreq.LoadBalancerId = lb.LoadBalancerId
	ls, err := c.clb.DescribeListenersWithContext(ctx, lreq)
	if err != nil {
		return nil, err
	}
	for _, p := range svc.Spec.Ports {
		if slices.ContainsFunc(ls.Response.Listeners, func(l *clb.Listener) bool {
			return *l.Protocol == string(p.Protocol) && *l.Port == int64(p.Port)
		}) {
			continue
		}
		req := clb.NewCreateListenerRequest()
		req.LoadBalancerId = lb.LoadBalancerId
		req.Protocol = common.StringPtr(string(p.Protocol))
		req.Ports = common.Int64Ptrs([]int64{int64(p.Port)})
		resp, err := c.clb.CreateListenerWithContext(ctx, req)
		if err != nil {
			return nil, err
		}
		if err := c.wait(ctx, *resp.Response.RequestId); err != nil {
			return nil, err
		}
	}
	return &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: *lb.LoadBalancerVips[0]}}}, nil
}

func (c *tkeCloud) UpdateLoadBalancer(context.Context, string, *corev1.Service, []*corev1.Node) error {
	return nil
}

func (c *tkeCloud) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *corev1.Service) error {
	lb, err := c.find(ctx, svc)
	if err != nil || lb == nil {
		return err
	}
	req := clb.NewDeleteLoadBalancerRequest()
	req.LoadBalancerIds = []*string{lb.LoadBalancerId}
	resp, err := c.clb.DeleteLoadBalancerWithContext(ctx, req)
	if err != nil {
		return err
	}
	if err := c.wait(ctx, *resp.Response.RequestId); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.ids, svc.UID)
	c.mu.Unlock()
	return nil
}

func sdkClient(t *testing.T, srv *clbtest.Server) *clb.Client {
	t.Helper()
	cpf := profile.NewClientProfile()
	cpf.HttpProfile.Endpoint = srv.Endpoint()
	cpf.HttpProfile.Scheme = "HTTP"
	c, err := clb.NewClient(common.NewCredential(clbtest.DefaultSecretID, clbtest.DefaultSecretKey), clbtest.DefaultRegion, cpf)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runTKE runs the service controller with tkeCloud wrapped by the TKE provider in direct mode
// (its own SDK client on the same CLB server). A busy CLB is not retried inside the sync:
// the driver gives up at once with a RetryError of 800 ms.
func runTKE(t *testing.T, h *harness) (*clbtest.Server, *tkeCloud) {
	t.Helper()
	srv, err := clbtest.Start(&clbtest.Options{TaskDuration: 10 * time.Millisecond, Allowlist: []clbtest.Capability{clbtest.L4SNAT}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	inner := &tkeCloud{Cloud: &fakecloud.Cloud{Provider: "tke-fork"}, clb: sdkClient(t, srv), vpc: "vpc-1a2b3c4d", ids: map[types.UID]string{}}
	p, err := tencent.NewProvider(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: sdkClient(t, srv), LoadBalancerID: inner.lbID,
		TaskPollInterval: 2 * time.Millisecond, Backoff: tencent.Backoff{Initial: 800 * time.Millisecond, Max: 800 * time.Millisecond, Budget: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	prof := core.ClusterProfile{Provider: tencent.Name, KubernetesVersion: "v1.37.2", ProxyMode: core.ProxyModeIPVS, KubeProxyVersion: "v1.20.6-tke.12",
		Allowlists: []core.Capability{tencent.CapL4SNAT}}
	h.run(inner, p, lgcloud.WithProfile(prof), lgcloud.WithPolicy(core.Policy{Prefer: core.PreferLBFeatures, AllowTickets: true}))
	return srv, inner
}

func privateTKE(name string) *corev1.Service {
	return lbService("", name, map[string]string{tencent.AnnotationInternalSubnet: "subnet-1a2b3c4d"})
}

// listenerSNAT reads the listener on port through the SDK: SNAT on is "SnatEnable" in
// AttrFlags.
func listenerSNAT(t *testing.T, c *clb.Client, lbID string, port int64) bool {
	t.Helper()
	req := clb.NewDescribeListenersRequest()
	req.LoadBalancerId = common.StringPtr(lbID)
	req.Port = common.Int64Ptr(port)
	resp, err := c.DescribeListeners(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Response.Listeners) != 1 {
		t.Fatalf("%d listeners on port %d of %s", len(resp.Response.Listeners), port, lbID)
	}
	return slices.Contains(common.StringValues(resp.Response.Listeners[0].AttrFlags), clbtest.AttrFlagSnatEnable)
}

func writeActions(srv *clbtest.Server) []string {
	var out []string
	for _, w := range srv.Writes() {
		out = append(out, w.Action)
	}
	return out
}

// TestServiceControllerTencentDirectMode: inside the real service controller, with a TKE
// fork's cloud on the real SDK against the CLB server: the inner cloud buys the CLB and its
// listener, loopguard turns the listener's SNAT on (read back as AttrFlags SnatEnable) and the
// status carries the CLB's VIP with ipMode Proxy; a second sync, a restarted controller and a
// Node added write nothing; deleting the Service turns SNAT off, then the inner cloud deletes
// the CLB, and the finalizer is removed.
func TestServiceControllerTencentDirectMode(t *testing.T) {
	h := newHarness(t)
	srv, _ := runTKE(t, h)
	h.create(privateTKE("web"))
	st := h.waitStatus("web", ipModeIs(corev1.LoadBalancerIPModeProxy))
	h.eventually("the first sync is recorded", func() bool { return len(h.spy.find("ensure", "web")) == 1 })

	lbs := srv.Snapshot().LoadBalancers
	if len(lbs) != 1 || st.Status.LoadBalancer.Ingress[0].IP != lbs[0].VIPs[0] {
		t.Fatalf("status %+v, CLBs %+v: want the one CLB's VIP", st.Status.LoadBalancer, lbs)
	}
	c := sdkClient(t, srv)
	if !listenerSNAT(t, c, lbs[0].ID, 80) {
		t.Error("the listener on port 80 has no SnatEnable in its AttrFlags after a sync")
	}
	want := []string{"CreateLoadBalancer", "CreateListener", "ModifyListener"}
	if got := writeActions(srv); !slices.Equal(got, want) {
		t.Errorf("writes %v, want %v", got, want)
	}

	h.annotate("web", "example.com/touched", "yes")
	h.eventually("the second sync", func() bool { return len(h.spy.find("ensure", "web")) == 2 })
	h.restart() // before any Node exists: see orderedNodes
	h.eventually("the restarted controller's sync", func() bool { return len(h.spy.find("ensure", "web")) == 3 })
	h.addNode("node-a")
	h.eventually("UpdateLoadBalancer for the new Node", func() bool { return len(h.spy.find("update", "web")) == 1 })
	if got := writeActions(srv); !slices.Equal(got, want) {
		t.Errorf("later syncs wrote %v", got[len(want):])
	}
	for _, c := range append(h.spy.find("ensure", "web"), h.spy.find("update", "web")...) {
		if c.err != nil {
			t.Errorf("a sync failed: %v", c.err)
		}
	}
	if n := h.patches.count("web"); n != 1 {
		t.Errorf("%d status patches, want 1", n)
	}

	h.delete("web")
	h.waitGone("web")
	want = append(want, "ModifyListener", "DeleteLoadBalancer")
	if got := writeActions(srv); !slices.Equal(got, want) {
		t.Errorf("writes %v, want %v", got, want)
	}
	if lbs := srv.Snapshot().LoadBalancers; len(lbs) != 0 {
		t.Errorf("CLBs left after the deletion: %+v", lbs)
	}
}

// TestServiceControllerRequeuesRetryErrorWithItsDelay: a busy CLB (ModifyListener answers
// FailedOperation.ResourceInOperating twice) makes loopguard's sync a RetryError of 800 ms;
// the service controller requeues the Service after that delay, not after its exponential
// backoff (5 s at least), and the third sync turns SNAT on and publishes the status.
func TestServiceControllerRequeuesRetryErrorWithItsDelay(t *testing.T) {
	h := newHarness(t)
	srv, _ := runTKE(t, h)
	srv.InjectFault("ModifyListener", 2, clbtest.ErrorFault(clbtest.CodeResourceInOperating, "The specified resource is currently being operated. Please try again later."))
	h.create(privateTKE("web"))
	h.waitStatus("web", ipModeIs(corev1.LoadBalancerIPModeProxy))

	calls := h.spy.find("ensure", "web")
	if len(calls) != 3 {
		t.Fatalf("%d syncs, want 3 (two busy, one through): %+v", len(calls), calls)
	}
	for i, c := range calls[:2] {
		var re *api.RetryError
		if !errors.As(c.err, &re) || re.RetryAfter() != 800*time.Millisecond {
			t.Errorf("sync %d: %v, want an api.RetryError of 800ms", i+1, c.err)
		}
		gap := calls[i+1].start.Sub(c.end)
		t.Logf("sync %d failed with %v; sync %d came %s later", i+1, c.err, i+2, gap.Round(time.Millisecond))
		if gap < 750*time.Millisecond || gap >= 4*time.Second {
			t.Errorf("sync %d came %s after the RetryError, want its 800ms (exponential backoff starts at 5s)", i+2, gap)
		}
	}
	if calls[2].err != nil {
		t.Errorf("the third sync: %v", calls[2].err)
	}
	lbs := srv.Snapshot().LoadBalancers
	if len(lbs) != 1 || !listenerSNAT(t, sdkClient(t, srv), lbs[0].ID, 80) {
		t.Errorf("after the retries, CLBs %+v: want one with SNAT on", lbs)
	}
}
