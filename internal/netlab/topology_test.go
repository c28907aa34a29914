package netlab

import (
	"net/netip"
	"strings"
	"testing"
)

// TestValidate needs no sandbox: it checks that a scenario the lab cannot build faithfully is
// refused with a reason, before any namespace exists.
func TestValidate(t *testing.T) {
	good := twoNodes(PodNetworkBridge, true, InterceptNone, "n1", "n1")
	if err := good.Validate(); err != nil {
		t.Fatalf("the base scenario is invalid: %v", err)
	}
	tests := map[string]struct {
		change func(*Scenario)
		want   string // a fragment of the error
	}{
		"no nodes":              {func(s *Scenario) { s.Nodes = nil; s.Pods = nil }, "no nodes"},
		"duplicate node":        {func(s *Scenario) { s.Nodes[1].Name = "n1" }, `node "n1" twice`},
		"Pod on unknown node":   {func(s *Scenario) { s.Pods[0].Node = "n9" }, `unknown node "n9"`},
		"duplicate Pod":         {func(s *Scenario) { s.Pods[1].Name = "client" }, `Pod "client" twice`},
		"endpoint not a Pod":    {func(s *Scenario) { s.Service.Endpoint = "ghost" }, `endpoint "ghost"`},
		"client not a Pod":      {func(s *Scenario) { s.Client = "ghost" }, `client "ghost"`},
		"hairpin on routed":     {func(s *Scenario) { s.Nodes[0].PodNetwork = PodNetworkRouted; s.Pods[0].Hairpin = true }, "hairpin is a bridge port setting"},
		"NodePort without node": {func(s *Scenario) { s.LB.Backend = BackendNodePort }, "TargetNode"},
		"direct with node":      {func(s *Scenario) { s.LB.TargetNode = "n1" }, "only for BackendNodePort"},
		"VIP in the plan":       {func(s *Scenario) { s.LB.VIP = netip.MustParseAddr("10.244.9.9") }, "collides"},
		"VIP public":            {func(s *Scenario) { s.LB.VIP = netip.MustParseAddr("192.0.2.10") }, "not a private address"},
		"VIP IPv6":              {func(s *Scenario) { s.LB.VIP = netip.MustParseAddr("fd00::1") }, "IPv4"},
		"VIP equals ClusterIP":  {func(s *Scenario) { s.LB.VIP = DefaultClusterIP }, "both"},
		"port reused":           {func(s *Scenario) { s.Service.NodePort = 8080 }, "targetPort and nodePort are both 8080"},
		"unknown intercept":     {func(s *Scenario) { s.Nodes[0].Intercept = 99 }, "Intercept(99)"},
		"unknown destination":   {func(s *Scenario) { s.Dial = 7 }, "Destination(7)"},
		"negative timeout":      {func(s *Scenario) { s.Timeout = -1 }, "negative timeout"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			sc := with(good, tt.change)
			err := sc.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestAddressOwners checks the names given to the addresses a backend can see, since
// a comparison with a model is only as good as this mapping.
func TestAddressOwners(t *testing.T) {
	Require(t)
	t.Parallel()
	sc := with(twoNodes(PodNetworkBridge, true, InterceptNone, "n1", "n2"), func(s *Scenario) {
		s.Nodes[1].PodNetwork = PodNetworkRouted
	})
	l, err := Build(t.Context(), sc)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for addr, want := range map[netip.Addr]Origin{
		netip.MustParseAddr("10.244.1.2"): {OriginPod, "client"},
		netip.MustParseAddr("10.244.2.2"): {OriginPod, "backend"},
		netip.MustParseAddr("10.10.1.2"):  {OriginNode, "n1"},
		netip.MustParseAddr("10.10.2.2"):  {OriginNode, "n2"},
		netip.MustParseAddr("10.244.1.1"): {OriginNodeBridge, "n1"},
		netip.MustParseAddr("10.10.1.1"):  {OriginLB, ""},
		netip.MustParseAddr("10.10.2.1"):  {OriginLB, ""},
		DefaultVIP:                        {OriginLB, ""},
		netip.MustParseAddr("10.244.2.1"): {}, // a routed node has no bridge address
	} {
		if got := l.Whose(addr); got != want {
			t.Errorf("Whose(%v) = %v, want %v", addr, got, want)
		}
	}
	if l.BridgeAddr("n2").IsValid() {
		t.Errorf("BridgeAddr(routed n2) = %v, want none", l.BridgeAddr("n2"))
	}
}

// TestCheckNewNamespaces guards the one check that stands between a leaked sandbox marker and
// a tmpfs over the host's /run. Pure: it never reaches a mount call.
func TestCheckNewNamespaces(t *testing.T) {
	host := "mnt:[4026531841] net:[4026531840]"
	tests := map[string]struct {
		parent, mine string
		ok           bool
	}{
		"fresh namespaces":       {host, "mnt:[4026532001] net:[4026532002]", true},
		"same namespaces":        {host, host, false},
		"same mount namespace":   {host, "mnt:[4026531841] net:[4026532002]", false},
		"same network namespace": {host, "mnt:[4026532001] net:[4026531840]", false},
		"marker is just 1":       {"1", "mnt:[4026532001] net:[4026532002]", false},
		"marker is empty":        {"", "mnt:[4026532001] net:[4026532002]", false},
		"marker lacks net":       {"mnt:[4026531841]", "mnt:[4026532001] net:[4026532002]", false},
		"own ids unreadable":     {host, "mnt:unknown net:unknown", false},
	}
	for name, tt := range tests {
		if err := checkNewNamespaces(tt.parent, tt.mine); (err == nil) != tt.ok {
			t.Errorf("%s: checkNewNamespaces(%q, %q) = %v, want ok=%v", name, tt.parent, tt.mine, err, tt.ok)
		}
	}
}
