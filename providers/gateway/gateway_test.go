package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/gateway"
	"github.com/loopguard/loopguard/providers/kubernetes"
	"github.com/loopguard/loopguard/providers/tencent"
)

func TestOwnerOf(t *testing.T) {
	gwRef := func(name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway", Name: name, UID: "u"}}
	}
	cases := map[string]struct {
		reason      string
		labels      map[string]string
		annotations map[string]string
		owners      []metav1.OwnerReference
		want        gateway.Owner
		ok          bool
	}{
		"EnvoyGateway": {reason: "Envoy Gateway names the Gateway's namespace too: its Service is in its own namespace",
			labels: map[string]string{"gateway.envoyproxy.io/owning-gateway-name": "web", "gateway.envoyproxy.io/owning-gateway-namespace": "shop"},
			want:   gateway.Owner{Namespace: "shop", Name: "web", Implementation: gateway.EnvoyGateway}, ok: true},
		"EnvoyGatewayNameOnly": {reason: "without the namespace label the Gateway is not known",
			labels: map[string]string{"gateway.envoyproxy.io/owning-gateway-name": "web"}},
		"Cilium": {reason: "Cilium's label, Service beside the Gateway",
			labels: map[string]string{"io.cilium.gateway/owning-gateway": "web"},
			want:   gateway.Owner{Namespace: "edge", Name: "web", Implementation: gateway.Cilium}, ok: true},
		"Contour": {reason: "Contour's provisioner label",
			labels: map[string]string{"projectcontour.io/owning-gateway-name": "web", "gateway.networking.k8s.io/gateway-name": "web"},
			want:   gateway.Owner{Namespace: "edge", Name: "web", Implementation: gateway.Contour}, ok: true},
		"Istio": {reason: "ownerReference plus Istio's own label",
			labels: map[string]string{"gateway.networking.k8s.io/gateway-name": "web", "istio.io/gateway-name": "web"}, owners: gwRef("web"),
			want: gateway.Owner{Namespace: "edge", Name: "web", Implementation: gateway.Istio}, ok: true},
		"KGateway": {reason: "kgateway: an ownerReference to the Gateway and its chart's constant label kgateway: kube-gateway",
			labels: map[string]string{"gateway.networking.k8s.io/gateway-name": "web", "kgateway": "kube-gateway"}, owners: gwRef("web"),
			want: gateway.Owner{Namespace: "edge", Name: "web", Implementation: gateway.KGateway}, ok: true},
		"KGatewayLabelsOnly": {reason: "kgateway's labels without the ownerReference",
			labels: map[string]string{"gateway.networking.k8s.io/gateway-name": "web", "kgateway": "kube-gateway"},
			want:   gateway.Owner{Namespace: "edge", Name: "web", Implementation: gateway.KGateway}, ok: true},
		"OwnerReference": {reason: "NGINX Gateway Fabric: an ownerReference to the Gateway",
			owners: gwRef("web"), want: gateway.Owner{Namespace: "edge", Name: "web"}, ok: true},
		"StandardLabel": {reason: "GEP-1762's label alone",
			labels: map[string]string{"gateway.networking.k8s.io/gateway-name": "web"},
			want:   gateway.Owner{Namespace: "edge", Name: "web"}, ok: true},
		"NGINXGatewayFabricLongName": {reason: "NGINX Gateway Fabric's annotation for a name too long for a label",
			annotations: map[string]string{"gateway.networking.k8s.io/gateway-name": "web"},
			want:        gateway.Owner{Namespace: "edge", Name: "web"}, ok: true},
		"OtherOwner": {reason: "an ownerReference to something else is not a Gateway's",
			owners: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}},
		"Plain": {reason: "a Service nobody generated"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "svc", Labels: tc.labels, Annotations: tc.annotations, OwnerReferences: tc.owners}}
			got, ok := gateway.OwnerOf(svc)
			if ok != tc.ok {
				t.Fatalf("%s: ok = %v, want %v", tc.reason, ok, tc.ok)
			}
			got.By = ""
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func evaluate(t *testing.T, d core.Dialect, obj runtime.Object, c *core.Cluster, p core.Policy) *core.Result {
	t.Helper()
	res, err := core.Evaluate(d, obj, c, p)
	if err != nil {
		t.Fatalf("evaluate: %v", err)
	}
	return res
}

// TestGatewayVerdictIsItsService: the Gateway's verdict is the one the cloud's dialect gives
// the Service its implementation generated, reported for the Gateway, and the Service itself
// is not reported a second time.
func TestGatewayVerdictIsItsService(t *testing.T) {
	profile, objs := readExample(t)
	c, err := core.NewCluster(profile, objs...)
	if err != nil {
		t.Fatal(err)
	}
	plain := tencent.NewDialect(nil)
	d := gateway.NewDialect(plain, nil)
	gw := find(t, objs, "Gateway", "shop", "web")
	svc := find(t, objs, "Service", "envoy-gateway-system", "envoy-shop-web-97375646")

	got := evaluate(t, d, gw, c, profile.Policy)
	want := evaluate(t, plain, svc, c, profile.Policy)
	if got.Exposure.Object != (core.ObjectRef{Kind: "Gateway", Namespace: "shop", Name: "web"}) {
		t.Errorf("object = %v, want Gateway shop/web", got.Exposure.Object)
	}
	if got.Assessment.Risk != want.Assessment.Risk || got.Assessment.Symptom != want.Assessment.Symptom ||
		got.Assessment.WorstCase != want.Assessment.WorstCase || got.Decision.Remedy != want.Decision.Remedy {
		t.Errorf("Gateway verdict %s/%s/%v/%s, its Service's %s/%s/%v/%s", got.Assessment.Risk, got.Assessment.Symptom, got.Assessment.WorstCase, got.Decision.Remedy,
			want.Assessment.Risk, want.Assessment.Symptom, want.Assessment.WorstCase, want.Decision.Remedy)
	}
	if got.Assessment.Risk != core.RiskAtRisk {
		t.Errorf("risk = %s, want at-risk (a private CLB, an Envoy proxy on a client's node)", got.Assessment.Risk)
	}
	if r := got.Exposure.Reasons[0]; r.Code != gateway.CodeGeneratedService || !strings.Contains(r.Message, "envoy-shop-web-97375646") {
		t.Errorf("first reason = %+v, want %s naming the generated Service", r, gateway.CodeGeneratedService)
	}
	if n := got.Exposure.Notes[0]; n.Code != gateway.CodeListeners || !strings.Contains(n.Message, "https 443/HTTPS shop.example.com") {
		t.Errorf("first note = %+v, want the listeners", n)
	}
	_, err = d.Translate(svc, c)
	if !errors.Is(err, core.ErrNotExposed) || !strings.Contains(err.Error(), "shop/web") {
		t.Errorf("the generated Service: err = %v, want not exposed, naming its Gateway", err)
	}
}

