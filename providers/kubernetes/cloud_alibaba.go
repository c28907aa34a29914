package kubernetes

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// Alibaba Cloud ACK: kubernetes/cloud-provider-alibaba-cloud, read at v2.14.0 and dated over
// v2.1.0-v2.14.0, makes a CLB, or an NLB for the class alibabacloud.com/nlb. Every setting X is
// service.beta.kubernetes.io/alibaba-cloud-loadbalancer-X, else the legacy
// service.beta.kubernetes.io/alicloud-loadbalancer-X (the new key wins when both are set, even
// empty).
type alibabaCloud struct{ cloudBase }

const (
	alibabaPrefix       = "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-"
	alibabaLegacyPrefix = "service.beta.kubernetes.io/alicloud-loadbalancer-"
	// Settings, after either prefix.
	alibabaProxyProtocol = "proxy-protocol"
	alibabaPreserve      = "preserve-client-ip"
	alibabaHostname      = "hostname"
	alibabaAddressType   = "address-type"
	alibabaProtocolPort  = "protocol-port"
	// Keys, in the new spelling.
	annAlibabaProxyProto     = alibabaPrefix + alibabaProxyProtocol
	annAlibabaPreserveClient = alibabaPrefix + alibabaPreserve
	annAlibabaLBType         = alibabaPrefix + "type"
	alibabaNLBClass          = "alibabacloud.com/nlb"
)

// Upstream sources, at the tag read.
const (
	alibabaRepo        = "kubernetes/cloud-provider-alibaba-cloud "
	srcAlibabaKeys     = alibabaRepo + "pkg/controller/service/reconcile/annotation/annotations.go Get@v2.14.0 (alibaba-cloud-loadbalancer-X, else alicloud-loadbalancer-X)"
	srcAlibabaWhich    = alibabaRepo + "pkg/controller/helper/service_utils.go NeedCLB, NeedNLB@v2.14.0 (class alibabacloud.com/nlb: the NLB, since v2.5.1; alibaba-cloud-loadbalancer-type: nlb only behind the alpha feature gate LoadBalancerTypeAnnotation, off by default: otherwise a CLB)"
	srcAlibabaProxy    = alibabaRepo + "pkg/controller/service/clbv1/listeners.go@v2.14.0 (CLB: exactly \"on\" sets EnableProxyProtocolV2 on the TCP and UDP listeners) and nlbv2/listeners.go (NLB: \"on\" in any case, since v2.9.1); empty leaves it as it is"
	srcAlibabaPreserve = alibabaRepo + "pkg/controller/service/nlbv2/server_groups.go@v2.14.0 (PreserveClientIpEnabled is \"on\" in any case, every other non-empty value turns it off; absent or empty, nothing is sent and the NLB API's default applies, which no public source read states; updated in place)"
	srcAlibabaL7       = alibabaRepo + "pkg/controller/service/clbv1/listeners.go@v2.14.0 (protocol-port \"https:443,http:80\": exactly http, https, tcp or udp, else an error); the CLB's HTTP and HTTPS listeners are proxies that add X-Forwarded-For (Alibaba Cloud CLB documentation)"
	srcAlibabaStatus   = alibabaRepo + "pkg/controller/service/clbv1/service_controller.go@v2.14.0 (CLB: the hostname annotation, else the IP or EIPs; no ipMode) and nlbv2/nlb_controller.go updateServiceStatus (NLB: its DNS name, always)"
	srcAlibabaScope    = alibabaRepo + "pkg/controller/service/clbv1/loadbalancer.go and pkg/model/nlb/nlb.go GetAddressType@v2.14.0 (CLB: internet or intranet as written, lower case; NLB: case-insensitive)"
	srcAlibaba         = "Alibaba Cloud ACK documentation \"Considerations for configuring a LoadBalancer Service\" (layer-4 CLB listeners pass the client address; with the PROXY protocol in-cluster access to the CLB IP fails: use the hostname annotation)"
)

