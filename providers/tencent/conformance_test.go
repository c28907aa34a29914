package tencent_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/drivertest"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

// TestDriverCases runs core/drivertest's contract on TKE objects of the TkeServiceConfig mode:
// plans only read and are stable, reconciling converges and a second run writes nothing,
// blocked plans write nothing, every reason code is documented.
func TestDriverCases(t *testing.T) {
	drv, err := tencent.NewDriver(nil)
	if err != nil {
		t.Fatal(err)
	}
	ipvs := core.ClusterProfile{Provider: tencent.Name, ProxyMode: core.ProxyModeIPVS, KubeProxyVersion: "v1.20.6-tke.12"}
	withSNAT := ipvs
	withSNAT.Allowlists = []core.Capability{tencent.CapL4SNAT}
	tooOld := ipvs
	tooOld.KubeProxyVersion = "v1.20.6-tke.3"
	l7 := ipvs
	l7.Allowlists = []core.Capability{tencent.CapL7SNAT, tencent.CapKeepalive}

	udpSvc := exampleService(map[string]string{"owner": "team-a"})
	udpSvc.Spec.Ports = append(udpSvc.Spec.Ports, corev1.ServicePort{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP})

	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop",
		Annotations: map[string]string{tencent.AnnotationIngressSubnet: "subnet-1a2b3c4d"}},
		Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web"}}}}

	prov, err := tencent.NewProvider(nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = drv
	drivertest.RunCases(t, drivertest.CaseHarness{Provider: prov, Cases: []drivertest.Case{
		{Name: "intercept-vip", Object: exampleService(map[string]string{"owner": "team-a"}), Cluster: exampleCluster(ipvs)},
		{Name: "lb-snat creates and references a config", Object: udpSvc, Cluster: exampleCluster(withSNAT),
			Policy: core.Policy{Prefer: core.PreferLBFeatures}},
		// Decide passes over remedies whose preconditions fail, so these fall back to DNS
		// steering, a change for the user; the driver's own refusals are in driver_plan_test.go.
		{Name: "kube-proxy too old falls back", Object: exampleService(map[string]string{tencent.AnnotationPreventLoopback: "true"}),
			Cluster: exampleCluster(tooOld)},
		{Name: "lb-snat without the allowlist", Object: exampleService(map[string]string{}), Cluster: exampleCluster(ipvs),
			Policy: core.Policy{Prefer: core.PreferLBFeatures, AllowTickets: true}, Blocked: core.ErrNotAllowlisted},
		{Name: "layer-7 with an unknown controller version falls back", Object: ing, Cluster: exampleCluster(l7)},
	}})
}

// TestConformanceServiceConfig: the shared scenarios on the default mode, where lb-snat is a
// TkeServiceConfig loopguard creates and references (TKE's controller carries it to the CLB).
func TestConformanceServiceConfig(t *testing.T) {
	drivertest.RunConformance(t, drivertest.Harness{New: func(t *testing.T, s drivertest.Setup) *drivertest.Env {
		prov, err := tencent.NewProvider(nil)
		if err != nil {
			t.Fatal(err)
		}
		profile := ipvsProfile(tencent.CapL4SNAT)
		if s.NotAllowlisted {
			profile = ipvsProfile()
		}
		svc := privateService("web", map[string]string{"owner": "team-a"}, "TCP/80", "UDP/53")
		live := drivertest.NewCluster(toUnstructured(t, svc))
		cfgKey := core.ObjectKey{APIVersion: tencent.ServiceConfigAPIVersion, Kind: tencent.ServiceConfigKind, Namespace: "default", Name: "web" + tencent.ConfigSuffix}
		return &drivertest.Env{
			Provider: prov, Live: live, Object: svc, Policy: snatPolicy,
			Facts: func() *core.Cluster {
				var objs []runtime.Object
				for _, u := range live.Objects() {
					objs = append(objs, u)
				}
				return cluster(t, profile, objs...)
			},
			// TKE's controller turning SNAT off again in the config, as a user editing it would.
			Revert: func(t *testing.T) {
				u, err := live.Get(t.Context(), cfgKey)
				if err != nil || u == nil {
					t.Fatalf("no %s to revert: %v", cfgKey, err)
				}
				ls, _, _ := unstructured.NestedSlice(u.Object, "spec", "loadBalancer", "l4Listeners")
				ls[0].(map[string]any)["snatEnable"] = false
				_ = unstructured.SetNestedSlice(u.Object, ls, "spec", "loadBalancer", "l4Listeners")
				live.Put(u)
			},
		}
	}})
}

// TestConformanceDirect: the shared scenarios on direct mode, where lb-snat is a CLB listener
// attribute written through the official SDK to clbtest.
func TestConformanceDirect(t *testing.T) {
	drivertest.RunConformance(t, drivertest.Harness{New: func(t *testing.T, s drivertest.Setup) *drivertest.Env {
		cl := startCloud(t, &clbtest.Options{Allowlist: []clbtest.Capability{clbtest.L4SNAT}, TaskDuration: 5 * time.Millisecond})
		cl.seedLB(t, lbID, "TCP/80", "UDP/53", "TCP/443")
		prov, err := tencent.NewProvider(fastRetries(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: cl.client,
			Backoff: tencent.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond, Budget: 50 * time.Millisecond}}))
		if err != nil {
			t.Fatal(err)
		}
		profile := ipvsProfile(tencent.CapL4SNAT)
		if s.NotAllowlisted {
			profile = ipvsProfile()
		}
		svc := privateService("web", map[string]string{tencent.AnnotationLoadBalancerID: lbID, "owner": "team-a"}, "TCP/80", "UDP/53")
		return &drivertest.Env{
			Provider: prov, Live: drivertest.NewCluster(toUnstructured(t, svc)), Object: svc, Policy: snatPolicy,
			Facts:       func() *core.Cluster { return cluster(t, profile, svc) },
			CloudWrites: func() int { return len(cl.srv.Writes()) },
			CloudState: func() string {
				var b strings.Builder
				for _, l := range []string{"TCP/80", "UDP/53", "TCP/443"} {
					got := cl.listener(t, l)
					fmt.Fprintf(&b, "%s %v %v; ", l, got.SnatEnable, got.KeepaliveEnable)
				}
				return b.String()
			},
			Refuse: func() { cl.srv.Revoke(clbtest.L4SNAT) },
			Busy: func() {
				cl.srv.InjectFault("ModifyListener", 1000, clbtest.ErrorFault("FailedOperation.ResourceInOperating", "the load balancer is being modified"))
			},
			Calm: cl.srv.ClearFaults,
			Revert: func(t *testing.T) {
				if err := cl.srv.UpdateListener(listenerID("TCP/80"), func(l *clbtest.Listener) { l.SnatEnable = false }); err != nil {
					t.Fatal(err)
				}
			},
		}
	}})
}