// TestProxyProtocolFromImplementation: Envoy Gateway's ClientTrafficPolicy makes the proxy
// require the PROXY header, so intercepting the VIP (which would skip the CLB that could
// send it) must not be chosen.
func TestProxyProtocolFromImplementation(t *testing.T) {
	profile, objs := readExample(t)
	c, err := core.NewCluster(profile, objs...)
	if err != nil {
		t.Fatal(err)
	}
	d := gateway.NewDialect(tencent.NewDialect(nil), nil)
	res := evaluate(t, d, find(t, objs, "Gateway", "shop", "api"), c, profile.Policy)
	if res.Exposure.Needs.ProxyHeader != core.Yes {
		t.Fatalf("Needs.ProxyHeader = %v, want Yes", res.Exposure.Needs.ProxyHeader)
	}
	if res.Decision.Remedy == core.InterceptVIP {
		t.Errorf("decision intercept-vip for a proxy that requires the PROXY header")
	}
	if !hasCode(res.Exposure.Reasons, gateway.CodeProxyProtocol) || !hasCode(res.Exposure.Reasons, gateway.CodeAssumedService) {
		t.Errorf("reasons %v lack %s and %s", codes(res.Exposure.Reasons), gateway.CodeProxyProtocol, gateway.CodeAssumedService)
	}
}

