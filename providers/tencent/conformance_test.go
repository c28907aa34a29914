package tencent_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/drivertest"
	"github.com/loopguard/loopguard/providers/tencent"
)

// TestDriverConformance runs core/drivertest's contract on the TKE driver in TkeServiceConfig
// mode: plans only read and are stable, reconciling converges and a second run writes nothing,
// blocked plans write nothing, every reason code is documented.
func TestDriverConformance(t *testing.T) {
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

	drivertest.RunConformance(t, drivertest.Harness{Dialect: drv.Dialect(), Driver: drv, Cases: []drivertest.Case{
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
