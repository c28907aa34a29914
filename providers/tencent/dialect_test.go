package tencent_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
)

// dialectCase is a behaviour of the dialect beyond the guide's tables, run with the core.
type dialectCase struct {
	name    string
	opts    *tencent.Options
	files   []string
	object  string
	risk    core.Risk
	symptom core.Symptom
	// worst is checked when set ("unknown" for an unknown probability).
	worst   string
	reasons []core.Code
	notes   []core.Code
	missing []string
	remedy  core.Remedy
	tickets []core.Capability
	check   func(t *testing.T, res *core.Result)
}

func runDialectCases(t *testing.T, cases []dialectCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := load(t, tc.files...)
			res, err := w.evaluate(t, tencent.NewDialect(tc.opts), tc.object)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			a := &res.Assessment
			if tc.risk != "" && a.Risk != tc.risk {
				t.Errorf("risk = %s, want %s (reasons %v)", a.Risk, tc.risk, codes(a.Reasons))
			}
			if tc.symptom != "" && a.Symptom != tc.symptom {
				t.Errorf("symptom = %s, want %s", a.Symptom, tc.symptom)
			}
			if tc.worst != "" && a.WorstCase.String() != tc.worst {
				t.Errorf("worst case = %s, want %s", a.WorstCase, tc.worst)
			}
			for _, c := range tc.reasons {
				if !slices.Contains(codes(a.Reasons), c) {
					t.Errorf("reason %s missing from %v", c, codes(a.Reasons))
				}
			}
			for _, c := range tc.notes {
				if !slices.Contains(codes(res.Exposure.Notes), c) {
					t.Errorf("note %s missing from %v", c, codes(res.Exposure.Notes))
				}
			}
			if tc.missing != nil && !slices.Equal(a.Missing, tc.missing) {
				t.Errorf("missing = %v, want %v", a.Missing, tc.missing)
			}
			if tc.remedy != "" && res.Decision.Remedy != tc.remedy {
				t.Errorf("decision = %s (%s), want %s; rejected %+v", res.Decision.Remedy, res.Decision.Why, tc.remedy, res.Decision.Rejected)
			}
			if tc.remedy != "" && !slices.Equal(res.Decision.Tickets, tc.tickets) {
				t.Errorf("tickets = %v, want %v", res.Decision.Tickets, tc.tickets)
			}
			checkDocumented(t, res)
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}

func reasonContains(t *testing.T, rs []core.Reason, code core.Code, texts ...string) {
	t.Helper()
	r, ok := reasonFor(rs, code)
	if !ok {
		t.Errorf("no reason %s in %v", code, codes(rs))
		return
	}
	for _, s := range texts {
		if !strings.Contains(r.Message, s) {
			t.Errorf("reason %s = %q, want it to mention %q", code, r.Message, s)
		}
	}
}

func svc(name string) string { return "Service/default/" + name }
func ing(name string) string { return "Ingress/default/" + name }

