package kubernetes

import "github.com/loopguard/loopguard/core"

// OpenStack: kubernetes/cloud-provider-openstack's openstack-cloud-controller-manager (OCCM)
// makes an Octavia load balancer.
type openStackCloud struct{ cloudBase }

const annOpenStackProxyProtocol = "loadbalancer.openstack.org/proxy-protocol"

const (
	srcOpenStackDocs     = "kubernetes/cloud-provider-openstack docs/openstack-cloud-controller-manager/expose-applications-using-loadbalancer-type-service.md (loadbalancer.openstack.org/hostname, proxy-protocol; amphora or OVN provider decides proxy or pass-through)"
	srcCCMOpenStack      = "kubernetes/cloud-provider-openstack pkg/openstack/loadbalancer.go createLoadBalancerStatus (ipMode Proxy with the PROXY protocol, or the hostname <ip>.<ingress-hostname-suffix> when the cloud config sets enable-ingress-hostname; since v1.30.0, #2587)"
	srcOpenStackDefaults = "kubernetes/cloud-provider-openstack docs/openstack-cloud-controller-manager/using-openstack-cloud-controller-manager.md ([LoadBalancer] lb-provider: \"amphora\" by default, or \"ovn\"; enable-ingress-hostname), expose-applications-using-loadbalancer-type-service.md (\"Use PROXY protocol to preserve client IP\"), pkg/openstack/loadbalancer.go getProxyProtocolFromServiceAnnotation (the PROXY protocol only from the Service's annotation)"
)

var openStackFacts = cloudFacts{
	name:               "openstack",
	title:              "OpenStack Octavia",
	providerIDPrefixes: []string{"openstack://"},
	annotationPrefixes: []string{"loadbalancer.openstack.org/", "service.beta.kubernetes.io/openstack-"},
	sourceNAT:          core.Unknown, // amphora proxies, OVN passes through: the cloud's choice
	hostnameAnnotation: "loadbalancer.openstack.org/hostname",
	ipMode:             ccmIPMode{read: true, withProxyProtocol: true, since: "v1.30.0", source: srcCCMOpenStack},
	source:             srcOpenStackDocs,
	scope: []ScopeAnnotation{
		{Cloud: "OpenStack", Key: "service.beta.kubernetes.io/openstack-internal-load-balancer",
			// "false" draws no conclusion: cloud.conf [LoadBalancer] internal-lb can make every LB internal.
			Private: []string{"true"},
			Source:  "kubernetes/website service.md (Internal load balancer, OpenStack); cloud-provider-openstack docs (\"If 'true', the loadbalancer VIP won't be associated with a floating IP\")"},
	},
}

func (openStackCloud) facts() *cloudFacts { return &openStackFacts }

func (openStackCloud) read(v *cloudView) {
	// Exactly "true" or "v1" (PROXY), "v2" (PROXYV2); anything else is off.
	p := v.svc.Annotations[annOpenStackProxyProtocol]
	on := false
	switch p {
	case "true", "v1":
		on = true
		v.expects("v1", ruleCCMProxyProtocol.Because("OpenStack: "+annOpenStackProxyProtocol+": "+quote(p)))
	case "v2":
		on = true
		v.expects("v2", ruleCCMProxyProtocol.Because("OpenStack: "+annOpenStackProxyProtocol+": "+quote(p)))
	}
	if on {
		// With PROXY protocol on, the LB proxies the connection and its CCM publishes Proxy (or,
		// older OCCM, a hostname) so in-cluster clients go through it.
		v.sourceNAT(core.Yes, core.Yes, ruleProxyProtocolSNAT.Because("OpenStack: "+annOpenStackProxyProtocol+": "+quote(p)))
	}
	if !v.detected {
		return
	}
	v.unseenSetting("OpenStack: whether the Octavia load balancer replaces the client's address depends on lb-provider in the [LoadBalancer] section of the openstack-cloud-controller-manager's cloud.conf (\"amphora\", the default, is a proxy: the client's address comes only with the PROXY protocol; \"ovn\" passes it through), which the inputs do not show; confirm it and declare loopguard.io/lb-source-nat")
	if on {
		v.rd.ccmProxy, v.rd.ccmSince = true, v.f.ipMode.since
	}
}
