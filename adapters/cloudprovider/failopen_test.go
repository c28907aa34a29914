package cloudprovider_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakecloud "k8s.io/cloud-provider/fake"
	"k8s.io/component-base/metrics/legacyregistry"

	lgcloud "github.com/loopguard/loopguard/adapters/cloudprovider"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// plainFake is the upstream fake cloud publishing an address and no ipMode, as most clouds do.
func plainFake() *fakecloud.Cloud {
	return &fakecloud.Cloud{ExternalIP: net.ParseIP("192.0.2.20"), Provider: "fake", Exists: true}
}

// hasAddress: the Service got the cloud's address (whatever its ipMode).
func hasAddress(s *corev1.Service) bool {
	in := s.Status.LoadBalancer.Ingress
	return len(in) == 1 && in[0].IP != "" && in[0].IP != "<nil>"
}

// waitEvent waits for an Event whose text contains every word, among every Event the harness
// recorded so far (one Event may satisfy several calls).
func (h *harness) waitEvent(words ...string) string {
	h.t.Helper()
	var got string
	h.eventually("an Event with "+strings.Join(words, ", "), func() bool {
		for {
			select {
			case ev := <-h.events.Events:
				h.seen = append(h.seen, ev)
			default:
				for _, ev := range h.seen {
					ok := true
					for _, w := range words {
						ok = ok && strings.Contains(ev, w)
					}
					if ok {
						got = ev
						return true
					}
				}
				return false
			}
		}
	})
	return got
}

