package kubernetes

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// AWS has three controllers for a LoadBalancer Service: the cloud-controller-manager
// (kubernetes/cloud-provider-aws, read at v1.36.1: a Classic ELB by default, an NLB with
// aws-load-balancer-type "nlb"), the AWS Load Balancer Controller
// (kubernetes-sigs/aws-load-balancer-controller, read at v3.5.0: an NLB for its class,
// "external" or "nlb-ip"), and EKS Auto Mode (closed source: its documentation only, for the
// class eks.amazonaws.com/nlb). Every one publishes the load balancer's DNS name, never an IP,
// so no node intercepts it.
type awsCloud struct{ cloudBase }

const (
	annAWSType             = "service.beta.kubernetes.io/aws-load-balancer-type"
	annAWSTargetGroupAttrs = "service.beta.kubernetes.io/aws-load-balancer-target-group-attributes"
	annAWSNLBTargetType    = "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"
	annAWSProxyProtocol    = "service.beta.kubernetes.io/aws-load-balancer-proxy-protocol"
	annAWSScheme           = "service.beta.kubernetes.io/aws-load-balancer-scheme"
	annAWSInternal         = "service.beta.kubernetes.io/aws-load-balancer-internal"
	awsLBCClass            = "service.k8s.aws/nlb"
	awsAutoModeClass       = "eks.amazonaws.com/nlb"
	// flagAWSDefaultTargetType is the Load Balancer Controller's flag for the target type of a
	// Service that names none (instance when unset).
	flagAWSDefaultTargetType = "--default-target-type"
	tgPreserveClientIP       = "preserve_client_ip.enabled"
	tgProxyProtocolV2        = "proxy_protocol_v2.enabled"
)

// Upstream sources, at the tag read.
const (
	awsCCMRepo        = "kubernetes/cloud-provider-aws "
	awsLBCRepo        = "kubernetes-sigs/aws-load-balancer-controller "
	srcAWSCCMType     = awsCCMRepo + "pkg/providers/v1/aws_loadbalancer.go isNLB, isLBExternal and aws.go EnsureLoadBalancer@v1.36.1 (type \"nlb\": an NLB with instance targets; \"nlb-ip\", \"external\": left to another controller; any other value or none: a Classic ELB; a Service with a loadBalancerClass is never passed to it)"
	srcAWSCCMAttrs    = awsCCMRepo + "pkg/providers/v1/aws_loadbalancer.go, aws_validations.go@v1.36.1 (target-group-attributes on an NLB: only preserve_client_ip.enabled and proxy_protocol_v2.enabled, exactly true or false, pairs trimmed but not around '='; anything else, false with a UDP port, or the annotation on a Classic ELB fails EnsureLoadBalancer; applied in place to every target group; since v1.34.0, v1.33.3 and v1.32.6, not in v1.34.1)"
	srcAWSCCMProxy    = awsCCMRepo + "pkg/providers/v1/aws.go@v1.36.1 (aws-load-balancer-proxy-protocol: only on a Classic ELB, only \"*\", any other non-empty value fails EnsureLoadBalancer; the NLB path does not read it)"
	srcAWSCCMInternal = awsCCMRepo + "pkg/providers/v1/aws.go EnsureLoadBalancer@v1.36.1 (aws-load-balancer-internal: \"false\" or empty is internet-facing, any other value internal; applied only when the load balancer is created)"
	srcAWSLBCClaims   = awsLBCRepo + "pkg/service/service_utils.go@v3.5.0 (its class, type \"nlb-ip\", or type \"external\" with nlb-target-type exactly ip or instance; any other \"external\" Service is nobody's) and pkg/config/service_config.go (class service.k8s.aws/nlb)"
	srcAWSLBCTarget   = awsLBCRepo + "pkg/service/model_build_target_group.go@v3.5.0 (target type ip for \"nlb-ip\" or nlb-target-type \"ip\", else --default-target-type, instance by default; buildPreserveClientIPFlag: off for ip targets, on for instance targets when the attribute is not set; target-group-attributes parsed by ParseStringMapAnnotation, preserve_client_ip.enabled with strconv.ParseBool; applied in place)"
	srcAWSLBCProxy    = awsLBCRepo + "pkg/service/model_build_target_group.go@v3.5.0 (aws-load-balancer-proxy-protocol: \"*\" sets proxy_protocol_v2.enabled on every target group; any other value fails the build)"
	srcAWSLBCScheme   = awsLBCRepo + "pkg/service/model_build_load_balancer.go@v3.5.0 (aws-load-balancer-scheme exactly internal or internet-facing, else an error; then aws-load-balancer-internal by strconv.ParseBool; default internal since v2.2.0)"
	srcAWSAutoMode    = "EKS Auto Mode documentation, awsdocs/amazon-eks-user-guide latest/ug/automode/auto-configure-nlb.adoc and auto-networking.adoc (class eks.amazonaws.com/nlb; \"The default targeting mode is IP Mode\"; target-group-attributes proxy_protocol_v2.enabled; aws-load-balancer-internal and -proxy-protocol not supported; closed source)"
	srcAWSTG          = "AWS ELB docs network/edit-target-group-attributes.html#client-ip-preservation (instance targets: preserved; IP targets over TCP or TLS: not preserved, the NLB's private address reaches the target; UDP: always preserved)"
	srcAWSHairpin     = "AWS ELB docs network/load-balancer-troubleshooting.html (with client IP preservation, a target that connects to its own internal NLB and is picked as the target times out: no hairpinning); " + awsCCMRepo + "docs/service_controller.md@v1.36.1 (hairpin on an internal NLB: preserve_client_ip.enabled=false); kubernetes/cloud-provider-aws#1160"
	srcAWSCLB         = "AWS ELB docs classic/enable-proxy-protocol.html and classic/x-forwarded-headers.html (a Classic Load Balancer opens its own connection to the instance: the client's address only in the PROXY v1 header, or X-Forwarded-For on HTTP listeners)"
)

