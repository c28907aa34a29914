package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestGatewayMergedReJudgedWhenTheClassServiceChanges: with Envoy Gateway's mergeGateways the
// class's one Service is labelled with the GatewayClass, not with a Gateway
// (internal/gatewayapi/translator.go buildIR); the controller judges each Gateway of the class
// through it and re-judges them all when it changes, instead of at the cache's next resync.
func TestGatewayMergedReJudgedWhenTheClassServiceChanges(t *testing.T) {
	e := newGatewayEnv(t, []string{"shop", "team", "envoy-gateway-system"})
	ctx, cs, create, node := e.ctx, e.cs, e.create, "10.0.1.11"
	create(gatewayClassesRes, "", `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: eg}
spec: {controllerName: gateway.envoyproxy.io/gatewayclass-controller}`)
	for _, ns := range []string{"shop", "team"} {
		create(gatewaysRes, ns, `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: `+ns+`}
spec:
  gatewayClassName: eg
  listeners: [{name: http, port: 80, protocol: HTTP}]`)
	}
	const subnet = "service.kubernetes.io/qcloud-loadbalancer-internal-subnetid"
	const prevent = "service.cloud.tencent.com/prevent-loopback"
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "envoy-gateway-system", Name: "envoy-eg-merged",
		Labels:      map[string]string{"gateway.envoyproxy.io/owning-gatewayclass": "eg"},
		Annotations: map[string]string{subnet: "subnet-3f9a2c1d"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Ports: []corev1.ServicePort{{Name: "http-80", Port: 80}}}}
	if _, err := cs.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{FieldManager: "envoy-gateway"}); err != nil {
		t.Fatal(err)
	}
	ready := true
	if _, err := cs.DiscoveryV1().EndpointSlices(svc.Namespace).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: svc.Name + "-a", Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name}}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"172.16.0.21"}, NodeName: &node, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	e.startGateways(&Options{Profile: ipvs}, "../../deploy/base/rbac.yaml")
	verdicts := func() string {
		var out []string
		for _, ns := range []string{"shop", "team"} {
			out = append(out, e.verdict(ns, "web"))
		}
		return strings.Join(out, " | ")
	}
	both := func(prefix string) func() bool {
		return func() bool {
			v := strings.Split(verdicts(), " | ")
			return strings.HasPrefix(v[0], prefix) && strings.HasPrefix(v[1], prefix)
		}
	}
	until(t, ctx, "both Gateways of the merged class judged at risk through the class's Service", both(ReasonAtRisk+":"), verdicts)
	patch := []byte(`{"metadata":{"annotations":{"` + prevent + `":"true"}}}`)
	if _, err := cs.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "both Gateways re-judged once the class's Service carries the remedy", both(ReasonNoLoop+":"), verdicts)
}