// Probabilities and symptoms (DOMAIN.md §1): one node always fails, N nodes with
// externalTrafficPolicy Cluster loop 1/N, layer 7 shows as a delay.
func TestProbabilities(t *testing.T) {
	runDialectCases(t, []dialectCase{
		{name: "1 node, layer 4: connection failure", files: []string{"profiles/ipvs.yaml", "nodes/regular-1.yaml", "seed/private-service.yaml"},
			object: svcWeb, risk: core.RiskAtRisk, symptom: core.SymptomConnectionFailure, worst: "1", reasons: []core.Code{"always-loops"}},
		{name: "1 node, layer 7: connection failure", files: []string{"profiles/ipvs.yaml", "nodes/regular-1.yaml", "seed/private-ingress.yaml"},
			object: ingWeb, risk: core.RiskAtRisk, symptom: core.SymptomConnectionFailure, worst: "1"},
		{name: "3 nodes, Cluster policy, layer 4: 1/3 intermittent", files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-service.yaml"},
			object: svcWeb, risk: core.RiskAtRisk, symptom: core.SymptomIntermittent, worst: "0.3333"},
		{name: "3 nodes, layer 7: ~4 s delay", files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-ingress.yaml"},
			object: ingWeb, risk: core.RiskAtRisk, symptom: core.SymptomDelay, worst: "0.3333", reasons: []core.Code{"l7-retry-delay"}},
		{name: "super nodes are not behind the CLB: 2 of 4 nodes count", files: []string{"profiles/ipvs.yaml", "nodes/mixed.yaml", "cases/services.yaml"},
			object: svc("private"), risk: core.RiskAtRisk, worst: "0.5", notes: []core.Code{"tke-super-nodes-not-behind-clb"}},
		{name: "backends-label: only the 2 edge nodes of 4 count", files: []string{"profiles/ipvs.yaml", "cases/edge-nodes.yaml", "cases/services.yaml"},
			object: svc("backends-label"), risk: core.RiskAtRisk, worst: "0.5", reasons: []core.Code{"tke-backends-label"}},
		{name: "direct-access: the share of Pods on the busiest node", files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "cases/services.yaml"},
			object: svc("direct"), risk: core.RiskAtRisk, worst: "0.6667", reasons: []core.Code{"tke-direct-access", "backend-share"},
			check: func(t *testing.T, res *core.Result) {
				if res.Exposure.Binding != core.DirectToPod {
					t.Errorf("binding = %s, want direct-to-pod", res.Exposure.Binding)
				}
			}},
	})
}