// TestProxyProtocolPerImplementation: each implementation's own setting, read where it puts it.
func TestProxyProtocolPerImplementation(t *testing.T) {
	const private = `loopguard.io/lb-scope: private`
	cases := map[string]struct {
		objs string
		want core.Fact
		note bool
	}{
		"EnvoyGatewayDeprecatedField": {want: core.Yes, objs: class("gateway.envoyproxy.io/gatewayclass-controller", "") + gw("", "") + `
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: p, namespace: edge}
spec:
  targetRef: {group: gateway.networking.k8s.io, kind: Gateway, name: web}
  enableProxyProtocol: true`},
		"EnvoyGatewayOptional": {want: core.Unknown, note: true, objs: class("gateway.envoyproxy.io/gatewayclass-controller", "") + gw("", "") + `
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: p, namespace: edge}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web}]
  proxyProtocol: {optional: true}`},
		"EnvoyGatewayOtherGateway": {want: core.Unknown, objs: class("gateway.envoyproxy.io/gatewayclass-controller", "") + gw("", "") + `
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: p, namespace: edge}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: other}]
  proxyProtocol: {}`},
		"EnvoyGatewayTargetSelector": {want: core.Yes, objs: class("gateway.envoyproxy.io/gatewayclass-controller", "") +
			strings.Replace(gw("", ""), "  namespace: edge\n", "  namespace: edge\n  labels: {tier: edge}\n", 1) + `
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: p, namespace: edge}
spec:
  targetSelectors: [{kind: Gateway, matchExpressions: [{key: tier, operator: In, values: [edge, internal]}]}]
  proxyProtocol: {}`},
		"EnvoyGatewayTargetSelectorOther": {want: core.Unknown, objs: class("gateway.envoyproxy.io/gatewayclass-controller", "") +
			strings.Replace(gw("", ""), "  namespace: edge\n", "  namespace: edge\n  labels: {tier: edge}\n", 1) + `
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: p, namespace: edge}
spec:
  targetSelectors: [{kind: Gateway, matchLabels: {tier: internal}}]
  proxyProtocol: {}`},
		"NGINXGatewayFabricClassParameters": {want: core.Yes, objs: class("gateway.nginx.org/nginx-gateway-controller", "{group: gateway.nginx.org, kind: NginxProxy, name: np, namespace: nginx-gateway}") + gw("", "") + `
---
apiVersion: gateway.nginx.org/v1alpha2
kind: NginxProxy
metadata: {name: np, namespace: nginx-gateway}
spec:
  rewriteClientIP: {mode: ProxyProtocol, trustedAddresses: [{type: CIDR, value: 10.0.0.0/8}]}`},
		"NGINXGatewayFabricXForwardedFor": {want: core.Unknown, objs: class("gateway.nginx.org/nginx-gateway-controller", "") +
			gw("", "parametersRef: {group: gateway.nginx.org, kind: NginxProxy, name: np}") + `
---
apiVersion: gateway.nginx.org/v1alpha2
kind: NginxProxy
metadata: {name: np, namespace: edge}
spec:
  rewriteClientIP: {mode: XForwardedFor}`},
		"Istio": {want: core.Yes, objs: class("istio.io/gateway-controller", "") +
			gw(`proxy.istio.io/config: '{"gatewayTopology":{"proxyProtocol":{}}}'`, "")},
		"DeclaredOnTheGateway": {want: core.Yes, objs: class("projectcontour.io/gateway-controller", "") +
			gw(`loopguard.io/backend-expects: proxy-protocol`, "")},
		"Cilium": {want: core.Yes, objs: class("io.cilium/gateway-controller", "") + gw("", "") + `
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cilium-config, namespace: kube-system}
data: {enable-gateway-api-proxy-protocol: "true"}`},
		"CiliumOff": {want: core.Unknown, objs: class("io.cilium/gateway-controller", "") + gw("", "") + `
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cilium-config, namespace: kube-system}
data: {enable-gateway-api-proxy-protocol: "false"}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := decode(t, strings.ReplaceAll(tc.objs, "ANNOTATIONS", private))
			c, err := core.NewCluster(core.ClusterProfile{}, objs...)
			if err != nil {
				t.Fatal(err)
			}
			d := gateway.NewDialect(kubernetes.NewDialect(nil), nil)
			res := evaluate(t, d, find(t, objs, "Gateway", "edge", "web"), c, core.Policy{})
			if res.Exposure.Needs.ProxyHeader != tc.want {
				t.Errorf("Needs.ProxyHeader = %v, want %v; reasons %v", res.Exposure.Needs.ProxyHeader, tc.want, codes(res.Exposure.Reasons))
			}
			if got := hasCode(res.Exposure.Notes, gateway.CodeProxyOptional); got != tc.note {
				t.Errorf("note %s present = %v, want %v", gateway.CodeProxyOptional, got, tc.note)
			}
		})
	}
}

func class(controller, params string) string {
	s := `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: c}
spec:
  controllerName: ` + controller
	if params != "" {
		s += "\n  parametersRef: " + params
	}
	return s
}

func gw(annotation, infra string) string {
	s := `
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: web
  namespace: edge
  annotations:
    ANNOTATIONS`
	if annotation != "" {
		s += "\n    " + annotation
	}
	s += `
spec:
  gatewayClassName: c
  listeners: [{name: http, port: 80, protocol: HTTP}]`
	if infra != "" {
		s += "\n  infrastructure:\n    " + infra
	}
	return s
}

func hasCode(rs []core.Reason, code core.Code) bool {
	for _, r := range rs {
		if r.Code == code {
			return true
		}
	}
	return false
}

func codes(rs []core.Reason) []core.Code {
	out := make([]core.Code, len(rs))
	for i, r := range rs {
		out[i] = r.Code
	}
	return out
}

// TestPlanGoesThroughTheGateway: the Tencent driver's annotation for the generated Service is
// planned on the Gateway's spec.infrastructure.annotations, never on the Service, with a check
// that waits until the implementation carried it to the Service.
func TestPlanGoesThroughTheGateway(t *testing.T) {
	profile, objs := readExample(t)
	c, err := core.NewCluster(profile, objs...)
	if err != nil {
		t.Fatal(err)
	}
	rec := tencentReconciler(t, profile.Policy)
	p, err := rec.Plan(context.Background(), find(t, objs, "Gateway", "shop", "web"), c)
	if err != nil {
		t.Fatal(err)
	}
	const key = "service.cloud.tencent.com/prevent-loopback"
	if len(p.Changes) != 1 {
		t.Fatalf("changes: %v, want 1", p.Changes)
	}
	ch := p.Changes[0]
	wantKey := core.ObjectKey{APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway", Namespace: "shop", Name: "web"}
	if ch.By != core.WriterCluster || *ch.Object != wantKey || ch.Strategy != core.StrategyApply {
		t.Errorf("change %s, want a server-side apply on %s", ch.String(), wantKey)
	}
	wantPath := []core.PathElem{{Field: "spec"}, {Field: "infrastructure"}, {Field: "annotations"}, {Field: key}}
	if len(ch.Edits) != 1 || !cmp.Equal(ch.Edits[0].Path, wantPath) || ch.Edits[0].Value != "true" {
		t.Errorf("edits %v, want %v = true", ch.Edits, wantPath)
	}
	if ch.Reason.Code != gateway.CodeInfrastructure {
		t.Errorf("reason %s, want %s", ch.Reason.Code, gateway.CodeInfrastructure)
	}
	found := false
	for _, chk := range p.Checks {
		if chk.Object.Kind == "Service" && chk.Object.Name == "envoy-shop-web-97375646" && chk.Edit.Value == "true" {
			found = true
		}
	}
	if !found {
		t.Errorf("no check that Envoy Gateway carried the annotation to the Service: %v", p.Checks)
	}
	if p.Object.Kind != "Gateway" {
		t.Errorf("plan object %v, want the Gateway", p.Object)
	}
}

// TestPlanGoesToEnvoyProxy: an EnvoyProxy whose envoyService sets the same annotation wins over
// the Gateway's (Envoy Gateway copies it last), so the change goes there.
func TestPlanGoesToEnvoyProxy(t *testing.T) {
	profile, objs := readExample(t)
	objs = append(objs, decode(t, `apiVersion: gateway.envoyproxy.io/v1alpha1
kind: EnvoyProxy
metadata: {name: proxy-config, namespace: shop}
spec:
  provider:
    type: Kubernetes
    kubernetes:
      envoyService:
        annotations:
          service.cloud.tencent.com/prevent-loopback: "false"`)...)
	for i, o := range objs {
		if u, ok := o.(interface{ GetName() string }); ok && u.GetName() == "web" {
			m, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
			spec := m["spec"].(map[string]any)
			spec["infrastructure"].(map[string]any)["parametersRef"] = map[string]any{"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy", "name": "proxy-config"}
			objs[i] = decode(t, toYAML(t, m))[0]
		}
	}
	c, err := core.NewCluster(profile, objs...)
	if err != nil {
		t.Fatal(err)
	}
	rec := tencentReconciler(t, profile.Policy)
	p, err := rec.Plan(context.Background(), find(t, objs, "Gateway", "shop", "web"), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 1 || p.Changes[0].Object.Kind != "EnvoyProxy" || p.Changes[0].Object.Name != "proxy-config" {
		t.Fatalf("changes %v, want one on EnvoyProxy shop/proxy-config", p.Changes)
	}
	if got := p.Changes[0].Edits[0].String(); got != "spec.provider.kubernetes.envoyService.annotations.service.cloud.tencent.com/prevent-loopback" {
		t.Errorf("edit %s", got)
	}
}

// TestInvalidGateway: a Gateway the API server would refuse is an error naming the field.
func TestInvalidGateway(t *testing.T) {
	objs := decode(t, `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: edge}
spec:
  gatewayClassName: c
  listeners: [{name: http, port: 80, protocol: HTTP, prot: 1}]`)
	c, _ := core.NewCluster(core.ClusterProfile{})
	_, err := gateway.NewDialect(kubernetes.NewDialect(nil), nil).Translate(objs[0], c)
	var inv *core.InvalidError
	if !errors.As(err, &inv) || !strings.Contains(err.Error(), "prot") {
		t.Fatalf("err = %v, want an InvalidError naming the unknown field", err)
	}
}

// TestGeneratedServiceAloneIsFixedThroughItsGateway: a generated Service whose Gateway is not
// among the inputs is judged as a Service, but its plan still goes to the Gateway its labels
// name, never to the Service.
func TestGeneratedServiceAloneIsFixedThroughItsGateway(t *testing.T) {
	profile, objs := readExample(t)
	var kept []runtime.Object
	for _, o := range objs {
		if !gateway.IsGateway(o) {
			kept = append(kept, o)
		}
	}
	c, err := core.NewCluster(profile, kept...)
	if err != nil {
		t.Fatal(err)
	}
	rec := tencentReconciler(t, profile.Policy)
	p, err := rec.Plan(context.Background(), find(t, kept, "Service", "envoy-gateway-system", "envoy-shop-web-97375646"), c)
	if err != nil {
		t.Fatal(err)
	}
	if p.Object.Kind != "Service" {
		t.Errorf("plan object %v, want the Service (its Gateway is not among the inputs)", p.Object)
	}
	if len(p.Changes) != 1 || p.Changes[0].Object.Kind != "Gateway" || p.Changes[0].Object.Namespace != "shop" || p.Changes[0].Object.Name != "web" {
		t.Fatalf("changes %v, want one on Gateway shop/web", p.Changes)
	}
}

// TestRemovalGoesThroughTheGateway: taking back what loopguard set for a Gateway (Terraform's
// destroy, an SDK's uninstall) removes it where it was written, the Gateway's
// spec.infrastructure, never from the Service the implementation generated.
func TestRemovalGoesThroughTheGateway(t *testing.T) {
	profile, objs := readExample(t)
	const key = "service.cloud.tencent.com/prevent-loopback"
	for i, o := range objs {
		if svc, ok := o.(*corev1.Service); ok && svc.Name == "envoy-shop-web-97375646" {
			copied := svc.DeepCopy()
			copied.Annotations[key] = "true" // Envoy Gateway carried loopguard's value over
			objs[i] = copied
		}
	}
	c, err := core.NewCluster(profile, objs...)
	if err != nil {
		t.Fatal(err)
	}
	rec := tencentReconciler(t, profile.Policy)
	p, err := rec.PlanRemoval(context.Background(), find(t, objs, "Gateway", "shop", "web"), c)
	if err != nil {
		t.Fatal(err)
	}
	if p.Object != (core.ObjectRef{Kind: "Gateway", Namespace: "shop", Name: "web"}) {
		t.Errorf("removal plan object %v, want the Gateway", p.Object)
	}
	if len(p.Changes) != 1 {
		t.Fatalf("changes %v, want one", p.Changes)
	}
	ch := p.Changes[0]
	if ch.Object.Kind != "Gateway" || len(ch.Edits) != 1 || !ch.Edits[0].Remove ||
		ch.Edits[0].String() != "spec.infrastructure.annotations."+key {
		t.Errorf("change %s, want the removal of spec.infrastructure.annotations[%s] from the Gateway", ch.String(), key)
	}
}

// TestProxyProtocolNotExpected: the other direction. Where one object holds the
// implementation's whole PROXY setting (Contour's ContourDeployment, NGINX Gateway Fabric's
// NginxProxy, Cilium's cilium-config) and the load balancer sends the header while that setting
// is off, the report says connections through the LB break; where the object is not among the
// inputs, or the implementation expects the header, it says nothing of the sort.
func TestProxyProtocolNotExpected(t *testing.T) {
	const lbSends = `annotations: {load-balancer.hetzner.cloud/uses-proxyprotocol: "true"}`
	cases := map[string]struct {
		objs string
		want bool
	}{
		"ContourDefaults":            {want: true, objs: class("projectcontour.io/gateway-controller", "") + gw("", lbSends)},
		"ContourDeploymentOff":       {want: true, objs: class("projectcontour.io/gateway-controller", "{group: projectcontour.io, kind: ContourDeployment, name: cd, namespace: projectcontour}") + gw("", lbSends) + "\n---\napiVersion: projectcontour.io/v1alpha1\nkind: ContourDeployment\nmetadata: {name: cd, namespace: projectcontour}\nspec: {}"},
		"ContourDeploymentOn":        {want: false, objs: class("projectcontour.io/gateway-controller", "{group: projectcontour.io, kind: ContourDeployment, name: cd, namespace: projectcontour}") + gw("", lbSends) + "\n---\napiVersion: projectcontour.io/v1alpha1\nkind: ContourDeployment\nmetadata: {name: cd, namespace: projectcontour}\nspec: {runtimeSettings: {envoy: {listener: {useProxyProtocol: true}}}}"},
		"ContourDeploymentAbsent":    {want: false, objs: class("projectcontour.io/gateway-controller", "{group: projectcontour.io, kind: ContourDeployment, name: cd, namespace: projectcontour}") + gw("", lbSends)},
		"ContourLBSendsNone":         {want: false, objs: class("projectcontour.io/gateway-controller", "") + gw("", "")},
		"NGINXGatewayFabricDefaults": {want: true, objs: class("gateway.nginx.org/nginx-gateway-controller", "") + gw("", lbSends)},
		"CiliumConfigOff":            {want: true, objs: class("io.cilium/gateway-controller", "") + gw("", lbSends) + "\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cilium-config, namespace: kube-system}\ndata: {enable-gateway-api-proxy-protocol: \"false\"}"},
		"CiliumConfigAbsent":         {want: false, objs: class("io.cilium/gateway-controller", "") + gw("", lbSends)},
		"EnvoyGatewayUnknown":        {want: false, objs: class("gateway.envoyproxy.io/gatewayclass-controller", "") + gw("", lbSends)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := decode(t, strings.ReplaceAll(tc.objs, "ANNOTATIONS", `loopguard.io/lb-scope: private`))
			c, err := core.NewCluster(core.ClusterProfile{}, objs...)
			if err != nil {
				t.Fatal(err)
			}
			d := gateway.NewDialect(kubernetes.NewDialect(nil), nil)
			res := evaluate(t, d, find(t, objs, "Gateway", "edge", "web"), c, core.Policy{})
			if got := hasCode(res.Exposure.Notes, gateway.CodeProxyNotExpected); got != tc.want {
				t.Errorf("note %s = %v, want %v; notes %v, LB PROXY %v", gateway.CodeProxyNotExpected, got, tc.want, codes(res.Exposure.Notes), res.Exposure.ProxyProtocol)
			}
		})
	}
}

// twoListeners is a Gateway with an HTTP listener on 80 and an HTTPS one on 443.
func twoListeners(annotation string) string {
	return strings.Replace(gw(annotation, ""), "listeners: [{name: http, port: 80, protocol: HTTP}]",
		"listeners: [{name: http, port: 80, protocol: HTTP}, {name: https, port: 443, protocol: HTTPS}]", 1)
}

// TestClientTrafficPolicySectionName: a ClientTrafficPolicy whose targetRef names a listener
// (sectionName) configures that listener only, and one naming the listener wins over one for
// the whole Gateway there (Envoy Gateway internal/gatewayapi/clienttrafficpolicy.go); the
// report names the listeners.
func TestClientTrafficPolicySectionName(t *testing.T) {
	const egClass = "gateway.envoyproxy.io/gatewayclass-controller"
	cases := map[string]struct {
		policies string
		want     core.Fact
		names    []string // in the reason's message
		absent   []string
	}{
		"OneListener": {want: core.Yes, names: []string{"https (port 443)"}, absent: []string{"http (port 80)"}, policies: `
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: tls-only, namespace: edge}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web, sectionName: https}]
  proxyProtocol: {}`},
		"ListenerOverridesGateway": {want: core.Yes, names: []string{"ClientTrafficPolicy edge/all", "http (port 80)"}, absent: []string{"https (port 443)", "edge/plain"}, policies: `
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: all, namespace: edge}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web}]
  proxyProtocol: {}
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: plain, namespace: edge}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web, sectionName: https}]
  timeout: {http: {requestReceivedTimeout: 5s}}`},
		"OtherListenerName": {want: core.Unknown, policies: `
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: p, namespace: edge}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web, sectionName: grpc}]
  proxyProtocol: {}`},
		"FirstWholeGatewayPolicyWins": {want: core.Unknown, policies: `
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: a, namespace: edge}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web}]
  timeout: {http: {requestReceivedTimeout: 5s}}
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: b, namespace: edge}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web}]
  proxyProtocol: {}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := decode(t, strings.ReplaceAll(class(egClass, "")+twoListeners("")+tc.policies, "ANNOTATIONS", `loopguard.io/lb-scope: private`))
			c, err := core.NewCluster(core.ClusterProfile{}, objs...)
			if err != nil {
				t.Fatal(err)
			}
			res := evaluate(t, gateway.NewDialect(kubernetes.NewDialect(nil), nil), find(t, objs, "Gateway", "edge", "web"), c, core.Policy{})
			if res.Exposure.Needs.ProxyHeader != tc.want {
				t.Fatalf("Needs.ProxyHeader = %v, want %v; reasons %v", res.Exposure.Needs.ProxyHeader, tc.want, res.Exposure.Reasons)
			}
			msg := ""
			for _, r := range res.Exposure.Reasons {
				if r.Code == gateway.CodeProxyProtocol {
					msg = r.Message
				}
			}
			for _, s := range tc.names {
				if !strings.Contains(msg, s) {
					t.Errorf("reason %q does not name %q", msg, s)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(msg, s) {
					t.Errorf("reason %q names %q, which the policy does not configure", msg, s)
				}
			}
		})
	}
}

