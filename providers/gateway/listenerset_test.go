package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/gateway"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// lsGateway is an Envoy Gateway Gateway edge/web with listeners http (80) and https (443) that
// admits ListenerSets as ALLOWED says ("" for no spec.allowedListeners).
func lsGateway(allowed string) string {
	s := `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: eg}
spec: {controllerName: gateway.envoyproxy.io/gatewayclass-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: web
  namespace: edge
  labels: {tier: edge}
  annotations: {loopguard.io/lb-scope: private}
spec:
  gatewayClassName: eg
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: https, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: web-tls}]}}`
	if allowed != "" {
		s += "\n  allowedListeners: {namespaces: " + allowed + "}"
	}
	return s
}

// listenerSet is a ListenerSet ns/name whose parentRef names Gateway web (in edge when the
// ListenerSet is elsewhere), created at minute min, with extra metadata, the status of its
// Accepted condition ("" for none) and listeners of the given name:port.
func listenerSet(ns, name string, min int, extra, accepted string, listeners ...string) string {
	parent := "{name: web}"
	if ns != "edge" {
		parent = "{name: web, namespace: edge}"
	}
	s := fmt.Sprintf(`
---
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata: {name: %s, namespace: %s, creationTimestamp: "2026-03-01T10:%02d:00Z"%s}
spec:
  parentRef: %s
  listeners:`, name, ns, min, extra, parent)
	for _, l := range listeners {
		n, port, _ := strings.Cut(l, ":")
		s += fmt.Sprintf("\n  - {name: %s, port: %s, protocol: HTTP}", n, port)
	}
	if accepted != "" {
		s += `
status: {conditions: [{type: Accepted, status: "` + accepted + `", reason: r, message: m, lastTransitionTime: "2026-03-01T10:30:00Z"}]}`
	}
	return s
}

// ctp is a ClientTrafficPolicy ns/name created at minute min with the given targets and settings.
func ctp(ns, name string, min int, target, spec string) string {
	return fmt.Sprintf(`
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: %s, namespace: %s, creationTimestamp: "2026-03-01T11:%02d:00Z"}
spec:
  %s
  %s`, name, ns, min, target, spec)
}

