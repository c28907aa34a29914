package kubernetes

import (
	"strings"

	"github.com/loopguard/loopguard/core"
)

// Linode / Akamai: linode/linode-cloud-controller-manager makes a NodeBalancer.
type linodeCloud struct{ cloudBase }

const (
	annLinodeDefaultProxy    = "service.beta.kubernetes.io/linode-loadbalancer-default-proxy-protocol"
	annLinodeProxyDeprecated = "service.beta.kubernetes.io/linode-loadbalancer-proxy-protocol"
	annLinodeHostnameOnly    = "service.beta.kubernetes.io/linode-loadbalancer-hostname-only-ingress"
)

const (
	srcLinode    = "Akamai techdocs \"Using Proxy Protocol with NodeBalancers\" (a NodeBalancer does not pass the client's information by default: the backend sees the NodeBalancer unless PROXY protocol is on); linode/linode-cloud-controller-manager docs/configuration/annotations.md"
	srcCCMLinode = "linode/linode-cloud-controller-manager cloud/linode/loadbalancers.go makeLoadBalancerStatus (the NodeBalancer's hostname and IP in one entry, the hostname alone with linode-loadbalancer-hostname-only-ingress: \"true\"; no ipMode) and docs/configuration/loadbalancer.md (PROXY protocol \"for client IP preservation\")"
)

var linodeFacts = cloudFacts{
	name:               "linode",
	title:              "Linode / Akamai",
	providerIDPrefixes: []string{"linode://"},
	annotationPrefixes: []string{"service.beta.kubernetes.io/linode-loadbalancer-"},
	sourceNAT:          core.Yes,
	hostnameAnnotation: annLinodeHostnameOnly, hostnameValue: "true",
	ipMode: ccmIPMode{read: true, source: srcCCMLinode},
	source: srcLinode + "; " + srcCCMLinode,
}

func (linodeCloud) facts() *cloudFacts { return &linodeFacts }

func (linodeCloud) read(v *cloudView) {
	// v1 or v2 (none is off); the default annotation wins over the deprecated one.
	for _, key := range [...]string{annLinodeDefaultProxy, annLinodeProxyDeprecated} {
		raw := v.svc.Annotations[key]
		if p := strings.ToLower(raw); p == "v1" || p == "v2" {
			v.expects(p, ruleCCMProxyProtocol.Because("Linode: "+key+": "+quote(raw)))
			break
		}
	}
	v.rowDefault()
}
