package volcengine_test

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/volcengine"
)

// A Service created in Proxy mode loops for clients on its backends' nodes. Switching it to VIP
// would need a new Service, which the default policy does not allow.
func ExampleDialect_Translate() {
	proxy := corev1.LoadBalancerIPModeProxy
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: "orders", Namespace: "shop", UID: "0f6c2b7e-5d1a-4c2e-9a55-3e0d8f1b7a01",
			Annotations: map[string]string{
				volcengine.AnnotationIPMode:      volcengine.IPModeProxy,
				volcengine.AnnotationAddressType: volcengine.AddressTypePrivate,
			},
		},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "orders"},
			Ports:    []corev1.ServicePort{{Port: 80}},
		},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{
			Ingress: []corev1.LoadBalancerIngress{{IP: "172.16.8.20", IPMode: &proxy}},
		}},
	}
	node := func(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	profile := core.ClusterProfile{Provider: volcengine.Name, KubernetesVersion: "v1.32.2", CCMVersion: "v1.43.0",
		ProxyMode: core.ProxyModeEBPF, Dataplane: core.DataplaneProfile{CNI: "vpc-cni", PodInterface: "ipvlan"}}
	cluster, _ := core.NewCluster(profile, node("node-a"), node("node-b"), svc)

	r, err := core.Evaluate(volcengine.NewDialect(nil), svc, cluster, core.Policy{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("risk:", r.Assessment.Risk, r.Assessment.Symptom, "path", r.Assessment.Path, "p =", r.Assessment.WorstCase)
	fmt.Println("decision:", r.Decision.Remedy)
	for _, rj := range r.Decision.Rejected {
		fmt.Println("rejected:", rj.Remedy, rj.Reason.Code)
	}

	_, err = volcengine.ParseIPMode("proxy")
	fmt.Println(errors.Is(err, core.ErrInvalid), err)
	// Output:
	// risk: at-risk intermittent path Proxy p = 0.5
	// decision: dns-steering
	// rejected: intercept-vip decide-disruptive
	// rejected: node-separation clients-undeclared
	// true metadata.annotations[service.beta.kubernetes.io/volcengine-loadbalancer-ip-mode]: Unsupported value: "proxy": supported values: "VIP", "Proxy" (values are case-sensitive)
}