// TestListenerSets: the listeners of ListenerSets attached to a Gateway (its spec.allowedListeners
// admits their namespace, their parentRef names it) are the Gateway's too, and Envoy Gateway's
// ClientTrafficPolicies reach them as Envoy Gateway v1.9.1 resolves them
// (internal/gatewayapi/clienttrafficpolicy.go): a policy naming a ListenerSet's listener
// (sectionName) first, then one for the whole ListenerSet, then one for the whole Gateway; a
// policy targets ListenerSets of its own namespace.
func TestListenerSets(t *testing.T) {
	const (
		toLS      = `targetRefs: [{group: gateway.networking.k8s.io, kind: ListenerSet, name: extra}]`
		toGateway = `targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web}]`
		required  = `proxyProtocol: {}`
		xff       = `clientIPDetection: {xForwardedFor: {numTrustedHops: 1}}`
		timeout   = `timeout: {http: {requestReceivedTimeout: 5s}}`
	)
	cases := map[string]struct {
		objs   string
		proxy  core.Fact
		client core.Fact
		names  []string // in the PROXY protocol reason (or the client-address reason when proxy is not Yes)
		absent []string
		note   []string // in the Listeners note
		ports  []int32  // of the Service the Gateway is judged through
	}{
		"PolicyOnTheListenerSet": {proxy: core.Yes, client: core.Unknown,
			objs:  lsGateway("{from: Same}") + listenerSet("edge", "extra", 1, "", "", "api:8443") + ctp("edge", "p", 1, toLS, required),
			names: []string{"ClientTrafficPolicy edge/p", "api (port 8443, ListenerSet edge/extra)"}, absent: []string{"http (port 80)", "https (port 443)"},
			note:  []string{"Listeners: http 80/HTTP, https 443/HTTPS, from ListenerSet edge/extra: api 8443/HTTP."},
			ports: []int32{80, 443, 8443}},
		"GatewayPolicyCoversTheListenerSet": {proxy: core.Yes, client: core.Unknown,
			objs:  lsGateway("{from: Same}") + listenerSet("edge", "extra", 1, "", "", "api:8443") + ctp("edge", "p", 1, toGateway, required),
			names: []string{"http (port 80), https (port 443), api (port 8443, ListenerSet edge/extra)"}},
		"ListenerSetPolicyWinsOverTheGateways": {proxy: core.Yes, client: core.Unknown,
			objs: lsGateway("{from: Same}") + listenerSet("edge", "extra", 1, "", "", "api:8443") +
				ctp("edge", "gw", 1, toGateway, `proxyProtocol: {optional: true}`) + ctp("edge", "ls", 2, toLS, required),
			names: []string{"ClientTrafficPolicy edge/ls", "api (port 8443, ListenerSet edge/extra)"}, absent: []string{"edge/gw", "http (port 80)"}},
		"SectionWinsOverTheWholeListenerSet": {proxy: core.Yes, client: core.Unknown,
			objs: lsGateway("{from: Same}") + listenerSet("edge", "extra", 1, "", "", "api:8443", "admin:9443") +
				ctp("edge", "all", 1, toLS, required) +
				ctp("edge", "admin", 2, `targetRefs: [{group: gateway.networking.k8s.io, kind: ListenerSet, name: extra, sectionName: admin}]`, timeout),
			names: []string{"ClientTrafficPolicy edge/all", "api (port 8443, ListenerSet edge/extra)"}, absent: []string{"admin (port 9443"}},
		"GatewaySectionNameIsTheGatewaysListener": {proxy: core.Yes, client: core.Unknown,
			objs: lsGateway("{from: Same}") + listenerSet("edge", "extra", 1, "", "", "http:8080") +
				ctp("edge", "p", 1, `targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web, sectionName: http}]`, required),
			names: []string{"for listener http (port 80):"}, absent: []string{"8080"},
			note: []string{"from ListenerSet edge/extra: http 8080/HTTP"}},
		"OldestPolicyForTheListenerSet": {proxy: core.Yes, client: core.Unknown,
			objs: lsGateway("{from: Same}") + listenerSet("edge", "extra", 1, "", "", "api:8443") +
				ctp("edge", "a-newer", 5, toLS, timeout) + ctp("edge", "z-older", 1, toLS, required),
			names: []string{"ClientTrafficPolicy edge/z-older"}},
		"SelectedListenerSet": {proxy: core.Yes, client: core.Unknown,
			objs: lsGateway("{from: Same}") + listenerSet("edge", "extra", 1, ", labels: {team: pay}", "", "api:8443") +
				ctp("edge", "p", 1, `targetSelectors: [{kind: ListenerSet, matchLabels: {team: pay}}]`, required),
			names: []string{"api (port 8443, ListenerSet edge/extra)"}, absent: []string{"http (port 80)"}},
		"ClientAddressOnTheListenerSet": {proxy: core.Unknown, client: core.Yes,
			objs:  lsGateway("{from: Same}") + listenerSet("edge", "extra", 1, "", "", "api:8443") + ctp("edge", "p", 1, toLS, xff),
			names: []string{"ClientTrafficPolicy edge/p sets spec.clientIPDetection for listener api (port 8443, ListenerSet edge/extra)"}},
		// from: All admits another namespace's ListenerSet; its policies live beside it, and a
		// policy there naming "web" names a Gateway team/web, not edge/web.
		"AnotherNamespace": {proxy: core.Yes, client: core.Unknown,
			objs: lsGateway("{from: All}") + listenerSet("team", "extra", 1, "", "", "api:8443") +
				ctp("team", "p", 1, toLS, required) + ctp("team", "q", 2, toGateway, xff),
			names: []string{"ClientTrafficPolicy team/p", "api (port 8443, ListenerSet team/extra)"},
			note:  []string{"from ListenerSet team/extra: api 8443/HTTP"}, ports: []int32{80, 443, 8443}},
		// from: Same leaves another namespace's ListenerSet out: its listeners are neither the
		// Gateway's nor reached by the Gateway's policy.
		"SameLeavesOtherNamespacesOut": {proxy: core.Yes, client: core.Unknown,
			objs: lsGateway("{from: Same}") + listenerSet("edge", "extra", 1, "", "", "api:8443") + listenerSet("team", "other", 2, "", "", "ops:9000") +
				ctp("edge", "p", 1, toGateway, required),
			names: []string{"api (port 8443, ListenerSet edge/extra)"}, absent: []string{"ops", "9000"},
			ports: []int32{80, 443, 8443}},
		// Selector matches the ListenerSet's Namespace labels, which loopguard does not read:
		// the ListenerSet's Accepted condition decides, and one without it is named as not
		// counted. ListenerSets merge oldest first.
		"SelectorTakesTheAcceptedCondition": {proxy: core.Yes, client: core.Unknown,
			objs: lsGateway("{from: Selector, selector: {matchLabels: {gateway-access: edge}}}") +
				listenerSet("team", "newer", 5, "", "True", "b:8002") + listenerSet("pay", "older", 1, "", "True", "a:8001") +
				listenerSet("ops", "refused", 2, "", "False", "c:8003") + listenerSet("dev", "pending", 3, "", "", "d:8004") +
				ctp("edge", "p", 1, toGateway, required),
			names: []string{"a (port 8001, ListenerSet pay/older), b (port 8002, ListenerSet team/newer)"}, absent: []string{"8003", "8004"},
			note: []string{"from ListenerSet pay/older: a 8001/HTTP, from ListenerSet team/newer: b 8002/HTTP.",
				"Not counted: the listeners of ListenerSet dev/pending"},
			ports: []int32{80, 443, 8001, 8002}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := decode(t, tc.objs)
			c, err := core.NewCluster(core.ClusterProfile{}, objs...)
			if err != nil {
				t.Fatal(err)
			}
			d := gateway.NewDialect(kubernetes.NewDialect(nil), nil)
			gwObj := find(t, objs, "Gateway", "edge", "web")
			res := evaluate(t, d, gwObj, c, core.Policy{})
			if res.Exposure.Needs.ProxyHeader != tc.proxy || res.Exposure.Needs.ClientAddress != tc.client {
				t.Errorf("Needs.ProxyHeader = %v, ClientAddress = %v, want %v, %v; reasons %v", res.Exposure.Needs.ProxyHeader, res.Exposure.Needs.ClientAddress, tc.proxy, tc.client, res.Exposure.Reasons)
			}
			code := gateway.CodeProxyProtocol
			if tc.proxy != core.Yes {
				code = gateway.CodeClientAddress
			}
			msg, note := "", ""
			for _, r := range res.Exposure.Reasons {
				if r.Code == code {
					msg = r.Message
				}
			}
			for _, r := range res.Exposure.Notes {
				if r.Code == gateway.CodeListeners {
					note = r.Message
				}
			}
			for _, s := range tc.names {
				if !strings.Contains(msg, s) {
					t.Errorf("reason %q does not say %q", msg, s)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(msg, s) {
					t.Errorf("reason %q says %q", msg, s)
				}
			}
			for _, s := range tc.note {
				if !strings.Contains(note, s) {
					t.Errorf("listeners note %q does not say %q", note, s)
				}
			}
			if tc.ports != nil {
				gw, err := gateway.AsGateway(gwObj)
				if err != nil {
					t.Fatal(err)
				}
				var ports []int32
				for _, p := range gateway.ServiceOf(d, gw, c).Spec.Ports {
					ports = append(ports, p.Port)
				}
				if diff := cmp.Diff(tc.ports, ports); diff != "" {
					t.Errorf("ports of the Service judged from the Gateway (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestListenerSetsNeedAllowedListeners: a Gateway without spec.allowedListeners admits no
// ListenerSet (Gateway API's default None; Envoy Gateway isListenerSetAllowed), whatever the
// ListenerSet's parentRef and status say; the same objects with from: Same attach it.
func TestListenerSetsNeedAllowedListeners(t *testing.T) {
	objs := listenerSet("edge", "extra", 1, "", "True", "api:8443") +
		ctp("edge", "p", 1, `targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web}]`, `proxyProtocol: {}`)
	for allowed, want := range map[string]string{
		"":             "for listener http (port 80), https (port 443):",
		"{from: None}": "for listener http (port 80), https (port 443):",
		"{from: Same}": "for listener http (port 80), https (port 443), api (port 8443, ListenerSet edge/extra):",
	} {
		docs := decode(t, lsGateway(allowed)+objs)
		c, err := core.NewCluster(core.ClusterProfile{}, docs...)
		if err != nil {
			t.Fatal(err)
		}
		res := evaluate(t, gateway.NewDialect(kubernetes.NewDialect(nil), nil), find(t, docs, "Gateway", "edge", "web"), c, core.Policy{})
		msg := ""
		for _, r := range res.Exposure.Reasons {
			if r.Code == gateway.CodeProxyProtocol {
				msg = r.Message
			}
		}
		if !strings.Contains(msg, want) {
			t.Errorf("allowedListeners %q: reason %q, want it to say %q", allowed, msg, want)
		}
	}
}

// TestListenerSetsBadInput: what loopguard cannot read in a Gateway's allowedListeners, an
// attached ListenerSet or a policy's targetSelectors refuses the Gateway with an error naming
// the object and the field, rather than reading the Gateway as if it were not there.
func TestListenerSetsBadInput(t *testing.T) {
	cases := map[string]struct {
		objs string
		want string
	}{
		"AllowedListenersSelector": {want: `Gateway edge/web: spec.allowedListeners.namespaces.selector: Invalid value: "Equals" is not a valid label selector operator`,
			objs: lsGateway("{from: Selector, selector: {matchExpressions: [{key: team, operator: Equals, values: [pay]}]}}") +
				listenerSet("pay", "extra", 1, "", "True", "api:8443")},
		"ListenerSetPort": {want: `ListenerSet edge/extra: spec.listeners[1].port: Invalid value: 70000: must be a number between 1 and 65535`,
			objs: lsGateway("{from: Same}") + listenerSet("edge", "extra", 1, "", "", "api:8443", "admin:70000")},
		"ListenerSetListenerType": {want: `ListenerSet edge/extra: spec.listeners[0].port: Invalid value: "eighty": must be a number`,
			objs: lsGateway("{from: Same}") + listenerSet("edge", "extra", 1, "", "", "api:eighty")},
		"PolicyTargetSelector": {want: `ClientTrafficPolicy edge/p: spec.targetSelectors[0]: Invalid value: "Equals" is not a valid label selector operator`,
			objs: lsGateway("{from: Same}") + listenerSet("edge", "extra", 1, "", "", "api:8443") +
				ctp("edge", "p", 1, `targetSelectors: [{kind: ListenerSet, matchExpressions: [{key: team, operator: Equals, values: [pay]}]}]`, `proxyProtocol: {}`)},
		"KGatewayTargetSelector": {want: `ListenerPolicy edge/lp: spec.targetSelectors[0]: Invalid value: key: Invalid value: "bad label!"`,
			objs: class("kgateway.dev/kgateway", "") + strings.ReplaceAll(gw("", ""), "ANNOTATIONS", "loopguard.io/lb-scope: private") + `
---
apiVersion: gateway.kgateway.dev/v1alpha1
kind: ListenerPolicy
metadata: {name: lp, namespace: edge}
spec:
  targetSelectors: [{group: gateway.networking.k8s.io, kind: Gateway, matchLabels: {"bad label!": x}}]
  default: {proxyProtocol: {}}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := decode(t, tc.objs)
			_, err := judgeWeb(t, objs)
			wantInvalid(t, err, tc.want)
		})
	}
}
