package kubernetes

import "github.com/loopguard/loopguard/core"

// Cilium LB IPAM and its L2 and BGP announcements have no load-balancer box: the nodes
// announce the address and their service proxy answers it.
type ciliumCloud struct{ cloudBase }

const srcCilium = "cilium/cilium operator/pkg/lbipam/lbipam.go satisfyService@v1.20.2 (the status carries each address as an IP, no hostname, no ipMode; classless Services served by default), pkg/k8s/apis/cilium.io/v2alpha1 (classes io.cilium/l2-announcer, io.cilium/bgp-control-plane), operator/pkg/nodeipam (io.cilium/node: the nodes' IPs, since v1.16.0), read from the Go module at v1.20.2; Documentation/network/lb-ipam.rst"

var ciliumFacts = cloudFacts{
	name:               "cilium",
	title:              "Cilium LB IPAM",
	classes:            []string{"io.cilium/bgp-control-plane", "io.cilium/l2-announcer", "io.cilium/node"},
	annotationPrefixes: []string{"io.cilium/lb-ipam-", "lbipam.cilium.io/", "io.cilium.nodeipam/"},
	sourceNAT:          core.No,
	noBox:              true,
	ipMode:             ccmIPMode{read: true, source: srcCilium},
	source:             srcCilium,
	doc: cloudDoc{
		lb:      "no box: the nodes announce the address (L2 announcements, BGP) or it is a node's own (Node IPAM), and the eBPF datapath answers it; the client's address reaches the backend",
		backend: "nothing",
		status:  "IPs only, never a hostname or an ipMode",
		remedy:  "none needed (intercepted, nothing loops); ipMode Proxy is unsupported whoever owns the status",
		sources: "cilium v1.20.2 (Go module; dated over v1.15.6–v1.17.0): `operator/pkg/lbipam/lbipam.go`, `pkg/k8s/apis/cilium.io/v2alpha1`, `operator/pkg/nodeipam/nodesvclb.go`",
	},
}

func (ciliumCloud) facts() *cloudFacts { return &ciliumFacts }
