package kubernetes

import "github.com/loopguard/loopguard/core"

// kube-vip has no load-balancer box: it advertises the address over ARP or BGP and the
// nodes' service proxy answers it.
type kubeVIPCloud struct{ cloudBase }

const srcKubeVIP = "kube-vip/website content/docs/about/architecture.md (kube-vip advertises the Service's address over ARP or BGP so traffic reaches the nodes and the Service network); kube-vip/kube-vip pkg/services/services.go updateStatus@v1.2.3 (IPs only: a DNS name is resolved to its IPs, UPnP adds the gateway's IPs; no ipMode, and a foreign one is dropped) and pkg/kubevip/constants.go (class kube-vip.io/kube-vip-class; classless Services served too by default)"

var kubeVIPFacts = cloudFacts{
	name:               "kube-vip",
	title:              "kube-vip",
	classes:            []string{"kube-vip.io/kube-vip-class"},
	annotationPrefixes: []string{"kube-vip.io/"},
	sourceNAT:          core.No,
	noBox:              true,
	ipMode:             ccmIPMode{read: true, source: srcKubeVIP},
	source:             srcKubeVIP,
	doc: cloudDoc{
		lb:      "no box: a node announces the address (ARP or BGP) and its service proxy answers it; the client's address reaches the backend",
		backend: "nothing",
		status:  "IPs only (kube-vip rewrites the status and drops a foreign ipMode)",
		remedy:  "none needed (intercepted, nothing loops); ipMode Proxy is unsupported whoever owns the status",
		sources: "kube-vip v1.2.3: `pkg/services/services.go`, `pkg/services/watch_services.go`, `pkg/kubevip/constants.go`; kube-vip-cloud-provider v0.0.12 (allocates only); kube-vip architecture documentation",
	},
}

func (kubeVIPCloud) facts() *cloudFacts { return &kubeVIPFacts }
