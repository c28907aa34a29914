package kubernetes

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// Alibaba Cloud ACK: kubernetes/cloud-provider-alibaba-cloud makes a CLB, or an NLB for the
// class alibabacloud.com/nlb. ACK's providerID is "<region>.<instance>", with no scheme prefix
// to recognise.
type alibabaCloud struct{ cloudBase }

const (
	annAlibabaProxyProto     = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-proxy-protocol"
	annAlibabaLBType         = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-type"
	annAlibabaPreserveClient = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-preserve-client-ip"
	alibabaNLBClass          = "alibabacloud.com/nlb"
)

const (
	srcAlibaba           = "Alibaba Cloud ACK docs \"Considerations for configuring a LoadBalancer Service\" (layer-4 CLB listeners pass the client address; with PROXY protocol in-cluster access to the CLB IP fails: use service.beta.kubernetes.io/alibaba-cloud-loadbalancer-hostname); kubernetes/cloud-provider-alibaba-cloud docs/usage.md"
	srcCCMAlibaba        = "kubernetes/cloud-provider-alibaba-cloud pkg/controller/service/clbv1/service_controller.go (CLB: the hostname annotation, else the IP; no ipMode) and nlbv2/nlb_controller.go updateServiceStatus (NLB: the NLB's DNS name)"
	srcAlibabaNLBDefault = "kubernetes/cloud-provider-alibaba-cloud pkg/controller/service/nlbv2/server_groups.go (PreserveClientIpEnabled sent only when the annotation is set; otherwise the NLB API's default applies, which no public page read here states for the API: Alibaba's ROS template ALIYUN::NLB::ServerGroup defaults it to false, a template default)"
)

const (
	codeAlibabaNLBPreserve   core.Code = "k8s-alibaba-nlb-client-ip"
	codeOfferAlibabaClientIP core.Code = "k8s-offer-alibaba-nlb-client-ip-off"
)

var (
	ruleAlibabaNLBPreserve = core.Rule{Code: codeAlibabaNLBPreserve,
		Summary: "An ACK NLB's server groups keep the client address only with alibaba-cloud-loadbalancer-preserve-client-ip: \"on\"; \"off\" makes the NLB's address the source. Without the annotation the default was not found in a public source: unknown.",
		Source:  srcCCMAlibaba + "; kubernetes/cloud-provider-alibaba-cloud pkg/controller/service/nlbv2/server_groups.go (PreserveClientIpEnabled only from the annotation); Alibaba Cloud ACK documentation \"Configure NLB instances by using annotations\" (class alibabacloud.com/nlb, preserve-client-ip)"}
	ruleOfferAlibabaClientIP = core.Rule{Code: codeOfferAlibabaClientIP,
		Summary: "Set alibaba-cloud-loadbalancer-preserve-client-ip: \"off\" on an ACK NLB: the NLB's address becomes the source and replies return through it; the client address is lost unless alibaba-cloud-loadbalancer-proxy-protocol: \"on\" and the backends read the header.",
		Source:  "kubernetes/cloud-provider-alibaba-cloud pkg/controller/service/nlbv2/server_groups.go (PreserveClientIpEnabled updated in place); Alibaba Cloud ACK documentation \"Configure NLB instances by using annotations\""}
)

var alibabaFacts = cloudFacts{
	name:               "alibaba",
	title:              "Alibaba Cloud ACK",
	classes:            []string{alibabaNLBClass},
	annotationPrefixes: []string{"service.beta.kubernetes.io/alibaba-cloud-loadbalancer-", "service.beta.kubernetes.io/alibaba-cloud-nlb-"},
	sourceNAT:          core.No, // the CLB; the NLB per preserve-client-ip: read
	hostnameAnnotation: "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-hostname",
	ipMode:             ccmIPMode{read: true, source: srcCCMAlibaba},
	source:             srcAlibaba,
	scope: []ScopeAnnotation{
		{Cloud: "Alibaba Cloud", Key: "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type",
			// The NLB model compares with strings.EqualFold; the CLB model's constants are lower case.
			Private: []string{"intranet"}, Public: []string{"internet"}, FoldCase: true,
			Source: "kubernetes/website service.md (Internal load balancer, Alibaba Cloud); cloud-provider-alibaba-cloud pkg/model/nlb GetAddressType (EqualFold)"},
	},
	rules: []core.Rule{ruleAlibabaNLBPreserve, ruleOfferAlibabaClientIP},
}

