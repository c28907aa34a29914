package core_test

import (
	"fmt"

	"github.com/loopguard/loopguard/core"
)

// A private layer-4 LB, reached through the LB on three nodes without source NAT: the
// textbook loop of the TKE guide, and the remedy the default policy picks.
func ExampleAssess() {
	e := &core.Exposure{
		Object:      core.ObjectRef{Kind: "Service", Namespace: "shop", Name: "web"},
		Scope:       core.Private,
		Layer:       core.Layer4,
		Protocols:   core.TCP,
		Intercept:   core.No,
		LBSourceNAT: core.No,
		Binding:     core.NodePortCluster, // kube-proxy then masquerades: the backend sees a node

		Placement: core.Placement{NodesBehindLB: 3},
	}
	a := core.Assess(e)
	fmt.Println(a.Risk, a.Symptom, a.WorstCase, a.Source.Kind)

	offers := []core.Offer{
		{Remedy: core.LBSourceNAT, Path: core.PathProxy, Reason: core.Reason{Message: "CLB layer-4 SNAT"},
			Unmet: []core.Precondition{{Kind: core.PreconditionAllowlist, Capability: "clb-l4-snat"}}},
		{Remedy: core.InterceptVIP, Path: core.PathVIP, Reason: core.Reason{Message: "intercept the VIP in the cluster"}},
	}
	d := core.Decide(&a, offers, core.Policy{})
	fmt.Println(d.Remedy, d.Path)
	// Output:
	// at-risk intermittent 0.3333 node-address
	// intercept-vip VIP
}

// A Pod calling its own Service on Cilium: the backend sees 169.254.42.1 (seed 002).
func ExampleHairpinFacts_Assess() {
	h := (&core.HairpinFacts{Dataplane: core.DataplaneCiliumTC}).Assess()
	fmt.Println(h.Works, h.Source.Kind, h.Source.Address)
	// Output: yes service-loopback 169.254.42.1
}