const (
	codeAlibabaNLBPreserve   core.Code = "k8s-alibaba-nlb-client-ip"
	codeOfferAlibabaClientIP core.Code = "k8s-offer-alibaba-nlb-client-ip-off"
)

var (
	ruleAlibabaNLBPreserve = core.Rule{Code: codeAlibabaNLBPreserve,
		Summary: "An ACK NLB's server groups keep the client address only with preserve-client-ip \"on\" (any case); any other value makes the NLB's address the source. Without the annotation the NLB API's default applies, which no public source states: unknown.",
		Source:  srcAlibabaPreserve}
	ruleOfferAlibabaClientIP = core.Rule{Code: codeOfferAlibabaClientIP,
		Summary: "Set alibaba-cloud-loadbalancer-preserve-client-ip: \"off\" on an ACK NLB, which the CCM updates in place: the NLB's address becomes the source and replies return through it; the client address is lost unless alibaba-cloud-loadbalancer-proxy-protocol: \"on\" and the backends read the header.",
		Source:  srcAlibabaPreserve}
)

var alibabaFacts = cloudFacts{
	name:               "alibaba",
	title:              "Alibaba Cloud ACK",
	providerIDPrefixes: []string{"alicloud://"}, // the CCM's own form <region>.<instance> has no scheme
	classes:            []string{alibabaNLBClass},
	annotationPrefixes: []string{alibabaPrefix, alibabaLegacyPrefix},
	sourceNAT:          core.Unknown, // the CLB per listener, the NLB per preserve-client-ip: read
	hostnameAnnotation: alibabaPrefix + alibabaHostname,
	ipMode:             ccmIPMode{read: true, source: srcAlibabaStatus},
	source:             srcAlibaba + "; " + srcAlibabaWhich,
	scope: []ScopeAnnotation{
		{Cloud: "Alibaba Cloud CLB", Key: alibabaPrefix + alibabaAddressType,
			Private: []string{"intranet"}, Public: []string{"internet"},
			when: func(svc *corev1.Service) bool { return !alibabaNLB(svc) }, Source: srcAlibabaScope},
		{Cloud: "Alibaba Cloud CLB (legacy key)", Key: alibabaLegacyPrefix + alibabaAddressType,
			Private: []string{"intranet"}, Public: []string{"internet"}, ShadowedBy: alibabaPrefix + alibabaAddressType,
			when: func(svc *corev1.Service) bool { return !alibabaNLB(svc) }, Source: srcAlibabaScope},
		{Cloud: "Alibaba Cloud NLB", Key: alibabaPrefix + alibabaAddressType,
			Private: []string{"intranet"}, Public: []string{"internet"}, FoldCase: true,
			when: alibabaNLB, Source: srcAlibabaScope},
		{Cloud: "Alibaba Cloud NLB (legacy key)", Key: alibabaLegacyPrefix + alibabaAddressType,
			Private: []string{"intranet"}, Public: []string{"internet"}, FoldCase: true, ShadowedBy: alibabaPrefix + alibabaAddressType,
			when: alibabaNLB, Source: srcAlibabaScope},
	},
	rules: []core.Rule{ruleAlibabaNLBPreserve, ruleOfferAlibabaClientIP},
	doc: cloudDoc{
		lb: "CLB (the default): its TCP and UDP listeners pass the client's address, its HTTP and HTTPS ones (`protocol-port`) are proxies; NLB (class `alibabacloud.com/nlb`): " +
			"the client's address with `preserve-client-ip: on` (any case), the NLB's with any other value, unknown without (the API's default is stated nowhere)",
		backend: "PROXY v2 with `proxy-protocol: on` (exactly `on` on a CLB, any case on an NLB); X-Forwarded-For behind an HTTP listener; every key also in the legacy `alicloud-loadbalancer-` spelling",
		status:  "CLB: the IP (or the `hostname` annotation's name), no ipMode; NLB: its DNS name, never intercepted",
		remedy:  "CLB: `alibaba-cloud-loadbalancer-hostname` with the external-dns name; NLB that keeps the client address: `preserve-client-ip: \"off\"` (in place)",
		sources: "cloud-provider-alibaba-cloud v2.14.0 (dated over v2.1.0–v2.14.0): `pkg/controller/helper/service_utils.go`, `pkg/controller/service/clbv1`, `pkg/controller/service/nlbv2`, `reconcile/annotation/annotations.go`; ACK documentation",
	},
}