// TestClientAddressPerImplementation: an implementation told where the client address is
// makes the Gateway's backends need it (Needs.ClientAddress), so LB source NAT, which would
// show every in-cluster client as the LB, ranks below the remedies that keep the address.
func TestClientAddressPerImplementation(t *testing.T) {
	const egClass = "gateway.envoyproxy.io/gatewayclass-controller"
	policy := func(spec string) string {
		return `
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: p, namespace: edge}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web}]
  ` + spec
	}
	cases := map[string]struct {
		objs   string
		want   core.Fact
		header bool // the failClosed note
	}{
		"EnvoyGatewayXForwardedFor": {want: core.Yes, objs: class(egClass, "") + gw("", "") + policy(`clientIPDetection: {xForwardedFor: {numTrustedHops: 1}}`)},
		"EnvoyGatewayCustomHeaderFailClosed": {want: core.Yes, header: true,
			objs: class(egClass, "") + gw("", "") + policy(`clientIPDetection: {customHeader: {name: X-Real-IP, failClosed: true}}`)},
		"EnvoyGatewayCustomHeader":   {want: core.Yes, objs: class(egClass, "") + gw("", "") + policy(`clientIPDetection: {customHeader: {name: X-Real-IP}}`)},
		"EnvoyGatewayDirectSourceIP": {want: core.Yes, objs: class(egClass, "") + gw("", "") + policy(`clientIPDetection: {directSourceIP: {}}`)},
		"EnvoyGatewayNoDetection":    {want: core.Unknown, objs: class(egClass, "") + gw("", "") + policy(`timeout: {http: {requestReceivedTimeout: 5s}}`)},
		"EnvoyGatewayOtherListener": {want: core.Unknown, objs: class(egClass, "") + gw("", "") + strings.Replace(policy(`clientIPDetection: {xForwardedFor: {numTrustedHops: 1}}`),
			"name: web}", "name: web, sectionName: https}", 1)},
		"NGINXGatewayFabricXForwardedFor": {want: core.Yes, objs: class("gateway.nginx.org/nginx-gateway-controller", "") +
			gw("", "parametersRef: {group: gateway.nginx.org, kind: NginxProxy, name: np}") + `
---
apiVersion: gateway.nginx.org/v1alpha2
kind: NginxProxy
metadata: {name: np, namespace: edge}
spec:
  rewriteClientIP: {mode: XForwardedFor, trustedAddresses: [{type: CIDR, value: 10.0.0.0/8}]}`},
		"NGINXGatewayFabricNoTrustedAddresses": {want: core.Unknown, objs: class("gateway.nginx.org/nginx-gateway-controller", "") +
			gw("", "parametersRef: {group: gateway.nginx.org, kind: NginxProxy, name: np}") + `
---
apiVersion: gateway.nginx.org/v1alpha2
kind: NginxProxy
metadata: {name: np, namespace: edge}
spec:
  rewriteClientIP: {mode: XForwardedFor}`},
		"KGatewayXffNumTrustedHops": {want: core.Yes, objs: class("kgateway.dev/kgateway", "") + gw("", "") + `
---
apiVersion: gateway.kgateway.dev/v1alpha1
kind: ListenerPolicy
metadata: {name: lp, namespace: edge}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web}]
  perPort: [{port: 80, listener: {httpSettings: {xffNumTrustedHops: 1}}}]`},
		"KGatewayPerPortReplacesDefault": {want: core.Unknown, objs: class("kgateway.dev/kgateway", "") + gw("", "") + `
---
apiVersion: gateway.kgateway.dev/v1alpha1
kind: ListenerPolicy
metadata: {name: lp, namespace: edge}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web}]
  default: {httpSettings: {xffNumTrustedHops: 1}}
  perPort: [{port: 80, listener: {perConnectionBufferLimitBytes: 32768}}]`},
		"KGatewayOtherGateway": {want: core.Unknown, objs: class("kgateway.dev/kgateway", "") + gw("", "") + `
---
apiVersion: gateway.kgateway.dev/v1alpha1
kind: ListenerPolicy
metadata: {name: lp, namespace: edge}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: other}]
  default: {httpSettings: {xffNumTrustedHops: 1}}`},
		"IstioNumTrustedProxies": {want: core.Yes, objs: class("istio.io/gateway-controller", "") +
			gw(`proxy.istio.io/config: '{"gatewayTopology":{"numTrustedProxies":2}}'`, "")},
		"IstioZeroTrustedProxies": {want: core.Unknown, objs: class("istio.io/gateway-controller", "") +
			gw(`proxy.istio.io/config: '{"gatewayTopology":{"numTrustedProxies":0}}'`, "")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := decode(t, strings.ReplaceAll(tc.objs, "ANNOTATIONS", `loopguard.io/lb-scope: private`))
			c, err := core.NewCluster(core.ClusterProfile{}, objs...)
			if err != nil {
				t.Fatal(err)
			}
			res := evaluate(t, gateway.NewDialect(kubernetes.NewDialect(nil), nil), find(t, objs, "Gateway", "edge", "web"), c, core.Policy{})
			if res.Exposure.Needs.ClientAddress != tc.want || res.Assessment.NeedsClientAddress != tc.want {
				t.Errorf("Needs.ClientAddress = %v (assessment %v), want %v; reasons %v", res.Exposure.Needs.ClientAddress, res.Assessment.NeedsClientAddress, tc.want, res.Exposure.Reasons)
			}
			if got := hasCode(res.Exposure.Reasons, gateway.CodeClientAddress); got != (tc.want == core.Yes) {
				t.Errorf("reason %s present = %v, want %v", gateway.CodeClientAddress, got, tc.want == core.Yes)
			}
			if got := hasCode(res.Exposure.Notes, gateway.CodeClientHeader); got != tc.header {
				t.Errorf("note %s present = %v, want %v", gateway.CodeClientHeader, got, tc.header)
			}
		})
	}
}

