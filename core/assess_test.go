package core

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func codes(rs []Reason) []Code {
	out := make([]Code, len(rs))
	for i, r := range rs {
		out[i] = r.Code
	}
	return out
}

func hasCode(rs []Reason, c Code) bool {
	for _, r := range rs {
		if r.Code == c {
			return true
		}
	}
	return false
}

// private L4 exposure through the LB without source NAT: the base of most cases.
func ThroughLBExposure(mod func(*Exposure)) *Exposure {
	e := &Exposure{
		Object:      ObjectRef{Kind: "Service", Namespace: "default", Name: "web"},
		Scope:       Private,
		Layer:       Layer4,
		Protocols:   TCP,
		Intercept:   No,
		LBSourceNAT: No,
		Binding:     NodePortCluster,
		Placement:   Placement{NodesBehindLB: 3},
	}
	if mod != nil {
		mod(e)
	}
	return e
}

func TestAssess(t *testing.T) {
	type want struct {
		risk      Risk
		symptom   Symptom
		path      Path
		worst     float64 // NaN for unknown
		declared  float64 // NaN for unknown
		source    SourceKind
		clientIP  ClientIP
		missing   []string
		mustCodes []Code
	}
	nan := math.NaN()
	cases := map[string]struct {
		reason string
		in     *Exposure
		want   want
	}{
		"ServiceNameAccess": {
			reason: "clients using the Service name never touch the LB",
			in:     ThroughLBExposure(func(e *Exposure) { e.Access = AccessServiceName }),
			want:   want{risk: RiskNone, symptom: SymptomNone, worst: 0, declared: nan, source: SourceClientPod, clientIP: ClientIPKept, mustCodes: []Code{"service-name-access"}},
		},
		"PublicLB": {
			reason: "public LBs see the node's egress address",
			in:     ThroughLBExposure(func(e *Exposure) { e.Scope = Public }),
			want:   want{risk: RiskNone, symptom: SymptomNone, worst: 0, declared: nan, source: SourceUnknown, mustCodes: []Code{"public-lb"}},
		},
		"Intercepted": {
			reason: "a node that intercepts the VIP never sends the packet to the LB",
			in:     ThroughLBExposure(func(e *Exposure) { e.Intercept = Yes; e.InterceptMasquerades = No }),
			want:   want{risk: RiskNone, symptom: SymptomNone, path: PathVIP, worst: 0, declared: nan, source: SourceClientPod, clientIP: ClientIPKept, mustCodes: []Code{"node-intercepts-vip"}},
		},
		"InterceptedSourceUnknownWithoutProxyMode": {
			in:   ThroughLBExposure(func(e *Exposure) { e.Intercept = Yes }),
			want: want{risk: RiskNone, symptom: SymptomNone, path: PathVIP, worst: 0, declared: nan, source: SourceUnknown},
		},
		"InterceptedByUserspaceProxy": {
			reason: "a proxy that forwards from the node shows the node's address",
			in:     ThroughLBExposure(func(e *Exposure) { e.Intercept = Yes; e.InterceptMasquerades = Yes }),
			want:   want{risk: RiskNone, symptom: SymptomNone, path: PathVIP, worst: 0, declared: nan, source: SourceNode, clientIP: ClientIPLost},
		},
		"InterceptedEvenWhenScopeUnknown": {
			reason: "interception alone rules the loop out",
			in: ThroughLBExposure(func(e *Exposure) {
				e.Intercept = Yes
				e.InterceptMasquerades = No
				e.Scope = ScopeUnknown
				e.LBSourceNAT = Unknown
			}),
			want: want{risk: RiskNone, symptom: SymptomNone, path: PathVIP, worst: 0, declared: nan, source: SourceClientPod, clientIP: ClientIPKept},
		},
		"ThreeNodesClusterPolicy": {
			reason: "NodePort on every node: 1/N per connection; layer 4 does not retry; kube-proxy masquerades NodePort traffic",
			in:     ThroughLBExposure(nil),
			want:   want{risk: RiskAtRisk, symptom: SymptomIntermittent, path: PathProxy, worst: 1.0 / 3, declared: nan, source: SourceNode, clientIP: ClientIPLost, mustCodes: []Code{"through-lb", "nodeport-cluster-any-node", "same-node-loop", "l4-no-retry", "source-nodeport-masquerade"}},
		},
		"SingleNodeAlwaysFails": {
			reason: "one node: every connection loops",
			in:     ThroughLBExposure(func(e *Exposure) { e.Placement.NodesBehindLB = 1 }),
			want:   want{risk: RiskAtRisk, symptom: SymptomConnectionFailure, path: PathProxy, worst: 1, declared: nan, source: SourceNode, clientIP: ClientIPLost, mustCodes: []Code{"always-loops"}},
		},
		"Layer7Delay": {
			reason: "layer 7 retries another backend after ~4 s",
			in: ThroughLBExposure(func(e *Exposure) {
				e.Layer = Layer7
				e.Protocols = HTTP
				e.Binding = NodePortLocal
				e.Placement = Placement{Backends: []NodeBackends{{"n1", 1}, {"n2", 2}}}
			}),
			want: want{risk: RiskAtRisk, symptom: SymptomDelay, path: PathProxy, worst: 2.0 / 3, declared: nan, source: SourceClientPod, clientIP: ClientIPKept, mustCodes: []Code{"l7-retry-delay"}},
		},
		"Layer7SingleNodeFails": {
			reason: "layer 7 on one node has no other backend to retry",
			in: ThroughLBExposure(func(e *Exposure) {
				e.Layer = Layer7
				e.Placement.NodesBehindLB = 1
			}),
			want: want{risk: RiskAtRisk, symptom: SymptomConnectionFailure, path: PathProxy, worst: 1, declared: nan, source: SourceNode, clientIP: ClientIPLost},
		},
		"LBSourceNATTCP": {
			reason: "SNAT makes replies return through the LB; TCP can recover the client with PROXY protocol",
			in:     ThroughLBExposure(func(e *Exposure) { e.LBSourceNAT = Yes; e.Binding = DirectToPod }),
			want:   want{risk: RiskNone, symptom: SymptomNone, path: PathProxy, worst: 0, declared: nan, source: SourceLB, clientIP: ClientIPLost, mustCodes: []Code{"lb-source-nat"}},
		},
		"LBSourceNATBehindNodePortClusterShowsNode": {
			reason: "kube-proxy's NodePort masquerade replaces the LB's address; PROXY protocol survives it (internal/dataplane)",
			in:     ThroughLBExposure(func(e *Exposure) { e.LBSourceNAT = Yes; e.ProxyProtocol = Yes }),
			want:   want{risk: RiskNone, symptom: SymptomNone, path: PathProxy, worst: 0, declared: nan, source: SourceNode, clientIP: ClientIPProxyProtocol, mustCodes: []Code{"source-nodeport-masquerade"}},
		},
		"LBSourceNATTCPWithProxyProtocol": {
			in:   ThroughLBExposure(func(e *Exposure) { e.LBSourceNAT = Yes; e.ProxyProtocol = Yes; e.Binding = NodePortLocal }),
			want: want{risk: RiskNone, symptom: SymptomNone, path: PathProxy, worst: 0, declared: nan, source: SourceLB, clientIP: ClientIPProxyProtocol},
		},
		"LBSourceNATUDP": {
			reason: "UDP behind SNAT loses the client address even with PROXY protocol on TCP ports",
			in: ThroughLBExposure(func(e *Exposure) {
				e.LBSourceNAT = Yes
				e.Protocols = TCP | UDP
				e.ProxyProtocol = Yes
				e.Binding = DirectToPod
			}),
			want: want{risk: RiskNone, symptom: SymptomNone, path: PathProxy, worst: 0, declared: nan, source: SourceLB, clientIP: ClientIPLost},
		},
		"LBSourceNATLayer7": {
			in:   ThroughLBExposure(func(e *Exposure) { e.LBSourceNAT = Yes; e.Layer = Layer7; e.Protocols = HTTP }),
			want: want{risk: RiskNone, symptom: SymptomNone, path: PathProxy, worst: 0, declared: nan, source: SourceNode, clientIP: ClientIPForwardedFor},
		},
		"LBSourceNATWithInterceptUnknown": {
			reason: "SNAT rules the loop out whichever path is taken; the source is then unknown",
			in:     ThroughLBExposure(func(e *Exposure) { e.LBSourceNAT = Yes; e.Intercept = Unknown }),
			want:   want{risk: RiskNone, symptom: SymptomNone, worst: 0, declared: nan, source: SourceUnknown},
		},
		"LocalBindingShareOfBackends": {
			reason: "externalTrafficPolicy Local: the share of backends on the client's node",
			in: ThroughLBExposure(func(e *Exposure) {
				e.Binding = NodePortLocal
				e.Placement = Placement{Backends: []NodeBackends{{"n1", 3}, {"n2", 1}}, ClientNodes: []string{"n2", "n3"}}
			}),
			want: want{risk: RiskAtRisk, symptom: SymptomIntermittent, path: PathProxy, worst: 0.75, declared: 0.25, source: SourceClientPod, clientIP: ClientIPKept, mustCodes: []Code{"backend-share", "declared-clients"}},
		},
		"DirectToPodAllBackendsBesideClient": {
			reason: "every backend on one node: a client there always loops",
			in: ThroughLBExposure(func(e *Exposure) {
				e.Binding = DirectToPod
				e.Placement = Placement{Backends: []NodeBackends{{"n1", 2}}, ClientNodes: []string{"n1"}}
			}),
			want: want{risk: RiskAtRisk, symptom: SymptomConnectionFailure, path: PathProxy, worst: 1, declared: 1, source: SourceClientPod, clientIP: ClientIPKept},
		},
		"DeclaredClientsApartButNotEnforced": {
			reason: "clients apart today are not safe tomorrow without a scheduling rule",
			in: ThroughLBExposure(func(e *Exposure) {
				e.Binding = NodePortLocal
				e.Placement = Placement{Backends: []NodeBackends{{"n1", 1}}, ClientNodes: []string{"n2"}, Separated: No}
			}),
			want: want{risk: RiskAtRisk, symptom: SymptomConnectionFailure, path: PathProxy, worst: 1, declared: 0, source: SourceClientPod, clientIP: ClientIPKept},
		},
		"SeparatedClients": {
			reason: "anti-affinity plus Local binding makes the loop impossible",
			in: ThroughLBExposure(func(e *Exposure) {
				e.Binding = NodePortLocal
				e.Placement = Placement{Backends: []NodeBackends{{"n1", 1}}, ClientNodes: []string{"n2"}, Separated: Yes}
			}),
			want: want{risk: RiskNone, symptom: SymptomNone, path: PathProxy, worst: 0, declared: 0, source: SourceClientPod, clientIP: ClientIPKept, mustCodes: []Code{"clients-separated"}},
		},
		"SeparationDoesNotHelpClusterPolicy": {
			reason: "with Cluster policy every node receives connections, separation or not",
			in:     ThroughLBExposure(func(e *Exposure) { e.Placement.Separated = Yes }),
			want:   want{risk: RiskAtRisk, symptom: SymptomIntermittent, path: PathProxy, worst: 1.0 / 3, declared: nan, source: SourceNode, clientIP: ClientIPLost},
		},
		"ClusterPolicyClientOffTheLBNodes": {
			reason: "a client on a node the LB never sends to is never sent back to its own node (internal/dataplane)",
			in: ThroughLBExposure(func(e *Exposure) {
				e.Placement = Placement{NodesBehindLB: 2, LBNodes: []string{"n2", "n3"}, ClientNodes: []string{"n1"}}
			}),
			want: want{risk: RiskAtRisk, symptom: SymptomIntermittent, path: PathProxy, worst: 0.5, declared: 0, source: SourceNode, clientIP: ClientIPLost},
		},
		"ClusterPolicyClientOnAnLBNode": {
			in: ThroughLBExposure(func(e *Exposure) {
				e.Placement = Placement{NodesBehindLB: 2, LBNodes: []string{"n2", "n3"}, ClientNodes: []string{"n1", "n3"}}
			}),
			want: want{risk: RiskAtRisk, symptom: SymptomIntermittent, path: PathProxy, worst: 0.5, declared: 0.5, source: SourceNode, clientIP: ClientIPLost, mustCodes: []Code{"declared-clients"}},
		},
		"BridgeNetfilterOffBreaksServiceName": {
			reason: "with bridge-nf-call-iptables off a same-node backend replies over the bridge, never un-DNATed (internal/dataplane)",
			in: ThroughLBExposure(func(e *Exposure) {
				e.Access = AccessServiceName
				e.Hairpin = &HairpinFacts{Dataplane: DataplaneKubeProxy, SelfMasquerade: Yes, Attachment: AttachmentBridge, BridgeNetfilter: No}
				e.Placement = Placement{Backends: []NodeBackends{{"n1", 1}, {"n2", 3}}, ClientNodes: []string{"n1"}}
			}),
			want: want{risk: RiskAtRisk, symptom: SymptomIntermittent, worst: 0.75, declared: 0.25, source: SourceClientPod, clientIP: ClientIPKept, mustCodes: []Code{"bridge-netfilter-off"}},
		},
		"BridgeNetfilterOffBreaksInterceptionWithoutMasquerade": {
			in: ThroughLBExposure(func(e *Exposure) {
				e.Intercept, e.InterceptMasquerades = Yes, No
				e.Hairpin = &HairpinFacts{Dataplane: DataplaneKubeProxy, SelfMasquerade: Yes, Attachment: AttachmentBridge, BridgeNetfilter: No}
				e.Placement = Placement{Backends: []NodeBackends{{"n1", 1}}, ClientNodes: []string{"n1"}}
			}),
			want: want{risk: RiskAtRisk, symptom: SymptomConnectionFailure, path: PathVIP, worst: 1, declared: 1, source: SourceClientPod, clientIP: ClientIPKept, mustCodes: []Code{"bridge-netfilter-off"}},
		},
		"BridgeNetfilterOffHarmlessWithMasquerade": {
			reason: "the node's masquerade makes the reply come back to the node, which un-DNATs it",
			in: ThroughLBExposure(func(e *Exposure) {
				e.Intercept, e.InterceptMasquerades = Yes, Yes
				e.Hairpin = &HairpinFacts{Dataplane: DataplaneKubeProxy, SelfMasquerade: Yes, Attachment: AttachmentBridge, BridgeNetfilter: No}
			}),
			want: want{risk: RiskNone, symptom: SymptomNone, path: PathVIP, worst: 0, declared: nan, source: SourceNode, clientIP: ClientIPLost},
		},
		"SeparationRulesOutLoopWhenSNATUnknown": {
			in: ThroughLBExposure(func(e *Exposure) {
				e.LBSourceNAT = Unknown
				e.Binding = DirectToPod
				e.Placement = Placement{Backends: []NodeBackends{{"n1", 1}}, ClientNodes: []string{"n2"}, Separated: Yes}
			}),
			want: want{risk: RiskNone, symptom: SymptomNone, path: PathProxy, worst: 0, declared: 0, source: SourceUnknown},
		},
		"InterceptUnknown": {
			in:   ThroughLBExposure(func(e *Exposure) { e.Intercept = Unknown }),
			want: want{risk: RiskUnknown, symptom: SymptomIntermittent, worst: 1.0 / 3, declared: nan, source: SourceUnknown, missing: []string{MissingIntercept}, mustCodes: []Code{"intercept-unknown"}},
		},
		"EverythingUnknown": {
			in: &Exposure{Layer: Layer4},
			want: want{risk: RiskUnknown, symptom: SymptomIntermittent, worst: nan, declared: nan, source: SourceUnknown,
				missing: []string{MissingScope, MissingIntercept, MissingLBSourceNAT}, mustCodes: []Code{"binding-unknown"}},
		},
		"PlacementUnknown": {
			in:   ThroughLBExposure(func(e *Exposure) { e.Placement = Placement{} }),
			want: want{risk: RiskAtRisk, symptom: SymptomIntermittent, path: PathProxy, worst: nan, declared: nan, source: SourceNode, clientIP: ClientIPLost, mustCodes: []Code{"placement-unknown"}},
		},
		"LocalBindingNoEndpoints": {
			in:   ThroughLBExposure(func(e *Exposure) { e.Binding = NodePortLocal; e.Placement = Placement{} }),
			want: want{risk: RiskAtRisk, symptom: SymptomIntermittent, path: PathProxy, worst: nan, declared: nan, source: SourceClientPod, clientIP: ClientIPKept, mustCodes: []Code{"placement-unknown"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Assess(tc.in)
			w := tc.want
			if got.Risk != w.risk || got.Symptom != w.symptom || got.Path != w.path {
				t.Errorf("%s\nrisk/symptom/path = %s/%s/%q, want %s/%s/%q\nreasons: %v", tc.reason, got.Risk, got.Symptom, got.Path, w.risk, w.symptom, w.path, codes(got.Reasons))
			}
			checkP(t, "worst case", got.WorstCase, w.worst)
			checkP(t, "declared clients", got.DeclaredClients, w.declared)
			if got.Source.Kind != w.source || got.Source.ClientIP != w.clientIP {
				t.Errorf("source = %+v, want %s/%s", got.Source, w.source, w.clientIP)
			}
			if diff := cmp.Diff(w.missing, got.Missing); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
			for _, c := range w.mustCodes {
				if !hasCode(got.Reasons, c) {
					t.Errorf("reason %s missing from %v", c, codes(got.Reasons))
				}
			}
			for _, r := range got.Reasons {
				if !documented[r.Code] {
					t.Errorf("reason code %s is not in Rules()", r.Code)
				}
			}
			if got.Object != tc.in.Object {
				t.Errorf("object = %v, want %v", got.Object, tc.in.Object)
			}
		})
	}
}

var documented = func() map[Code]bool {
	m := map[Code]bool{}
	for _, r := range Rules() {
		m[r.Code] = true
	}
	return m
}()

func checkP(t *testing.T, what string, got Probability, want float64) {
	t.Helper()
	if math.IsNaN(want) {
		if got.Known() {
			t.Errorf("%s probability = %v, want unknown", what, got)
		}
		return
	}
	if !got.Known() || math.Abs(got.Value()-want) > 1e-9 {
		t.Errorf("%s probability = %v, want %v", what, got, want)
	}
}

func TestAssessKeepsDialectReasonsFirstAndDoesNotMutateInput(t *testing.T) {
	dialect := Reason{Code: "tke-ipvs-no-intercept", Message: "IPVS does not intercept", Source: "seed"}
	e := ThroughLBExposure(func(e *Exposure) { e.Reasons = []Reason{dialect} })
	before := *e
	a := Assess(e)
	if len(a.Reasons) == 0 || a.Reasons[0] != dialect {
		t.Fatalf("first reason = %v, want the dialect's", a.Reasons)
	}
	a.Reasons[0].Message = "changed"
	if e.Reasons[0].Message != dialect.Message {
		t.Error("Assess shares the exposure's Reasons backing array")
	}
	if !cmp.Equal(before, *e, cmp.AllowUnexported(Probability{})) {
		t.Error("Assess mutated its input")
	}
}

func TestProbabilityJSON(t *testing.T) {
	for _, tc := range []struct {
		p    Probability
		want string
	}{{knownP(0.25), "0.25"}, {knownP(1), "1"}, {Probability{}, "null"}, {knownP(1.0 / 3), "0.333333"}} {
		b, err := tc.p.MarshalJSON()
		if err != nil || string(b) != tc.want {
			t.Errorf("%v → %s, %v; want %s", tc.p, b, err, tc.want)
		}
		var back Probability
		if err := back.UnmarshalJSON(b); err != nil || back.Known() != tc.p.Known() {
			t.Errorf("round trip of %s: %v %v", b, back, err)
		}
	}
}

func TestFactJSON(t *testing.T) {
	for _, f := range []Fact{Unknown, Yes, No} {
		b, _ := f.MarshalJSON()
		var back Fact
		if err := back.UnmarshalJSON(b); err != nil || back != f {
			t.Errorf("%v → %s → %v (%v)", f, b, back, err)
		}
	}
	var f Fact
	if err := f.UnmarshalJSON([]byte(`"yes"`)); err == nil {
		t.Error("a string is not a fact")
	}
}

// TestReasonsAddedBoundsAssess: over every combination of the facts Assess branches on, the
// Reasons slice Assess sizes up front is never grown (its capacity is what reasonsAdded said)
// and never more than one reason larger than what it holds.
func TestReasonsAddedBoundsAssess(t *testing.T) {
	facts := []Fact{Unknown, Yes, No}
	placements := []Placement{
		{},
		{NodesBehindLB: 3, LBNodes: []string{"n1", "n2", "n3"}, Backends: []NodeBackends{{"n1", 2}, {"n2", 1}}, ClientNodes: []string{"n2"}},
		{NodesBehindLB: 1, Backends: []NodeBackends{{"n1", 1}}},
		{NodesBehindLB: 2, Backends: []NodeBackends{{"n1", 1}}, ClientNodes: []string{"n9"}, LBNodes: []string{"n1"}, Separated: Yes},
	}
	hairpins := []*HairpinFacts{nil, {Dataplane: DataplaneKubeProxy, Attachment: AttachmentBridge, BridgeNetfilter: No}}
	n := 0
	for _, access := range []ClientAccess{AccessLBAddress, AccessServiceName} {
		for _, scope := range []Scope{ScopeUnknown, Private, Public} {
			for _, intercept := range facts {
				for _, masq := range facts {
					for _, snat := range facts {
						for _, binding := range []Binding{BindingUnknown, NodePortCluster, NodePortLocal, DirectToPod} {
							for _, pl := range placements {
								for _, needs := range []LBDependence{{}, {ProxyHeader: Yes, TLS: Yes, L7Routing: Yes}, {ProxyHeader: No, TLS: No, L7Routing: No}} {
									for _, layer := range []Layer{Layer4, Layer7} {
										for _, h := range hairpins {
											e := &Exposure{Access: access, Scope: scope, Intercept: intercept, InterceptMasquerades: masq,
												LBSourceNAT: snat, Binding: binding, Placement: pl, Needs: needs, Layer: layer,
												Protocols: TCP, Hairpin: h, Reasons: []Reason{{Code: "dialect"}}}
											a := Assess(e)
											want := len(e.Reasons) + reasonsAdded(e, e.dependence())
											if cap(a.Reasons) != want || len(a.Reasons) < want-1 {
												t.Fatalf("%+v: %d reasons in a slice of %d, reasonsAdded says %d", e, len(a.Reasons), cap(a.Reasons), want)
											}
											n++
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d exposures", n)
}
