package kubernetes

import "github.com/loopguard/loopguard/core"

// kube-vip has no load-balancer box: it advertises the address over ARP or BGP and the
// nodes' service proxy answers it.
type kubeVIPCloud struct{ cloudBase }

const srcKubeVIP = "kube-vip/website content/docs/about/architecture.md (kube-vip advertises the Service's address over ARP or BGP so traffic reaches the nodes and the Service network, then writes the address into the status) and usage/kubernetes-services.md (loadBalancerClass kube-vip.io/kube-vip-class); kube-vip/kube-vip pkg/services/services.go updateStatus (IPs only: a DNS name is resolved to its IPs, UPnP adds the gateway's IPs; no ipMode)"

var kubeVIPFacts = cloudFacts{
	name:               "kube-vip",
	title:              "kube-vip",
	classes:            []string{"kube-vip.io/kube-vip-class"},
	annotationPrefixes: []string{"kube-vip.io/"},
	sourceNAT:          core.No,
	noBox:              true,
	ipMode:             ccmIPMode{read: true, source: srcKubeVIP},
	source:             srcKubeVIP,
}

func (kubeVIPCloud) facts() *cloudFacts { return &kubeVIPFacts }
