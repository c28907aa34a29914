package core

// ServiceDataplane is the component that implements Services on the node, as far as a Pod
// calling its own Service is concerned (seed 002 §3).
type ServiceDataplane string

const (
	DataplaneUnknown ServiceDataplane = ""
	// DataplaneKubeProxy: kube-proxy in iptables, nftables or ipvs mode; its endpoint chains
	// masquerade traffic whose source is the endpoint itself.
	DataplaneKubeProxy ServiceDataplane = "kube-proxy"
	// DataplaneCiliumTC: Cilium's per-packet (tc) load balancer in the Pod's namespace, which
	// rewrites a self-call's source to 169.254.42.1.
	DataplaneCiliumTC ServiceDataplane = "cilium-tc"
	// DataplaneCiliumSocketLB: Cilium's socket LB inside the Pod; connect() goes straight to
	// the backend.
	DataplaneCiliumSocketLB ServiceDataplane = "cilium-socket-lb"
)

// Attachment is how Pods are attached to their node.
type Attachment string

const (
	AttachmentUnknown Attachment = ""
	// AttachmentBridge: a Linux bridge (bridge CNI plugin, flannel, kubenet).
	AttachmentBridge Attachment = "bridge"
	// AttachmentRouted: /32 routes and proxy ARP (Calico, VPC-CNI) or eBPF-only veths.
	AttachmentRouted Attachment = "routed"
)

// ciliumServiceLoopbackIPv4 is Cilium's default --ipv4-service-loopback-address (seed 002 §3).
const ciliumServiceLoopbackIPv4 = "169.254.42.1"

// HairpinFacts describe the dataplane for a backend Pod that calls its own Service.
type HairpinFacts struct {
	Dataplane ServiceDataplane `json:"dataplane"`
	// SelfMasquerade: the service proxy rewrites the source when a Pod reaches itself
	// (kube-proxy's "-s <endpoint> -j KUBE-MARK-MASQ" first in each endpoint chain).
	SelfMasquerade Fact       `json:"selfMasquerade"`
	Attachment     Attachment `json:"attachment"`
	// BridgeHairpin: the bridge port reflects frames back out the port they came in
	// (CNI bridge plugin hairpinMode: true; flannel's default manifest sets it).
	BridgeHairpin Fact `json:"bridgeHairpin"`
	// BridgeNetfilter: net.bridge.bridge-nf-call-iptables is on, so bridged frames traverse
	// iptables (the Kubernetes default).
	BridgeNetfilter Fact `json:"bridgeNetfilter"`
	// KubeletHairpinMode is kubelet's --hairpin-mode when someone set it and relies on it.
	KubeletHairpinMode string `json:"kubeletHairpinMode,omitempty"`
}

// HairpinAssessment is the verdict for a Pod calling its own Service.
type HairpinAssessment struct {
	// Works is Yes when the call succeeds, No when it fails, Unknown when a fact is missing.
	Works   Fact          `json:"works"`
	Source  SourceAddress `json:"sourceAddress"`
	Reasons []Reason      `json:"reasons"`
}

// Assess applies seed 002 and the measurements of docs/sources.md#kernel-lab to a Pod calling
// its own Service.
func (h *HairpinFacts) Assess() HairpinAssessment {
	var out HairpinAssessment
	switch {
	case h.Dataplane == DataplaneCiliumSocketLB:
		out = HairpinAssessment{Works: Yes, Source: SourceAddress{Kind: SourceClientPod, ClientIP: ClientIPKept},
			Reasons: []Reason{ruleHairpinSocketLB.Reason()}}
	case h.Dataplane == DataplaneCiliumTC:
		out = HairpinAssessment{Works: Yes,
			Source:  SourceAddress{Kind: SourceServiceLoopback, ClientIP: ClientIPLost, Address: ciliumServiceLoopbackIPv4},
			Reasons: []Reason{ruleHairpinCilium.Reason()}}
	case h.SelfMasquerade == No:
		out = HairpinAssessment{Works: No, Source: SourceAddress{Kind: SourceUnknown},
			Reasons: []Reason{ruleHairpinNoMasq.Reason()}}
	case h.SelfMasquerade == Yes && (h.Attachment == AttachmentRouted || (h.Attachment == AttachmentBridge && h.BridgeNetfilter == No)):
		out = HairpinAssessment{Works: Yes, Source: SourceAddress{Kind: SourceNode, ClientIP: ClientIPLost},
			Reasons: []Reason{ruleHairpinMasqRouted.Reason()}}
	case h.Attachment == AttachmentBridge && h.BridgeNetfilter != No && h.BridgeHairpin == No:
		// Without port hairpin the bridge drops the frame whatever the masquerade does.
		out = HairpinAssessment{Works: No, Source: SourceAddress{Kind: SourceUnknown},
			Reasons: []Reason{ruleHairpinBridgeOff.Reason()}}
	case h.SelfMasquerade == Yes && h.Attachment == AttachmentBridge && h.BridgeNetfilter == Yes && h.BridgeHairpin == Yes:
		out = HairpinAssessment{Works: Yes, Source: SourceAddress{Kind: SourceNode, ClientIP: ClientIPLost},
			Reasons: []Reason{ruleHairpinBridgeOn.Reason()}}
	default:
		out = HairpinAssessment{Works: Unknown, Source: SourceAddress{Kind: SourceUnknown},
			Reasons: []Reason{ruleHairpinUnknown.Reason()}}
	}
	if h.KubeletHairpinMode != "" && h.KubeletHairpinMode != "none" {
		out.Reasons = append(out.Reasons, ruleKubeletHairpinDead.Because(
			"kubelet hairpinMode is set to "+quote(h.KubeletHairpinMode)+", but nothing reads it since Kubernetes 1.24; configure hairpin in the CNI (bridge plugin hairpinMode: true)."))
	}
	return out
}

func quote(s string) string { return "\"" + s + "\"" }