// Codes of the AWS unit's rules.
const (
	codeCloudAWSIPTargets core.Code = "k8s-aws-ip-targets-no-preservation"
	codeCloudAWSPreserves core.Code = "k8s-aws-lbc-preserves-client-ip"
	codeCloudAWSCLB       core.Code = "k8s-aws-clb-proxies"
	codeOfferAWSClientIP  core.Code = "k8s-offer-aws-client-ip-off"
	codeAWSCCMTooOld      core.Code = "k8s-aws-ccm-nlb-no-preservation-knob"
	codeAWSClientIPUDP    core.Code = "k8s-aws-udp-always-preserves"
	codeAWSNLBClientIP    core.Code = "k8s-aws-nlb-preserves-client-ip"
	codeAWSClientIPOff    core.Code = "k8s-aws-nlb-client-ip-off"
	codeAWSNoController   core.Code = "k8s-aws-no-controller"
)

var (
	ruleCloudAWSIPTargets = core.Rule{Code: codeCloudAWSIPTargets,
		Summary: "An NLB with IP targets over TCP (the AWS Load Balancer Controller's ip target type, EKS Auto Mode's default) does not preserve the client IP unless told to: the backend sees the NLB's private address, so replies return through it.",
		Source:  srcAWSLBCTarget + "; " + srcAWSAutoMode + "; " + srcAWSTG}
	ruleCloudAWSPreserves = core.Rule{Code: codeCloudAWSPreserves,
		Summary: "An NLB with instance targets (or any UDP target group) preserves the client IP by default; a client on the target the NLB picks fails (no hairpinning).",
		Source:  srcAWSLBCTarget + "; " + srcAWSTG + "; " + srcAWSHairpin}
	ruleCloudAWSCLB = core.Rule{Code: codeCloudAWSCLB,
		Summary: "The AWS cloud-controller-manager's Classic Load Balancer (every type but \"nlb\", \"nlb-ip\" and \"external\") is a proxy: the node sees the CLB's address.",
		Source:  srcAWSCCMType + "; " + srcAWSCLB}
	ruleOfferAWSClientIP = core.Rule{Code: codeOfferAWSClientIP,
		Summary: "Set the target-group attribute preserve_client_ip.enabled=false (aws-load-balancer-target-group-attributes), which the AWS Load Balancer Controller, and the cloud-controller-manager from v1.34.0 (v1.33.3, v1.32.6), apply to the NLB's target groups in place: the NLB's address becomes the source and replies return through it; the client address is lost unless proxy_protocol_v2.enabled=true and the backends read the header.",
		Source:  srcAWSCCMAttrs + "; " + srcAWSLBCTarget + "; " + srcAWSHairpin}
	ruleAWSCCMTooOld = core.Rule{Code: codeAWSCCMTooOld,
		Summary: "The AWS cloud-controller-manager reads aws-load-balancer-target-group-attributes from v1.34.0, v1.33.3 and v1.32.6 on (not v1.34.1); an older release ignores it: upgrade the controller first.",
		Source:  srcAWSCCMAttrs}
	ruleAWSClientIPUDP = core.Rule{Code: codeAWSClientIPUDP,
		Summary: "Client IP preservation cannot be turned off for UDP target groups (the cloud-controller-manager refuses the Service; AWS refuses the attribute).",
		Source:  srcAWSTG + "; " + srcAWSCCMAttrs}
	ruleAWSNLBClientIP = core.Rule{Code: codeAWSNLBClientIP,
		Summary: "An AWS NLB with client-IP preservation keeps the client's source address; a client on the node the NLB picks fails (no hairpin).",
		Source:  srcAWSTG + "; " + srcAWSHairpin}
	ruleAWSClientIPOff = core.Rule{Code: codeAWSClientIPOff,
		Summary: "preserve_client_ip.enabled=false: the NLB's private IP is the source the backend sees, so replies return through the NLB.",
		Source:  srcAWSTG}
	ruleAWSNoController = core.Rule{Code: codeAWSNoController,
		Summary: "aws-load-balancer-type \"external\" without nlb-target-type exactly ip or instance, and no loadBalancerClass: the cloud-controller-manager leaves it to another controller and the AWS Load Balancer Controller does not claim it, so no load balancer is made.",
		Source:  srcAWSLBCClaims + "; " + srcAWSCCMType}
)

