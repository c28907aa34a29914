package gateway_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/gateway"
	"github.com/loopguard/loopguard/providers/tencent"
)

// A platform SDK holding typed Gateway API objects: wrap the cloud's provider, hand the
// GatewayClass to the Cluster (ClusterObject converts it to the form the Cluster indexes),
// and plan the Gateway through the Reconciler. The remedy lands on the Gateway's
// spec.infrastructure, where Envoy Gateway copies it to the Service it generates.
func ExampleWrap() {
	class := &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "eg"},
		Spec: gwv1.GatewayClassSpec{ControllerName: "gateway.envoyproxy.io/gatewayclass-controller"}}
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "eg",
			Infrastructure: &gwv1.GatewayInfrastructure{Annotations: map[gwv1.AnnotationKey]gwv1.AnnotationValue{
				"service.kubernetes.io/qcloud-loadbalancer-internal-subnetid": "subnet-3f9a2c1d"}},
			Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}}}
	objs := []runtime.Object{}
	for _, n := range []string{"10.0.1.11", "10.0.1.12"} {
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	for _, o := range []runtime.Object{class, gw} {
		u, err := gateway.ClusterObject(o)
		if err != nil {
			panic(err)
		}
		objs = append(objs, u)
	}
	profile := core.ClusterProfile{Provider: "tencent", KubernetesVersion: "v1.30.4", ProxyMode: core.ProxyModeIPVS, KubeProxyVersion: "v1.30.4-tke.3"}
	c, err := core.NewCluster(profile, objs...)
	if err != nil {
		panic(err)
	}
	tp, err := tencent.NewProvider(nil)
	if err != nil {
		panic(err)
	}
	rec := core.NewReconciler(gateway.Wrap(tp, nil), nil)
	p, err := rec.Plan(context.Background(), gw, c)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Object, p.Decision.Remedy)
	for _, ch := range p.Changes {
		fmt.Println(ch.String())
	}
	// Output:
	// Gateway shop/web intercept-vip
	// cluster Gateway shop/web: spec.infrastructure.annotations["service.cloud.tencent.com/prevent-loopback"] (unset) → true
}
