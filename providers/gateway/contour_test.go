package gateway_test

import (
	"strings"
	"testing"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/gateway"
)

// TestContourRuntimeSettings: Contour runs a Gateway's Envoy with the ContourConfiguration its
// provisioner made for the Gateway (contourconfig-<gateway>, in the Gateway's namespace),
// created from the class's ContourDeployment spec.runtimeSettings and not updated from it
// afterwards. loopguard reads that ContourConfiguration when it has it, else the
// ContourDeployment: envoy.network.numTrustedHops above 0 makes the backends need the client
// address (Envoy's xff_num_trusted_hops, as kgateway's xffNumTrustedHops), and
// envoy.listener.useProxyProtocol is the PROXY protocol setting. Malformed values are errors
// naming the object and the field.
func TestContourRuntimeSettings(t *testing.T) {
	const (
		params  = "{group: projectcontour.io, kind: ContourDeployment, name: cd, namespace: projectcontour}"
		lbSends = `annotations: {load-balancer.hetzner.cloud/uses-proxyprotocol: "true"}`
	)
	deployment := func(runtime string) string {
		return "\n---\napiVersion: projectcontour.io/v1alpha1\nkind: ContourDeployment\nmetadata: {name: cd, namespace: projectcontour}\nspec: {runtimeSettings: " + runtime + "}"
	}
	configuration := func(name, spec string) string {
		return "\n---\napiVersion: projectcontour.io/v1alpha1\nkind: ContourConfiguration\nmetadata: {name: " + name + ", namespace: edge}\nspec: " + spec
	}
	cases := map[string]struct {
		objs    string
		client  core.Fact
		proxy   core.Fact
		has     string // in the client-address reason, or in the PROXY protocol reason or note
		invalid string
	}{
		"DeploymentNumTrustedHops": {client: core.Yes, proxy: core.Unknown, has: "ContourDeployment projectcontour/cd sets spec.runtimeSettings.envoy.network.numTrustedHops: 1",
			objs: class("projectcontour.io/gateway-controller", params) + gw("", "") + deployment("{envoy: {network: {numTrustedHops: 1}}}")},
		"ConfigurationWinsForHops": {client: core.Yes, proxy: core.Unknown, has: "ContourConfiguration edge/contourconfig-web sets spec.envoy.network.numTrustedHops: 2",
			objs: class("projectcontour.io/gateway-controller", params) + gw("", "") + deployment("{envoy: {network: {numTrustedHops: 0}}}") +
				configuration("contourconfig-web", "{envoy: {network: {numTrustedHops: 2}}}")},
		"OtherGatewaysConfiguration": {client: core.Yes, proxy: core.Unknown, has: "ContourDeployment projectcontour/cd sets spec.runtimeSettings.envoy.network.numTrustedHops: 1",
			objs: class("projectcontour.io/gateway-controller", params) + gw("", "") + deployment("{envoy: {network: {numTrustedHops: 1}}}") +
				configuration("contourconfig-other", "{envoy: {network: {numTrustedHops: 2}}}")},
		// The ContourDeployment asked for the header when the ContourConfiguration was made;
		// the ContourConfiguration, which Contour reads, no longer does.
		"ConfigurationTurnsProxyProtocolOff": {client: core.Unknown, proxy: core.No, has: "ContourConfiguration edge/contourconfig-web does not set spec.envoy.listener.useProxyProtocol",
			objs: class("projectcontour.io/gateway-controller", params) + gw("", lbSends) + deployment("{envoy: {listener: {useProxyProtocol: true}}}") +
				configuration("contourconfig-web", "{envoy: {listener: {useProxyProtocol: false}}}")},
		"ConfigurationTurnsProxyProtocolOn": {client: core.Unknown, proxy: core.Yes, has: "ContourConfiguration edge/contourconfig-web sets spec.envoy.listener.useProxyProtocol: true",
			objs: class("projectcontour.io/gateway-controller", "") + gw("", "") + configuration("contourconfig-web", "{envoy: {listener: {useProxyProtocol: true}}}")},
		"MalformedNumTrustedHops": {invalid: `ContourDeployment projectcontour/cd: spec.runtimeSettings.envoy.network.numTrustedHops: Invalid value: "two": must be a whole number from 0 to 4294967295`,
			objs: class("projectcontour.io/gateway-controller", params) + gw("", "") + deployment("{envoy: {network: {numTrustedHops: two}}}")},
		"NegativeNumTrustedHops": {invalid: `ContourConfiguration edge/contourconfig-web: spec.envoy.network.numTrustedHops: Invalid value: -1`,
			objs: class("projectcontour.io/gateway-controller", params) + gw("", "") + configuration("contourconfig-web", "{envoy: {network: {numTrustedHops: -1}}}")},
		"MalformedUseProxyProtocol": {invalid: `ContourConfiguration edge/contourconfig-web: spec.envoy.listener.useProxyProtocol: Invalid value: "yes": must be true or false`,
			objs: class("projectcontour.io/gateway-controller", "") + gw("", "") + configuration("contourconfig-web", "{envoy: {listener: {useProxyProtocol: \"yes\"}}}")},
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
			if res.Exposure.Needs.ClientAddress != tc.client {
				t.Errorf("Needs.ClientAddress = %v, want %v; reasons %v", res.Exposure.Needs.ClientAddress, tc.client, res.Exposure.Reasons)
			}
			proxy := res.Exposure.Needs.ProxyHeader
			if tc.proxy == core.No {
				// Contour reads no header while the LB sends one: the reverse-direction note.
				if !hasCode(res.Exposure.Notes, gateway.CodeProxyNotExpected) {
					t.Errorf("no note %s; notes %v", gateway.CodeProxyNotExpected, res.Exposure.Notes)
				}
				proxy = core.No
			}
			if proxy != tc.proxy {
				t.Errorf("Needs.ProxyHeader = %v, want %v; reasons %v", proxy, tc.proxy, res.Exposure.Reasons)
			}
			var all []string
			for _, r := range append(append([]core.Reason(nil), res.Exposure.Reasons...), res.Exposure.Notes...) {
				all = append(all, r.Message)
			}
			if text := strings.Join(all, "\n"); !strings.Contains(text, tc.has) {
				t.Errorf("reasons and notes do not say %q:\n%s", tc.has, text)
			}
		})
	}
}