func (alibabaCloud) facts() *cloudFacts { return &alibabaFacts }

// alibabaNLB reports an ACK Service whose load balancer is an NLB (the class, or the type
// annotation behind a feature gate: pkg/controller/helper/service_utils.go NeedNLB).
func alibabaNLB(svc *corev1.Service) bool {
	if c := svc.Spec.LoadBalancerClass; c != nil {
		return *c == alibabaNLBClass
	}
	return svc.Annotations[annAlibabaLBType] == "nlb"
}

func (alibabaCloud) read(v *cloudView) {
	ann := v.svc.Annotations
	// "on" turns PROXY protocol on for the CLB's layer-4 listeners.
	if p := ann[annAlibabaProxyProto]; strings.EqualFold(p, "on") {
		v.expects("", ruleCCMProxyProtocol.Because("Alibaba Cloud: "+annAlibabaProxyProto+": "+quote(p)+" ("+srcAlibaba+")"))
	}
	if !v.detected {
		return
	}
	if !alibabaNLB(v.svc) {
		v.rowDefault()
		return
	}
	switch p := ann[annAlibabaPreserveClient]; {
	case strings.EqualFold(p, "on"):
		v.byDefault(core.No, core.Unknown, ruleAlibabaNLBPreserve.Because("Alibaba Cloud NLB: "+annAlibabaPreserveClient+": "+quote(p)+v.on()))
	case strings.EqualFold(p, "off"):
		v.byDefault(core.Yes, core.Unknown, ruleAlibabaNLBPreserve.Because("Alibaba Cloud NLB: "+annAlibabaPreserveClient+": "+quote(p)+v.on()))
	default:
		// No public source read here gives the NLB's default.
		v.unseenSetting("Alibaba Cloud NLB: the Service does not set " + annAlibabaPreserveClient + ", so the NLB API's default for client IP preservation applies, and no public source read here states it: treated as unknown; set the annotation to \"on\" or \"off\", or declare loopguard.io/lb-source-nat [" + srcAlibabaNLBDefault + "]")
	}
}

func (alibabaCloud) fixes(v *cloudView) []cloudFix {
	var out []cloudFix
	if alibabaNLB(v.svc) && v.e.LBSourceNAT == core.No && v.e.Intercept != core.Yes {
		if f, ok := alibabaClientIPFix(v); ok {
			out = append(out, f)
		}
	}
	return append(out, standardFixes(v)...)
}

// alibabaClientIPFix turns client IP preservation off on an ACK NLB's server groups, which the
// CCM updates in place (pkg/controller/service/nlbv2/server_groups.go).
func alibabaClientIPFix(v *cloudView) (cloudFix, bool) {
	clientIP := core.ClientIPLost
	if strings.EqualFold(v.svc.Annotations[annAlibabaProxyProto], "on") && v.e.Protocols&(core.UDP|core.SCTP) == 0 {
		clientIP = core.ClientIPProxyProtocol
	}
	o := core.Offer{
		ID:     "alibaba/nlb-client-ip-off",
		Remedy: core.LBSourceNAT, Path: core.PathProxy,
		Action: "set metadata.annotations[\"" + annAlibabaPreserveClient + "\"]: \"off\" (add " + annAlibabaProxyProto +
			": \"on\" only if the backends read the PROXY header)",
		Costs:  core.Costs{ClientIP: clientIP},
		Reason: ruleOfferAlibabaClientIP.Reason(),
	}
	return v.annotationFix(o, annAlibabaPreserveClient, "off")
}
