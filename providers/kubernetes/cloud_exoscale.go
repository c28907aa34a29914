package kubernetes

import "github.com/loopguard/loopguard/core"

// Exoscale: exoscale/exoscale-cloud-controller-manager makes a Network Load Balancer.
type exoscaleCloud struct{ cloudBase }

const (
	srcCCMExoscale = "exoscale/exoscale-cloud-controller-manager exoscale/loadbalancer.go EnsureLoadBalancer@v0.34.0 (the NLB's IP, no ipMode; no annotation for the PROXY protocol, scope, hostname or ipMode)"
	srcExoscaleNLB = "Exoscale documentation community.exoscale.com/product/networking/nlb/overview (a layer-4 load balancer that \"acts only on incoming traffic\": replies go out directly from the instance) and the NLB release blog (\"Preservation of source IP\")"
)

var exoscaleFacts = cloudFacts{
	name:               "exoscale",
	title:              "Exoscale",
	providerIDPrefixes: []string{"exoscale://"},
	annotationPrefixes: []string{"service.beta.kubernetes.io/exoscale-loadbalancer-"},
	sourceNAT:          core.No,
	ipMode:             ccmIPMode{read: true, source: srcCCMExoscale},
	source:             srcExoscaleNLB,
	doc: cloudDoc{
		lb:      "a layer-4 NLB that passes the client's address through and answers directly from the node (the controller's source is silent; Exoscale's documentation)",
		backend: "nothing: no PROXY protocol, no X-Forwarded-For (the controller has no such setting)",
		status:  "the NLB's IP, never a hostname or an ipMode",
		remedy:  "none needed (intercepted, nothing loops)",
		sources: "exoscale-cloud-controller-manager v0.34.0: `exoscale/loadbalancer.go`, `exoscale/exoscale.go`; Exoscale NLB documentation",
	},
}

func (exoscaleCloud) facts() *cloudFacts { return &exoscaleFacts }