// TestClientAddressRanksTheDecision: on the example's shop/web, Envoy Gateway told to read the
// client address from X-Forwarded-For makes the decision say that LB source NAT (which would
// show in-cluster clients as the CLB) ranks below because it loses the address.
func TestClientAddressRanksTheDecision(t *testing.T) {
	profile, objs := readExample(t)
	snatRejection := func(objs []runtime.Object) (core.Decision, core.Code) {
		c, err := core.NewCluster(profile, objs...)
		if err != nil {
			t.Fatal(err)
		}
		res := evaluate(t, gateway.NewDialect(tencent.NewDialect(nil), nil), find(t, objs, "Gateway", "shop", "web"), c, profile.Policy)
		for _, r := range res.Decision.Rejected {
			if r.Remedy == core.LBSourceNAT {
				return res.Decision, r.Reason.Code
			}
		}
		t.Fatalf("no lb-snat among the rejections of %s: %+v", res.Decision.Remedy, res.Decision.Rejected)
		return res.Decision, ""
	}
	before, code := snatRejection(objs)
	if code != core.CodeDecideRanked {
		t.Fatalf("without a client-IP setting lb-snat is rejected with %s, want %s", code, core.CodeDecideRanked)
	}
	with := append(objs, decode(t, `
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: web-client-ip, namespace: shop}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web}]
  clientIPDetection: {xForwardedFor: {numTrustedHops: 1}}`)...)
	after, code := snatRejection(with)
	if code != core.CodeDecideClientAddress {
		t.Errorf("with clientIPDetection lb-snat is rejected with %s, want %s", code, core.CodeDecideClientAddress)
	}
	if after.Remedy != before.Remedy || after.Costs == nil || after.Costs.ClientIP != core.ClientIPKept || !strings.Contains(after.Why, "client address") {
		t.Errorf("decision %s (costs %+v, why %q), want %s keeping the client address and saying why", after.Remedy, after.Costs, after.Why, before.Remedy)
	}
}