// The policy decides among TKE's offers (DESIGN.md; seeds solutions 1-3).
func TestDecisions(t *testing.T) {
	runDialectCases(t, []dialectCase{
		{name: "layer 4, IPVS, default policy: intercept the VIP", files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-service.yaml"},
			object: svcWeb, remedy: core.InterceptVIP,
			check: func(t *testing.T, res *core.Result) {
				if res.Decision.Path != core.PathVIP || !strings.Contains(res.Decision.Action, tencent.AnnotationPreventLoopback) {
					t.Errorf("decision = %+v, want the prevent-loopback annotation and path VIP", res.Decision)
				}
				rj, _ := rejectionFor(res.Decision, core.LBSourceNAT)
				if !strings.Contains(rj.Reason.Message, "CLB Layer 4 SNAT capability") {
					t.Errorf("lb-snat rejection %q does not name the ticket", rj.Reason.Message)
				}
			}},
		{name: "layer 4, prefer LB features, clb-l4-snat granted: CLB SNAT", files: []string{"profiles/ipvs-lb-features-allowlisted.yaml", "nodes/regular-3.yaml", "seed/private-service.yaml"},
			object: svcWeb, remedy: core.LBSourceNAT,
			check: func(t *testing.T, res *core.Result) {
				if res.Decision.Path != core.PathProxy || !strings.Contains(res.Decision.Action, "l4Listeners[].snatEnable: true for TCP:80") {
					t.Errorf("decision = %+v", res.Decision)
				}
				if rj, _ := rejectionFor(res.Decision, core.InterceptVIP); rj.RankedBelow != core.LBSourceNAT {
					t.Errorf("intercept-vip rejection = %+v, want ranked below lb-snat", rj)
				}
			}},
		{name: "layer 4, kube-proxy too old for prevent-loopback: DNS steering, rejection names the minimum",
			files: []string{"profiles/ipvs-kube-proxy-old.yaml", "nodes/regular-3.yaml", "seed/private-service.yaml"}, object: svcWeb, remedy: core.DNSSteering,
			check: func(t *testing.T, res *core.Result) {
				rj, _ := rejectionFor(res.Decision, core.InterceptVIP)
				if rj.Reason.Code != tencent.CodePreventLoopbackTooOld || !strings.Contains(rj.Reason.Message, "v1.18.4-tke.20") {
					t.Errorf("intercept-vip rejection = %+v, want the minimum v1.18.4-tke.20", rj)
				}
				o := offerFor(res.Offers, core.InterceptVIP)
				if o.Unmet[0].Kind != core.PreconditionVersion {
					t.Errorf("unmet = %+v, want a version precondition", o.Unmet)
				}
			}},
		{name: "layer 7, not allowlisted, no clients declared: DNS steering, rejection names both tickets",
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-ingress.yaml"}, object: ingWeb, remedy: core.DNSSteering,
			check: func(t *testing.T, res *core.Result) {
				rj, _ := rejectionFor(res.Decision, core.LBSourceNAT)
				for _, s := range []string{"CLB Layer 7 SNAT capability", "Keep Alive capability", core.CodeDecideTicket.Rule().Summary} {
					if !strings.Contains(rj.Reason.Message, s) {
						t.Errorf("lb-snat rejection %q does not say %q", rj.Reason.Message, s)
					}
				}
				if !strings.Contains(res.Decision.Action, "rewrite name exact web.example.com web.default.svc.cluster.local") {
					t.Errorf("DNS steering action lacks the CoreDNS rewrite for the Ingress host: %q", res.Decision.Action)
				}
			}},
		{name: "layer 7, not allowlisted, clients declared, Local backends: node separation",
			files: []string{"profiles/ipvs-clients.yaml", "nodes/regular-3.yaml", "cases/ingresses.yaml", "cases/clients-regular.yaml"}, object: ing("local"),
			risk: core.RiskAtRisk, worst: "0.5", remedy: core.NodeSeparation,
			check: func(t *testing.T, res *core.Result) {
				if res.Assessment.DeclaredClients.String() != "0" {
					t.Errorf("declared clients' probability = %s, want 0 (client on node-1, backends on node-2/3)", res.Assessment.DeclaredClients)
				}
				if !strings.Contains(res.Decision.Action, "app=local (Service local)") || strings.Contains(res.Decision.Action, "externalTrafficPolicy") {
					t.Errorf("node separation action = %q", res.Decision.Action)
				}
			}},
		{name: "layer 7, Cluster backends: node separation says what must change",
			files: []string{"profiles/ipvs-clients.yaml", "nodes/regular-3.yaml", "cases/ingresses.yaml", "cases/clients-regular.yaml"}, object: ing("two-hosts"),
			check: func(t *testing.T, res *core.Result) {
				o := offerFor(res.Offers, core.NodeSeparation)
				if o == nil || !strings.Contains(o.Action, "set spec.externalTrafficPolicy: Local on Service web, api") || !strings.Contains(o.Action, tencent.AnnotationIngressDirectAccess) {
					t.Errorf("node separation = %+v", o)
				}
			}},
		{name: "layer 7, tickets allowed: CLB SNAT naming both tickets",
			files: []string{"profiles/ipvs-allow-tickets.yaml", "nodes/regular-3.yaml", "seed/private-ingress.yaml"}, object: ingWeb,
			remedy: core.LBSourceNAT, tickets: []core.Capability{tencent.CapL7SNAT, tencent.CapKeepalive},
			check: func(t *testing.T, res *core.Result) {
				if !strings.Contains(res.Decision.Action, "snatEnable: true") || !strings.Contains(res.Decision.Action, "100.127.0.0/16") {
					t.Errorf("action = %q", res.Decision.Action)
				}
				if res.Decision.Costs.ClientIP != core.ClientIPForwardedFor {
					t.Errorf("client IP = %s, want x-forwarded-for", res.Decision.Costs.ClientIP)
				}
			}},
		{name: "layer 7, allowlisted, ingress controller v2.8.1: CLB SNAT with keepaliveEnable: 1",
			files: []string{"profiles/ipvs-controller-2.8.yaml", "nodes/regular-3.yaml", "seed/private-ingress.yaml"}, object: ingWeb,
			check: func(t *testing.T, res *core.Result) {
				o := offerFor(res.Offers, core.LBSourceNAT)
				if !strings.Contains(o.Action, "keepaliveEnable: 1") {
					t.Errorf("action = %q, want keepaliveEnable: 1", o.Action)
				}
			}},
		{name: "layer 7, granted allowlists: CLB SNAT without tickets",
			files: []string{"profiles/ipvs-l7-allowlisted.yaml", "nodes/regular-3.yaml", "seed/private-ingress.yaml"}, object: ingWeb, remedy: core.LBSourceNAT},
		{name: "layer 7, tickets allowed but controller version unknown: not CLB SNAT",
			files: []string{"profiles/ipvs-allow-tickets-unversioned.yaml", "nodes/regular-3.yaml", "seed/private-ingress.yaml"}, object: ingWeb, remedy: core.DNSSteering,
			check: func(t *testing.T, res *core.Result) {
				rj, _ := rejectionFor(res.Decision, core.LBSourceNAT)
				if rj.Reason.Code != tencent.CodeIngressControllerUnknown {
					t.Errorf("lb-snat rejection = %+v, want %s", rj, tencent.CodeIngressControllerUnknown)
				}
			}},
		{name: "layer 7, ingress controller version from its ConfigMap",
			files: []string{"profiles/ipvs-clients-unversioned.yaml", "nodes/regular-3.yaml", "cases/tke-ingress-controller-2.8.yaml", "seed/private-ingress-keepalive.yaml"}, object: ingWeb,
			risk: core.RiskNone, reasons: []core.Code{"tke-l7-snat-on"}},
		{name: "layer 7, several Services per host: DNS steering unmet",
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "cases/ingresses.yaml"}, object: ing("path-split"),
			check: func(t *testing.T, res *core.Result) {
				o := offerFor(res.Offers, core.DNSSteering)
				if o.Ready() || o.Unmet[0].Reason.Code != tencent.CodeDNSSeveralBackends || !strings.Contains(o.Unmet[0].Reason.Message, "shop.example.com → api, web") {
					t.Errorf("dns-steering = %+v", o)
				}
			}},
		{name: "layer 7, one Service per host: one rewrite each",
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "cases/ingresses.yaml"}, object: ing("two-hosts"), remedy: core.DNSSteering,
			check: func(t *testing.T, res *core.Result) {
				for _, s := range []string{"rewrite name exact web.example.com web.default.svc.cluster.local", "rewrite name exact api.example.com api.default.svc.cluster.local"} {
					if !strings.Contains(res.Decision.Action, s) {
						t.Errorf("action %q lacks %q", res.Decision.Action, s)
					}
				}
			}},
	})
}

