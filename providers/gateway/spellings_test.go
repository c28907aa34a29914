package gateway_test

import (
	"strings"
	"testing"

	"github.com/loopguard/loopguard/core"
)

// TestSettingSpellings: each implementation's PROXY protocol and client-address settings,
// spelled as users write them, and what the implementation makes of each, read through the
// Gateway layer: the exposure's needs, or bad input naming the object and the field where the
// implementation (or its CRD's schema) refuses the value. Sources, by implementation:
//   - Contour v1.33.6 apis/projectcontour/v1alpha1/contourconfig.go: useProxyProtocol a *bool,
//     numTrustedHops a *uint32 (null is unset; cmd/contour/serve.go getConfig overlays on the
//     defaults, false and 0);
//   - Envoy Gateway v1.9.1 api/v1alpha1/clienttrafficpolicy_types.go: proxyProtocol a
//     *ProxyProtocolSettings with optional a *bool, taking precedence over the *bool
//     enableProxyProtocol;
//   - NGINX Gateway Fabric v2.6.7 apis/v1alpha2/nginxproxy_types.go: rewriteClientIP.mode an
//     enum, ProxyProtocol or XForwardedFor, case-sensitive;
//   - Istio 1.30.3 pkg/config/mesh/mesh.go MergeProxyConfig, pkg/util/protomarshal ApplyYAML: the
//     annotation is YAML of a ProxyConfig; gatewayTopology.proxyProtocol a message (null unset),
//     numTrustedProxies a uint32 (a number, or a string holding one); YAML that does not parse
//     stops the proxy (pilot/cmd/pilot-agent/config/config.go).
func TestSettingSpellings(t *testing.T) {
	contour := func(envoy string) string {
		return class("projectcontour.io/gateway-controller", "") + gw("", "") +
			"\n---\napiVersion: projectcontour.io/v1alpha1\nkind: ContourConfiguration\nmetadata: {name: contourconfig-web, namespace: edge}\nspec: {envoy: " + envoy + "}"
	}
	eg := func(spec string) string {
		return class("gateway.envoyproxy.io/gatewayclass-controller", "") + gw("", "") +
			"\n---\napiVersion: gateway.envoyproxy.io/v1alpha1\nkind: ClientTrafficPolicy\nmetadata: {name: p, namespace: edge}\nspec:\n  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web}]\n  " + spec
	}
	ngf := func(mode string) string {
		return class("gateway.nginx.org/nginx-gateway-controller", "{group: gateway.nginx.org, kind: NginxProxy, name: np, namespace: edge}") + gw("", "") +
			"\n---\napiVersion: gateway.nginx.org/v1alpha2\nkind: NginxProxy\nmetadata: {name: np, namespace: edge}\nspec: {rewriteClientIP: {mode: " + mode + ", trustedAddresses: [{type: CIDR, value: 10.0.0.0/8}]}}"
	}
	istio := func(cfg string) string {
		return class("istio.io/gateway-controller", "") + gw("proxy.istio.io/config: '"+cfg+"'", "")
	}
	cases := map[string]struct {
		objs          string
		proxy, client core.Fact
		optional      bool // the note that the header is read but not required
		invalid       string
	}{
		"ContourTrue":          {objs: contour("{listener: {useProxyProtocol: true}}"), proxy: core.Yes},
		"ContourFalse":         {objs: contour("{listener: {useProxyProtocol: false}}"), proxy: core.Unknown},
		"ContourNull":          {objs: contour("{listener: {useProxyProtocol: null}}"), proxy: core.Unknown},
		"ContourString":        {objs: contour(`{listener: {useProxyProtocol: "true"}}`), invalid: `spec.envoy.listener.useProxyProtocol: Invalid value: "true": must be true or false`},
		"ContourOne":           {objs: contour("{listener: {useProxyProtocol: 1}}"), invalid: `spec.envoy.listener.useProxyProtocol: Invalid value: 1: must be true or false`},
		"ContourHops":          {objs: contour("{network: {numTrustedHops: 1}}"), proxy: core.Unknown, client: core.Yes},
		"ContourHopsZero":      {objs: contour("{network: {numTrustedHops: 0}}"), proxy: core.Unknown},
		"ContourHopsNull":      {objs: contour("{network: {numTrustedHops: null}}"), proxy: core.Unknown},
		"ContourHopsMax":       {objs: contour("{network: {numTrustedHops: 4294967295}}"), proxy: core.Unknown, client: core.Yes},
		"ContourHopsOver":      {objs: contour("{network: {numTrustedHops: 4294967296}}"), invalid: "spec.envoy.network.numTrustedHops: Invalid value"},
		"ContourHopsString":    {objs: contour(`{network: {numTrustedHops: "1"}}`), invalid: `spec.envoy.network.numTrustedHops: Invalid value: "1"`},
		"EnvoyGatewayEmpty":    {objs: eg("proxyProtocol: {}"), proxy: core.Yes},
		"EnvoyGatewayOptional": {objs: eg("proxyProtocol: {optional: true}"), proxy: core.Unknown, optional: true},
		"EnvoyGatewayRequired": {objs: eg("proxyProtocol: {optional: false}"), proxy: core.Yes},
		"EnvoyGatewayNull":     {objs: eg("proxyProtocol: null"), proxy: core.Unknown},
		"EnvoyGatewayPrecedes": {objs: eg("proxyProtocol: {optional: true}\n  enableProxyProtocol: true"), proxy: core.Unknown, optional: true},
		"EnvoyGatewayEnable":   {objs: eg("enableProxyProtocol: true"), proxy: core.Yes},
		"EnvoyGatewayDisable":  {objs: eg("enableProxyProtocol: false"), proxy: core.Unknown},
		"EnvoyGatewayString":   {objs: eg(`enableProxyProtocol: "true"`), invalid: `ClientTrafficPolicy edge/p: spec.enableProxyProtocol: Invalid value: "true": must be true or false`},
		"EnvoyGatewayOptStr":   {objs: eg(`proxyProtocol: {optional: "yes"}`), invalid: `ClientTrafficPolicy edge/p: spec.proxyProtocol.optional: Invalid value: "yes"`},
		"NGFProxyProtocol":     {objs: ngf("ProxyProtocol"), proxy: core.Yes},
		"NGFXForwardedFor":     {objs: ngf("XForwardedFor"), proxy: core.Unknown, client: core.Yes},
		"NGFLowercase":         {objs: ngf("proxyprotocol"), invalid: `NginxProxy edge/np: spec.rewriteClientIP.mode: Unsupported value: "proxyprotocol"`},
		"NGFEmpty":             {objs: ngf(`""`), invalid: `NginxProxy edge/np: spec.rewriteClientIP.mode: Unsupported value: ""`},
		"IstioProxyProtocol":   {objs: istio("{gatewayTopology: {proxyProtocol: {}}}"), proxy: core.Yes},
		"IstioProxyNull":       {objs: istio("{gatewayTopology: {proxyProtocol: null}}"), proxy: core.Unknown},
		"IstioHops":            {objs: istio("{gatewayTopology: {numTrustedProxies: 2}}"), proxy: core.Unknown, client: core.Yes},
		"IstioHopsString":      {objs: istio(`{gatewayTopology: {numTrustedProxies: "2"}}`), proxy: core.Unknown, client: core.Yes},
		"IstioHopsZero":        {objs: istio("{gatewayTopology: {numTrustedProxies: 0}}"), proxy: core.Unknown},
		"IstioHopsNegative":    {objs: istio("{gatewayTopology: {numTrustedProxies: -1}}"), invalid: "gatewayTopology.numTrustedProxies must be a whole number"},
		"IstioUnknownField":    {objs: istio("{gatewayTopology: {numTrustedProxies: 1}, notAField: 1}"), proxy: core.Unknown, client: core.Yes},
		"IstioNotYAML":         {objs: istio("{gatewayTopology: [}"), invalid: "Gateway edge/web: metadata.annotations[proxy.istio.io/config]"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := decode(t, strings.ReplaceAll(tc.objs, "ANNOTATIONS", `loopguard.io/lb-scope: private`))
			res, err := judgeWeb(t, objs)
			if tc.invalid != "" {
				wantInvalid(t, err, tc.invalid)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			proxy := res.Exposure.Needs.ProxyHeader
			if got := hasCode(res.Exposure.Notes, "gateway-proxy-protocol-optional"); got != tc.optional {
				t.Errorf("optional-header note %v, want %v; notes %v", got, tc.optional, res.Exposure.Notes)
			}
			if proxy != tc.proxy || res.Exposure.Needs.ClientAddress != tc.client {
				t.Errorf("needs proxyHeader %v clientAddress %v, want %v %v; reasons %v notes %v", proxy, res.Exposure.Needs.ClientAddress, tc.proxy, tc.client, res.Exposure.Reasons, res.Exposure.Notes)
			}
		})
	}
}
