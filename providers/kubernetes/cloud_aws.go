package kubernetes

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// AWS: the cloud-controller-manager (kubernetes/cloud-provider-aws: a Classic ELB by default,
// an NLB with aws-load-balancer-type "nlb") and the AWS Load Balancer Controller
// (kubernetes-sigs/aws-load-balancer-controller: an NLB for its class, "external" or "nlb-ip").
type awsCloud struct{ cloudBase }

const (
	annAWSType             = "service.beta.kubernetes.io/aws-load-balancer-type"
	annAWSTargetGroupAttrs = "service.beta.kubernetes.io/aws-load-balancer-target-group-attributes"
	annAWSNLBTargetType    = "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"
	annAWSProxyProtocol    = "service.beta.kubernetes.io/aws-load-balancer-proxy-protocol"
	annAWSScheme           = "service.beta.kubernetes.io/aws-load-balancer-scheme"
	annAWSInternal         = "service.beta.kubernetes.io/aws-load-balancer-internal"
	awsLBCClass            = "service.k8s.aws/nlb"
)

const (
	srcAWSLBC     = "kubernetes-sigs/aws-load-balancer-controller docs/guide/service/nlb.md and annotations.md (target type instance by default; IP targets: client IP preservation off for TCP/TLS, on for UDP); AWS ELB docs network/edit-target-group-attributes.html#client-ip-preservation (defaults: instance targets on; IP targets TCP/TLS off; UDP on, cannot be turned off)"
	srcAWSCLB     = "AWS ELB docs classic/enable-proxy-protocol.html (a Classic Load Balancer opens its own connection to the instance; the client address only comes in the PROXY header); kubernetes/cloud-provider-aws pkg/providers/v1/aws.go (the default type is a Classic ELB, status hostname)"
	srcAWSHairpin = "AWS ELB docs network/load-balancer-troubleshooting.html (with client IP preservation, requests from a target to its own internal NLB fail: no hairpinning); kubernetes/cloud-provider-aws#1160; aws-load-balancer-controller#4803"
	srcAWS1160    = "kubernetes/cloud-provider-aws#1160 (internal NLB, instance targets: the CCM turns client-IP preservation on; clients on a backend's node fail)"
	srcAWSTG      = "AWS Network Load Balancer guide, edit-target-group-attributes (client IP preservation: when off, the source is the NLB's private IP; always on for UDP); aws-load-balancer-controller guide/service/annotations"
)

// Codes of the AWS unit's rules.
const (
	codeCloudAWSIPTargets core.Code = "k8s-aws-ip-targets-no-preservation"
	codeCloudAWSPreserves core.Code = "k8s-aws-lbc-preserves-client-ip"
	codeCloudAWSCLB       core.Code = "k8s-aws-clb-proxies"
	codeOfferAWSClientIP  core.Code = "k8s-offer-aws-client-ip-off"
	codeAWSLegacyNoKnob   core.Code = "k8s-aws-ccm-nlb-no-preservation-knob"
	codeAWSClientIPUDP    core.Code = "k8s-aws-udp-always-preserves"
	codeAWSNLBClientIP    core.Code = "k8s-aws-nlb-preserves-client-ip"
	codeAWSClientIPOff    core.Code = "k8s-aws-nlb-client-ip-off"
)

var (
	ruleCloudAWSIPTargets = core.Rule{Code: codeCloudAWSIPTargets,
		Summary: "An AWS Load Balancer Controller NLB with IP targets over TCP does not preserve the client IP by default: the backend sees the NLB's private address, so replies return through it.",
		Source:  srcAWSLBC}
	ruleCloudAWSPreserves = core.Rule{Code: codeCloudAWSPreserves,
		Summary: "An AWS Load Balancer Controller NLB with instance targets (or UDP) preserves the client IP by default; a client on the target the NLB picks fails (no hairpinning).",
		Source:  srcAWSLBC + "; " + srcAWSHairpin}
	ruleCloudAWSCLB = core.Rule{Code: codeCloudAWSCLB,
		Summary: "The AWS cloud-controller-manager's default Classic Load Balancer is a proxy: the node sees the CLB's address.",
		Source:  srcAWSCLB}
	ruleOfferAWSClientIP = core.Rule{Code: codeOfferAWSClientIP,
		Summary: "Set the AWS Load Balancer Controller's target-group attribute preserve_client_ip.enabled=false: the NLB's address becomes the source and replies return through it; the client address is lost unless proxy_protocol_v2.enabled=true and the backends read the header.",
		Source:  srcAWSLBC + "; " + srcAWSHairpin}
	ruleAWSLegacyNoKnob = core.Rule{Code: codeAWSLegacyNoKnob,
		Summary: "The AWS cloud-controller-manager's NLB turns client IP preservation on and has no annotation to turn it off; the AWS Load Balancer Controller does (a new load balancer).",
		Source:  "kubernetes/cloud-provider-aws#1160; " + srcAWSLBC}
	ruleAWSClientIPUDP = core.Rule{Code: codeAWSClientIPUDP,
		Summary: "Client IP preservation cannot be turned off for UDP target groups.",
		Source:  srcAWSTG}
	ruleAWSNLBClientIP = core.Rule{Code: codeAWSNLBClientIP,
		Summary: "An AWS NLB with client-IP preservation keeps the client's source address; a client on the node the NLB picks fails (no hairpin).",
		Source:  srcAWS1160 + "; " + srcAWSTG}
	ruleAWSClientIPOff = core.Rule{Code: codeAWSClientIPOff,
		Summary: "preserve_client_ip.enabled=false: the NLB's private IP is the source the backend sees, so replies return through the NLB.",
		Source:  srcAWSTG}
)

