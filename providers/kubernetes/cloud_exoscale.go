package kubernetes

import "github.com/loopguard/loopguard/core"

// Exoscale: exoscale/exoscale-cloud-controller-manager makes a Network Load Balancer.
type exoscaleCloud struct{ cloudBase }

const srcCCMExoscale = "exoscale/exoscale-cloud-controller-manager exoscale/loadbalancer.go (the NLB's IP, no ipMode) and docs/service-loadbalancer.md (externalTrafficPolicy: Local \"preserves the client source IP\")"

var exoscaleFacts = cloudFacts{
	name:               "exoscale",
	title:              "Exoscale",
	providerIDPrefixes: []string{"exoscale://"},
	annotationPrefixes: []string{"service.beta.kubernetes.io/exoscale-loadbalancer-"},
	sourceNAT:          core.No,
	ipMode:             ccmIPMode{read: true, source: srcCCMExoscale},
	source:             srcCCMExoscale,
}

func (exoscaleCloud) facts() *cloudFacts { return &exoscaleFacts }
