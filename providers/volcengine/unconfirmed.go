package volcengine

import (
	"strings"

	"github.com/loopguard/loopguard/core"
)

// This file is the one place for what the VKE dialect assumes without a public source saying
// so (docs/sources.md: "UNCONFIRMED ... keep it in one place, and let the user override it"). The
// Volcengine cloud-controller-manager add-on is not open source, so its behaviour beyond
// seed 003 and the published annotation tables is inferred. Each assumption below says what
// it rests on and how a user overrides it.
//
//  1. Proxy requested, a prerequisite known unmet: the requested mode does not take effect and
//     the default VIP stays (nodes keep intercepting the CLB address). For Kubernetes < v1.30
//     this follows from KEP-1860 (the ipMode field is off or absent, docs/sources.md#kep-1860); for an old
//     cloud-controller-manager or another network model it is UNCONFIRMED. Override:
//     Assumptions.UnmetProxyUnknown (the path is then reported as unknown).
//  2. A PUBLIC CLB sees an in-cluster client's own Pod address, like a private one. Seed 003
//     states the Proxy-mode same-node restriction without exception and demonstrates it on a
//     CLB created without address-type (so PUBLIC) reached at its public address; that is the
//     opposite of TKE, where public CLBs do not loop (docs/sources.md#loopback). The mechanism (how
//     in-VPC traffic to the CLB's EIP keeps its source) is UNCONFIRMED. Override:
//     Assumptions.PublicCLBHidesPodSource, or loopguard.io/lb-scope: public on the object.
//  3. The managed VKE add-on follows the open volcengine-cloud-controller-manager's
//     pass-through semantics (Pod ENIs when "true", NodePorts by default). UNCONFIRMED for the
//     add-on; confirmed for the open controller's docs/usage.md. Override: loopguard cannot yet
//     take the binding from a cloud read (DescribeServerGroups Servers[].Type); issue 5.
//  4. For a reused CLB (loadbalancer-id), address-type describes a CLB to be created and says
//     nothing about the reused one. UNCONFIRMED; the CLB's Type from a cloud read
//     (Options.CLBs) or loopguard.io/lb-scope decides.
//  5. A Service created while Proxy could not take effect does not switch to Proxy when the
//     prerequisites are met later: the annotation "is not modifiable", so loopguard plans a new
//     Service. UNCONFIRMED (the controller may re-read it).
//  6. VKE nodes carry labels under cluster.vke.volcengine.com (machinepool-name) and
//     machine.cluster.vke.volcengine.com (gpu-name). Seen in public code that reads VKE nodes
//     (vllm-project/aibrix KV-cache node affinity, kubectl helpers), not in Volcengine's
//     documentation: UNCONFIRMED, used only by Recognizes.
//  7. VKE's eBPF service forwarding keeps the client Pod's address on intercepted (VIP) traffic.
//     The open VPC-CNI, Cello, replaces kube-proxy with Cilium (volcengine/cello README), and
//     Cilium's kube-proxy replacement balances at the socket or at the Pod's interface using the
//     request's own source (Cilium docs, kube-proxy replacement, session affinity); whether
//     VKE's managed eBPF forwarding is configured the same way is UNCONFIRMED. kube-proxy modes
//     are the core's (dialect.KubeProxyMasquerades). Override: Assumptions.EBPFSourceUnknown.
//  8. Reading the network model from a live cluster (ReadClusterFacts): VKE's VPC-CNI is Cello,
//     configured by ConfigMap kube-system/cello-config, whose "conf" JSON has networkMode
//     eni_shared (the default: IPVlan Pod interfaces) or eni_exclusive (a whole ENI moved into
//     the Pod); Cello's Cilium replaces kube-proxy and is configured by kube-system/cilium-config;
//     a Flannel cluster has kube-system/kube-flannel-cfg. Seen in Cello's README and
//     docs/config.md and in a VKE v1.30 cluster's objects published by imroc/kubernetes-guide
//     (appendix/vendor/volcengine); UNCONFIRMED that every VKE release keeps these names.
//     Override: declare dataplane.cni, dataplane.podInterface and proxyMode in the profile
//     (declared values win), or DriverOptions.NoClusterReads.
//  9. Reading the cloud-controller-manager's version from a live cluster: the open
//     volcengine-cloud-controller-manager chart runs it as a Deployment (container
//     cloud-controller-manager, image .../vke/cloud-controller-manager:v1.35.0-public), so its
//     image tag is its version. The managed VKE add-on may run outside the cluster (nothing to
//     read) and whether its tags follow the add-on's version numbers is UNCONFIRMED. Override:
//     declare ccmVersion (it wins), or DriverOptions.CCMDeployment for another name.
// 10. The cloud-controller-manager gives a Service created next to another one (a replacement
//     with the same selector, annotations and ports) its own CLB, and serves both. UNCONFIRMED
//     beyond the open controller's behaviour (one CLB per Service unless loadbalancer-id);
//     a replacement of a Service that reuses a CLB is therefore not planned.

