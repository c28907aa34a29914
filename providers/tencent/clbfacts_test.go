package tencent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

// reusingService is a LoadBalancer Service that reuses CLB id and says nothing of its type.
func reusingService(name, id string, ports ...string) *corev1.Service {
	svc := privateService(name, map[string]string{tencent.AnnotationExistedLB: id}, ports...)
	delete(svc.Annotations, tencent.AnnotationInternalSubnet)
	return svc
}

// TestReadCLBsSetsTheScope: in direct mode the driver reads a reused CLB's LoadBalancerType
// from DescribeLoadBalancers (against clbtest), and the dialect takes the scope from it:
// INTERNAL is private (at risk under IPVS on regular nodes), OPEN public (no risk).
func TestReadCLBsSetsTheScope(t *testing.T) {
	for name, tc := range map[string]struct {
		typ   string
		scope core.Scope
		risk  core.Risk
	}{
		"INTERNAL": {clbtest.LoadBalancerInternal, core.Private, core.RiskAtRisk},
		"OPEN":     {clbtest.LoadBalancerOpen, core.Public, core.RiskNone},
	} {
		t.Run(name, func(t *testing.T) {
			cl := startCloud(t, nil)
			if _, err := cl.srv.AddLoadBalancer(clbtest.LoadBalancer{ID: lbID, Type: tc.typ}); err != nil {
				t.Fatal(err)
			}
			drv := newDriver(t, fastRetries(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: cl.client}))
			svc := reusingService("web", lbID, "TCP/80")
			c := cluster(t, ipvsProfile(), svc)

			before, err := core.Evaluate(drv.Dialect(), svc, c, core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			if before.Exposure.Scope != core.ScopeUnknown || before.Assessment.Risk != core.RiskUnknown {
				t.Fatalf("without a read: scope %q risk %q, want unknown", before.Exposure.Scope, before.Assessment.Risk)
			}

			snap, err := drv.ReadCLBs(context.Background(), svc)
			if err != nil {
				t.Fatal(err)
			}
			if got := snap[lbID]; got.Type != tc.typ {
				t.Fatalf("snapshot %v, want %s", snap, tc.typ)
			}
			if got := cl.actions(); !slices.Equal(got, []string{"DescribeLoadBalancers"}) {
				t.Errorf("calls %v, want one DescribeLoadBalancers", got)
			}
			res, err := core.Evaluate(drv.WithCLBs(snap).Dialect(), svc, c, core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			checkDocumented(t, res)
			if res.Exposure.Scope != tc.scope || res.Assessment.Risk != tc.risk {
				t.Errorf("scope %q risk %q, want %q %q", res.Exposure.Scope, res.Assessment.Risk, tc.scope, tc.risk)
			}
			r, ok := reasonFor(res.Exposure.Reasons, tencent.CodeCLBType)
			if !ok || !strings.Contains(r.Message, "LoadBalancerType "+tc.typ) || !strings.Contains(r.Source, "docs/sources.md#tke-clb-api") {
				t.Errorf("reason %+v (found %v), want the LoadBalancerType and docs/sources.md#tke-clb-api", r, ok)
			}
			if slices.Contains(codes(res.Exposure.Reasons), tencent.CodeExistingLB) {
				t.Error("still says the type is unknown")
			}
		})
	}
}

// TestReadCLBsIngress: an Ingress that reuses a CLB (ingress.existLbId) gets its scope the same way.
func TestReadCLBsIngress(t *testing.T) {
	cl := startCloud(t, nil)
	if _, err := cl.srv.AddLoadBalancer(clbtest.LoadBalancer{ID: lbID, Type: clbtest.LoadBalancerInternal}); err != nil {
		t.Fatal(err)
	}
	drv := newDriver(t, fastRetries(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: cl.client}))
	ing := privateIngress("web", map[string]string{tencent.AnnotationIngressExistLB: lbID})
	delete(ing.Annotations, tencent.AnnotationIngressSubnet)
	snap, err := drv.ReadCLBs(context.Background(), ing)
	if err != nil {
		t.Fatal(err)
	}
	res, err := core.Evaluate(drv.WithCLBs(snap).Dialect(), ing, cluster(t, ipvsProfile(), ing), core.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Exposure.Scope != core.Private || res.Assessment.Risk != core.RiskAtRisk {
		t.Errorf("scope %q risk %q, want private at-risk", res.Exposure.Scope, res.Assessment.Risk)
	}
}

// TestReadCLBsReconciles: a Service on a reused INTERNAL CLB, read in direct mode, is planned,
// given SNAT on its listener through the CLB API, and planned empty afterwards.
func TestReadCLBsReconciles(t *testing.T) {
	cl := startCloud(t, &clbtest.Options{Allowlist: []clbtest.Capability{clbtest.L4SNAT}})
	cl.seedLB(t, lbID, "TCP/80")
	drv := newDriver(t, fastRetries(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: cl.client}))
	svc := reusingService("web", lbID, "TCP/80")
	c := cluster(t, ipvsProfile(tencent.CapL4SNAT), svc)
	snap, err := drv.ReadCLBs(context.Background(), svc)
	if err != nil {
		t.Fatal(err)
	}
	read := drv.WithCLBs(snap)
	r := core.NewReconciler(core.NewProvider(read.Dialect(), read), &core.ReconcilerOptions{Policy: snatPolicy})
	out, err := r.Reconcile(context.Background(), svc, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Written) != 1 || !cl.listener(t, "TCP/80").SnatEnable {
		t.Fatalf("written %v, SNAT %v: want the listener written", out.Written, cl.listener(t, "TCP/80").SnatEnable)
	}
	p, err := r.Plan(context.Background(), svc, c)
	if err != nil || !p.Empty() {
		t.Fatalf("second plan %v (err %v), want empty", p, err)
	}
}

