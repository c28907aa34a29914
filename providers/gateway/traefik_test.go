package gateway_test

import (
	"strings"
	"testing"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/gateway"
)

// traefikGateway is a Traefik Gateway with listeners web (8000) and websecure (8443), served by
// the Traefik Pod whose arguments are ARGS and published by its chart's Service, as the Helm
// chart renders them (traefik/traefik-helm-chart traefik/templates/_podtemplate.tpl).
const traefikGateway = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: traefik}
spec: {controllerName: traefik.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: web
  namespace: edge
  annotations: {loopguard.io/lb-scope: private}
spec:
  gatewayClassName: traefik
  listeners:
  - {name: web, port: 8000, protocol: HTTP}
  - {name: websecure, port: 8443, protocol: HTTPS}
---
apiVersion: v1
kind: Pod
metadata:
  name: traefik-7d9c5b6f4-x2lqz
  namespace: traefik
  labels: {app.kubernetes.io/name: traefik}
spec:
  nodeName: 10.0.1.12
  containers:
  - name: traefik
    image: docker.io/traefik:v3.7.9
    args:
    - --entryPoints.web.address=:8000/tcp
    - --entryPoints.websecure.address=:8443/tcp
    - --entryPoints.metrics.address=:9100/tcp
    - --providers.kubernetesgateway
    - --providers.kubernetesgateway.statusaddress.service.name=traefik
    - --providers.kubernetesgateway.statusaddress.service.namespace=traefik
ARGS
---
apiVersion: v1
kind: Service
metadata: {name: traefik, namespace: traefik}
spec:
  type: LoadBalancer
  selector: {app.kubernetes.io/name: traefik}
  ports:
  - {name: web, port: 80, targetPort: web, protocol: TCP}
  - {name: websecure, port: 443, targetPort: websecure, protocol: TCP}`

// TestTraefikForwardedHeaders: an entry point that serves one of the Gateway's listeners and
// trusts X-Forwarded-* headers (forwardedHeaders.trustedIPs or .insecure) passes on the client
// address the hops in front wrote, so the Gateway's backends need the client address, as for
// Envoy Gateway's clientIPDetection.xForwardedFor. An entry point serving no listener of the
// Gateway says nothing of it; a trusted list Traefik would refuse is an error naming the Pod
// and the argument.
func TestTraefikForwardedHeaders(t *testing.T) {
	cases := map[string]struct {
		args    string
		want    core.Fact
		has     []string // in the client-address reason
		absent  []string // in neither the client-address reason nor the PROXY protocol note
		proxy   string   // in the optional PROXY protocol note; "" for no note
		invalid string   // in the error
	}{
		"TrustedIPs": {want: core.Yes, args: `    - --entryPoints.websecure.forwardedHeaders.trustedIPs=10.0.0.0/8,192.168.1.7`,
			has: []string{"websecure (:8443, listener websecure, forwardedHeaders.trustedIPs: from 10.0.0.0/8,192.168.1.7)", "Pod traefik/traefik-7d9c5b6f4-x2lqz"}},
		"Insecure": {want: core.Yes, args: `    - --entryPoints.web.forwardedHeaders.insecure`,
			has: []string{"web (:8000, listener web, forwardedHeaders.insecure: from every source)"}},
		"InsecureFalse": {want: core.Yes, args: `    - --entryPoints.web.forwardedHeaders.insecure=false
    - --entryPoints.websecure.forwardedHeaders.insecure=true`,
			has: []string{"websecure (:8443"}, absent: []string{"web (:8000"}},
		"EntryPointOfNoListener": {want: core.Yes, args: `    - --entryPoints.metrics.forwardedHeaders.trustedIPs=10.0.0.0/8
    - --entryPoints.web.forwardedHeaders.trustedIPs=172.16.0.0/12`,
			has: []string{"web (:8000, listener web, forwardedHeaders.trustedIPs: from 172.16.0.0/12)"}, absent: []string{"metrics"}},
		"LowercaseFlags": {want: core.Yes, args: `    - --entrypoints.web.forwardedheaders.trustedips=10.0.0.0/8`,
			has: []string{"web (:8000, listener web, forwardedHeaders.trustedIPs: from 10.0.0.0/8)"}},
		"BadTrustedIP": {args: `    - --entryPoints.web.forwardedHeaders.trustedIPs=10.0.0.0/8,10.1.0.0/33`,
			invalid: `Pod traefik/traefik-7d9c5b6f4-x2lqz: argument --entryPoints.web.forwardedHeaders.trustedIPs: Invalid value: "10.1.0.0/33"`},
		// Traefik cannot build an entry point with proxyProtocol and no trusted source
		// (ip.NewChecker: "no trusted IPs provided") and does not start: no header is read there.
		"ProxyProtocolWithoutTrust": {want: core.Unknown, args: `    - --entryPoints.web.proxyProtocol
    - --entryPoints.websecure.proxyProtocol.trustedIPs=10.0.0.0/8`,
			proxy: "websecure (:8443, listener websecure, proxyProtocol trustedIPs 10.0.0.0/8)", absent: []string{"web (:8000"}},
		"BadProxyProtocolTrustedIP": {args: `    - --entryPoints.websecure.proxyProtocol.trustedIPs=ten`,
			invalid: `argument --entryPoints.websecure.proxyProtocol.trustedIPs: Invalid value: "ten"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := decode(t, strings.Replace(traefikGateway, "ARGS", tc.args, 1))
			res, err := judgeWeb(t, objs)
			if tc.invalid != "" {
				wantInvalid(t, err, tc.invalid)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Exposure.Needs.ClientAddress != tc.want {
				t.Errorf("Needs.ClientAddress = %v, want %v; reasons %v", res.Exposure.Needs.ClientAddress, tc.want, res.Exposure.Reasons)
			}
			msg, note := "", ""
			for _, r := range res.Exposure.Reasons {
				if r.Code == gateway.CodeClientAddress {
					msg = r.Message
				}
			}
			for _, r := range res.Exposure.Notes {
				if r.Code == gateway.CodeProxyOptional {
					note = r.Message
				}
			}
			for _, s := range tc.has {
				if !strings.Contains(msg, s) {
					t.Errorf("reason %q does not say %q", msg, s)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(msg, s) || strings.Contains(note, s) {
					t.Errorf("reason %q or note %q names %q, which reads no such setting", msg, note, s)
				}
			}
			if (note != "") != (tc.proxy != "") || !strings.Contains(note, tc.proxy) {
				t.Errorf("note %s = %q, want %q", gateway.CodeProxyOptional, note, tc.proxy)
			}
		})
	}
}
