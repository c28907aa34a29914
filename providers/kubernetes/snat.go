package kubernetes

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// Whether the load balancer replaces the client's source address is not something a generic
// cloud says. This file is the one place that reads it from documented peer behaviour; every
// row is conservative (a value it does not recognise draws no conclusion) and the
// loopguard.io/lb-source-nat annotation overrides it.
const (
	annHetznerProxyProtocol   = "load-balancer.hetzner.cloud/uses-proxyprotocol"
	annOpenStackProxyProtocol = "loadbalancer.openstack.org/proxy-protocol"
	annAWSType                = "service.beta.kubernetes.io/aws-load-balancer-type"
	annAWSTargetGroupAttrs    = "service.beta.kubernetes.io/aws-load-balancer-target-group-attributes"
	annOCINLBPreserveSource   = "oci-network-load-balancer.oraclecloud.com/is-preserve-source"
	annOCIIngressIPMode       = "oci.oraclecloud.com/ingress-ip-mode"
)

// snatFact is one conclusion about source NAT and what it rests on.
type snatFact struct {
	nat    core.Fact
	proxy  core.Fact // PROXY protocol, when the row says so
	reason core.Reason
}

// lbSourceNAT reads the LB's source NAT (and PROXY protocol) from peer annotations.
func lbSourceNAT(svc *corev1.Service, protos core.Protocols) []snatFact {
	ann := svc.Annotations
	if len(ann) == 0 {
		return nil
	}
	var out []snatFact
	// Hetzner and OpenStack: with PROXY protocol on, the LB proxies the connection and its CCM
	// publishes Proxy (or, older OpenStack, a hostname) so in-cluster clients go through it.
	if ann[annHetznerProxyProtocol] == "true" {
		out = append(out, snatFact{nat: core.Yes, proxy: core.Yes,
			reason: ruleProxyProtocolSNAT.Because("Hetzner Cloud: " + annHetznerProxyProtocol + ": \"true\"")})
	}
	if v := ann[annOpenStackProxyProtocol]; v == "true" || v == "v1" || v == "v2" {
		out = append(out, snatFact{nat: core.Yes, proxy: core.Yes,
			reason: ruleProxyProtocolSNAT.Because("OpenStack: " + annOpenStackProxyProtocol + ": " + quote(v))})
	}
	// AWS: the cloud-controller-manager's NLB (type "nlb", no loadBalancerClass) registers
	// instance targets with client-IP preservation on and offers no way to change it.
	if ann[annAWSType] == "nlb" && svc.Spec.LoadBalancerClass == nil {
		out = append(out, snatFact{nat: core.No,
			reason: ruleAWSNLBClientIP.Because("AWS cloud-controller-manager NLB (" + annAWSType + ": \"nlb\") keeps client-IP preservation on")})
	}
	// AWS Load Balancer Controller: an explicit target-group attribute.
	if v, ok := ann[annAWSTargetGroupAttrs]; ok {
		switch stringMapValue(v, "preserve_client_ip.enabled") {
		case "true":
			out = append(out, snatFact{nat: core.No,
				reason: ruleAWSNLBClientIP.Because(annAWSTargetGroupAttrs + " sets preserve_client_ip.enabled=true")})
		case "false":
			if protos&core.UDP != 0 {
				// Client IP preservation cannot be turned off for UDP target groups.
				out = append(out, snatFact{nat: core.No,
					reason: ruleAWSNLBClientIP.Because("preserve_client_ip.enabled=false, but the Service has UDP ports, whose target groups always preserve the client IP")})
			} else {
				out = append(out, snatFact{nat: core.Yes,
					reason: ruleAWSClientIPOff.Because(annAWSTargetGroupAttrs + " sets preserve_client_ip.enabled=false")})
			}
		}
	}
	// Oracle OKE: a network load balancer that preserves the source.
	if ann[annOCINLBPreserveSource] == "true" {
		out = append(out, snatFact{nat: core.No,
			reason: ruleOCINLBPreserve.Because("Oracle OKE: " + annOCINLBPreserveSource + ": \"true\"")})
	}
	return out
}

// applySourceNAT sets LBSourceNAT and ProxyProtocol on e from the peer facts; without any, it
// notes what is missing: the cloud's unseen setting (unseen.go) where one decides, else the
// generic request to declare it.
func applySourceNAT(e *core.Exposure, facts []snatFact, unseen []core.Reason) {
	if len(facts) == 0 {
		if len(unseen) == 0 {
			unseen = []core.Reason{ruleSNATUndeclared.Reason()}
		}
		e.Notes = append(e.Notes, unseen...)
		return
	}
	nat := facts[0].nat
	for _, f := range facts[1:] {
		if f.nat != nat {
			msgs := make([]string, len(facts))
			for i := range facts {
				msgs[i] = facts[i].reason.Message
			}
			e.Notes = append(e.Notes, ruleSNATConflict.Because(strings.Join(msgs, "; ")))
			return
		}
	}
	e.LBSourceNAT = nat
	for _, f := range facts {
		if f.proxy != core.Unknown {
			e.ProxyProtocol = f.proxy
		}
		e.Reasons = append(e.Reasons, f.reason)
	}
}