// mergedExample is examples/gateway with Envoy Gateway's mergeGateways on: the class's
// EnvoyProxy sets it, and the generated Service carries the class's label instead of the
// Gateway's (internal/gatewayapi/translator.go buildIR, v1.9.0). withService false leaves the
// Service out.
func mergedExample(t *testing.T, withService bool) (core.ClusterProfile, []runtime.Object) {
	t.Helper()
	profile, objs := readExample(t)
	var out []runtime.Object
	for _, o := range objs {
		if svc, ok := o.(*corev1.Service); ok && svc.Name == "envoy-shop-web-97375646" {
			if !withService {
				continue
			}
			svc = svc.DeepCopy()
			delete(svc.Labels, "gateway.envoyproxy.io/owning-gateway-name")
			delete(svc.Labels, "gateway.envoyproxy.io/owning-gateway-namespace")
			svc.Labels["gateway.envoyproxy.io/owning-gatewayclass"] = "eg"
			o = svc
		}
		if u, ok := o.(interface{ GetName() string }); ok && u.GetName() == "eg" {
			continue
		}
		out = append(out, o)
	}
	out = append(out, decode(t, `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: eg}
spec:
  controllerName: gateway.envoyproxy.io/gatewayclass-controller
  parametersRef: {group: gateway.envoyproxy.io, kind: EnvoyProxy, name: merged, namespace: envoy-gateway-system}
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: EnvoyProxy
metadata: {name: merged, namespace: envoy-gateway-system}
spec:
  mergeGateways: true`)...)
	return profile, out
}

// TestMergedGateways: with mergeGateways one Service labelled with the GatewayClass serves
// every Gateway of the class. It is attributed to them (not judged as an anonymous Service),
// each Gateway's verdict is that Service's, and the fix goes on the class's EnvoyProxy: Envoy
// Gateway takes the merged Service's metadata from one Gateway only, so a Gateway's
// spec.infrastructure would not hold.
func TestMergedGateways(t *testing.T) {
	profile, objs := mergedExample(t, true)
	c, err := core.NewCluster(profile, objs...)
	if err != nil {
		t.Fatal(err)
	}
	plain := tencent.NewDialect(nil)
	d := gateway.NewDialect(plain, nil)
	svc := find(t, objs, "Service", "envoy-gateway-system", "envoy-shop-web-97375646")
	for _, name := range []string{"web", "api"} {
		got := evaluate(t, d, find(t, objs, "Gateway", "shop", name), c, profile.Policy)
		if r := got.Exposure.Reasons[0]; r.Code != gateway.CodeGeneratedService || !strings.Contains(r.Message, "owning-gatewayclass") {
			t.Errorf("shop/%s: first reason %+v, want %s naming the class label", name, r, gateway.CodeGeneratedService)
		}
		if !hasCode(got.Exposure.Notes, gateway.CodeMergedGateways) {
			t.Errorf("shop/%s: notes %v lack %s", name, codes(got.Exposure.Notes), gateway.CodeMergedGateways)
		}
		if hasCode(got.Exposure.Reasons, gateway.CodeAssumedService) {
			t.Errorf("shop/%s judged from its spec although the merged Service is among the inputs", name)
		}
	}
	web := evaluate(t, d, find(t, objs, "Gateway", "shop", "web"), c, profile.Policy)
	alone := evaluate(t, plain, svc, c, profile.Policy)
	if web.Assessment.Risk != alone.Assessment.Risk || web.Assessment.WorstCase != alone.Assessment.WorstCase || web.Decision.Remedy != alone.Decision.Remedy {
		t.Errorf("Gateway verdict %s/%v/%s, the merged Service's %s/%v/%s", web.Assessment.Risk, web.Assessment.WorstCase, web.Decision.Remedy,
			alone.Assessment.Risk, alone.Assessment.WorstCase, alone.Decision.Remedy)
	}
	_, err = d.Translate(svc, c)
	if !errors.Is(err, core.ErrNotExposed) || !strings.Contains(err.Error(), "shop/api, shop/web") {
		t.Errorf("the merged Service: err = %v, want not exposed, naming the class's Gateways", err)
	}

	rec := tencentReconciler(t, profile.Policy)
	// The Gateway, and the Service planned alone (no Gateway among the inputs): never written
	// directly.
	var noGateways []runtime.Object
	for _, o := range objs {
		if !gateway.IsGateway(o) {
			noGateways = append(noGateways, o)
		}
	}
	alone2, err := core.NewCluster(profile, noGateways...)
	if err != nil {
		t.Fatal(err)
	}
	for obj, cl := range map[runtime.Object]*core.Cluster{find(t, objs, "Gateway", "shop", "web"): c, svc: alone2} {
		p, err := rec.Plan(context.Background(), obj, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Changes) != 1 || p.Changes[0].Object.Kind != "EnvoyProxy" || p.Changes[0].Object.Name != "merged" {
			t.Fatalf("plan for %v: changes %v, want one on EnvoyProxy envoy-gateway-system/merged", p.Object, p.Changes)
		}
		// The example's EnvoyProxy has no spec.provider, whose type the CRD requires.
		var edits []string
		for _, e := range p.Changes[0].Edits {
			edits = append(edits, e.String()+"="+fmt.Sprint(e.Value))
		}
		if want := []string{"spec.provider.type=Kubernetes", "spec.provider.kubernetes.envoyService.annotations.service.cloud.tencent.com/prevent-loopback=true"}; !cmp.Equal(edits, want) {
			t.Errorf("edits %v, want %v", edits, want)
		}
	}

	// Gateways only: the Service is judged as Envoy Gateway would generate it for the class.
	profile, objs = mergedExample(t, false)
	c, err = core.NewCluster(profile, objs...)
	if err != nil {
		t.Fatal(err)
	}
	got := evaluate(t, d, find(t, objs, "Gateway", "shop", "web"), c, profile.Policy)
	if !hasCode(got.Exposure.Notes, gateway.CodeMergedGateways) {
		t.Errorf("notes %v lack %s", codes(got.Exposure.Notes), gateway.CodeMergedGateways)
	}
	for _, n := range got.Exposure.Notes {
		if n.Code == gateway.CodeMergedGateways && !strings.Contains(n.Message, gateway.HashedName("eg")) {
			t.Errorf("note %q does not name the class's Service %s", n.Message, gateway.HashedName("eg"))
		}
	}
}