// Assumptions overrides the UNCONFIRMED inferences above. The zero value is the default.
type Assumptions struct {
	// UnmetProxyUnknown reports the path as unknown when Proxy is requested but a
	// prerequisite is known unmet, instead of assuming VIP stays in effect (assumption 1).
	UnmetProxyUnknown bool
	// PublicCLBHidesPodSource says in-cluster clients reach a PUBLIC CLB through a public
	// (NAT) address, so public CLBs cannot loop (assumption 2).
	PublicCLBHidesPodSource bool
	// EBPFSourceUnknown leaves the source address of intercepted traffic unknown on VKE's
	// eBPF dataplane instead of assuming the client Pod's (assumption 7).
	EBPFSourceUnknown bool
}

// Rules for the assumptions.
var (
	ruleProxyNotInEffect = core.Rule{Code: CodeProxyNotInEffect,
		Summary: "Proxy is requested but an ip-mode prerequisite is unmet, so the feature does not work as requested: loopguard assumes the default VIP stays in effect and nodes keep intercepting the CLB address (UNCONFIRMED beyond Kubernetes < v1.30; see providers/volcengine/unconfirmed.go).",
		Source:  srcPrereqs + "; " + srcKEP}
	rulePublicCLBKeepsSource = core.Rule{Code: CodePublicCLBKeepsSource,
		Summary: "address-type PUBLIC (the default): docs/sources.md#vke-ip-mode states the Proxy-mode restriction without exception and shows it on a PUBLIC CLB reached at its public address, so loopguard treats a public CLB like a private one, which sees the client Pod's own address (UNCONFIRMED mechanism; override with loopguard.io/lb-scope: public).",
		Source:  srcRestriction + "; " + srcVerification + " (curl to the CLB's public address)"}
	ruleAddressPublic = core.Rule{Code: CodeAddressPublic,
		Summary: "address-type PUBLIC, and the options say in-cluster clients reach public CLBs through a public address: the CLB never sees a client Pod's address.",
		Source:  srcAnnotations + "; Assumptions.PublicCLBHidesPodSource"}
)

var ruleEBPFKeepsPodSource = core.Rule{Code: CodeEBPFKeepsPodSource,
	Summary: "VKE's eBPF service forwarding (Cilium in the VPC-CNI) redirects intercepted traffic to a backend without masquerading: the backend sees the client Pod's address (UNCONFIRMED for the managed add-on; see providers/volcengine/unconfirmed.go).",
	Source:  "volcengine/cello README (Cilium replaces kube-proxy); Cilium docs, kube-proxy replacement; " + srcPrereqs}

var (
	reasonEBPFKeepsSource  = ruleEBPFKeepsPodSource.Reason()
	reasonProxyNotInEffect = ruleProxyNotInEffect.Reason()
	reasonPublicKeeps      = rulePublicCLBKeepsSource.Reason()
	reasonAddressPublic    = ruleAddressPublic.Reason()
)

// unmetProxyPath is assumption 1: the path in effect when Proxy cannot take effect.
func (a *Assumptions) unmetProxyPath() core.Path {
	if a.UnmetProxyUnknown {
		return core.PathUnknown
	}
	return core.PathVIP
}

// publicScope is assumption 2: the scope the physics should use for a PUBLIC CLB.
func (a *Assumptions) publicScope() (core.Scope, core.Reason) {
	if a.PublicCLBHidesPodSource {
		return core.Public, reasonAddressPublic
	}
	return core.Private, reasonPublicKeeps
}

// ebpfMasquerades is assumption 7: the source of intercepted traffic on VKE's eBPF dataplane,
// for a cluster whose profile says eBPF forwarding on the VPC-CNI.
func (a *Assumptions) ebpfMasquerades(p *core.ClusterProfile) (core.Fact, bool) {
	if a.EBPFSourceUnknown || p.ProxyMode != core.ProxyModeEBPF || !isVPCCNI(strings.ToLower(p.Dataplane.CNI)) {
		return core.Unknown, false
	}
	return core.No, true
}

// vkeNodeLabelDomain is assumption 6.
const vkeNodeLabelDomain = "cluster.vke.volcengine.com"

func isVKENodeLabel(key string) bool {
	i := strings.IndexByte(key, '/')
	if i < 0 {
		return false
	}
	d := key[:i]
	return d == vkeNodeLabelDomain || strings.HasSuffix(d, "."+vkeNodeLabelDomain)
}
