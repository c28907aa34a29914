package kubernetes

import "github.com/loopguard/loopguard/core"

// Cilium LB IPAM and its L2 and BGP announcements have no load-balancer box: the nodes
// announce the address and their service proxy answers it.
type ciliumCloud struct{ cloudBase }

const srcCilium = "cilium/cilium Documentation/network/lb-ipam.rst (LB IPAM assigns the address, other features announce and load-balance it) and operator/pkg/lbipam/lbipam.go satisfyService (the status carries each address as an IP, no hostname, no ipMode); classes io.cilium/l2-announcer (pkg/k8s/apis/cilium.io/v2alpha1, L2AnnounceLoadBalancerClass) and io.cilium/bgp-control-plane"

var ciliumFacts = cloudFacts{
	name:               "cilium",
	title:              "Cilium LB IPAM",
	classes:            []string{"io.cilium/bgp-control-plane", "io.cilium/l2-announcer"},
	annotationPrefixes: []string{"io.cilium/lb-ipam-", "lbipam.cilium.io/"},
	sourceNAT:          core.No,
	noBox:              true,
	ipMode:             ccmIPMode{read: true, source: srcCilium},
	source:             srcCilium,
}

func (ciliumCloud) facts() *cloudFacts { return &ciliumFacts }
