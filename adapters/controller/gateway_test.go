package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/loopguard/loopguard/core"
)

// TestGatewayEnforceWritesTheGatewayNotItsService: the Gateway reconciler, running with
// deploy/'s RBAC, judges a Gateway
// through the Service Envoy Gateway generated (simulated here; providers/gateway runs the real
// controller), writes the remedy on the Gateway's spec.infrastructure, leaves the Service to its
// owner, publishes the verdict on the Gateway, and re-judges it when the Service changes.
func TestGatewayEnforceWritesTheGatewayNotItsService(t *testing.T) {
	e := newGatewayEnv(t, []string{"shop", "envoy-gateway-system"})
	ctx, cs, dyn, create, node := e.ctx, e.cs, e.dyn, e.create, "10.0.1.11"
	gwRes := gatewaysRes
	create(gatewayClassesRes, "", `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: eg}
spec: {controllerName: gateway.envoyproxy.io/gatewayclass-controller}`)
	const subnet = "service.kubernetes.io/qcloud-loadbalancer-internal-subnetid"
	const prevent = "service.cloud.tencent.com/prevent-loopback"
	create(gwRes, "shop", `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: shop}
spec:
  gatewayClassName: eg
  infrastructure: {annotations: {`+subnet+`: subnet-3f9a2c1d}}
  listeners: [{name: http, port: 80, protocol: HTTP}]`)
	// What Envoy Gateway generates for it (internal/infrastructure/kubernetes/proxy).
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "envoy-gateway-system", Name: "envoy-shop-web-97375646",
		Labels:      map[string]string{"gateway.envoyproxy.io/owning-gateway-name": "web", "gateway.envoyproxy.io/owning-gateway-namespace": "shop"},
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

	// The controller runs as deploy/'s ServiceAccount with exactly its RBAC (report-only and
	// enforce), so a rule the Gateway reconciler needs and the files lack fails this test.
	g := e.startGateways(&Options{Profile: ipvs, Enforce: true}, "../../deploy/base/rbac.yaml", "../../deploy/components/enforce/rbac.yaml")
	gwAnnotation := func() (infra, verdict string) {
		u, err := dyn.Resource(gwRes).Namespace("shop").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		infra, _, _ = unstructured.NestedString(u.Object, "spec", "infrastructure", "annotations", prevent)
		return infra, u.GetAnnotations()[AnnotationVerdict]
	}
	var infra, verdict string
	until(t, ctx, "the remedy on the Gateway and its verdict", func() bool {
		infra, verdict = gwAnnotation()
		return infra == "true" && strings.HasPrefix(verdict, ReasonAtRisk+":")
	}, func() string { return "infra " + infra + ", verdict " + verdict })
	live, err := cs.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range live.ManagedFields {
		if m.Manager == core.FieldManager {
			t.Errorf("loopguard wrote the generated Service: %s", m.FieldsV1.Raw)
		}
	}
	// The webhook warns at create about a second Gateway like the first (its Service not
	// generated yet: judged from the Gateway), and denies it when asked to.
	second := []byte(`{"apiVersion":"gateway.networking.k8s.io/v1","kind":"Gateway","metadata":{"name":"api","namespace":"shop"},"spec":{"gatewayClassName":"eg","infrastructure":{"annotations":{"` + subnet + `":"subnet-3f9a2c1d"}},` +
		`"listeners":[{"name":"http","port":80,"protocol":"HTTP"}]}}`)
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "shop", Name: "api",
		Kind: metav1.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "Gateway"}, Object: runtime.RawExtension{Raw: second}}}
	warn := g.validate(ctx, req, &WebhookOptions{})
	if !warn.Allowed || len(warn.Warnings) != 1 || !strings.Contains(warn.Warnings[0], "Gateway shop/api") {
		t.Errorf("webhook on an at-risk Gateway: allowed %v, warnings %v; want admitted with a warning naming it", warn.Allowed, warn.Warnings)
	}
	if deny := g.validate(ctx, req, &WebhookOptions{DenyAtRisk: true}); deny.Allowed {
		t.Errorf("webhook with DenyAtRisk admitted an at-risk Gateway: %v", deny.Warnings)
	}
	// Envoy Gateway copies the annotation to its Service: the Gateway is re-judged safe.
	patch := []byte(`{"metadata":{"annotations":{"` + prevent + `":"true"}}}`)
	if _, err := cs.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "envoy-gateway"}); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the Gateway judged safe once its Service carries the remedy", func() bool {
		_, verdict = gwAnnotation()
		return strings.HasPrefix(verdict, ReasonNoLoop+":")
	}, func() string { return verdict })
}

func until(t *testing.T, ctx context.Context, what string, cond func() bool, last func() string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s: not after %v (last: %s)", what, wait, last())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
