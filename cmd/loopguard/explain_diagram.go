package main

import (
	"github.com/loopguard/loopguard/adapters/verify"
	"github.com/loopguard/loopguard/core"
)

// explainPath is the path a connection takes under the rule a code names, for a typical
// exposure (a client Pod on node-a, a backend on node-a): what explain draws besides the
// words. Codes that are not about a path have none.
func explainPath(code string) (verify.Path, bool) {
	e := core.Exposure{
		Object: core.ObjectRef{Kind: "Service", Namespace: "ns", Name: "svc"}, Provider: "explain",
		Scope: core.Private, Layer: core.Layer4, Protocols: core.TCP, ProxyProtocol: core.No,
		Intercept: core.No, LBSourceNAT: core.No, Binding: core.DirectToPod,
		Placement: core.Placement{NodesBehindLB: 3, Backends: []core.NodeBackends{{Node: "node-a", Count: 1}}, Separated: core.No},
	}
	switch core.Code(code) {
	case core.CodeSameNodeLoop, core.CodeSingleNode:
	case core.CodeClusterPolicy:
		e.Binding = core.NodePortCluster
	case core.CodeVIPSkipsProxyHeader:
		e.Intercept, e.ProxyProtocol, e.Needs.ProxyHeader = core.Yes, core.Yes, core.Yes
	case core.CodeIntercepted:
		e.Intercept = core.Yes
	case core.CodeLBSourceNAT:
		e.LBSourceNAT = core.Yes
	default:
		return verify.Path{}, false
	}
	return verify.PathFor(&e, "node-a", "node-a", "VIP:80", verify.Predict(&e, "node-a")), true
}