var awsFacts = cloudFacts{
	name:               "aws",
	title:              "AWS",
	providerIDPrefixes: []string{"aws://"},
	classes:            []string{awsLBCClass, awsAutoModeClass},
	annotationPrefixes: []string{"service.beta.kubernetes.io/aws-load-balancer-"},
	sourceNAT:          core.Unknown, // per controller, target type and protocol: read
	ipMode:             ccmIPMode{read: true, source: awsCCMRepo + "pkg/providers/v1/aws.go toStatus, v2toStatus@v1.36.1 and " + awsLBCRepo + "controllers/service/service_controller.go@v3.5.0 (the DNS name only)"},
	settings:           []controllerSetting{{name: flagAWSDefaultTargetType}},
	images:             []string{"provider-aws/cloud-controller-manager"},
	source:             srcAWSCCMType + "; " + srcAWSLBCClaims,
	scope: []ScopeAnnotation{
		{Cloud: "AWS cloud-controller-manager", Key: annAWSInternal,
			// "false" and "" are public, any other value internal (old manifests use "0.0.0.0/0").
			Private: []string{"*"}, Public: []string{"false", ""},
			when:   func(svc *corev1.Service) bool { return !awsFlavourOf(svc).lbc },
			Source: srcAWSCCMInternal},
		{Cloud: "AWS Load Balancer Controller", Key: annAWSInternal,
			Private: []string{"1", "t", "T", "TRUE", "true", "True"}, Public: []string{"0", "f", "F", "FALSE", "false", "False"},
			ShadowedBy: annAWSScheme,
			when:       func(svc *corev1.Service) bool { f := awsFlavourOf(svc); return f.lbc && !f.autoMode },
			Source:     srcAWSLBCScheme},
		{Cloud: "AWS Load Balancer Controller", Key: annAWSScheme,
			Private: []string{"internal"}, Public: []string{"internet-facing"},
			when:   func(svc *corev1.Service) bool { return awsFlavourOf(svc).lbc },
			Source: srcAWSLBCScheme},
	},
	rules: []core.Rule{ruleCloudAWSIPTargets, ruleCloudAWSPreserves, ruleCloudAWSCLB, ruleOfferAWSClientIP, ruleAWSCCMTooOld,
		ruleAWSClientIPUDP, ruleAWSNLBClientIP, ruleAWSClientIPOff, ruleAWSNoController},
	doc: cloudDoc{
		lb: "CCM Classic ELB (the default): a proxy. NLB, instance targets (CCM type `nlb`, LBC `instance`): passes the client through, same-node clients time out; IP targets over TCP (LBC `ip`, EKS Auto Mode's default): the NLB's address; UDP: always the client's",
		backend: "Classic ELB: PROXY v1 with `aws-load-balancer-proxy-protocol: \"*\"` (any other value: rejected); NLB: PROXY v2 with `target-group-attributes: proxy_protocol_v2.enabled=true` " +
			"(the LBC also with `proxy-protocol: \"*\"`; the CCM's NLB ignores that key)",
		status: "the load balancer's DNS name only: never intercepted",
		remedy: "`target-group-attributes: preserve_client_ip.enabled=false` on an NLB with instance targets: the LBC applies it in place; the CCM from v1.34.0, v1.33.3, v1.32.6 (not v1.34.1), tentative when its release is not known; not for UDP",
		sources: "cloud-provider-aws v1.36.1 (dated over v1.32.5–v1.34.2): `pkg/providers/v1/aws.go`, `aws_loadbalancer.go`, `aws_validations.go`; " +
			"aws-load-balancer-controller v3.5.0: `pkg/service/service_utils.go`, `model_build_target_group.go`, `model_build_load_balancer.go`; EKS Auto Mode: AWS documentation only",
	},
}

