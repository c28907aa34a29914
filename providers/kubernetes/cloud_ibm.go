package kubernetes

import (
	"strings"

	"github.com/loopguard/loopguard/core"
)

// IBM Cloud (IKS, Red Hat OpenShift on VPC): IBM-Cloud/cloud-provider-ibm makes a VPC ALB by
// default, or a VPC NLB with enable-features "nlb". A classic cluster's NLB is not read here.
// The VPC NLB's IP status comes from code IBM does not publish, so its ipMode handling stays
// unread.
type ibmCloud struct{ cloudBase }

const annIBMEnableFeatures = "service.kubernetes.io/ibm-load-balancer-cloud-provider-enable-features"

const (
	srcIBMEnable = "IBM-Cloud/cloud-provider-ibm pkg/vpcctl/vpc_config.go getServiceEnabledFeatures, vpc_sdk_base.go isVpcOptionEnabled at commit 568c208 (release-1.32; the repository has no tags): spaces removed, lower case, split at commas, exact items; \"nlb\" is not read by the public code"
	srcIBMIPType = "IBM-Cloud/cloud-provider-ibm pkg/vpcctl/vpc_sdk_base.go at commit 568c208 (ip-type: empty or \"public\" is public, anything else private; immutable)"
	srcIBM       = "IBM Cloud docs containers?topic=containers-vpc-lbaas (ibm-cloud-docs/containers vpc-lbaas.md: a LoadBalancer Service gets a VPC ALB by default, reached through its hostname *.lb.appdomain.cloud, source IP preservation only with enable-features \"proxy-protocol\"; with enable-features \"nlb\" a VPC NLB, which preserves the source IP by default (direct server return) and is published as an IP)"
	srcIBMCCM    = "IBM-Cloud/cloud-provider-ibm pkg/vpcctl/vpc_lbaas.go GetLoadBalancerStatus (the VPC load balancer's hostname, no ipMode), vpc_sdk_gen2.go CreateLoadBalancer (PROXY protocol v1 on the pools with enable-features proxy-protocol), vpc_sdk_base.go (the pools' PROXY protocol: application family only), ibm/ibm_instances.go providerIDV2 (ibm://<account>///<cluster>/<worker>)"
)

var ibmFacts = cloudFacts{
	name:               "ibm",
	title:              "IBM Cloud",
	providerIDPrefixes: []string{"ibm://"},
	annotationPrefixes: []string{"service.kubernetes.io/ibm-load-balancer-cloud-provider-"},
	sourceNAT:          core.Unknown, // the VPC ALB or NLB per Service: read
	source:             srcIBM + "; " + srcIBMCCM,
	scope: []ScopeAnnotation{
		{Cloud: "IBM Cloud", Key: "service.kubernetes.io/ibm-load-balancer-cloud-provider-ip-type",
			Private: []string{"*"}, Public: []string{"public", ""},
			Source: srcIBMIPType},
	},
	doc: cloudDoc{
		lb: "VPC ALB (the default): a proxy, the client's address only with the PROXY protocol; VPC NLB (`enable-features` names `nlb`; IBM's documentation only, the public controller does not read it): " +
			"passes the client through; a classic cluster's NLB: not in the public source",
		backend: "PROXY v1 on the ALB's pools with `enable-features` naming `proxy-protocol` (spaces removed, lower case, comma list); an NLB's pools never",
		status:  "the VPC load balancer's hostname, no ipMode (the public code publishes a hostname for an NLB too; IBM's documentation shows an IP)",
		remedy:  "none needed behind the ALB's hostname; a backend that needs a proxy in front of an NLB belongs behind an ALB (a new load balancer), not offered",
		sources: "cloud-provider-ibm at commit 568c208 (release-1.32; no tags): `pkg/vpcctl/vpc_config.go`, `vpc_sdk_base.go`, `vpc_sdk_gen2.go`, `vpc_lbaas.go`, `ibm/ibm_instances.go`; IBM Cloud documentation (vpc-lbaas)",
	},
}

func (ibmCloud) facts() *cloudFacts { return &ibmFacts }

// ibmFeatures is the enable-features list as the IBM controller reads it: spaces removed,
// lower case, split at commas (vpc_config.go getServiceEnabledFeatures, vpc_sdk_base.go
// isVpcOptionEnabled).
func ibmFeatures(v string) map[string]bool {
	v = strings.ToLower(strings.ReplaceAll(v, " ", ""))
	out := map[string]bool{}
	for _, f := range strings.Split(v, ",") {
		if f != "" {
			out[f] = true
		}
	}
	return out
}

// read: on a VPC cluster a LoadBalancer Service gets a VPC ALB (a proxy: the client's address
// only in the PROXY header) unless enable-features names "nlb", which makes a VPC NLB (source IP
// preserved by default). Only the VPC controller publishes a hostname for it (a classic
// cluster's NLB publishes its portable IP), and only VPC clusters read the -vpc- annotations,
// so without either the load balancer is not known.
func (ibmCloud) read(v *cloudView) {
	svc := v.svc
	raw, set := svc.Annotations[annIBMEnableFeatures]
	var f map[string]bool
	if set {
		f = ibmFeatures(raw)
	}
	// "proxy-protocol" puts PROXY protocol v1 on the VPC ALB's pools; a VPC NLB's pools never
	// have it (vpc_sdk_base.go: application family only).
	if f["proxy-protocol"] && !f["nlb"] {
		v.expects("v1", ruleCCMProxyProtocol.Because("IBM Cloud: "+annIBMEnableFeatures+": "+
			quote(raw)+" (PROXY protocol v1 on the VPC ALB's pools; "+srcIBMCCM+")"))
	}
	if !v.detected {
		return
	}
	if f["nlb"] {
		v.byDefault(core.No, core.Unknown, ruleCloudDefault.Because("IBM Cloud VPC NLB ("+annIBMEnableFeatures+" names \"nlb\""+v.on()+
			"): it preserves the client's source IP by default and answers by direct server return ["+srcIBM+"]"))
		return
	}
	vpc := f["proxy-protocol"]
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		vpc = vpc || ing.Hostname != ""
	}
	for k := range svc.Annotations {
		vpc = vpc || strings.HasPrefix(k, "service.kubernetes.io/ibm-load-balancer-cloud-provider-vpc-")
	}
	if !vpc {
		v.unseenSetting("IBM Cloud: neither a VPC ALB (a hostname status or a -vpc- annotation) nor a VPC NLB (\"nlb\" in " + annIBMEnableFeatures +
			") is recognisable, so this may be a classic cluster's NLB, whose behaviour is not read here; declare loopguard.io/lb-source-nat")
		return
	}
	proxy := core.Unknown
	if f["proxy-protocol"] {
		proxy = core.Yes
	}
	v.byDefault(core.Yes, proxy, ruleCloudDefault.Because("IBM Cloud VPC ALB (the default without \"nlb\" in "+annIBMEnableFeatures+v.on()+
		"): the backend sees the load balancer's address, the client's only with the PROXY protocol ["+srcIBM+"; "+srcIBMCCM+"]"))
}