func (alibabaCloud) facts() *cloudFacts { return &alibabaFacts }

// alibabaGet reads a setting as AnnotationRequest.Get does: the new key, else the legacy one.
func alibabaGet(svc *corev1.Service, x string) (key, value string, set bool) {
	if v, ok := svc.Annotations[alibabaPrefix+x]; ok {
		return alibabaPrefix + x, v, true
	}
	v, ok := svc.Annotations[alibabaLegacyPrefix+x]
	return alibabaLegacyPrefix + x, v, ok
}

// alibabaNLB reports a Service the NLB reconciler takes: its class. The type annotation counts
// only behind an alpha feature gate, off by default (NeedNLB).
func alibabaNLB(svc *corev1.Service) bool {
	c := svc.Spec.LoadBalancerClass
	return c != nil && *c == alibabaNLBClass
}

// alibabaProxy reads proxy-protocol: exactly "on" on a CLB, "on" in any case on an NLB; empty
// or absent leaves the listener as it is.
func alibabaProxy(svc *corev1.Service) (bool, taken) {
	_, raw, set := alibabaGet(svc, alibabaProxyProtocol)
	if !set || raw == "" {
		return false, valueAbsent
	}
	if alibabaNLB(svc) {
		return strings.EqualFold(raw, "on"), valueTaken
	}
	return raw == "on", valueTaken
}

// alibabaPreserveIP reads preserve-client-ip on an NLB: "on" in any case is on, any other
// non-empty value off; empty or absent sends nothing.
func alibabaPreserveIP(svc *corev1.Service) (bool, taken) {
	_, raw, set := alibabaGet(svc, alibabaPreserve)
	if !set || raw == "" {
		return false, valueAbsent
	}
	return strings.EqualFold(raw, "on"), valueTaken
}

// alibabaL7Ports reads protocol-port ("https:443,http:80") for the CLB: the Service ports whose
// listener is HTTP or HTTPS, and whether every TCP port is one; rejected on a protocol the
// controller does not take (exactly http, https, tcp or udp).
func alibabaL7Ports(svc *corev1.Service) (http, https []int32, all bool, st taken) {
	_, raw, set := alibabaGet(svc, alibabaProtocolPort)
	if !set || raw == "" {
		return nil, nil, false, valueAbsent
	}
	byPort := map[string]string{}
	for _, pp := range strings.Split(raw, ",") {
		proto, port, ok := strings.Cut(strings.TrimSpace(pp), ":")
		switch {
		case !ok:
			return nil, nil, false, valueRejected
		case proto == "http" || proto == "https" || proto == "tcp" || proto == "udp":
			byPort[port] = proto
		default:
			return nil, nil, false, valueRejected
		}
	}
	all = true
	for _, p := range svc.Spec.Ports {
		switch byPort[strconv.Itoa(int(p.Port))] {
		case "http":
			http = append(http, p.Port)
		case "https":
			https = append(https, p.Port)
		default:
			all = false
		}
	}
	return http, https, all, valueTaken
}

