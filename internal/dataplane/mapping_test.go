package dataplane

import (
	"testing"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/internal/netlab"
)

// These tests need no sandbox: they check the translation between the two models, which is
// only as good as the comparison it feeds.

// TestEnumeration checks the shape of the case list: the full cross products, unique names,
// one description per side.
func TestEnumeration(t *testing.T) {
	cases := allCases()
	count := map[family]int{}
	names := map[string]bool{}
	for i := range cases {
		c := &cases[i]
		count[c.family]++
		if names[c.name] {
			t.Errorf("case %q twice", c.name)
		}
		names[c.name] = true
		if c.notExpressible != "" {
			if c.exposure != nil || c.hairpin != nil {
				t.Errorf("%s: not expressible but described to the model", c.name)
			}
			continue
		}
		if (c.exposure == nil) == (c.hairpin == nil) {
			t.Errorf("%s: want exactly one of Exposure and HairpinFacts", c.name)
		}
		if c.hairpin != nil && (c.scenario.Client != c.scenario.Service.Endpoint || c.scenario.Dial != netlab.DialClusterIP) {
			t.Errorf("%s: a Pod-to-own-Service case must dial its own ClusterIP", c.name)
		}
	}
	want := map[family]int{
		familyLB:          len(interceptions) * 2 * len(bindings) * len(placements) * len(attachments),
		familyServiceName: len(placements) * len(attachments),
		familySelf:        2 * 2 * 2 * 2,
	}
	for f, n := range want {
		if count[f] != n {
			t.Errorf("%s cases: got %d, want %d", f, count[f], n)
		}
	}
	if count[familySeed] == 0 {
		t.Error("no seed rows")
	}
}

// TestPlacementMeansWhatItSays checks that "the LB picks the client's node" is declared
// probability 1 and "another node" 0 in the model. Under NodePortCluster "another node" means
// the client's node is not behind the LB (Placement.LBNodes).
func TestPlacementMeansWhatItSays(t *testing.T) {
	for _, c := range allCases() {
		if c.exposure == nil || !throughLB(&c) || c.dims.lbSNAT {
			continue
		}
		a := core.Assess(c.exposure)
		want := 1.0
		if c.dims.placement == lbPicksOtherNode {
			want = 0
		}
		if a.Risk != core.RiskAtRisk || !a.DeclaredClients.Known() || a.DeclaredClients.Value() != want {
			t.Errorf("%s: Assess = %s, declared %v; want at-risk, declared %v", c.name, a.Risk, a.DeclaredClients, want)
		}
	}
}

// TestSourceKind checks the mapping from netlab's address owners to core's source kinds.
func TestSourceKind(t *testing.T) {
	tests := []struct {
		origin netlab.Origin
		client string
		want   core.SourceKind
	}{
		{netlab.Origin{Kind: netlab.OriginPod, Name: "client"}, "client", core.SourceClientPod},
		{netlab.Origin{Kind: netlab.OriginPod, Name: "app"}, "app", core.SourceClientPod},
		{netlab.Origin{Kind: netlab.OriginPod, Name: "backend"}, "client", "other-pod/backend"},
		{netlab.Origin{Kind: netlab.OriginLB}, "client", core.SourceLB},
		{netlab.Origin{Kind: netlab.OriginNode, Name: "n1"}, "client", core.SourceNode},
		// A bridge node's cni0 address is a node address: kube-proxy's masquerade picks the
		// address of the interface toward the backend.
		{netlab.Origin{Kind: netlab.OriginNodeBridge, Name: "n1"}, "client", core.SourceNode},
		{netlab.Origin{}, "client", "unowned-address"},
	}
	for _, tt := range tests {
		if got := sourceKind(tt.origin, tt.client); got != tt.want {
			t.Errorf("sourceKind(%v, %q) = %q, want %q", tt.origin, tt.client, got, tt.want)
		}
	}
}

// TestCompare checks which differences count.
func TestCompare(t *testing.T) {
	conn := func(s core.SourceKind) verdict { return verdict{connected: core.Yes, source: s} }
	fail := func(f failure) verdict { return verdict{connected: core.No, failure: f} }
	tests := []struct {
		name          string
		model, kernel verdict
		abstains      bool
		want          string // "" for agreement, else the field
	}{
		{"same", conn(core.SourceNode), conn(core.SourceNode), false, ""},
		{"source differs", conn(core.SourceLB), conn(core.SourceNode), false, "source"},
		{"abstained", conn(core.SourceUnknown), conn(core.SourceNode), true, ""},
		{"unknown without reason", conn(core.SourceUnknown), conn(core.SourceNode), false, "source"},
		{"abstaining is not a wrong kind", conn(core.SourceLB), conn(core.SourceNode), true, "source"},
		{"cannot tell", verdict{connected: core.Unknown}, conn(core.SourceNode), false, "connected"},
		{"fails vs connects", fail(failureLoop), conn(core.SourceClientPod), false, "connected"},
		{"both fail alike", fail(failureLoop), fail(failureLoop), false, ""},
		{"fail differently", fail(failureDropped), fail(failureLoop), false, "failure"},
	}
	for _, tt := range tests {
		d := compare(tt.model, tt.kernel, tt.abstains)
		got := ""
		if d != nil {
			got = d.field
		}
		if got != tt.want {
			t.Errorf("%s: compare = %v, want %q", tt.name, d, tt.want)
		}
	}
}

// TestKnownModelGapsAreDisjoint: every gap selects some case, and no case is in two gaps.
func TestKnownModelGapsAreDisjoint(t *testing.T) {
	cases := allCases()
	for _, g := range knownModelGaps {
		n := 0
		for i := range cases {
			if g.covers(&cases[i]) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("gap %q covers no case", g.name)
		}
		if g.evidence == "" || g.proposal == "" {
			t.Errorf("gap %q: evidence and proposal are required", g.name)
		}
	}
	for i := range cases {
		var in []string
		for _, g := range knownModelGaps {
			if g.covers(&cases[i]) {
				in = append(in, g.name)
			}
		}
		if len(in) > 1 {
			t.Errorf("%s is in several gaps: %v", cases[i].name, in)
		}
	}
}
