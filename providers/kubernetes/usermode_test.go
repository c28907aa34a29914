package kubernetes

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// TestPlanStatusKeepsUserIPMode: PlanStatus never changes an entry whose ipMode the user set;
// where the decision's path differs it notes what loopguard would publish, and how to let it
// only where the cloud has an ip-mode annotation and the decision is firm.
func TestPlanStatusKeepsUserIPMode(t *testing.T) {
	atRisk := map[string]string{core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "false", core.AnnotationBackendExpects: "none"}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range atRisk {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	proxy := corev1.LoadBalancerIngress{IP: "10.0.0.20", IPMode: ptr(corev1.LoadBalancerIPModeProxy)}
	for name, tc := range map[string]struct {
		svc      *corev1.Service
		remedy   core.Remedy
		note     string // a substring of the k8s-user-ipmode note; "" for none
		noAdvice bool   // the note must not say how to let it
	}{
		"Oracle proxy, loopguard would intercept": {svc: cloudService("web", with(map[string]string{annOCIIngressIPMode: "proxy"}), "TCP", proxy),
			remedy: core.InterceptVIP, note: `to let it, set oci.oraclecloud.com/ingress-ip-mode: "VIP"`},
		"Scaleway Proxy, loopguard would intercept": {svc: cloudService("web", with(map[string]string{annScalewayIPMode: "Proxy"}), "TCP", proxy),
			remedy: core.InterceptVIP, note: `to let it, set service.beta.kubernetes.io/scw-loadbalancer-ip-mode: "VIP"`},
		// The PROXY switch is the backends' protocol: no advice to flip it.
		"OpenStack off, loopguard would go through the LB": {svc: cloudService("web", map[string]string{annOpenStackProxyProtocol: "false",
			core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "false", core.AnnotationBackendExpects: "tls"}, "TCP", ipVIP),
			remedy: core.ThroughLB, note: "kept ipMode VIP on 10.0.0.20", noAdvice: true},
		"Oracle VIP, no loop": {svc: cloudService("web", with(map[string]string{annOCIIngressIPMode: "VIP"}), "TCP", ipVIP), remedy: core.RemedyNone},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := core.NewCluster(core.ClusterProfile{KubernetesVersion: "v1.37.2", ProxyMode: core.ProxyModeIPTables, KubeProxyVersion: "v1.37.2"})
			if err != nil {
				t.Fatal(err)
			}
			res, err := core.Evaluate(NewDialect(&Options{OwnsStatus: true}), tc.svc, c, core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Decision.Remedy != tc.remedy {
				t.Fatalf("remedy %q, want %q (%s)", res.Decision.Remedy, tc.remedy, res.Decision.Why)
			}
			changes, notes := PlanStatus(&core.PlanRequest{Object: tc.svc, Cluster: c, Result: res})
			if diff := cmp.Diff([]core.Change(nil), changes); diff != "" {
				t.Errorf("PlanStatus changed an ipMode the user set (-want +got):\n%s", diff)
			}
			var got []string
			for _, n := range notes {
				if n.Code == CodeUserIPMode {
					got = append(got, n.Message)
				}
			}
			switch {
			case tc.note == "" && len(got) > 0:
				t.Errorf("notes %q, want none: the decision agrees with the user", got)
			case tc.note != "" && (len(got) != 1 || !strings.Contains(got[0], tc.note)):
				t.Errorf("notes %q, want one containing %q", got, tc.note)
			case tc.noAdvice && strings.Contains(got[0], "to let it"):
				t.Errorf("note %q advises flipping the PROXY protocol", got[0])
			}
		})
	}
}
