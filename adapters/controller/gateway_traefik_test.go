package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestGatewayTraefikReJudgedWhenItsServiceChanges: a Traefik Gateway is judged through the
// Service Traefik publishes (named by its Pod's arguments), which names no Gateway; when that
// Service changes (someone turns prevent-loopback on), the controller re-judges the Gateway
// at once instead of at the cache's next resync.
func TestGatewayTraefikReJudgedWhenItsServiceChanges(t *testing.T) {
	e := newGatewayEnv(t, []string{"edge", "traefik"})
	ctx, cs, create := e.ctx, e.cs, e.create
	create(gatewayClassesRes, "", `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: traefik}
spec: {controllerName: traefik.io/gateway-controller}`)
	create(gatewaysRes, "edge", `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: edge}
spec:
  gatewayClassName: traefik
  listeners: [{name: web, port: 8000, protocol: HTTP}]`)
	if _, err := cs.CoreV1().Pods("traefik").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "traefik-0", Labels: map[string]string{"app.kubernetes.io/name": "traefik"}},
		Spec: corev1.PodSpec{NodeName: "10.0.1.12", Containers: []corev1.Container{{Name: "traefik", Image: "traefik", Args: []string{
			"--entryPoints.web.address=:8000/tcp", "--providers.kubernetesgateway",
			"--providers.kubernetesgateway.statusaddress.service.name=traefik", "--providers.kubernetesgateway.statusaddress.service.namespace=traefik"}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const subnet = "service.kubernetes.io/qcloud-loadbalancer-internal-subnetid"
	const prevent = "service.cloud.tencent.com/prevent-loopback"
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "traefik", Name: "traefik", Annotations: map[string]string{subnet: "subnet-3f9a2c1d"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app.kubernetes.io/name": "traefik"},
			Ports: []corev1.ServicePort{{Name: "web", Port: 80}}}}
	if _, err := cs.CoreV1().Services("traefik").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	e.startGateways(&Options{Profile: ipvs}, "../../deploy/base/rbac.yaml")
	verdictOfGateway := func() string { return e.verdict("edge", "web") }
	var verdict string
	until(t, ctx, "the Traefik Gateway judged at risk through Traefik's Service", func() bool {
		verdict = verdictOfGateway()
		return strings.HasPrefix(verdict, ReasonAtRisk+":")
	}, func() string { return verdict })
	// Someone turns prevent-loopback on, on Traefik's own Service (nothing rewrites it from the
	// Gateway): the Gateway is re-judged safe.
	patch := []byte(`{"metadata":{"annotations":{"` + prevent + `":"true"}}}`)
	if _, err := cs.CoreV1().Services("traefik").Patch(ctx, "traefik", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the Traefik Gateway re-judged once its Service carries the remedy", func() bool {
		verdict = verdictOfGateway()
		return strings.HasPrefix(verdict, ReasonNoLoop+":")
	}, func() string { return verdict })
}