var awsFacts = cloudFacts{
	name:               "aws",
	title:              "AWS",
	providerIDPrefixes: []string{"aws://"},
	classes:            []string{awsLBCClass},
	annotationPrefixes: []string{"service.beta.kubernetes.io/aws-load-balancer-"},
	sourceNAT:          core.Unknown, // per controller, target type and protocol: read
	source:             srcAWSLBC + "; " + srcAWSCLB,
	scope: []ScopeAnnotation{
		{Cloud: "AWS cloud-controller-manager", Key: annAWSInternal,
			// The legacy AWS provider: "false" is public, any other non-empty value is internal
			// (old manifests use "0.0.0.0/0").
			Private: []string{"*"}, Public: []string{"false"},
			Source: "kubernetes/website service.md (Internal load balancer, AWS); cloud-provider-aws aws.go EnsureLoadBalancer (internalAnnotation == \"false\" → public, other non-empty → internal)"},
		{Cloud: "AWS Load Balancer Controller", Key: annAWSScheme,
			Private: []string{"internal"}, Public: []string{"internet-facing"},
			Source: "aws-load-balancer-controller guide/service/annotations (scheme; default internal since v2.2.0, guide/service/nlb)"},
	},
	rules: []core.Rule{ruleCloudAWSIPTargets, ruleCloudAWSPreserves, ruleCloudAWSCLB, ruleOfferAWSClientIP, ruleAWSLegacyNoKnob,
		ruleAWSClientIPUDP, ruleAWSNLBClientIP, ruleAWSClientIPOff},
}

func (awsCloud) facts() *cloudFacts { return &awsFacts }

// awsFlavour says which AWS controller makes the load balancer and its target type.
type awsFlavour struct {
	lbc       bool   // the AWS Load Balancer Controller
	nlb       bool   // a Network Load Balancer (else a Classic one)
	ipTargets bool   // LBC with target type ip
	what      string // for messages
}

func awsFlavourOf(svc *corev1.Service) awsFlavour {
	ann := svc.Annotations
	typ := ann[annAWSType]
	cls := ""
	if svc.Spec.LoadBalancerClass != nil {
		cls = *svc.Spec.LoadBalancerClass
	}
	switch {
	case cls == awsLBCClass || typ == "external" || typ == "nlb-ip":
		// The LBC's target type defaults to instance; "nlb-ip" is its older spelling of ip.
		ip := typ == "nlb-ip" || ann[annAWSNLBTargetType] == "ip"
		f := awsFlavour{lbc: true, nlb: true, ipTargets: ip, what: "AWS Load Balancer Controller NLB, instance targets"}
		if ip {
			f.what = "AWS Load Balancer Controller NLB, IP targets"
		}
		return f
	case cls != "":
		return awsFlavour{what: "load balancer class " + cls}
	case typ == "nlb":
		return awsFlavour{nlb: true, what: "AWS cloud-controller-manager NLB, instance targets"}
	case typ == "":
		return awsFlavour{what: "AWS cloud-controller-manager Classic Load Balancer"}
	}
	return awsFlavour{what: "AWS load balancer type " + quote(typ)}
}

