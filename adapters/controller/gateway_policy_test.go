package controller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// TestGatewayReJudgedWhenAPolicySelectsIt: a ClientTrafficPolicy (Envoy Gateway's real CRD)
// that picks Gateways by targetSelectors re-judges them when it is created after they were
// judged, when its selector changes (the Gateways it stops selecting too), and when it is
// deleted; a Gateway relabelled into a selector is re-judged through its own watch. The policy
// makes Envoy require the PROXY protocol, which takes intercept-vip out of the verdict. Without the selector mapping the
// verdicts stay as they were until the cache's resync (hours).
func TestGatewayReJudgedWhenAPolicySelectsIt(t *testing.T) {
	e := newGatewayEnv(t, []string{"shop", "envoy-gateway-system"}, envoyGatewayCRDs(t, "clienttrafficpolicies")...)
	const subnet = "service.kubernetes.io/qcloud-loadbalancer-internal-subnetid"
	e.create(gatewayClassesRes, "", `{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: eg},
  spec: {controllerName: gateway.envoyproxy.io/gatewayclass-controller}}`)
	for _, g := range []struct{ name, tier string }{{"web", "edge"}, {"api", "internal"}} {
		e.create(gatewaysRes, "shop", `{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway,
  metadata: {name: `+g.name+`, namespace: shop, labels: {tier: `+g.tier+`}},
  spec: {gatewayClassName: eg, infrastructure: {annotations: {`+subnet+`: subnet-3f9a2c1d}}, listeners: [{name: http, port: 80, protocol: HTTP}]}}`)
	}
	e.startGateways(&Options{Profile: ipvs}, "../../deploy/base/rbac.yaml")

	verdicts := func() string { return "web=" + e.verdict("shop", "web") + " | api=" + e.verdict("shop", "api") }
	var before string
	until(t, e.ctx, "both Gateways judged, alike", func() bool {
		before = e.verdict("shop", "web")
		return before != "" && e.verdict("shop", "api") == before
	}, verdicts)
	if !strings.HasPrefix(before, ReasonAtRisk+":") {
		t.Fatalf("verdict before any policy: %s, want %s", before, ReasonAtRisk)
	}
	judged := func(want map[string]bool) func() bool {
		return func() bool {
			for name, changed := range want {
				if v := e.verdict("shop", name); v == "" || (v != before) != changed {
					return false
				}
			}
			return true
		}
	}

	ctp := schema.GroupVersionResource{Group: "gateway.envoyproxy.io", Version: "v1alpha1", Resource: "clienttrafficpolicies"}
	e.create(ctp, "shop", `{apiVersion: gateway.envoyproxy.io/v1alpha1, kind: ClientTrafficPolicy, metadata: {name: proxy-protocol, namespace: shop},
  spec: {targetSelectors: [{group: gateway.networking.k8s.io, kind: Gateway, matchLabels: {tier: edge}}], proxyProtocol: {}}}`)
	until(t, e.ctx, "Gateway web re-judged once a policy selects it", judged(map[string]bool{"web": true, "api": false}), verdicts)
	// Intercepting the VIP in the cluster would skip the LB that adds the header the policy
	// makes Envoy require: that remedy is no longer offered.
	if v := e.verdict("shop", "web"); !strings.Contains(before, "remedy intercept-vip") || strings.Contains(v, "intercept-vip") {
		t.Errorf("Gateway web's verdict: %s before the policy, %s with it; want intercept-vip only before", before, v)
	}

	relabel := []byte(`{"metadata":{"labels":{"tier":"edge"}}}`)
	if _, err := e.dyn.Resource(gatewaysRes).Namespace("shop").Patch(e.ctx, "api", types.MergePatchType, relabel, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	until(t, e.ctx, "Gateway api re-judged once relabelled into the selector", judged(map[string]bool{"web": true, "api": true}), verdicts)

	// A selector that no longer matches either: only the policy as it was maps to them.
	reselect := []byte(`{"spec":{"targetSelectors":[{"group":"gateway.networking.k8s.io","kind":"Gateway","matchLabels":{"tier":"none"}}]}}`)
	if _, err := e.dyn.Resource(ctp).Namespace("shop").Patch(e.ctx, "proxy-protocol", types.MergePatchType, reselect, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	until(t, e.ctx, "both Gateways re-judged once the policy's selector stops matching them", judged(map[string]bool{"web": false, "api": false}), verdicts)

	back := []byte(`{"spec":{"targetSelectors":[{"group":"gateway.networking.k8s.io","kind":"Gateway","matchLabels":{"tier":"edge"}}]}}`)
	if _, err := e.dyn.Resource(ctp).Namespace("shop").Patch(e.ctx, "proxy-protocol", types.MergePatchType, back, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	until(t, e.ctx, "both Gateways re-judged once the selector matches them again", judged(map[string]bool{"web": true, "api": true}), verdicts)
	if err := e.dyn.Resource(ctp).Namespace("shop").Delete(e.ctx, "proxy-protocol", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	until(t, e.ctx, "both Gateways re-judged once the policy is deleted", judged(map[string]bool{"web": false, "api": false}), verdicts)
}

// TestGatewayReJudgedWhenItsListenerSetsChange: a Gateway is judged again when a ListenerSet
// attached to it (another namespace's, admitted by allowedListeners from: All) appears, when a
// ClientTrafficPolicy that targets that ListenerSet goes, and a Contour Gateway when the
// ContourConfiguration Contour's provisioner made for it (contourconfig-<gateway>) changes.
// The policy and the ContourConfiguration make the proxies require the PROXY protocol, which
// takes intercept-vip out of the verdict. The policy exists before the ListenerSet, so the
// first change reaches the Gateway only through the ListenerSet's parentRef, and the second
// only through the policy's target. Without those mappings the verdicts stay as they were
// until the cache's resync (hours).
func TestGatewayReJudgedWhenItsListenerSetsChange(t *testing.T) {
	e := newGatewayEnv(t, []string{"shop", "team", "envoy-gateway-system"},
		append(envoyGatewayCRDs(t, "clienttrafficpolicies"), "../../providers/gateway/testdata/policy-crds/contourconfigurations.yaml")...)
	const subnet = "service.kubernetes.io/qcloud-loadbalancer-internal-subnetid"
	e.create(gatewayClassesRes, "", `{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: eg},
  spec: {controllerName: gateway.envoyproxy.io/gatewayclass-controller}}`)
	e.create(gatewayClassesRes, "", `{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: contour},
  spec: {controllerName: projectcontour.io/gateway-controller}}`)
	e.create(gatewaysRes, "shop", `{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: web, namespace: shop},
  spec: {gatewayClassName: eg, allowedListeners: {namespaces: {from: All}}, infrastructure: {annotations: {`+subnet+`: subnet-3f9a2c1d}},
    listeners: [{name: http, port: 80, protocol: HTTP}]}}`)
	e.create(gatewaysRes, "shop", `{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: cweb, namespace: shop},
  spec: {gatewayClassName: contour, infrastructure: {annotations: {`+subnet+`: subnet-3f9a2c1d}}, listeners: [{name: http, port: 80, protocol: HTTP}]}}`)
	ctp := schema.GroupVersionResource{Group: "gateway.envoyproxy.io", Version: "v1alpha1", Resource: "clienttrafficpolicies"}
	e.create(ctp, "team", `{apiVersion: gateway.envoyproxy.io/v1alpha1, kind: ClientTrafficPolicy, metadata: {name: extra-proxy-protocol, namespace: team},
  spec: {targetRefs: [{group: gateway.networking.k8s.io, kind: ListenerSet, name: extra}], proxyProtocol: {}}}`)
	e.startGateways(&Options{Profile: ipvs}, "../../deploy/base/rbac.yaml")

	verdicts := func() string { return "web=" + e.verdict("shop", "web") + " | cweb=" + e.verdict("shop", "cweb") }
	var web, cweb string
	until(t, e.ctx, "both Gateways judged", func() bool {
		web, cweb = e.verdict("shop", "web"), e.verdict("shop", "cweb")
		return web != "" && cweb != ""
	}, verdicts)
	for name, v := range map[string]string{"web": web, "cweb": cweb} {
		if !strings.Contains(v, "remedy intercept-vip") {
			t.Fatalf("Gateway %s before the objects: %s, want remedy intercept-vip", name, v)
		}
	}
	noIntercept := func(name string) func() bool {
		return func() bool { v := e.verdict("shop", name); return v != "" && !strings.Contains(v, "intercept-vip") }
	}

	cc := schema.GroupVersionResource{Group: "projectcontour.io", Version: "v1alpha1", Resource: "contourconfigurations"}
	e.create(cc, "shop", `{apiVersion: projectcontour.io/v1alpha1, kind: ContourConfiguration, metadata: {name: contourconfig-cweb, namespace: shop},
  spec: {envoy: {listener: {useProxyProtocol: true}}}}`)
	until(t, e.ctx, "Gateway cweb re-judged once its ContourConfiguration requires the PROXY protocol", noIntercept("cweb"), verdicts)

	// ListenerSets are gateway.networking.k8s.io/v1 from Gateway API v1.5 on; a build list
	// with an older release (the 1.35 host's, v1.3.0) installs CRDs without them.
	listenerSets := schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "listenersets"}
	if !served(t, e, listenerSets) {
		t.Skip("the Gateway API CRDs of this build list have no ListenerSet (gateway.networking.k8s.io/v1 since Gateway API v1.5)")
	}
	e.create(listenerSets, "team", `{apiVersion: gateway.networking.k8s.io/v1, kind: ListenerSet, metadata: {name: extra, namespace: team},
  spec: {parentRef: {name: web, namespace: shop}, listeners: [{name: api, port: 8443, protocol: HTTP}]}}`)
	until(t, e.ctx, "Gateway web re-judged once a ListenerSet whose listener requires the PROXY protocol attaches", noIntercept("web"), verdicts)

	if err := e.dyn.Resource(ctp).Namespace("team").Delete(e.ctx, "extra-proxy-protocol", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	until(t, e.ctx, "Gateway web re-judged once the ListenerSet's policy is deleted", func() bool {
		return e.verdict("shop", "web") == web
	}, verdicts)
}

// served reports whether the API server serves a resource.
func served(t *testing.T, e *gatewayEnv, gvr schema.GroupVersionResource) bool {
	t.Helper()
	list, err := e.cs.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true
		}
	}
	return false
}