// TestIstioParametersConfigMap: Istio applies the "service" overlay of the ConfigMap a
// Gateway's spec.infrastructure.parametersRef names after rendering the Service from the
// Gateway, so what it sets shapes the Service judged from the spec, a key it sets cannot be
// fixed on the Gateway (it becomes a change for the user on the ConfigMap), and the Pods'
// proxy.istio.io/config from its "deployment" overlay configures the proxy.
func TestIstioParametersConfigMap(t *testing.T) {
	profile, kept := istioExample(t, true, `apiVersion: v1
kind: ConfigMap
metadata: {name: mesh-options, namespace: shop}
data:
  service: |
    metadata:
      annotations:
        service.cloud.tencent.com/prevent-loopback: "false"
    spec:
      externalTrafficPolicy: Local
  deployment: |
    spec:
      template:
        metadata:
          annotations:
            proxy.istio.io/config: '{"gatewayTopology":{"numTrustedProxies":1}}'`)
	c, err := core.NewCluster(profile, kept...)
	if err != nil {
		t.Fatal(err)
	}
	gwObj := find(t, kept, "Gateway", "shop", "mesh")
	res := evaluate(t, gateway.NewDialect(tencent.NewDialect(nil), nil), gwObj, c, profile.Policy)
	if res.Exposure.Binding != core.NodePortLocal {
		t.Errorf("binding %s, want the overlay's externalTrafficPolicy Local", res.Exposure.Binding)
	}
	if res.Exposure.Needs.ClientAddress != core.Yes {
		t.Errorf("Needs.ClientAddress = %v, want yes from the deployment overlay's proxy.istio.io/config; reasons %v", res.Exposure.Needs.ClientAddress, codes(res.Exposure.Reasons))
	}
	p, err := tencentReconciler(t, profile.Policy).Plan(context.Background(), gwObj, c)
	if err != nil {
		t.Fatal(err)
	}
	var onConfigMap bool
	for _, ch := range p.Changes {
		if ch.Object != nil && ch.Object.Kind == "Gateway" && strings.Contains(ch.Field, "prevent-loopback") {
			t.Errorf("prevent-loopback planned on the Gateway, where Istio's overlay would override it: %+v", ch)
		}
		if ch.By == core.WriterUser && strings.Contains(ch.Reason.Message, "ConfigMap shop/mesh-options's service overlay") {
			onConfigMap = true
		}
	}
	if !onConfigMap {
		t.Errorf("decision %s; changes %+v: want a change for the user naming ConfigMap shop/mesh-options", res.Decision.Remedy, p.Changes)
	}
}

