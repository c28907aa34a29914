package dataplane

import "github.com/loopguard/loopguard/core"

// modelGap is a place where the kernel shows the core model wrong. The cases it covers are
// expected to disagree in exactly the recorded way; when core is fixed they agree and the
// test says to remove the entry.
type modelGap struct {
	name string
	// covers selects the cases of this gap.
	covers func(c *kcase) bool
	// disagrees is the disagreement every covered case shows.
	disagrees disagreement
	// evidence is what the kernel did, in netlab's words.
	evidence string
	// proposal is the core change that would close the gap.
	proposal string
}

// knownModelGaps lists the model's known disagreements with the kernel. core/ belongs to
// another owner; these are reported there with the proposal, not fixed here.
var knownModelGaps = []modelGap{
	{
		name: "nodeport-cluster-ignores-which-nodes-the-LB-uses",
		covers: func(c *kcase) bool {
			return throughLB(c) && c.dims.binding == bindNodePortCluster && !c.dims.lbSNAT && c.dims.placement == lbPicksOtherNode
		},
		disagrees: disagreement{"connected", "no", "yes"},
		evidence: "the LB sends only to n2's NodePort (LoadBalancer.TargetNode n2, so NodesBehindLB is 1), the client Pod runs on n1: " +
			"connected, the backend saw n2's address (node/n2 routed, node-bridge/n2 on a bridge). Assess says DeclaredClients 1/NodesBehindLB = 1 " +
			"for every client, whether or not its node is one the LB sends to.",
		proposal: "core.Placement: add LBNodes []string, the names of the nodes behind the LB (Cluster.countNodes already walks them; " +
			"NodesBehindLB stays their count). loopProbability, case NodePortCluster: when LBNodes is known, a declared client's " +
			"probability is 1/N if its node is in LBNodes, else 0, and DeclaredClients is the largest; WorstCase stays 1/N.",
	},
	{
		name: "nodeport-cluster-backend-sees-a-node-address",
		covers: func(c *kcase) bool {
			return throughLB(c) && c.dims.binding == bindNodePortCluster && c.dims.lbSNAT
		},
		disagrees: disagreement{"source", string(core.SourceLB), string(core.SourceNode)},
		evidence: "LB source NAT on, NodePort backends with externalTrafficPolicy Cluster: connected, the backend saw the address of the " +
			"node the LB picked (node/n1 or node/n2 routed, node-bridge/nX on a bridge), never the LB's 10.10.x.1: kube-proxy's KUBE-EXT " +
			"chain marks every NodePort connection for masquerade under Cluster, replacing whatever source the LB sent. " +
			"Without LB source NAT the same holds (see the connected cases of nodeport-cluster-ignores-which-nodes-the-LB-uses: node/n2), " +
			"where Assess says client-pod.",
		proposal: "core.Assess, path Proxy (Intercept No): when Binding is NodePortCluster, the source kind is SourceNode whatever " +
			"LBSourceNAT says; keep lbSource's ClientIP (a PROXY protocol header survives the node's SNAT) and turn ClientIPKept " +
			"into ClientIPLost. DOMAIN.md §7 gains the row \"Proxy, NodePort with externalTrafficPolicy Cluster | node address\".",
	},
	{
		name: "bridge-without-br-netfilter-fails-same-node-backends",
		covers: func(c *kcase) bool {
			if c.exposure == nil || c.dims.attachment != attachBridgeNoNF || c.dims.placement != lbPicksClientNode {
				return false
			}
			// The node DNATs and keeps the client's source: ClusterIP from a Pod, or an
			// intercepted LB address without kube-proxy's masquerade (real IPVS too, where the
			// kernel has it: same physics, not observed on the machine this was written on).
			nodeDNAT := c.dims.intercept == interceptIPTables || c.dims.intercept == interceptIPVS
			return c.exposure.Access == core.AccessServiceName ||
				nodeDNAT && c.exposure.Intercept == core.Yes && c.exposure.InterceptMasquerades == core.No
		},
		disagrees: disagreement{"connected", "yes", "no"},
		evidence: "bridge-nf-call-iptables=0 on n1, client and backend Pods on n1's cni0: the client's SYN is routed and DNATed to " +
			"10.244.1.3:8080, but the backend's SYN-ACK to 10.244.1.2 is bridged straight to the client, past the un-DNAT: the client " +
			"gets a SYN-ACK from 10.244.1.3:8080 (pod/backend) instead of the LB's 10.10.0.100:80 or the ClusterIP 10.96.0.10:80, and " +
			"times out (TESTING.md §1 row 5). For an intercepted LB address under externalTrafficPolicy Cluster, kube-proxy's " +
			"masquerade sends the reply back through the node and hides it.",
		proposal: "core.Assess: before the Access == AccessServiceName and Intercept == Yes returns, when Hairpin says " +
			"Attachment bridge and BridgeNetfilter No and the node keeps the client's source (service name, or Intercept Yes with " +
			"InterceptMasquerades No), the verdict is at-risk with the probability that a backend shares the client's node " +
			"(BackendsOn(client node)/TotalBackends, as for NodePortLocal), under a new rule \"bridge-netfilter-off\": " +
			"on a bridge whose frames skip iptables, a same-node backend's reply is never un-DNATed; Kubernetes requires " +
			"bridge-nf-call-iptables=1 with kube-proxy.",
	},
}

// throughLB: the declared client dials the LB address and the nodes route it to the LB.
func throughLB(c *kcase) bool {
	return c.exposure != nil && c.exposure.Access == core.AccessLBAddress && c.exposure.Intercept == core.No
}

func gapFor(c *kcase) *modelGap {
	for i := range knownModelGaps {
		if knownModelGaps[i].covers(c) {
			return &knownModelGaps[i]
		}
	}
	return nil
}