func (awsCloud) facts() *cloudFacts { return &awsFacts }

// awsFlavour says which AWS controller makes the load balancer and its target type.
type awsFlavour struct {
	lbc       bool // the AWS Load Balancer Controller, or EKS Auto Mode
	autoMode  bool // EKS Auto Mode
	nlb       bool // a Network Load Balancer (else a Classic one)
	nobody    bool // no controller claims the Service
	ipTargets bool // target type ip
	// defaultTarget: the target type is the controller's default, not the Service's.
	defaultTarget bool
	// assumed: no class and no type, but annotations only the Load Balancer Controller reads:
	// its webhook gives such a Service its class when it is created (enableServiceMutatorWebhook,
	// on by default since v2.5.0); without the webhook the cloud-controller-manager makes a
	// Classic ELB. The annotations are read as the Load Balancer Controller reads them, and no
	// default is stated.
	assumed bool
	what    string // for messages
}

// awsFlavourOf applies the controllers' claims (srcAWSCCMType, srcAWSLBCClaims): exact,
// case-sensitive comparisons in both.
func awsFlavourOf(svc *corev1.Service) awsFlavour {
	ann := svc.Annotations
	typ, target := ann[annAWSType], ann[annAWSNLBTargetType]
	cls := ""
	if svc.Spec.LoadBalancerClass != nil {
		cls = *svc.Spec.LoadBalancerClass
	}
	lbc := func(what string, ip, byDefault bool) awsFlavour {
		f := awsFlavour{lbc: true, nlb: true, ipTargets: ip, defaultTarget: byDefault, what: what + ", instance targets"}
		if ip {
			f.what = what + ", IP targets"
		}
		return f
	}
	switch {
	case cls == awsAutoModeClass:
		// Auto Mode targets IP by default [docs].
		f := lbc("EKS Auto Mode NLB", target != "instance", target != "ip" && target != "instance")
		f.autoMode = true
		return f
	case cls == awsLBCClass:
		// Claimed through the class, any target type but "ip" is instance.
		return lbc("AWS Load Balancer Controller NLB", typ == "nlb-ip" || target == "ip", typ != "nlb-ip" && target != "ip" && target != "instance")
	case cls != "":
		return awsFlavour{nobody: true, what: "load balancer class " + cls}
	case typ == "nlb-ip":
		return lbc("AWS Load Balancer Controller NLB", true, false)
	case typ == "external" && (target == "ip" || target == "instance"):
		return lbc("AWS Load Balancer Controller NLB", target == "ip", false)
	case typ == "external":
		return awsFlavour{nobody: true, what: "aws-load-balancer-type \"external\" without nlb-target-type ip or instance"}
	case typ == "nlb":
		return awsFlavour{nlb: true, what: "AWS cloud-controller-manager NLB, instance targets"}
	case typ == "" && awsLBCOnly(svc):
		f := lbc("AWS Load Balancer Controller NLB (no loadBalancerClass yet: its webhook sets it when the Service is created; without the webhook the cloud-controller-manager makes a Classic ELB)",
			target == "ip", target != "ip" && target != "instance")
		f.assumed = true
		return f
	}
	return awsFlavour{what: "AWS cloud-controller-manager Classic Load Balancer"}
}