func (alibabaCloud) read(v *cloudView) {
	svc := v.svc
	nlb := alibabaNLB(svc)
	if on, _ := alibabaProxy(svc); on {
		key, raw, _ := alibabaGet(svc, alibabaProxyProtocol)
		v.expects("v2", ruleCCMProxyProtocol.Because("Alibaba Cloud: "+key+": "+quote(raw)+" (PROXY v2) ["+srcAlibabaProxy+"]"))
	} else if key, raw, set := alibabaGet(svc, alibabaProxyProtocol); set && !nlb && strings.EqualFold(raw, "on") {
		v.valueNote(valueIgnored, key, "the CLB reconciler takes exactly \"on\"; this leaves the PROXY protocol off", srcAlibabaProxy)
	}
	if t := svc.Annotations[annAlibabaLBType]; t != "" && !nlb {
		v.valueNote(valueIgnored, annAlibabaLBType, "the ACK controller reads it only behind the alpha feature gate LoadBalancerTypeAnnotation, off by default, and then makes a CLB; the class alibabacloud.com/nlb makes an NLB", srcAlibabaWhich)
	}
	if !nlb {
		http, https, all, st := alibabaL7Ports(svc)
		key, _, _ := alibabaGet(svc, alibabaProtocolPort)
		v.valueNote(st, key, "the CLB reconciler takes http, https, tcp or udp exactly, as protocol:port", srcAlibabaL7)
		if len(http)+len(https) > 0 {
			v.sourceNAT(core.Yes, core.Unknown, ruleCloudL7.Because("Alibaba Cloud CLB: "+key+": HTTP or HTTPS listeners on "+portList(append(http, https...))+": the CLB opens its own connection, the client's address in X-Forwarded-For ["+srcAlibabaL7+"]"))
			if !all {
				v.sourceNAT(core.No, core.Unknown, ruleCloudDefault.Because("Alibaba Cloud CLB: its other ports have layer-4 listeners, which pass the client's address ["+srcAlibaba+"]"))
			}
			if len(https) > 0 {
				v.needsTLS(ruleCloudL7.Because("Alibaba Cloud CLB: HTTPS listeners on " + portList(https) + " end TLS; the backends speak HTTP [" + srcAlibabaL7 + "]"))
			}
		}
	}
	if !v.detected {
		return
	}
	if !nlb {
		v.byDefault(core.No, core.Unknown, ruleCloudDefault.Because("Alibaba Cloud CLB: its layer-4 listeners pass the client's address"+v.on()+" ["+srcAlibaba+"]"))
		return
	}
	key, raw, _ := alibabaGet(svc, alibabaPreserve)
	switch on, st := alibabaPreserveIP(svc); {
	case st == valueAbsent:
		v.unseenSetting("Alibaba Cloud NLB: the Service does not set " + annAlibabaPreserveClient + ", so the NLB API's default for client IP preservation applies, and no public source read here states it: treated as unknown; set the annotation to \"on\" or \"off\", or declare loopguard.io/lb-source-nat [" + srcAlibabaPreserve + "]")
	case on:
		v.sourceNAT(core.No, core.Unknown, ruleAlibabaNLBPreserve.Because("Alibaba Cloud NLB: "+key+": "+quote(raw)+v.on()))
	default:
		v.sourceNAT(core.Yes, core.Unknown, ruleAlibabaNLBPreserve.Because("Alibaba Cloud NLB: "+key+": "+quote(raw)+" (anything but \"on\" turns preservation off)"+v.on()))
	}
}

func portList(ps []int32) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ", ")
}

func (alibabaCloud) fixes(v *cloudView) []cloudFix {
	if !alibabaNLB(v.svc) {
		// Only the CLB reads the hostname annotation; the NLB publishes its DNS name anyway.
		return standardFixes(v)
	}
	if v.e.LBSourceNAT != core.No || v.e.Intercept == core.Yes {
		return nil
	}
	clientIP := core.ClientIPLost
	if on, _ := alibabaProxy(v.svc); on && v.e.Protocols&(core.UDP|core.SCTP) == 0 {
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
	f, ok := v.annotationFix(o, annAlibabaPreserveClient, "off")
	if !ok {
		return nil
	}
	return []cloudFix{f}
}
