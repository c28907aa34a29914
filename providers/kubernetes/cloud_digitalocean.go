package kubernetes

import (
	"strconv"

	"github.com/loopguard/loopguard/core"
)

// DigitalOcean: digitalocean/digitalocean-cloud-controller-manager.
type digitalOceanCloud struct{ cloudBase }

const annDOProxyProtocol = "service.beta.kubernetes.io/do-loadbalancer-enable-proxy-protocol"

const (
	srcDO    = "DigitalOcean blog \"Load Balancers now support Proxy Protocol\" (backends see requests as though they came from the load balancer); digitalocean/digitalocean-cloud-controller-manager docs/controllers/services/annotations.md (do-loadbalancer-enable-proxy-protocol; do-loadbalancer-hostname works around kube-proxy intercepting the LB address)"
	srcCCMDO = "digitalocean/digitalocean-cloud-controller-manager cloud-controller-manager/do/loadbalancers.go EnsureLoadBalancer (do-loadbalancer-hostname, else the IPs; no ipMode)"
)

var digitalOceanFacts = cloudFacts{
	name:               "digitalocean",
	title:              "DigitalOcean",
	providerIDPrefixes: []string{"digitalocean://"},
	annotationPrefixes: []string{"service.beta.kubernetes.io/do-loadbalancer-", "kubernetes.digitalocean.com/"},
	sourceNAT:          core.Yes,
	hostnameAnnotation: "service.beta.kubernetes.io/do-loadbalancer-hostname",
	ipMode:             ccmIPMode{read: true, source: srcCCMDO},
	source:             srcDO,
	scope: []ScopeAnnotation{
		{Cloud: "DigitalOcean", Key: "service.beta.kubernetes.io/do-loadbalancer-network",
			Private: []string{"INTERNAL"}, Public: []string{"EXTERNAL"},
			Source: "digitalocean/digitalocean-cloud-controller-manager CHANGELOG v0.1.53 and DigitalOcean Kubernetes load balancer docs (do-loadbalancer-network: \"INTERNAL\")"},
	},
}

func (digitalOceanCloud) facts() *cloudFacts { return &digitalOceanFacts }

func (digitalOceanCloud) read(v *cloudView) {
	// A Go bool; DigitalOcean documents its PROXY protocol as v1.
	p := v.svc.Annotations[annDOProxyProtocol]
	if on, err := strconv.ParseBool(p); err == nil && on {
		v.expects("v1", ruleCCMProxyProtocol.Because("DigitalOcean: "+annDOProxyProtocol+": "+quote(p)))
	}
	v.rowDefault()
}