// awsLBCOnly reports annotations only the AWS Load Balancer Controller reads
// (srcAWSLBCClaims: the webhook that sets its class is in webhooks/core/service_mutator.go).
func awsLBCOnly(svc *corev1.Service) bool {
	for _, k := range [...]string{annAWSScheme, annAWSNLBTargetType, annAWSTargetGroupAttrs} {
		if _, ok := svc.Annotations[k]; ok {
			return true
		}
	}
	return false
}

// awsAttrs is target-group-attributes as one controller parses it: the pairs, and whether the
// controller refuses the annotation as a whole.
type awsAttrs struct {
	pairs    map[string]string
	set      bool
	rejected string // why the controller refuses it; "" when it takes it
}

// awsCCMAttrs parses target-group-attributes as the cloud-controller-manager does
// (srcAWSCCMAttrs): pairs split at ",", each trimmed, then split at "=" (key and value not
// trimmed); the last of a key wins; on an NLB only preserve_client_ip.enabled and
// proxy_protocol_v2.enabled, exactly "true" or "false", and preservation cannot be off with
// a UDP port.
func awsCCMAttrs(svc *corev1.Service, nlb bool) awsAttrs {
	raw, set := svc.Annotations[annAWSTargetGroupAttrs]
	a := awsAttrs{set: set}
	if !set {
		return a
	}
	if !nlb {
		a.rejected = "the annotation is only supported for an NLB"
		return a
	}
	a.pairs = map[string]string{}
	if raw = strings.TrimSpace(raw); raw == "" {
		return a
	}
	for _, kv := range strings.Split(raw, ",") {
		tag := strings.Split(strings.TrimSpace(kv), "=")
		switch {
		case len(tag) >= 2 && tag[0] != "":
			a.pairs[tag[0]] = tag[1]
		case len(tag) == 1 && tag[0] != "":
			a.pairs[tag[0]] = ""
		}
	}
	for k, val := range a.pairs {
		switch {
		case val == "":
			a.rejected = "the value of " + quote(k) + " is empty"
		case k != tgPreserveClientIP && k != tgProxyProtocolV2:
			a.rejected = quote(k) + " is not an attribute it supports (only " + tgPreserveClientIP + " and " + tgProxyProtocolV2 + ")"
		case val != "true" && val != "false":
			a.rejected = k + "=" + val + " is neither true nor false"
		case k == tgPreserveClientIP && val == "false" && hasUDP(svc):
			a.rejected = "client IP preservation cannot be turned off with a UDP port"
		}
		if a.rejected != "" {
			break
		}
	}
	return a
}

// awsLBCAttrs parses target-group-attributes as the Load Balancer Controller does
// (ParseStringMapAnnotation, srcAWSLBCTarget): pairs split at ",", key and value trimmed; a
// pair without "=" or with an empty key fails the build; preserve_client_ip.enabled must be a
// Go bool. Other keys go to AWS as they are.
func awsLBCAttrs(svc *corev1.Service) awsAttrs {
	raw, set := svc.Annotations[annAWSTargetGroupAttrs]
	a := awsAttrs{set: set}
	if !set {
		return a
	}
	a.pairs = map[string]string{}
	for _, kv := range strings.Split(raw, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, val, ok := strings.Cut(kv, "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		if !ok || k == "" {
			a.rejected = quote(strings.TrimSpace(kv)) + " is not key=value"
			return a
		}
		a.pairs[k] = val
	}
	if p, ok := a.pairs[tgPreserveClientIP]; ok {
		b, ok := goBool(p)
		if !ok {
			a.rejected = tgPreserveClientIP + "=" + p + " is not a Go bool"
			return a
		}
		// The controller's view of the attribute; the string itself goes to AWS.
		a.pairs[tgPreserveClientIP] = strconv.FormatBool(b)
	}
	return a
}

func hasUDP(svc *corev1.Service) bool {
	for _, p := range svc.Spec.Ports {
		if p.Protocol == corev1.ProtocolUDP || p.Protocol == "TCP_UDP" {
			return true
		}
	}
	return false
}