// TestCiliumGatewayClassConfig: the class's CiliumGatewayClassConfig spec.service sets the
// generated Service's type and externalTrafficPolicy (Cilium operator/pkg/model/ingestion
// toServiceModel): a Gateway judged from its spec follows it.
func TestCiliumGatewayClassConfig(t *testing.T) {
	cfg := func(service string) string {
		return class("io.cilium/gateway-controller", "{group: cilium.io, kind: CiliumGatewayClassConfig, name: cfg, namespace: kube-system}") + gw("", "") + `
---
apiVersion: cilium.io/v2alpha1
kind: CiliumGatewayClassConfig
metadata: {name: cfg, namespace: kube-system}
spec:
  service: ` + service
	}
	objs := decode(t, strings.ReplaceAll(cfg("{externalTrafficPolicy: Local}"), "ANNOTATIONS", `loopguard.io/lb-scope: private`))
	c, err := core.NewCluster(core.ClusterProfile{}, objs...)
	if err != nil {
		t.Fatal(err)
	}
	d := gateway.NewDialect(kubernetes.NewDialect(nil), nil)
	res := evaluate(t, d, find(t, objs, "Gateway", "edge", "web"), c, core.Policy{})
	if res.Exposure.Binding != core.NodePortLocal {
		t.Errorf("binding %s, want Local from the CiliumGatewayClassConfig", res.Exposure.Binding)
	}
	objs = decode(t, strings.ReplaceAll(cfg("{type: NodePort}"), "ANNOTATIONS", `loopguard.io/lb-scope: private`))
	c, err = core.NewCluster(core.ClusterProfile{}, objs...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Translate(find(t, objs, "Gateway", "edge", "web"), c); !errors.Is(err, core.ErrNotExposed) {
		t.Errorf("a NodePort Service from the class's config: err = %v, want not a load-balancer exposure", err)
	}
}

// TestForGatewaysOfKeepsTheMergedService: scan -n shop reads Envoy Gateway's namespace for
// shop's Gateways; the merged Service of their class is theirs (labelled with the class), a
// merged Service of another class and another namespace's Gateway's Service are not.
func TestForGatewaysOfKeepsTheMergedService(t *testing.T) {
	shop := decode(t, `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: shop}
spec:
  gatewayClassName: eg
  listeners: [{name: http, port: 80, protocol: HTTP}]`)
	egNS := decode(t, `apiVersion: v1
kind: Service
metadata:
  name: envoy-eg-d8c59e83
  namespace: envoy-gateway-system
  labels: {gateway.envoyproxy.io/owning-gatewayclass: eg}
spec: {type: LoadBalancer}
---
apiVersion: v1
kind: Service
metadata:
  name: envoy-other-1234abcd
  namespace: envoy-gateway-system
  labels: {gateway.envoyproxy.io/owning-gatewayclass: other}
spec: {type: LoadBalancer}
---
apiVersion: v1
kind: Service
metadata:
  name: envoy-team-web-0badc0de
  namespace: envoy-gateway-system
  labels: {gateway.envoyproxy.io/owning-gateway-name: web, gateway.envoyproxy.io/owning-gateway-namespace: team}
spec: {type: LoadBalancer}`)
	var got []string
	for _, o := range gateway.ForGatewaysOf(egNS, "envoy-gateway-system", "shop", shop) {
		got = append(got, o.(*corev1.Service).Name)
	}
	if want := []string{"envoy-eg-d8c59e83"}; !cmp.Equal(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	if kept := gateway.ForGateways(egNS, "envoy-gateway-system", "shop"); len(kept) != 0 {
		t.Errorf("ForGateways, which does not know shop's Gateways, kept %d objects", len(kept))
	}
}

// istioExample is examples/gateway with its Gateways replaced by an Istio class, Gateway
// shop/mesh (parametersRef, when given, names ConfigMap mesh-options) and the extra documents.
func istioExample(t *testing.T, parametersRef bool, extra string) (core.ClusterProfile, []runtime.Object) {
	t.Helper()
	profile, objs := readExample(t)
	var kept []runtime.Object
	for _, o := range objs {
		if !gateway.IsGateway(o) {
			kept = append(kept, o)
		}
	}
	ref := ""
	if parametersRef {
		ref = "\n    parametersRef: {group: \"\", kind: ConfigMap, name: mesh-options}"
	}
	return profile, append(kept, decode(t, `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: istio}
spec: {controllerName: istio.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: mesh, namespace: shop}
spec:
  gatewayClassName: istio
  infrastructure:
    annotations: {service.kubernetes.io/qcloud-loadbalancer-internal-subnetid: subnet-3f9a2c1d}`+ref+`
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
`+extra)...)
}

// istioDefaults is a class defaults ConfigMap for class istio in namespace ns whose service
// overlay sets externalTrafficPolicy and prevent-loopback.
func istioDefaults(ns, name, created, policy string) string {
	return `apiVersion: v1
kind: ConfigMap
metadata:
  name: ` + name + `
  namespace: ` + ns + `
  creationTimestamp: "` + created + `"
  labels: {gateway.istio.io/defaults-for-class: istio}
data:
  service: |
    metadata:
      annotations:
        service.cloud.tencent.com/prevent-loopback: "false"
    spec:
      externalTrafficPolicy: ` + policy + `
`
}

// TestIstioClassDefaults: Istio applies the service overlay of the class's defaults ConfigMap
// (in istiod's namespace, labelled gateway.istio.io/defaults-for-class, the oldest of several)
// before the Gateway's own parametersRef ConfigMap (pilot/pkg/config/kube/gatewaycommon/
// deploymentcontroller.go render): what the defaults set shapes the Service, the Gateway's
// own ConfigMap wins over them, and a key only the defaults set is the user's change there.
func TestIstioClassDefaults(t *testing.T) {
	d := gateway.NewDialect(tencent.NewDialect(nil), nil)
	binding := func(t *testing.T, opts *gateway.Options, profile core.ClusterProfile, objs []runtime.Object) core.Binding {
		t.Helper()
		c, err := core.NewCluster(profile, objs...)
		if err != nil {
			t.Fatal(err)
		}
		return evaluate(t, gateway.NewDialect(tencent.NewDialect(nil), opts), find(t, objs, "Gateway", "shop", "mesh"), c, profile.Policy).Exposure.Binding
	}
	cases := map[string]struct {
		reason        string
		parametersRef bool
		extra         string
		opts          *gateway.Options
		want          core.Binding
	}{
		"Defaults": {reason: "the class defaults in istio-system set Local",
			extra: istioDefaults("istio-system", "istio-default-gatewayclass-istio", "2026-01-01T00:00:00Z", "Local"), want: core.NodePortLocal},
		"OtherNamespace": {reason: "defaults outside istiod's namespace are not Istio's",
			extra: istioDefaults("shop", "istio-default-gatewayclass-istio", "2026-01-01T00:00:00Z", "Local"), want: core.NodePortCluster},
		"IstioNamespaceOption": {reason: "istiod installed in another namespace, named by the option",
			extra: istioDefaults("mesh-system", "istio-default-gatewayclass-istio", "2026-01-01T00:00:00Z", "Local"),
			opts:  &gateway.Options{IstioNamespace: "mesh-system"}, want: core.NodePortLocal},
		"Oldest": {reason: "of two defaults for the class, the oldest applies",
			extra: istioDefaults("istio-system", "b-old", "2025-01-01T00:00:00Z", "Local") + "---\n" + istioDefaults("istio-system", "a-new", "2026-01-01T00:00:00Z", "Cluster"),
			want:  core.NodePortLocal},
		"GatewayWins": {reason: "the Gateway's own ConfigMap is applied after the class's",
			parametersRef: true,
			extra: istioDefaults("istio-system", "istio-default-gatewayclass-istio", "2026-01-01T00:00:00Z", "Local") + `---
apiVersion: v1
kind: ConfigMap
metadata: {name: mesh-options, namespace: shop}
data:
  service: |
    spec:
      externalTrafficPolicy: Cluster
`, want: core.NodePortCluster},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			profile, objs := istioExample(t, tc.parametersRef, tc.extra)
			if got := binding(t, tc.opts, profile, objs); got != tc.want {
				t.Errorf("%s: binding %s, want %s", tc.reason, got, tc.want)
			}
		})
	}

	// prevent-loopback is set by the class defaults only: the change is the user's, on that
	// ConfigMap, not on the Gateway, and not on the Gateway's own ConfigMap that leaves it.
	profile, objs := istioExample(t, true, istioDefaults("istio-system", "istio-default-gatewayclass-istio", "2026-01-01T00:00:00Z", "Cluster")+`---
apiVersion: v1
kind: ConfigMap
metadata: {name: mesh-options, namespace: shop}
data:
  service: |
    metadata:
      labels: {team: shop}
`)
	c, err := core.NewCluster(profile, objs...)
	if err != nil {
		t.Fatal(err)
	}
	gwObj := find(t, objs, "Gateway", "shop", "mesh")
	res := evaluate(t, d, gwObj, c, profile.Policy)
	p, err := tencentReconciler(t, profile.Policy).Plan(context.Background(), gwObj, c)
	if err != nil {
		t.Fatal(err)
	}
	var onDefaults bool
	for _, ch := range p.Changes {
		if ch.Object != nil && ch.Object.Kind == "Gateway" && strings.Contains(ch.Field, "prevent-loopback") {
			t.Errorf("prevent-loopback planned on the Gateway, where the class defaults would override it: %+v", ch)
		}
		if ch.By == core.WriterUser && strings.Contains(ch.Reason.Message, "mesh-options") {
			t.Errorf("a change names the Gateway's own ConfigMap, which does not set it: %s", ch.Reason.Message)
		}
		if ch.By == core.WriterUser && strings.Contains(ch.Reason.Message, "ConfigMap istio-system/istio-default-gatewayclass-istio's service overlay") {
			onDefaults = true
		}
	}
	if !onDefaults {
		t.Errorf("decision %s; changes %+v: want a change for the user naming the class defaults ConfigMap", res.Decision.Remedy, p.Changes)
	}
}

// TestConfigMapsForIstioGateways: a host reads, for Istio's Gateways, the ConfigMap each
// Gateway's parametersRef names and the class defaults in Istio's namespace; nothing for
// another implementation's Gateways.
func TestConfigMapsForIstioGateways(t *testing.T) {
	_, objs := istioExample(t, true, "")
	want := []gateway.ConfigMapRef{
		{Namespace: "mesh-system", LabelSelector: "gateway.istio.io/defaults-for-class"},
		{Namespace: "shop", Name: "mesh-options"},
	}
	if diff := cmp.Diff(want, gateway.ConfigMaps(objs, &gateway.Options{IstioNamespace: "mesh-system"})); diff != "" {
		t.Errorf("ConfigMaps (-want +got):\n%s", diff)
	}
	_, eg := readExample(t)
	if got := gateway.ConfigMaps(eg, nil); len(got) != 0 {
		t.Errorf("ConfigMaps for Envoy Gateway's Gateways: %v, want none", got)
	}
}

// tencentReconciler is the Reconciler these tests plan with: the Gateway dialect around the
// Tencent provider, under the profile's policy.
func tencentReconciler(t *testing.T, policy core.Policy) *core.Reconciler {
	t.Helper()
	tp, err := tencent.NewProvider(nil)
	if err != nil {
		t.Fatal(err)
	}
	return core.NewReconciler(gateway.Wrap(tp, nil), &core.ReconcilerOptions{Policy: policy})
}