// Interception: prevent-loopback revisions, mixed clusters, eBPF, ipMode, unknown modes.
func TestInterception(t *testing.T) {
	runDialectCases(t, []dialectCase{
		{name: "prevent-loopback on a kube-proxy one revision too old has no effect",
			files: []string{"profiles/ipvs-kube-proxy-old.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("prevent-loopback"),
			risk: core.RiskAtRisk,
			check: func(t *testing.T, res *core.Result) {
				reasonContains(t, res.Assessment.Reasons, tencent.CodePreventLoopbackTooOld, "v1.18.4-tke.19", "v1.18.4-tke.20")
				if o := offerFor(res.Offers, core.InterceptVIP); !strings.HasPrefix(o.Action, "upgrade the kube-proxy DaemonSet image to v1.18.4-tke.20") {
					t.Errorf("intercept-vip action = %q, want the upgrade", o.Action)
				}
			}},
		{name: "prevent-loopback with kube-proxy unknown: intercepted, with a note to declare it",
			files: []string{"profiles/ipvs-unversioned.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("prevent-loopback"),
			risk: core.RiskNone, reasons: []core.Code{"tke-prevent-loopback"}, notes: []core.Code{"tke-prevent-loopback-unverified"},
			check: func(t *testing.T, res *core.Result) {
				reasonContains(t, res.Exposure.Notes, tencent.CodePreventLoopbackUnverified, "kubeProxyVersion", "v1.20.6-tke.12")
			}},
		{name: "prevent-loopback on a minor newer than the table is assumed to work (UNCONFIRMED)",
			files: []string{"profiles/ipvs-kube-proxy-1.28.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("prevent-loopback"),
			risk: core.RiskNone, reasons: []core.Code{"tke-prevent-loopback"}},
		{name: "StrictRevisions: a minor newer than the table is unverified",
			opts:  &tencent.Options{StrictRevisions: true},
			files: []string{"profiles/ipvs-kube-proxy-1.28.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("prevent-loopback"),
			risk: core.RiskNone, notes: []core.Code{"tke-prevent-loopback-unverified"}},
		{name: "Options override the revision table",
			opts:  &tencent.Options{PreventLoopbackMinimums: map[string]string{"1.28": "v1.28.3-tke.4"}},
			files: []string{"profiles/ipvs-kube-proxy-1.28.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("prevent-loopback"),
			risk: core.RiskAtRisk, reasons: []core.Code{"tke-prevent-loopback-kube-proxy-too-old"}},
		{name: "mixed cluster, no clients declared: the regular nodes decide",
			files: []string{"profiles/ipvs.yaml", "nodes/mixed.yaml", "cases/services.yaml"}, object: svc("private"),
			risk: core.RiskAtRisk, reasons: []core.Code{"tke-mixed-node-kinds", "tke-ipvs-not-intercepted"}},
		{name: "mixed cluster, clients on super nodes: intercepted",
			files: []string{"profiles/ipvs-clients.yaml", "nodes/mixed.yaml", "cases/services.yaml", "cases/clients.yaml"}, object: svc("private"),
			risk: core.RiskNone, reasons: []core.Code{"tke-client-node-kinds", "tke-super-node-intercepts"}},
		{name: "mixed cluster, clients on both kinds: the regular node decides",
			files: []string{"profiles/ipvs-clients.yaml", "nodes/mixed.yaml", "cases/services.yaml", "cases/clients.yaml", "cases/clients-regular.yaml"}, object: svc("private"),
			risk: core.RiskAtRisk,
			check: func(t *testing.T, res *core.Result) {
				reasonContains(t, res.Assessment.Reasons, tencent.CodeClientNodes, "eklet-subnet-1", "node-1")
			}},
		{name: "no Nodes in the input: regular nodes assumed",
			files: []string{"profiles/ipvs.yaml", "cases/services.yaml"}, object: svc("private"),
			risk: core.RiskAtRisk, worst: "unknown", reasons: []core.Code{"tke-node-kind-assumed", "placement-unknown"}},
		{name: "nftables: intercepted like iptables",
			files: []string{"profiles/nftables.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("private"),
			risk: core.RiskNone, reasons: []core.Code{"tke-nftables-intercepts"}},
		{name: "iptables, status ipMode Proxy, kube-proxy v1.30: through the CLB",
			files: []string{"profiles/iptables.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("ipmode-proxy"),
			risk: core.RiskAtRisk, reasons: []core.Code{"tke-status-ipmode"}},
		{name: "iptables, status ipMode Proxy, kube-proxy v1.26: ignored, intercepted",
			files: []string{"profiles/iptables-old-kube-proxy.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("ipmode-proxy"),
			risk: core.RiskNone, reasons: []core.Code{"tke-status-ipmode"}},
		{name: "iptables, status ipMode Proxy, kube-proxy v1.29: unknown",
			files: []string{"profiles/iptables-kube-proxy-1.29.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("ipmode-proxy"),
			risk: core.RiskUnknown, missing: []string{core.MissingIntercept}},
		{name: "IPVS ignores the defaulted ipMode VIP: still through the CLB",
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("ipmode-vip"),
			risk: core.RiskAtRisk, reasons: []core.Code{"tke-ipvs-not-intercepted"}},
		{name: "eBPF without ipMode: unknown, tentative decision",
			files: []string{"profiles/ebpf.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("private"),
			risk: core.RiskUnknown, missing: []string{core.MissingIntercept}, reasons: []core.Code{"tke-ebpf-undocumented"},
			check: func(t *testing.T, res *core.Result) {
				if !res.Decision.Tentative {
					t.Error("decision is not tentative")
				}
				if rj, _ := rejectionFor(res.Decision, core.InterceptVIP); rj.Reason.Code != tencent.CodePreventLoopbackIPVSOnly {
					t.Errorf("intercept-vip rejection = %+v", rj)
				}
			}},
		{name: "eBPF, ipMode VIP: intercepted",
			files: []string{"profiles/ebpf.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("ipmode-vip"),
			risk: core.RiskNone, reasons: []core.Code{"tke-status-ipmode"}},
		{name: "eBPF, ipMode Proxy: through the CLB",
			files: []string{"profiles/ebpf.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("ipmode-proxy"),
			risk: core.RiskAtRisk, reasons: []core.Code{"tke-status-ipmode"}},
		{name: "eBPF, ipMode Proxy, Cilium 1.16: ignored, intercepted",
			files: []string{"profiles/ebpf-cilium-1.16.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("ipmode-proxy"),
			risk: core.RiskNone},
		{name: "proxy mode unknown: unknown, prevent-loopback offer unmet",
			files: []string{"profiles/unknown.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("private"),
			risk: core.RiskUnknown, missing: []string{core.MissingIntercept}, reasons: []core.Code{"tke-proxy-mode-unknown"},
			check: func(t *testing.T, res *core.Result) {
				o := offerFor(res.Offers, core.InterceptVIP)
				if o.Ready() || o.Unmet[0].Kind != core.PreconditionUnknown {
					t.Errorf("intercept-vip = %+v, want an unknown precondition", o)
				}
			}},
		{name: "iptables: prevent-loopback has no effect",
			files: []string{"profiles/iptables.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("prevent-loopback"),
			risk: core.RiskNone, notes: []core.Code{"tke-prevent-loopback-no-effect"}},
	})
}

// Scope and source NAT.
func TestScopeAndSourceNAT(t *testing.T) {
	runDialectCases(t, []dialectCase{
		{name: "existing CLB: scope unknown", files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("existing-lb"),
			risk: core.RiskUnknown, missing: []string{core.MissingScope}, reasons: []core.Code{"tke-existing-lb"}},
		{name: "existing CLB declared private: loopguard.io wins", files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("existing-lb-declared"),
			risk: core.RiskAtRisk, reasons: []core.Code{"tke-existing-lb", "loopguard-annotation"}},
		{name: "existing CLB for an Ingress: scope unknown", files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "cases/ingresses.yaml"}, object: ing("existing-lb"),
			risk: core.RiskUnknown, missing: []string{core.MissingScope}},
		{name: "SNAT on some ports only: not source-NATed, names the port", files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("partial-snat"),
			risk: core.RiskAtRisk,
			check: func(t *testing.T, res *core.Result) {
				reasonContains(t, res.Assessment.Reasons, tencent.CodeL4SNATOff, "UDP:53")
				if r, _ := reasonFor(res.Assessment.Reasons, tencent.CodeL4SNATOff); strings.Contains(r.Message, "TCP:53") {
					t.Errorf("TCP:53 has SNAT but is named: %q", r.Message)
				}
				if o := offerFor(res.Offers, core.LBSourceNAT); !strings.Contains(o.Action, "in TkeServiceConfig default/dns-snat") {
					t.Errorf("lb-snat action = %q, want the referenced config", o.Action)
				}
			}},
		{name: "referenced TkeServiceConfig not in the input: unknown", files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("config-missing"),
			risk: core.RiskUnknown, missing: []string{core.MissingLBSourceNAT}, reasons: []core.Code{"tke-service-config-missing"}},
		{name: "SNAT declared with loopguard.io: no loop", files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("snat-declared"),
			risk: core.RiskNone, reasons: []core.Code{"tke-no-service-config", "loopguard-annotation", "lb-source-nat"}},
		{name: "layer 7, controller unknown, snatEnable only: unknown", files: []string{"profiles/ipvs-clients-unversioned.yaml", "nodes/regular-3.yaml", "cases/ingresses.yaml"}, object: ing("snat-only"),
			risk: core.RiskUnknown, missing: []string{core.MissingLBSourceNAT}, reasons: []core.Code{"tke-l7-snat-controller-version"}},
		{name: "layer 7, controller unknown, both fields: no loop", files: []string{"profiles/ipvs-clients-unversioned.yaml", "nodes/regular-3.yaml", "cases/ingresses.yaml"}, object: ing("both-fields"),
			risk: core.RiskNone, reasons: []core.Code{"tke-l7-snat-on"}},
		{name: "layer 7, controller v2.9.0, keepaliveEnable only: unknown", files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "cases/ingresses.yaml"}, object: ing("keepalive-only"),
			risk: core.RiskUnknown, notes: []core.Code{"tke-l7-snat-controller-version"}},
		{name: "layer 7, controller v2.8.1, snatEnable only: the old controller ignores it", files: []string{"profiles/ipvs-controller-2.8.yaml", "nodes/regular-3.yaml", "cases/ingresses.yaml"}, object: ing("snat-only"),
			risk: core.RiskAtRisk, reasons: []core.Code{"tke-l7-snat-off"}, notes: []core.Code{"tke-l7-snat-controller-version"}},
		{name: "layer 7 with TLS: the HTTPS:443 listener lacks SNAT", files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "cases/ingresses.yaml"}, object: ing("tls"),
			risk: core.RiskAtRisk,
			check: func(t *testing.T, res *core.Result) {
				reasonContains(t, res.Assessment.Reasons, tencent.CodeL7SNATOff, "HTTPS:443")
			}},
		{name: "layer 7 with rule-mix: both listeners have SNAT", files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "cases/ingresses.yaml"}, object: ing("rule-mix"),
			risk: core.RiskNone,
			check: func(t *testing.T, res *core.Result) {
				reasonContains(t, res.Assessment.Reasons, tencent.CodeL7SNATOn, "HTTP:80, HTTPS:443")
			}},
		{name: "layer 7 with custom listen ports: unknown", files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "cases/ingresses.yaml"}, object: ing("listen-ports"),
			risk: core.RiskUnknown, reasons: []core.Code{"tke-ingress-listen-ports"}},
		{name: "layer 7 direct-access: direct to Pod", files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "cases/ingresses.yaml"}, object: ing("direct"),
			risk: core.RiskAtRisk, worst: "0.5", reasons: []core.Code{"tke-direct-access", "backend-share"}},
		{name: "mode: skip on an ingress controller older than v2.10.0 is ignored",
			files: []string{"profiles/ipvs.yaml", "nodes/regular-3.yaml", "cases/ingresses.yaml"}, object: ing("skipped"),
			risk: core.RiskAtRisk, notes: []core.Code{"tke-mode-skip-ignored"}},
		{name: "mode: skip on a service controller older than v2.10.0 is ignored",
			files: []string{"profiles/ipvs-service-controller-2.9.yaml", "nodes/regular-3.yaml", "cases/services.yaml"}, object: svc("skipped"),
			risk: core.RiskAtRisk, notes: []core.Code{"tke-mode-skip-ignored"}},
	})
}

// Objects the dialect does not assess return errors matching core.ErrNotExposed.
func TestNotExposed(t *testing.T) {
	// Controller versions unknown: mode: skip is taken to be honoured.
	w := load(t, "profiles/ipvs-unversioned.yaml", "nodes/regular-3.yaml", "cases/services.yaml", "cases/ingresses.yaml")
	d := tencent.NewDialect(nil)
	for _, tc := range []struct {
		object string
		want   string
	}{
		{svc("cluster-ip"), "not LoadBalancer"},
		{svc("skipped"), "tke-mode-skip"},
		{svc("other-class"), "tke-load-balancer-class"},
		{ing("skipped"), "tke-mode-skip"},
		{ing("nginx-class"), `kubernetes.io/ingress.class] is "nginx"`},
		{ing("nginx-class-name"), `spec.ingressClassName is "nginx"`},
		{"Node//node-1", "Services and Ingresses only"},
	} {
		t.Run(tc.object, func(t *testing.T) {
			tr, err := d.Translate(w.object(t, tc.object), w.cluster)
			if !errors.Is(err, core.ErrNotExposed) || tr != nil {
				t.Fatalf("Translate = %v, %v; want nil and ErrNotExposed", tr, err)
			}
			if errors.Is(err, core.ErrInvalid) {
				t.Errorf("%v also matches ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
	if _, err := d.Translate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tencent.IngressControllerConfigMap, Namespace: "kube-system"}}, w.cluster); !errors.Is(err, core.ErrNotExposed) {
		t.Errorf("Translate(ConfigMap) = %v", err)
	}
	if _, err := d.Translate(nil, w.cluster); !errors.Is(err, core.ErrNotExposed) {
		t.Errorf("Translate(nil) = %v", err)
	}
	var nilSvc *corev1.Service
	if _, err := d.Translate(nilSvc, w.cluster); !errors.Is(err, core.ErrNotExposed) {
		t.Errorf("Translate(typed nil) = %v", err)
	}
	if _, err := d.Translate(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, nil); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("Translate(nil cluster) = %v", err)
	}
}

func TestIngressClassQCloud(t *testing.T) {
	w := load(t, "profiles/ipvs.yaml", "nodes/regular-3.yaml", "cases/ingresses.yaml", "seed/public-ingress.yaml")
	d := tencent.NewDialect(nil)
	for _, ref := range []string{ing("two-hosts") /* spec.ingressClassName: qcloud */, ing("local") /* no class */, ingWeb /* annotation qcloud */} {
		if _, err := d.Translate(w.object(t, ref), w.cluster); err != nil {
			t.Errorf("%s: %v", ref, err)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, m := range []map[string]string{
		{"1.22": "latest"},
		{"1.22": "v1.24.4-tke.1"},
		{"1.22": "v1.22.5"},
	} {
		opts := &tencent.Options{PreventLoopbackMinimums: m}
		if err := opts.Validate(); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("Validate(%v) = %v, want ErrInvalid", m, err)
		}
		w := load(t, "profiles/ipvs.yaml", "seed/private-service.yaml")
		if _, err := tencent.NewDialect(opts).Translate(w.object(t, svcWeb), w.cluster); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("Translate with %v = %v, want ErrInvalid", m, err)
		}
	}
	ok := &tencent.Options{PreventLoopbackMinimums: map[string]string{"1.22": "v1.22.5-tke.1", "1.12": ""}}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate = %v", err)
	}
	var none *tencent.Options
	if err := none.Validate(); err != nil {
		t.Errorf("nil Validate = %v", err)
	}
}

func TestNodeKindOption(t *testing.T) {
	// A host that knows its super nodes by another label can say so.
	opts := &tencent.Options{NodeKind: func(n *corev1.Node) tencent.NodeKind {
		if n.Name == "node-1" || n.Name == "node-2" || n.Name == "node-3" {
			return tencent.SuperNode
		}
		return ""
	}}
	w := load(t, "profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-service.yaml")
	res, err := core.Evaluate(tencent.NewDialect(opts), w.object(t, svcWeb), w.cluster, core.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Assessment.Risk != core.RiskNone {
		t.Errorf("risk = %s, want none (every node is a super node)", res.Assessment.Risk)
	}
}
