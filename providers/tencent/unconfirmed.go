package tencent

import corev1 "k8s.io/api/core/v1"

// UNCONFIRMED: every guess the Tencent dialect makes lives in this file, each with what it
// rests on and how a user overrides it (docs/sources.md preamble). Nothing else in the package
// guesses; it calls these.

// assumeNewerMinorsSupportPreventLoopback: the guide lists minimum kube-proxy revisions that
// support prevent-loopback only up to 1.20 (intl doc 457/42976: v1.20.6-tke.12, v1.18.4-tke.20,
// v1.16.3-tke.25, v1.14.3-tke.24, v1.12.4-tke.30). Minors newer than the newest listed are
// assumed to support it from their first revision. The revision history (457/9315) notes "lb
// vip binding issue fixed (kube-proxy)" in v1.28.3-tke.3, so early revisions of newer minors
// may still misbehave. Override: Options.PreventLoopbackMinimums adds or replaces minors;
// Options.StrictRevisions makes an unlisted minor unknown instead.
const assumeNewerMinorsSupportPreventLoopback = true

// defaultNodeKind classifies a node. Super nodes (label node.kubernetes.io/instance-type:
// eklet, qcloud-documents) and native nodes (labels node.tke.cloud.tencent.com/machineset or
// /machine, karpenter-provider-tke well_known_labels.go) have documented labels; everything
// else is taken to be a regular (CVM) node, which no public source confirms as the complete
// rule. Override: Options.NodeKind.
func defaultNodeKind(n *corev1.Node) NodeKind {
	l := n.Labels
	if l[LabelInstanceType] == InstanceTypeEklet {
		return SuperNode
	}
	if _, ok := l[LabelNativeMachineSet]; ok {
		return NativeNode
	}
	if _, ok := l[LabelNativeMachine]; ok {
		return NativeNode
	}
	return RegularNode
}

// noNodesKind: with no Node objects in the input, clients are taken to run on regular nodes,
// TKE's default node kind. This errs towards reporting a loop (the conservative side).
// Override: include the cluster's Nodes, or declare loopguard.io/client-access.
const noNodesKind = RegularNode

// acceptQuotedSNATEnable: the Chinese seed writes `snatEnable: "true"` (a string), the English
// one `snatEnable: true`. TKE publishes no CRD schema, so whether the controller (or the API
// server) accepts the string is not known; loopguard reads "true"/"false" strings as booleans
// and adds a note (ruleSNATQuoted). Override: loopguard.io/lb-source-nat on the object.
const acceptQuotedSNATEnable = true

// ingressDefaultPorts: the listeners a TKE Ingress gets. Doc 457/45693 says an Ingress without
// TLS is exposed over HTTP, one with TLS over HTTPS, both with kubernetes.io/ingress.rule-mix:
// "true"; the ports 80 and 443 are the usual ones but no source states them as the
// controller's defaults. ingress.cloud.tencent.com/listen-ports changes them, which loopguard
// does not parse (ruleListenPorts). Override: loopguard.io/lb-source-nat on the Ingress.
const (
	ingressHTTPPort  = 80
	ingressHTTPSPort = 443
)

// nftablesInterceptsLikeIPTables: the TKE guide covers iptables and IPVS only. Upstream
// kube-proxy's nftables mode programs LoadBalancer addresses in VIP mode like iptables
// (docs/sources.md#kep-1860); TKE's nftables kube-proxy is taken to behave the same.
// Override: loopguard.io annotations, or declare ipMode in the Service status.
const nftablesInterceptsLikeIPTables = true

// ebpfIPModeTrusted: for an eBPF dataplane (TKE DataPlaneV2, Cilium) the guide says nothing;
// the dialect reads status.loadBalancer.ingress[].ipMode as KEP-1860 defines it (VIP:
// intercepted; Proxy: through the LB), and reports Unknown without it.
const ebpfIPModeTrusted = true

// existingLBIgnoresSubnet: when a Service or Ingress reuses an existing CLB, the CLB's type is
// fixed by the CLB itself; an internal-subnet annotation next to it is taken not to change it,
// so the scope is unknown until read from the cloud (issue 4) or declared with
// loopguard.io/lb-scope.
const existingLBIgnoresSubnet = true

// loadBalancerClassIsAnotherController: a Service whose spec.loadBalancerClass is set belongs
// to the load-balancer implementation that class names; Kubernetes' own service controller
// (k8s.io/cloud-provider) skips such Services, and TKE's service controller is taken to do the
// same. Such a Service is reported as not a TKE exposure. Override: clear loadBalancerClass,
// or assess the Service with the dialect of the class's implementation.
const loadBalancerClassIsAnotherController = true

// notEnabledCodes and allowlistWords: what CLB answers when the account lacks an allowlist
// (CLB L4 SNAT, L7 SNAT, Keep Alive) is not documented. docs/sources.md#tke-clb-api says to read
// UnsupportedOperation*, OperationDenied* and UnauthorizedOperation* as "not enabled", and
// InvalidParameter* (InvalidParameterValue* included) only when its message mentions the
// allowlist (whitelist, 白名单, 内测 = closed beta). UnauthorizedOperation also means a CAM
// permission is missing, which a support ticket for the allowlist does not fix; the error the
// driver returns wraps the cloud's, so the caller can read which. A failed task is read the
// same way from its message. Every write is verified by reading the listener back, so a
// refusal of another shape still surfaces (as a conflict naming the allowlist to check).
var (
	notEnabledCodes = []string{"UnsupportedOperation", "OperationDenied", "UnauthorizedOperation"}
	allowlistWords  = []string{"whitelist", "allowlist", "白名单", "内测"}
)

// l7SNATNeedsKeepalive: the guide asks for both the "CLB Layer 7 SNAT" and the "Keep Alive"
// allowlists before layer-7 SNAT (seeds 000/001 solution 3), without saying whether the CLB
// refuses SnatEnable on an HTTP/HTTPS listener without Keep Alive. The driver requires both
// before it writes either attribute. Override: declare both allowlists.
const l7SNATNeedsKeepalive = true
