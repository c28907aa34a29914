package gateway_test

import (
	"strings"
	"testing"
)

// TestMalformedTrustedHops: a hop count outside the type each implementation's API gives it (a
// uint32 in Envoy Gateway's, api/v1alpha1/clienttrafficpolicy_types.go v1.9.1; an int32 with
// Minimum=0 in kgateway's, api/v1alpha1/kgateway/listener_policy_types.go at 028d2df5) in a
// policy that configures the Gateway is an error naming the policy and the field, not a setting
// read as absent (which would let LB source NAT rank first for backends that use the address).
func TestMalformedTrustedHops(t *testing.T) {
	eg := func(hops string) string {
		return class("gateway.envoyproxy.io/gatewayclass-controller", "") + gw("", "") + `
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: p, namespace: edge}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web}]
  clientIPDetection: {xForwardedFor: {numTrustedHops: ` + hops + `}}`
	}
	kg := func(spec string) string {
		return class("kgateway.dev/kgateway", "") + gw("", "") + `
---
apiVersion: gateway.kgateway.dev/v1alpha1
kind: ListenerPolicy
metadata: {name: lp, namespace: edge}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web}]
  ` + spec
	}
	cases := map[string]struct{ objs, want string }{
		"EnvoyGatewayWord": {objs: eg("two"),
			want: `ClientTrafficPolicy edge/p: spec.clientIPDetection.xForwardedFor.numTrustedHops: Invalid value: "two": must be a whole number from 0 to 4294967295`},
		"EnvoyGatewayNegative": {objs: eg("-1"), want: `spec.clientIPDetection.xForwardedFor.numTrustedHops: Invalid value: -1`},
		"EnvoyGatewayFraction": {objs: eg("1.5"), want: `spec.clientIPDetection.xForwardedFor.numTrustedHops: Invalid value: 1.5`},
		"KGatewayDefault": {objs: kg(`default: {httpSettings: {xffNumTrustedHops: many}}`),
			want: `ListenerPolicy edge/lp: spec.default.httpSettings.xffNumTrustedHops: Invalid value: "many"`},
		"KGatewayPerPort": {objs: kg(`perPort: [{port: 443, listener: {}}, {port: 80, listener: {httpSettings: {xffNumTrustedHops: 2147483648}}}]`),
			want: `ListenerPolicy edge/lp: spec.perPort[1].listener.httpSettings.xffNumTrustedHops: Invalid value: 2.147483648e+09: must be a whole number from 0 to 2147483647`},
		"KGatewayNegative": {objs: kg(`default: {httpSettings: {xffNumTrustedHops: -1}}`),
			want: `ListenerPolicy edge/lp: spec.default.httpSettings.xffNumTrustedHops: Invalid value: -1`},
		"KGatewayUseRemoteAddressString": {objs: kg(`default: {httpSettings: {useRemoteAddress: "false"}}`),
			want: `ListenerPolicy edge/lp: spec.default.httpSettings.useRemoteAddress: Invalid value: "false": must be true or false`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := decode(t, strings.ReplaceAll(tc.objs, "ANNOTATIONS", `loopguard.io/lb-scope: private`))
			_, err := judgeWeb(t, objs)
			wantInvalid(t, err, tc.want)
		})
	}
}