// TestReadCLBsFailures: a read that fails is an error that says why (the scope is never
// guessed); translating without the snapshot then gives the unknown scope, as before a read. A
// CLB the API does not list is left out of the snapshot, with the same unknown scope.
func TestReadCLBsFailures(t *testing.T) {
	svc := reusingService("web", lbID, "TCP/80")
	t.Run("permission missing", func(t *testing.T) {
		cl := startCloud(t, &clbtest.Options{AllowedActions: tencent.CAMActions(tencent.ModeDirect)})
		if _, err := cl.srv.AddLoadBalancer(clbtest.LoadBalancer{ID: lbID, Type: clbtest.LoadBalancerInternal}); err != nil {
			t.Fatal(err)
		}
		drv := newDriver(t, fastRetries(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: cl.client}))
		snap, err := drv.ReadCLBs(context.Background(), svc)
		if !errors.Is(err, core.ErrUnauthenticated) || !strings.Contains(err.Error(), "CAM permission for "+tencent.ReadCAMActions()[0]) {
			t.Fatalf("error %v: want core.ErrUnauthenticated naming %s", err, tencent.ReadCAMActions()[0])
		}
		res, err := core.Evaluate(drv.WithCLBs(snap).Dialect(), svc, cluster(t, ipvsProfile(), svc), core.Policy{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Exposure.Scope != core.ScopeUnknown || res.Assessment.Risk != core.RiskUnknown ||
			!slices.Contains(codes(res.Exposure.Reasons), tencent.CodeExistingLB) {
			t.Errorf("scope %q risk %q reasons %v: want unknown with %s", res.Exposure.Scope, res.Assessment.Risk, codes(res.Exposure.Reasons), tencent.CodeExistingLB)
		}
	})
	t.Run("throttled", func(t *testing.T) {
		cl := startCloud(t, nil)
		cl.srv.InjectFault("DescribeLoadBalancers", 0, clbtest.Fault{Code: clbtest.CodeRequestLimitExceeded, Message: "throttled"})
		drv := newDriver(t, &tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: cl.client, RateLimit: 1000,
			Backoff: tencent.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond, Budget: 20 * time.Millisecond}})
		_, err := drv.ReadCLBs(context.Background(), svc)
		var re *core.RetryError
		if !errors.As(err, &re) {
			t.Fatalf("error %v: want a core.RetryError", err)
		}
	})
	t.Run("unknown CLB", func(t *testing.T) {
		cl := startCloud(t, nil)
		drv := newDriver(t, fastRetries(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: cl.client}))
		snap, err := drv.ReadCLBs(context.Background(), svc)
		if err != nil || len(snap) != 0 {
			t.Fatalf("snapshot %v, err %v: want empty, no error", snap, err)
		}
	})
	t.Run("no client", func(t *testing.T) {
		drv := newDriver(t, nil)
		if _, err := drv.ReadCLBs(context.Background(), svc); !errors.Is(err, core.ErrUnsupported) {
			t.Fatalf("error %v: want core.ErrUnsupported", err)
		}
		if snap, err := drv.ReadCLBs(context.Background(), privateService("plain", nil, "TCP/80")); err != nil || len(snap) != 0 {
			t.Fatalf("an object reusing no CLB: %v, %v", snap, err)
		}
	})
}

// TestReadCLBsBatches: DescribeLoadBalancers takes at most 20 IDs; 21 reused CLBs take two
// calls, and each ID is asked for once.
func TestReadCLBsBatches(t *testing.T) {
	cl := startCloud(t, nil)
	var objs []runtime.Object
	for i := range 21 {
		id := fmt.Sprintf("lb-%08d", i)
		if _, err := cl.srv.AddLoadBalancer(clbtest.LoadBalancer{ID: id, Type: clbtest.LoadBalancerOpen}); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, reusingService(fmt.Sprintf("svc-%d", i), id, "TCP/80"), reusingService(fmt.Sprintf("again-%d", i), id, "TCP/81"))
	}
	drv := newDriver(t, fastRetries(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: cl.client}))
	snap, err := drv.ReadCLBs(context.Background(), objs...)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap) != 21 {
		t.Errorf("read %d CLBs, want 21", len(snap))
	}
	if got := cl.actions(); !slices.Equal(got, []string{"DescribeLoadBalancers", "DescribeLoadBalancers"}) {
		t.Errorf("calls %v, want two DescribeLoadBalancers", got)
	}
}

// TestCLBSnapshotTypes: only OPEN and INTERNAL set a scope; another value leaves it unknown.
func TestCLBSnapshotTypes(t *testing.T) {
	svc := reusingService("web", lbID, "TCP/80")
	svc.ObjectMeta = metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: svc.Annotations}
	for typ, want := range map[string]core.Scope{"OPEN": core.Public, "INTERNAL": core.Private, "internal": core.Private, "": core.ScopeUnknown, "HYBRID": core.ScopeUnknown} {
		d := tencent.NewDialect(&tencent.Options{CLBs: tencent.CLBSnapshot{lbID: {ID: lbID, Type: typ}}})
		tr, err := d.Translate(svc, cluster(t, ipvsProfile(), svc))
		if err != nil {
			t.Fatal(err)
		}
		if tr.Exposure.Scope != want {
			t.Errorf("type %q: scope %q, want %q", typ, tr.Exposure.Scope, want)
		}
	}
}
