package kubernetes_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// TestPlanStatusKeepsTheCloudsProxy: an ipMode Proxy the cloud published becomes VIP only
// when the backends are known to need nothing from the load balancer; a PROXY-protocol
// Service whose status says VIP gets Proxy (through-lb), which the status driver plans
// instead of refusing.
func TestPlanStatusKeepsTheCloudsProxy(t *testing.T) {
	proxy := corev1.LoadBalancerIPModeProxy
	modern := core.ClusterProfile{KubernetesVersion: "v1.37.2", ProxyMode: core.ProxyModeIPTables, KubeProxyVersion: "v1.37.2"}
	svc := func(ann map[string]string, mode *corev1.LoadBalancerIPMode) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: ann},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
				Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "203.0.113.9", IPMode: mode}}}},
		}
	}
	keepsClientIP := map[string]string{core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "false"}
	needsNothing := map[string]string{core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "false", core.AnnotationBackendExpects: "none"}
	needsTLS := map[string]string{core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "false", core.AnnotationBackendExpects: "tls"}
	hetzner := map[string]string{"load-balancer.hetzner.cloud/uses-proxyprotocol": "true"}
	for name, tc := range map[string]struct {
		svc      *corev1.Service
		remedy   core.Remedy
		wantTo   string // "" for no change
		wantNote bool
	}{
		"needs unknown: the cloud's Proxy stands":   {svc(keepsClientIP, &proxy), core.InterceptVIP, "", true},
		"needs nothing: VIP":                        {svc(needsNothing, &proxy), core.InterceptVIP, "VIP", false},
		"needs TLS: the cloud's Proxy stands":       {svc(needsTLS, &proxy), "", "", false},
		"PROXY protocol on Hetzner: through the LB": {svc(hetzner, nil), core.ThroughLB, "Proxy", false},
	} {
		// The host publishes the status (a CCM fork): Options.OwnsStatus, which
		// adapters/cloudprovider sets through kubernetes.StatusOwner.
		t.Run(name, func(t *testing.T) {
			c, err := core.NewCluster(modern)
			if err != nil {
				t.Fatal(err)
			}
			p := kubernetes.NewProvider(&kubernetes.Options{OwnsStatus: true})
			res, err := core.Evaluate(p.Dialect(), tc.svc, c, core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.remedy != "" && res.Decision.Remedy != tc.remedy {
				t.Fatalf("remedy %q, want %q (%s)", res.Decision.Remedy, tc.remedy, res.Decision.Why)
			}
			drv, _ := p.Driver()
			plan, err := drv.Plan(t.Context(), &core.PlanRequest{Object: tc.svc, Cluster: c, Result: res})
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			var to string
			for _, ch := range plan.Changes {
				if ch.By == core.WriterStatus {
					to = ch.To
				}
			}
			if to != tc.wantTo {
				t.Errorf("status change to %q, want %q (plan %s)", to, tc.wantTo, plan)
			}
			note := false
			for _, n := range plan.Notes {
				note = note || n.Code == kubernetes.CodeKeepCloudProxy
			}
			if note != tc.wantNote {
				t.Errorf("keep-cloud-proxy note %v, want %v (notes %v)", note, tc.wantNote, plan.Notes)
			}
		})
	}
}

// TestKeptProxyOneNote: the entries whose Proxy PlanStatus keeps are named in one note, in
// the status's order, so a host reports it as it is (no merging, no search for an address:
// 10.0.0.1 is not found inside 10.0.0.10).
func TestKeptProxyOneNote(t *testing.T) {
	proxy := corev1.LoadBalancerIPModeProxy
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web",
			Annotations: map[string]string{core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "false"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
			{IP: "10.0.0.10", IPMode: &proxy}, {IP: "10.0.0.1", IPMode: &proxy}}}},
	}
	c, err := core.NewCluster(core.ClusterProfile{KubernetesVersion: "v1.37.2", ProxyMode: core.ProxyModeIPTables, KubeProxyVersion: "v1.37.2"})
	if err != nil {
		t.Fatal(err)
	}
	p := kubernetes.NewProvider(&kubernetes.Options{OwnsStatus: true})
	res, err := core.Evaluate(p.Dialect(), svc, c, core.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	_, notes := kubernetes.PlanStatus(&core.PlanRequest{Object: svc, Cluster: c, Result: res})
	var kept []string
	for _, n := range notes {
		if n.Code == kubernetes.CodeKeepCloudProxy {
			kept = append(kept, n.Message)
		}
	}
	want := "kept ipMode Proxy on 10.0.0.10, 10.0.0.1 (" + string(res.Decision.Remedy) + " would publish VIP; "
	if len(kept) != 1 || !strings.HasPrefix(kept[0], want) {
		t.Errorf("kept-Proxy notes %q, want one starting %q", kept, want)
	}
}
