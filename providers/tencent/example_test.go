package tencent_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
)

// A private LoadBalancer Service in an IPVS cluster of regular nodes loops through the CLB
// (seeds 000/001 §3, first row); the default policy picks intra-cluster forwarding.
func ExampleDialect_Translate() {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{
			tencent.AnnotationInternalSubnet: "subnet-1a2b3c4d",
		}},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	var nodes []*corev1.Node
	for _, n := range []string{"node-1", "node-2", "node-3"} {
		nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	profile := core.ClusterProfile{Provider: tencent.Name, ProxyMode: core.ProxyModeIPVS, KubeProxyVersion: "v1.20.6-tke.12"}
	cluster, err := core.NewCluster(profile, nodes[0], nodes[1], nodes[2])
	if err != nil {
		panic(err)
	}

	res, err := core.Evaluate(tencent.NewDialect(nil), svc, cluster, profile.Policy)
	if err != nil {
		panic(err)
	}
	fmt.Println("risk:", res.Assessment.Risk, res.Assessment.Symptom, res.Assessment.WorstCase)
	fmt.Println("remedy:", res.Decision.Remedy, res.Decision.Path)
	fmt.Println("action:", res.Decision.Action)
	for _, r := range res.Decision.Rejected {
		fmt.Println("not", r.Remedy+":", r.Reason.Code)
	}
	// Output:
	// risk: at-risk intermittent 0.3333
	// remedy: intercept-vip VIP
	// action: set metadata.annotations["service.cloud.tencent.com/prevent-loopback"]: "true"
	// not lb-snat: tke-needs-allowlist
	// not node-separation: clients-undeclared
	// not dns-steering: decide-ranked-lower
}

// What to ask Tencent Cloud support for, per allowlist name a ClusterProfile uses.
func ExampleCapabilities() {
	for _, c := range tencent.Capabilities() {
		fmt.Printf("%s: %s\n", c, tencent.Ask(c))
	}
	// Output:
	// clb-l4-snat: CLB Layer 4 SNAT capability
	// clb-l7-snat: CLB Layer 7 SNAT capability
	// clb-keepalive: Keep Alive capability
}
