package kubernetes_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// A GKE internal LB whose CCM published ipMode Proxy, on a cluster whose kube-proxy is 1.30:
// in-cluster clients reach the LB, which keeps their address, so they can loop.
func ExampleDialect_Translate() {
	proxy := corev1.LoadBalancerIPModeProxy
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
		Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 443}}}}
	svc.Namespace, svc.Name = "shop", "web"
	svc.Annotations = map[string]string{
		"networking.gke.io/load-balancer-type": "Internal",
		"loopguard.io/lb-source-nat":           "false",
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.10", IPMode: &proxy}}

	c, _ := core.NewCluster(core.ClusterProfile{ProxyMode: core.ProxyModeIPTables, KubeProxyVersion: "v1.30.2"})
	r, err := core.Evaluate(kubernetes.NewDialect(nil), svc, c, core.Policy{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("intercepted:", r.Exposure.Intercept, "scope:", r.Exposure.Scope)
	fmt.Println("risk:", r.Assessment.Risk, "remedy:", r.Decision.Remedy, "path:", r.Decision.Path)
	// Output:
	// intercepted: no scope: private
	// risk: at-risk remedy: intercept-vip path: VIP
}

// A CCM fork checks the status it is about to return before the API server rejects it.
func ExampleValidateIngressStatus() {
	proxy := corev1.LoadBalancerIPModeProxy
	status := []corev1.LoadBalancerIngress{
		{IP: "10.0.0.10"}, // ipMode defaults to VIP
		{Hostname: "lb.example.com", IPMode: &proxy},
	}
	for _, e := range kubernetes.ValidateIngressStatus(kubernetes.IngressStatusPath(), status) {
		fmt.Println(e)
	}
	fmt.Println(*kubernetes.DefaultIngressStatus(status)[0].IPMode)
	// Output:
	// status.loadBalancer.ingress[1].ipMode: Forbidden: may not be specified when `ip` is not set
	// VIP
}
