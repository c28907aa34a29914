package kubernetes

import "github.com/loopguard/loopguard/core"

// MetalLB has no load-balancer box: a node announces the address and its service proxy
// answers it.
type metallbCloud struct{ cloudBase }

const srcMetalLB = "metallb.universe.tf concepts/layer2 (layer 2 does not implement a load balancer: one node holds the address and kube-proxy spreads the traffic from there); metallb/metallb controller/service.go@v0.16.1 (the status carries each address as an IP, never a hostname or an ipMode; every Service it serves gets metallb.io/ip-allocated-from-pool, metallb.universe.tf/ before v0.14.9, which is how a classless MetalLB Service is told from a cloud's)"

var metallbFacts = cloudFacts{
	name:               "metallb",
	title:              "MetalLB",
	annotationPrefixes: []string{"metallb.universe.tf/", "metallb.io/"},
	sourceNAT:          core.No,
	noBox:              true,
	ipMode:             ccmIPMode{read: true, source: srcMetalLB},
	source:             srcMetalLB,
	doc: cloudDoc{
		lb:      "no box: a node announces the address (layer 2 or BGP) and its service proxy answers it; the client's address reaches the backend",
		backend: "nothing",
		status:  "IPs only, never a hostname or an ipMode",
		remedy:  "none needed (intercepted, nothing loops); ipMode Proxy is unsupported whoever owns the status: there is nothing to go through",
		sources: "metallb v0.16.1: `controller/service.go`, `internal/k8s/controllers/service_controller.go` (the class it serves: `--lb-class`, none by default, since v0.13.0); MetalLB layer-2 concepts documentation",
	},
}

func (metallbCloud) facts() *cloudFacts { return &metallbFacts }