func (awsCloud) read(v *cloudView) {
	svc, ann := v.svc, v.svc.Annotations
	// The cloud-controller-manager's NLB (type "nlb", no loadBalancerClass) registers instance
	// targets with client-IP preservation on and offers no way to change it.
	if ann[annAWSType] == "nlb" && svc.Spec.LoadBalancerClass == nil {
		v.sourceNAT(core.No, core.Unknown, ruleAWSNLBClientIP.Because("AWS cloud-controller-manager NLB ("+annAWSType+": \"nlb\") keeps client-IP preservation on"))
	}
	// The Load Balancer Controller: an explicit target-group attribute.
	if attrs, ok := ann[annAWSTargetGroupAttrs]; ok {
		switch stringMapValue(attrs, "preserve_client_ip.enabled") {
		case "true":
			v.sourceNAT(core.No, core.Unknown, ruleAWSNLBClientIP.Because(annAWSTargetGroupAttrs+" sets preserve_client_ip.enabled=true"))
		case "false":
			if v.protos&core.UDP != 0 {
				// Client IP preservation cannot be turned off for UDP target groups.
				v.sourceNAT(core.No, core.Unknown, ruleAWSNLBClientIP.Because("preserve_client_ip.enabled=false, but the Service has UDP ports, whose target groups always preserve the client IP"))
			} else {
				v.sourceNAT(core.Yes, core.Unknown, ruleAWSClientIPOff.Because(annAWSTargetGroupAttrs+" sets preserve_client_ip.enabled=false"))
			}
		}
		if stringMapValue(attrs, "proxy_protocol_v2.enabled") == "true" {
			v.expects("v2", ruleCCMProxyProtocol.Because("AWS: "+annAWSTargetGroupAttrs+" sets proxy_protocol_v2.enabled=true"))
		}
	}
	// "*" is the only value both controllers accept. The cloud provider's Classic ELB sends v1
	// (its ELB policy ProxyProtocol); the Load Balancer Controller's NLB target groups get
	// proxy_protocol_v2.enabled: which one runs is the loadBalancerClass's business.
	if ann[annAWSProxyProtocol] == "*" {
		v.expects("", ruleCCMProxyProtocol.Because("AWS: "+annAWSProxyProtocol+": \"*\""))
	}
	if !v.detected {
		return
	}
	f := awsFlavourOf(svc)
	on := v.on()
	switch {
	case f.lbc && f.ipTargets && v.protos&(core.UDP|core.SCTP) == 0:
		v.byDefault(core.Yes, core.Unknown, ruleCloudAWSIPTargets.Because(f.what+": client IP preservation is off by default for TCP, so the NLB's own address reaches the backend"+on))
	case f.lbc:
		why := "client IP preservation is on by default for instance targets"
		if f.ipTargets {
			why = "client IP preservation is on for UDP target groups"
		}
		v.byDefault(core.No, core.Unknown, ruleCloudAWSPreserves.Because(f.what+": "+why+on))
	case f.nlb:
		// The legacy NLB is read above.
	case svc.Spec.LoadBalancerClass == nil && ann[annAWSType] == "" && !awsLBCAnnotations(svc):
		v.byDefault(core.Yes, core.Unknown, ruleCloudAWSCLB.Because(f.what+" is a proxy: it opens its own connection to the node"+on))
	}
}

// awsLBCAnnotations reports annotations only the AWS Load Balancer Controller reads: with
// them and no type, which controller made the load balancer is not known.
func awsLBCAnnotations(svc *corev1.Service) bool {
	for _, k := range [...]string{annAWSScheme, annAWSNLBTargetType, annAWSTargetGroupAttrs} {
		if _, ok := svc.Annotations[k]; ok {
			return true
		}
	}
	return false
}

func (awsCloud) fixes(v *cloudView) []cloudFix {
	if v.e.LBSourceNAT != core.No || v.e.Intercept == core.Yes {
		return nil
	}
	f, ok := awsClientIPFix(v)
	if !ok {
		return nil
	}
	return []cloudFix{f}
}

// awsClientIPFix turns client IP preservation off on an AWS Load Balancer Controller NLB.
func awsClientIPFix(v *cloudView) (cloudFix, bool) {
	svc, e := v.svc, v.e
	cur := svc.Annotations[annAWSTargetGroupAttrs]
	want := setStringMapValue(cur, "preserve_client_ip.enabled", "false")
	clientIP := core.ClientIPLost
	if stringMapValue(cur, "proxy_protocol_v2.enabled") == "true" {
		clientIP = core.ClientIPProxyProtocol
	}
	o := core.Offer{
		ID:     "aws/client-ip-off",
		Remedy: core.LBSourceNAT, Path: core.PathProxy,
		Action: "set metadata.annotations[\"" + annAWSTargetGroupAttrs + "\"]: " + quote(want) +
			" (add proxy_protocol_v2.enabled=true only if the backends read the PROXY header)",
		Costs:  core.Costs{ClientIP: clientIP},
		Reason: ruleOfferAWSClientIP.Reason(),
	}
	f := awsFlavourOf(svc)
	switch {
	case !f.lbc:
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnsupported, Reason: ruleAWSLegacyNoKnob.Because(f.what + ": move the Service to the AWS Load Balancer Controller (a new load balancer and address)")})
		o.Costs.NewObject = true
		return cloudFix{offer: o}, true
	case e.Protocols&core.UDP != 0:
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnsupported, Reason: ruleAWSClientIPUDP.Reason()})
		return cloudFix{offer: o}, true
	}
	return v.annotationFix(o, annAWSTargetGroupAttrs, want)
}

// setStringMapValue sets key=value in a stringMap annotation ("k1=v1,k2=v2"), keeping every
// other pair in its place.
func setStringMapValue(v, key, value string) string {
	var parts []string
	found := false
	for _, kv := range strings.Split(v, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		if k, _, ok := strings.Cut(kv, "="); ok && strings.TrimSpace(k) == key {
			kv, found = key+"="+value, true
		}
		parts = append(parts, kv)
	}
	if !found {
		parts = append(parts, key+"="+value)
	}
	return strings.Join(parts, ",")
}

// stringMapValue returns the value of key in a stringMap annotation ("k1=v1,k2=v2"), or "".
func stringMapValue(v, key string) string {
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(val)
		}
	}
	return ""
}