// awsCCMReadsAttrs says whether the cloud-controller-manager's release reads
// target-group-attributes: v1.32.6 and later 1.32 patches, v1.33.3 and later 1.33, v1.34.0,
// v1.34.2 and later, every 1.35 and newer (v1.34.1 was cut from a branch without it).
func awsCCMReadsAttrs(r release) core.Fact {
	if r.v == nil {
		return core.Unknown
	}
	if r.v.Major() != 1 {
		return yesIf(r.v.Major() > 1)
	}
	switch m, p := r.v.Minor(), r.v.Patch(); {
	case m >= 35:
		return core.Yes
	case m == 34:
		return yesIf(p != 1)
	case m == 33:
		return yesIf(p >= 3)
	case m == 32:
		return yesIf(p >= 6)
	}
	return core.No
}

const awsCCMAttrsReleases = "v1.34.0, v1.34.2 and later, v1.33.3, v1.32.6 (not v1.34.1)"

func (awsCloud) read(v *cloudView) {
	svc := v.svc
	f := awsFlavourOf(svc)
	switch {
	case f.nobody:
		if v.detected && svc.Spec.LoadBalancerClass == nil {
			v.note(ruleAWSNoController.Because("Service " + svc.Namespace + "/" + svc.Name + ": " + f.what + ": no controller makes its load balancer [" + srcAWSLBCClaims + "]"))
		}
		return
	case f.lbc:
		awsReadLBC(v, f)
	case f.nlb:
		awsReadCCMNLB(v, f)
	default:
		awsReadCLB(v, f)
	}
}

// awsReadCLB: the cloud-controller-manager's Classic ELB, a proxy.
func awsReadCLB(v *cloudView, f awsFlavour) {
	svc := v.svc
	if a := awsCCMAttrs(svc, false); a.set {
		v.valueNote(valueRejected, annAWSTargetGroupAttrs, "the AWS cloud-controller-manager reads it only for an NLB ("+a.rejected+")", srcAWSCCMAttrs)
	}
	switch p, set := svc.Annotations[annAWSProxyProtocol]; {
	case p == "*":
		v.expects("v1", ruleCCMProxyProtocol.Because("AWS Classic ELB: "+annAWSProxyProtocol+": \"*\" (PROXY v1) ["+srcAWSCCMProxy+"]"))
	case set && p != "":
		v.valueNote(valueRejected, annAWSProxyProtocol, "the AWS cloud-controller-manager takes only \"*\"", srcAWSCCMProxy)
	}
	if v.detected && svc.Spec.LoadBalancerClass == nil {
		v.byDefault(core.Yes, core.Unknown, ruleCloudAWSCLB.Because(f.what+" is a proxy: it opens its own connection to the node"+v.on()))
	}
}

// awsReadCCMNLB: the cloud-controller-manager's NLB, instance targets with client IP
// preservation on, unless its release reads target-group-attributes and they turn it off.
func awsReadCCMNLB(v *cloudView, f awsFlavour) {
	svc := v.svc
	if _, set := svc.Annotations[annAWSProxyProtocol]; set {
		v.valueNote(valueIgnored, annAWSProxyProtocol, "the AWS cloud-controller-manager's NLB does not read it (no PROXY header; proxy_protocol_v2.enabled in target-group-attributes is the NLB's switch)", srcAWSCCMProxy)
	}
	a := awsCCMAttrs(svc, true)
	reads := awsCCMReadsAttrs(v.release())
	preserve := "true"
	switch {
	case !a.set:
	case reads == core.No:
		r := v.release()
		v.valueNote(valueIgnored, annAWSTargetGroupAttrs, "the AWS cloud-controller-manager "+r.raw+" ("+r.from+") predates it: it reads the annotation from "+awsCCMAttrsReleases, srcAWSCCMAttrs)
	case a.rejected != "":
		v.valueNote(valueRejected, annAWSTargetGroupAttrs, "the AWS cloud-controller-manager refuses it: "+a.rejected, srcAWSCCMAttrs)
		return
	default:
		if p, ok := a.pairs[tgPreserveClientIP]; ok {
			preserve = p
		}
		if a.pairs[tgProxyProtocolV2] == "true" {
			v.expects("v2", ruleCCMProxyProtocol.Because("AWS cloud-controller-manager NLB: "+annAWSTargetGroupAttrs+" sets "+tgProxyProtocolV2+"=true ["+srcAWSCCMAttrs+"]"))
		}
	}
	if reads == core.Unknown && a.set && a.rejected == "" {
		v.note(ruleReleaseDecides.Because("AWS cloud-controller-manager NLB: " + annAWSTargetGroupAttrs + " takes effect from " + awsCCMAttrsReleases +
			"; an older controller ignores it, and the release here is not known (the profile's ccmVersion, or the controller's Pod image): the verdict assumes a current release"))
	}
	if preserve == "false" {
		v.sourceNAT(core.Yes, core.Unknown, ruleAWSClientIPOff.Because("AWS cloud-controller-manager NLB: "+annAWSTargetGroupAttrs+" sets "+tgPreserveClientIP+"=false"))
		return
	}
	v.sourceNAT(core.No, core.Unknown, ruleAWSNLBClientIP.Because(f.what+" ("+annAWSType+": \"nlb\") keeps client IP preservation on ["+srcAWSCCMType+"; "+srcAWSTG+"]"))
}

