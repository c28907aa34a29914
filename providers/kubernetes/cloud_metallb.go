package kubernetes

import "github.com/loopguard/loopguard/core"

// MetalLB has no load-balancer box: a node announces the address and its service proxy
// answers it.
type metallbCloud struct{ cloudBase }

const srcMetalLB = "metallb.universe.tf concepts/layer2 (layer 2 does not implement a load balancer: one node holds the address and kube-proxy spreads the traffic from there); metallb/metallb controller/service.go (the status carries each address as an IP, never a hostname or an ipMode)"

var metallbFacts = cloudFacts{
	name:               "metallb",
	title:              "MetalLB",
	annotationPrefixes: []string{"metallb.universe.tf/", "metallb.io/"},
	sourceNAT:          core.No,
	noBox:              true,
	ipMode:             ccmIPMode{read: true, source: srcMetalLB},
	source:             srcMetalLB,
}

func (metallbCloud) facts() *cloudFacts { return &metallbFacts }
