package controller

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loopguard/loopguard/providers/gateway"
)

// TestGatewayReJudgedWhenItsParametersChange: the Gateway reconciler, with deploy/'s RBAC,
// reads the ConfigMap an Istio Gateway's spec.infrastructure.parametersRef names, Istio's
// class defaults in istio-system and the CiliumGatewayClassConfig a Cilium GatewayClass names,
// and re-judges the Gateways when one of them appears: a service overlay that sets
// prevent-loopback makes the Istio Gateways safe, a class config that makes the Service a
// NodePort takes the Cilium Gateway's verdict back. Without the watches the verdicts stay as
// they were until the cache's resync (hours).
func TestGatewayReJudgedWhenItsParametersChange(t *testing.T) {
	e := newGatewayEnv(t, []string{"shop", "istio-system"}, "../../providers/gateway/testdata/crds")
	const subnet = "service.kubernetes.io/qcloud-loadbalancer-internal-subnetid"
	e.create(gatewayClassesRes, "", `{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: istio},
  spec: {controllerName: istio.io/gateway-controller}}`)
	e.create(gatewayClassesRes, "", `{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: cilium},
  spec: {controllerName: io.cilium/gateway-controller, parametersRef: {group: cilium.io, kind: CiliumGatewayClassConfig, name: lb, namespace: kube-system}}}`)
	for _, g := range []struct{ name, class, ref string }{
		{"mesh", "istio", `, parametersRef: {group: "", kind: ConfigMap, name: mesh-options}`},
		{"edge", "istio", ""},
		{"cil", "cilium", ""},
	} {
		e.create(gatewaysRes, "shop", `{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: `+g.name+`, namespace: shop},
  spec: {gatewayClassName: `+g.class+`, infrastructure: {annotations: {`+subnet+`: subnet-3f9a2c1d}`+g.ref+`}, listeners: [{name: http, port: 80, protocol: HTTP}]}}`)
	}
	e.startGateways(&Options{Profile: ipvs}, "../../deploy/base/rbac.yaml")

	verdicts := func() string {
		var out []string
		for _, name := range []string{"mesh", "edge", "cil"} {
			out = append(out, name+"="+e.verdict("shop", name))
		}
		return strings.Join(out, " | ")
	}
	judged := func(want map[string]string) func() bool {
		return func() bool {
			for name, prefix := range want {
				v := e.verdict("shop", name)
				if (prefix == "" && v != "") || !strings.HasPrefix(v, prefix) {
					return false
				}
			}
			return true
		}
	}
	until(t, e.ctx, "the three Gateways judged at risk from their spec", judged(map[string]string{
		"mesh": ReasonAtRisk + ":", "edge": ReasonAtRisk + ":", "cil": ReasonAtRisk + ":"}), verdicts)

	overlay := func(ns, name, labels string) string {
		return `{apiVersion: v1, kind: ConfigMap, metadata: {name: ` + name + `, namespace: ` + ns + labels + `},
  data: {service: "metadata: {annotations: {service.cloud.tencent.com/prevent-loopback: \"true\"}}"}}`
	}
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	e.create(configMaps, "shop", overlay("shop", "mesh-options", ""))
	until(t, e.ctx, "Gateway mesh re-judged once the ConfigMap its parametersRef names sets the remedy", judged(map[string]string{
		"mesh": ReasonNoLoop + ":", "edge": ReasonAtRisk + ":"}), verdicts)
	e.create(configMaps, "istio-system", overlay("istio-system", "istio-default-gatewayclass-istio", ", labels: {gateway.istio.io/defaults-for-class: istio}"))
	until(t, e.ctx, "Gateway edge re-judged once its class's defaults set the remedy", judged(map[string]string{
		"edge": ReasonNoLoop + ":"}), verdicts)
	e.create(schema.GroupVersionResource{Group: "cilium.io", Version: "v2alpha1", Resource: "ciliumgatewayclassconfigs"}, "kube-system",
		`{apiVersion: cilium.io/v2alpha1, kind: CiliumGatewayClassConfig, metadata: {name: lb, namespace: kube-system}, spec: {service: {type: NodePort}}}`)
	until(t, e.ctx, "Gateway cil's verdict taken back once its class's config makes the Service a NodePort", judged(map[string]string{
		"cil": ""}), verdicts)
}

// TestGatewayIstioNamespace: with Options.Gateway naming istiod's namespace (the controller's
// --istio-namespace), the Gateway reconciler reads and watches Istio's class defaults there and
// not in istio-system: the defaults in istio-system (which would make the Gateway safe) do not
// count, and those created later in istio-gw re-judge the Gateway within the deadline.
func TestGatewayIstioNamespace(t *testing.T) {
	e := newGatewayEnv(t, []string{"shop", "istio-system", "istio-gw"})
	const subnet = "service.kubernetes.io/qcloud-loadbalancer-internal-subnetid"
	e.create(gatewayClassesRes, "", `{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: istio},
  spec: {controllerName: istio.io/gateway-controller}}`)
	e.create(gatewaysRes, "shop", `{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: edge, namespace: shop},
  spec: {gatewayClassName: istio, infrastructure: {annotations: {`+subnet+`: subnet-3f9a2c1d}}, listeners: [{name: http, port: 80, protocol: HTTP}]}}`)
	defaults := func(ns string) string {
		return `{apiVersion: v1, kind: ConfigMap, metadata: {name: istio-default-gatewayclass-istio, namespace: ` + ns + `,
  labels: {gateway.istio.io/defaults-for-class: istio}},
  data: {service: "metadata: {annotations: {service.cloud.tencent.com/prevent-loopback: \"true\"}}"}}`
	}
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	// What an istiod in istio-system would read; this cluster's istiod runs in istio-gw.
	e.create(configMaps, "istio-system", defaults("istio-system"))
	e.startGateways(&Options{Profile: ipvs, Gateway: &gateway.Options{IstioNamespace: "istio-gw"}}, "../../deploy/base/rbac.yaml")

	verdict := func() string { return e.verdict("shop", "edge") }
	until(t, e.ctx, "Gateway edge judged at risk, istio-system's class defaults not read", func() bool {
		return strings.HasPrefix(verdict(), ReasonAtRisk+":")
	}, verdict)
	e.create(configMaps, "istio-gw", defaults("istio-gw"))
	until(t, e.ctx, "Gateway edge re-judged once the class defaults in istio-gw set the remedy", func() bool {
		return strings.HasPrefix(verdict(), ReasonNoLoop+":")
	}, verdict)
}