// awsReadLBC: the Load Balancer Controller's NLB (or EKS Auto Mode's).
func awsReadLBC(v *cloudView, f awsFlavour) {
	svc := v.svc
	src := srcAWSLBCTarget
	if f.autoMode {
		src = srcAWSAutoMode
	}
	switch p, set := svc.Annotations[annAWSProxyProtocol]; {
	case !set:
	case f.autoMode:
		v.valueNote(valueIgnored, annAWSProxyProtocol, "EKS Auto Mode does not support it (proxy_protocol_v2.enabled in target-group-attributes is its switch)", srcAWSAutoMode)
	case p == "*":
		v.expects("v2", ruleCCMProxyProtocol.Because("AWS Load Balancer Controller: "+annAWSProxyProtocol+": \"*\" (proxy_protocol_v2.enabled on every target group) ["+srcAWSLBCProxy+"]"))
	default:
		v.valueNote(valueRejected, annAWSProxyProtocol, "the AWS Load Balancer Controller takes only \"*\"", srcAWSLBCProxy)
	}
	a := awsLBCAttrs(svc)
	if a.rejected != "" {
		v.valueNote(valueRejected, annAWSTargetGroupAttrs, "the AWS Load Balancer Controller refuses it: "+a.rejected, src)
		return
	}
	if a.pairs[tgProxyProtocolV2] == "true" {
		v.expects("v2", ruleCCMProxyProtocol.Because("AWS: "+annAWSTargetGroupAttrs+" sets "+tgProxyProtocolV2+"=true ["+src+"]"))
	}
	switch a.pairs[tgPreserveClientIP] {
	case "true":
		v.sourceNAT(core.No, core.Unknown, ruleAWSNLBClientIP.Because(annAWSTargetGroupAttrs+" sets "+tgPreserveClientIP+"=true"))
		return
	case "false":
		if v.protos&core.UDP != 0 {
			v.sourceNAT(core.No, core.Unknown, ruleAWSNLBClientIP.Because(tgPreserveClientIP+"=false, but the Service has UDP ports, whose target groups always preserve the client IP"))
		} else {
			v.sourceNAT(core.Yes, core.Unknown, ruleAWSClientIPOff.Because(annAWSTargetGroupAttrs+" sets "+tgPreserveClientIP+"=false"))
		}
		return
	}
	if !v.detected || f.assumed {
		return
	}
	on := v.on()
	if f.defaultTarget && !f.autoMode {
		if s := v.setting(flagAWSDefaultTargetType); s.found && s.value == "ip" {
			f.ipTargets, f.what = true, "AWS Load Balancer Controller NLB, IP targets ("+s.from+" sets "+flagAWSDefaultTargetType+"=ip)"
		}
	}
	switch {
	case f.ipTargets && v.protos&(core.UDP|core.SCTP) == 0:
		v.byDefault(core.Yes, core.Unknown, ruleCloudAWSIPTargets.Because(f.what+": client IP preservation is off by default for TCP, so the NLB's own address reaches the backend"+on))
	case f.ipTargets:
		v.byDefault(core.No, core.Unknown, ruleCloudAWSPreserves.Because(f.what+": client IP preservation is on for UDP target groups"+on))
	default:
		why := f.what + ": client IP preservation is on by default for instance targets" + on
		if f.defaultTarget && !f.autoMode {
			why += "; the target type is the controller's " + flagAWSDefaultTargetType + " (instance unless it says ip: state it in the profile's controllerSettings)"
		}
		v.byDefault(core.No, core.Unknown, ruleCloudAWSPreserves.Because(why))
	}
}

