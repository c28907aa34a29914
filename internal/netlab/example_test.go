package netlab_test

import (
	"context"
	"fmt"

	"github.com/loopguard/loopguard/internal/netlab"
)

// The loop of DOMAIN.md §1: the LB keeps the client's address and lands the connection on a
// backend on the client's own node, so the backend's reply short-circuits on the node.
//
// Examples cannot skip, and this one needs the sandbox that netlab.Main makes in TestMain,
// so it is compiled but has no Output comment; TestObservedOutcomes runs the same case.
func ExampleRun() {
	res, err := netlab.Run(context.Background(), netlab.Scenario{
		Nodes: []netlab.Node{
			{Name: "n1", PodNetwork: netlab.PodNetworkBridge, BridgeNetfilter: true, SelfMasquerade: true},
			{Name: "n2", PodNetwork: netlab.PodNetworkBridge, BridgeNetfilter: true, SelfMasquerade: true},
		},
		Pods:    []netlab.Pod{{Name: "client", Node: "n1"}, {Name: "backend", Node: "n1"}},
		Service: netlab.Service{Endpoint: "backend"},
		LB:      netlab.LoadBalancer{Backend: netlab.BackendDirectToPod, SourceNAT: false},
		Client:  "client",
		Dial:    netlab.DialLB,
	})
	if err != nil {
		fmt.Println("harness:", err)
		return
	}
	fmt.Println("connected:", res.Connected)      // false
	fmt.Println("answered by:", res.StrayReplies) // [10.244.1.3:8080], the backend itself
	fmt.Println("source seen:", res.SourceSeen, res.Source)
}