// errorsCounted reads loopguard_ccm_errors_total for one label set from the CCM's registry.
func errorsCounted(t *testing.T, op, kind, outcome string) float64 {
	t.Helper()
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "loopguard_ccm_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["operation"] == op && labels["kind"] == kind && labels["outcome"] == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestServiceControllerKeepsTheCloudsProxy: the inner cloud answers Proxy for a reason
// loopguard cannot see (a PROXY protocol its CCM turns on by default, with no annotation).
// loopguard's decision would intercept (VIP), but it does not know that nothing behind the
// LB needs the LB: the cloud's Proxy stands and an Event says why. A Service loopguard knows
// nothing about (risk unknown) keeps the cloud's Proxy too.
func TestServiceControllerKeepsTheCloudsProxy(t *testing.T) {
	h := newHarness(t)
	h.run(newFake(), kubernetes.NewProvider(nil), lgcloud.WithProfile(modern))
	h.create(lbService("", "web", map[string]string{core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "false"}))
	h.create(lbService("", "plain", nil))
	h.waitStatus("web", ipModeIs(corev1.LoadBalancerIPModeProxy))
	h.waitStatus("plain", ipModeIs(corev1.LoadBalancerIPModeProxy))
	ev := h.waitEvent(lgcloud.EventKeptCloudIPMode, "192.0.2.10", string(kubernetes.CodeKeepCloudProxy))
	if !strings.Contains(ev, "backend-expects") {
		t.Errorf("the Event does not say how to let loopguard intercept: %q", ev)
	}
	for _, c := range h.spy.find("ensure", "web") {
		if c.err != nil {
			t.Errorf("a sync failed: %v", c.err)
		}
	}
}

// TestServiceControllerReportOnlyNeverChangesTheStatus: in report-only mode the stored status
// is the cloud's, even where loopguard would intercept.
func TestServiceControllerReportOnlyNeverChangesTheStatus(t *testing.T) {
	h := newHarness(t)
	h.run(newFake(), kubernetes.NewProvider(nil), lgcloud.WithProfile(modern), lgcloud.ReportOnly())
	h.create(atRisk("web"))
	h.waitStatus("web", ipModeIs(corev1.LoadBalancerIPModeProxy))
}

// TestServiceControllerMalformedAnnotationStillGetsAnAddress: a typo in a loopguard.io
// annotation is loopguard's problem, not the load balancer's: the Service gets the cloud's
// address, a Warning Event names the field, and the failure is counted; with WithFailClosed
// the sync fails instead and no address is published.
func TestServiceControllerMalformedAnnotationStillGetsAnAddress(t *testing.T) {
	h := newHarness(t)
	before := errorsCounted(t, "ensure", "invalid", "failed-open")
	h.run(plainFake(), kubernetes.NewProvider(nil), lgcloud.WithProfile(modern))
	h.create(lbService("", "typo", map[string]string{core.AnnotationLBScope: "privat"}))
	h.waitStatus("typo", hasAddress)
	h.waitEvent(lgcloud.EventFailedOpen, core.AnnotationLBScope, "privat")
	if after := errorsCounted(t, "ensure", "invalid", "failed-open"); after <= before {
		t.Errorf("loopguard_ccm_errors_total{ensure,invalid,failed-open} %v → %v: the failure was not counted", before, after)
	}

	closed := newHarness(t)
	closed.run(plainFake(), kubernetes.NewProvider(nil), lgcloud.WithProfile(modern), lgcloud.WithFailClosed())
	closed.create(lbService("", "typo", map[string]string{core.AnnotationLBScope: "privat"}))
	closed.eventually("a failed sync", func() bool {
		for _, c := range closed.spy.find("ensure", "typo") {
			if c.err != nil && errors.Is(c.err, core.ErrInvalid) {
				return true
			}
		}
		return false
	})
	s, err := closed.srv.Client().CoreV1().Services(closed.ns).Get(context.Background(), "typo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("fail-closed published %+v", s.Status.LoadBalancer.Ingress)
	}
}

// panicking is a provider whose dialect or driver panics: loopguard's own bug, as the host
// sees it.
type panicking struct {
	core.Provider
	in string // "dialect", "driver", "removal"
}

type panickingDialect struct{ core.Dialect }

func (panickingDialect) Translate(runtime.Object, *core.Cluster) (*core.Result, error) {
	panic("a bug in the dialect")
}

type panickingDriver struct{ core.Driver }

func (panickingDriver) Plan(context.Context, *core.PlanRequest) (*core.Plan, error) {
	panic("a bug in the driver")
}

func (panickingDriver) PlanRemoval(context.Context, *core.PlanRequest) (*core.Plan, error) {
	panic("a bug in the removal")
}

func (p panicking) Dialect() core.Dialect {
	if p.in == "dialect" {
		return panickingDialect{p.Provider.Dialect()}
	}
	return p.Provider.Dialect()
}

func (p panicking) Driver() (core.Driver, bool) {
	drv, ok := p.Provider.Driver()
	if p.in != "dialect" {
		return panickingDriver{drv}, true
	}
	return drv, ok
}

// TestServiceControllerSurvivesAPanic: a panic in loopguard's dialect or driver leaves the
// cloud-controller-manager running (the upstream controller's HandleCrash would re-panic and
// crash it) and every Service with the cloud's address; the panic is counted.
func TestServiceControllerSurvivesAPanic(t *testing.T) {
	for _, in := range []string{"dialect", "driver"} {
		t.Run(in, func(t *testing.T) {
			h := newHarness(t)
			before := errorsCounted(t, "ensure", "panic", "failed-open")
			h.run(plainFake(), panicking{Provider: kubernetes.NewProvider(nil), in: in}, lgcloud.WithProfile(modern))
			h.create(atRisk("first"))
			h.waitStatus("first", hasAddress)
			h.create(atRisk("second")) // the controller is still there to sync it
			h.waitStatus("second", hasAddress)
			h.waitEvent(lgcloud.EventFailedOpen, "panicked")
			if after := errorsCounted(t, "ensure", "panic", "failed-open"); after < before+2 {
				t.Errorf("loopguard_ccm_errors_total{ensure,panic,failed-open} %v → %v, want two more", before, after)
			}
			// Deleting goes through a panicking removal and still removes the finalizer.
			h.delete("first")
			h.waitGone("first")
		})
	}
}

// TestServiceControllerPublishesProxyForPROXYProtocolBackends: a Service with the PROXY
// protocol on, whose inner cloud publishes no ipMode, gets ipMode Proxy: intercepted, every
// in-cluster connection would arrive without the header the backend requires. On DigitalOcean,
// whose controller never publishes Proxy, it is loopguard's through-lb; on Hetzner and
// OpenStack, whose controllers publish Proxy from that switch, it is what the Service's
// annotation says (as a controller older than that would not).
func TestServiceControllerPublishesProxyForPROXYProtocolBackends(t *testing.T) {
	h := newHarness(t)
	h.run(plainFake(), kubernetes.NewProvider(nil), lgcloud.WithProfile(modern))
	h.create(lbService("", "do", map[string]string{"service.beta.kubernetes.io/do-loadbalancer-enable-proxy-protocol": "true", "service.beta.kubernetes.io/do-loadbalancer-type": "REGIONAL"}))
	h.create(lbService("", "hetzner", map[string]string{"load-balancer.hetzner.cloud/uses-proxyprotocol": "true"}))
	h.create(lbService("", "openstack", map[string]string{"loadbalancer.openstack.org/proxy-protocol": "v2"}))
	h.waitStatus("do", ipModeIs(corev1.LoadBalancerIPModeProxy))
	h.waitStatus("hetzner", ipModeIs(corev1.LoadBalancerIPModeProxy))
	h.waitStatus("openstack", ipModeIs(corev1.LoadBalancerIPModeProxy))
	h.waitEvent(lgcloud.EventIPMode, "192.0.2.20", "→ Proxy", string(core.ThroughLB))
	h.waitEvent(lgcloud.EventIPMode, "192.0.2.20", "→ Proxy", "uses-proxyprotocol")
	h.waitEvent(lgcloud.EventIPMode, "192.0.2.20", "→ Proxy", "loadbalancer.openstack.org/proxy-protocol")
}

// failingRemoval is the plain provider with a removal that always fails.
type failingRemoval struct{ core.Provider }

type failingRemovalDriver struct{ core.Driver }

func (failingRemovalDriver) PlanRemoval(context.Context, *core.PlanRequest) (*core.Plan, error) {
	return nil, &core.KindError{Kind: core.ErrUnauthenticated, Msg: "the cloud refused the credentials"}
}

func (p failingRemoval) Driver() (core.Driver, bool) {
	drv, _ := p.Provider.Driver()
	return failingRemovalDriver{drv}, true
}

// TestServiceControllerCleanupFailureDoesNotBlockDelete: taking back loopguard's changes fails,
// the inner delete runs anyway, the finalizer goes and the Service with it; an Event says
// what was left.
func TestServiceControllerCleanupFailureDoesNotBlockDelete(t *testing.T) {
	h := newHarness(t)
	inner := plainFake()
	h.run(inner, failingRemoval{kubernetes.NewProvider(nil)}, lgcloud.WithProfile(modern))
	h.create(atRisk("web"))
	h.waitStatus("web", hasAddress)
	h.delete("web")
	h.waitGone("web")
	h.spy.locked(func() {
		if n := strings.Count(strings.Join(inner.Calls, ","), "delete"); n == 0 {
			t.Errorf("the inner delete never ran: calls %v", inner.Calls)
		}
	})
	h.waitEvent(lgcloud.EventCleanupFailed, "credentials")
}