func (awsCloud) fixes(v *cloudView) []cloudFix {
	if v.e.LBSourceNAT != core.No || v.e.Intercept == core.Yes {
		return nil
	}
	f := awsFlavourOf(v.svc)
	if !f.nlb {
		return nil
	}
	fix, ok := awsClientIPFix(v, f)
	if !ok {
		return nil
	}
	return []cloudFix{fix}
}

// awsClientIPFix turns client IP preservation off on an NLB's target groups, which the Load
// Balancer Controller, and the cloud-controller-manager from v1.34.0, apply in place.
func awsClientIPFix(v *cloudView, f awsFlavour) (cloudFix, bool) {
	svc, e := v.svc, v.e
	cur := svc.Annotations[annAWSTargetGroupAttrs]
	want := setStringMapValue(cur, tgPreserveClientIP, "false")
	clientIP := core.ClientIPLost
	attrs := awsLBCAttrs(svc)
	if !f.lbc {
		attrs = awsCCMAttrs(svc, true)
	}
	if attrs.rejected == "" && attrs.pairs[tgProxyProtocolV2] == "true" {
		clientIP = core.ClientIPProxyProtocol
	}
	o := core.Offer{
		ID:     "aws/client-ip-off",
		Remedy: core.LBSourceNAT, Path: core.PathProxy,
		Action: "set metadata.annotations[\"" + annAWSTargetGroupAttrs + "\"]: " + quote(want) +
			" (add " + tgProxyProtocolV2 + "=true only if the backends read the PROXY header)",
		Costs:  core.Costs{ClientIP: clientIP},
		Reason: ruleOfferAWSClientIP.Reason(),
	}
	if e.Protocols&core.UDP != 0 || hasUDP(svc) {
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnsupported, Reason: ruleAWSClientIPUDP.Reason()})
		return cloudFix{offer: o}, true
	}
	if !f.lbc {
		// The cloud-controller-manager: only from the releases that read the annotation, and
		// only with the two attributes it supports.
		r := v.release()
		switch awsCCMReadsAttrs(r) {
		case core.No:
			o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionVersion, Reason: ruleAWSCCMTooOld.Because(
				"the AWS cloud-controller-manager is " + r.raw + " (" + r.from + "): upgrade it to " + awsCCMAttrsReleases + ", which apply " + tgPreserveClientIP + " in place")})
			return cloudFix{offer: o}, true
		case core.Unknown:
			o.Notes = append(o.Notes, ruleReleaseDecides.Because("the AWS cloud-controller-manager applies "+annAWSTargetGroupAttrs+" in place from "+awsCCMAttrsReleases+
				"; an older release ignores it, and this cluster's release is not known (the profile's ccmVersion, or the controller's Pod image)"))
			o.Action += "; the AWS cloud-controller-manager must be " + awsCCMAttrsReleases + " or later"
		}
		if a := awsCCMAttrs(svc, true); a.rejected != "" {
			o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnsupported, Reason: ruleValueRejected.Because(
				"Service " + svc.Namespace + "/" + svc.Name + ": " + annAWSTargetGroupAttrs + ": " + quote(cur) + ": the AWS cloud-controller-manager refuses it (" + a.rejected + "): fix it first [" + srcAWSCCMAttrs + "]")})
			return cloudFix{offer: o}, true
		}
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

// AWSController is what the AWS cloud-controller-manager runs with, as a host that knows it
// states it: its release decides whether target-group-attributes take effect on its NLBs.
type AWSController struct {
	// Version is the cloud-provider-aws release ("v1.36.1"); "" when not known.
	Version string
}

// Overlay states the controller's release in p.
func (c AWSController) Overlay(p *core.ClusterProfile) { overlayController(p, c.Version) }
