package kubernetes

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// Oracle OKE: oracle/oci-cloud-controller-manager, read at v1.35.0 and dated over its v1.x
// tags, makes an OCI (flexible) load balancer, or a network load balancer with
// oci.oraclecloud.com/load-balancer-type "nlb".
type oracleCloud struct{ cloudBase }

const (
	annOCILBType               = "oci.oraclecloud.com/load-balancer-type"
	annOCINLBPreserveSource    = "oci-network-load-balancer.oraclecloud.com/is-preserve-source"
	annOCIIngressIPMode        = "oci.oraclecloud.com/ingress-ip-mode"
	annOCINLBProxyV2           = "oci-network-load-balancer.oraclecloud.com/is-ppv2-enabled"
	annOCIProxyProtocolVersion = "service.beta.kubernetes.io/oci-load-balancer-connection-proxy-protocol-version"
	annOCIBackendProtocol      = "service.beta.kubernetes.io/oci-load-balancer-backend-protocol"
	annOCILBInternal           = "service.beta.kubernetes.io/oci-load-balancer-internal"
	annOCINLBInternal          = "oci-network-load-balancer.oraclecloud.com/internal"
)

// Upstream sources, at the tag read.
const (
	ociSpec          = "oracle/oci-cloud-controller-manager pkg/cloudprovider/providers/oci/load_balancer_spec.go "
	srcOCIType       = ociSpec + "getLoadBalancerType@v1.35.0 (lower-cased; \"nlb\" is a network load balancer, anything else an OCI load balancer, without error)"
	srcOCIPreserve   = ociSpec + "getPreserveSource, getPreserveSourceAnnotation@v1.35.0 (only for type exactly \"nlb\" and externalTrafficPolicy Local: strconv.ParseBool, true when absent; with Cluster never, and the annotation is an error; since v1.24.0)"
	srcOCIPPv2       = ociSpec + "@v1.35.0 (is-ppv2-enabled: lower-cased \"true\" or \"false\", anything else unset; PROXY v2 on the NLB; since v1.28.2)"
	srcOCIPPVersion  = ociSpec + "@v1.35.0 (connection-proxy-protocol-version: strconv.Atoi, untrimmed, an error fails the Service; the backend PROXY version of every listener)"
	srcOCIBackend    = ociSpec + "@v1.35.0 (backend-protocol: HTTP, TCP or GRPC in any case, TCP when empty, anything else an error)"
	srcOCIIPMode     = ociSpec + "getIngressIpMode@v1.35.0 (lower-cased \"proxy\" or \"vip\"; anything else fails the Service; for the load balancer and the network load balancer; since v1.29.2) and load_balancer.go loadBalancerToStatus (every IP with that ipMode, unset without the annotation)"
	srcOCIInternal   = ociSpec + "isInternalLB@v1.35.0 (the key of the Service's type only, strconv.ParseBool, an error fails the Service)"
	srcOracleDocs    = "Oracle OKE documentation (the OCI load balancer is a proxy: the client's address via the PROXY protocol or X-Forwarded-For; a network load balancer preserving the source fails for a client on the backend's node; without preservation the backend sees the NLB's address)"
	ociNLB           = "nlb"
	ociIPModeRelease = "v1.29.2"
)

const (
	codeOfferOCIIPMode   core.Code = "k8s-offer-oci-ingress-ip-mode"
	codeOCINLBPreserve   core.Code = "k8s-oci-nlb-preserve-source"
	codeOfferOCIPreserve core.Code = "k8s-offer-oci-nlb-preserve-off"
)

var (
	ruleOfferOCIIPMode = core.Rule{Code: codeOfferOCIIPMode,
		Summary: "Oracle OKE's oci.oraclecloud.com/ingress-ip-mode: \"proxy\" makes the CCM (v1.29.2 or later) publish ipMode Proxy, so in-cluster traffic goes through the load balancer (Kubernetes 1.30 or later).",
		Source:  srcOCIIPMode}
	ruleOCINLBPreserve = core.Rule{Code: codeOCINLBPreserve,
		Summary: "An OCI network load balancer preserves the client's source address when its type is exactly \"nlb\", externalTrafficPolicy is Local and is-preserve-source is not false (true by default); Oracle documents that traffic fails when source and backend are on the same node.",
		Source:  srcOCIPreserve + "; " + srcOracleDocs}
	ruleOfferOCIPreserve = core.Rule{Code: codeOfferOCIPreserve,
		Summary: "Set oci-network-load-balancer.oraclecloud.com/is-preserve-source: \"false\", which the CCM applies to the backend sets in place: the NLB's address becomes the source and replies return through it; the client address is lost unless is-ppv2-enabled: \"true\" and the backends read the header.",
		Source:  srcOCIPreserve + "; " + srcOracleDocs}
)

var oracleFacts = cloudFacts{
	name:               "oracle",
	title:              "Oracle OKE",
	providerIDPrefixes: []string{"oci://", "ocid1."},
	annotationPrefixes: []string{"service.beta.kubernetes.io/oci-", "oci-network-load-balancer.oraclecloud.com/", "oci.oraclecloud.com/"},
	sourceNAT:          core.Unknown, // LB or NLB, and the NLB's preservation: read
	ipMode: ccmIPMode{read: true, annotation: annOCIIngressIPMode, proxyValue: "proxy", foldCase: true, since: ociIPModeRelease,
		offerRule: ruleOfferOCIIPMode, source: srcOCIIPMode},
	source: srcOracleDocs,
	scope: []ScopeAnnotation{
		{Cloud: "Oracle OKE (load balancer)", Key: annOCILBInternal,
			Private: []string{"1", "t", "T", "TRUE", "true", "True"}, Public: []string{"0", "f", "F", "FALSE", "false", "False"},
			when:   func(svc *corev1.Service) bool { return ociType(svc) != ociNLB },
			Source: srcOCIInternal},
		{Cloud: "Oracle OKE (network load balancer)", Key: annOCINLBInternal,
			Private: []string{"1", "t", "T", "TRUE", "true", "True"}, Public: []string{"0", "f", "F", "FALSE", "false", "False"},
			when:   func(svc *corev1.Service) bool { return ociType(svc) == ociNLB },
			Source: srcOCIInternal},
	},
	rules: []core.Rule{ruleOfferOCIIPMode, ruleOCINLBPreserve, ruleOfferOCIPreserve},
	doc: cloudDoc{
		lb: "OCI load balancer (the default): a proxy; network load balancer (`load-balancer-type: nlb`): the client's address with `externalTrafficPolicy: Local` " +
			"and `is-preserve-source` not false (true by default; a Go bool; with `Cluster` the annotation is an error), the NLB's address otherwise",
		backend: "LB: PROXY v1/v2 with `oci-load-balancer-connection-proxy-protocol-version` (strconv.Atoi, untrimmed), X-Forwarded-For with `backend-protocol: HTTP`; NLB: PROXY v2 with `is-ppv2-enabled: \"true\"` (any case)",
		status:  "each IP, with the ipMode `oci.oraclecloud.com/ingress-ip-mode` names (`proxy`/`vip` in any case; v1.29.2+), unset without it",
		remedy:  "`oci.oraclecloud.com/ingress-ip-mode: \"proxy\"`; on an NLB that preserves the source, `is-preserve-source: \"false\"` (in place)",
		sources: "oci-cloud-controller-manager v1.35.0 (dated over v1.x): `pkg/cloudprovider/providers/oci/load_balancer_spec.go`, `load_balancer.go`; Oracle OKE documentation",
	},
}

func (oracleCloud) facts() *cloudFacts { return &oracleFacts }

// ociType is the type as getLoadBalancerType reads it: "nlb" or "lb".
func ociType(svc *corev1.Service) string {
	if strings.ToLower(svc.Annotations[annOCILBType]) == ociNLB {
		return ociNLB
	}
	return "lb"
}

// ociPreserve reads whether an NLB preserves the client's address, as getPreserveSource does:
// only for type exactly "nlb"; with externalTrafficPolicy Cluster never, and the annotation is
// then an error; with Local strconv.ParseBool, true when absent.
func ociPreserve(svc *corev1.Service) (bool, taken) {
	raw, set := svc.Annotations[annOCINLBPreserveSource]
	if svc.Annotations[annOCILBType] != ociNLB {
		return false, valueAbsent
	}
	if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		if set {
			return false, valueRejected
		}
		return false, valueAbsent
	}
	if !set {
		return true, valueAbsent
	}
	b, ok := goBool(raw)
	if !ok {
		return false, valueRejected
	}
	return b, valueTaken
}

// ociIPMode reads ingress-ip-mode as getIngressIpMode does.
func ociIPMode(svc *corev1.Service) (corev1.LoadBalancerIPMode, taken) {
	raw, set := svc.Annotations[annOCIIngressIPMode]
	if !set {
		return "", valueAbsent
	}
	switch strings.ToLower(raw) {
	case "proxy":
		return corev1.LoadBalancerIPModeProxy, valueTaken
	case "vip":
		return corev1.LoadBalancerIPModeVIP, valueTaken
	}
	return "", valueRejected
}

// ociPPVersion reads connection-proxy-protocol-version: strconv.Atoi without trimming.
func ociPPVersion(svc *corev1.Service) (int, taken) {
	raw, set := svc.Annotations[annOCIProxyProtocolVersion]
	if !set {
		return 0, valueAbsent
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		return 0, valueRejected
	}
	return n, valueTaken
}

// ociPPv2 reads is-ppv2-enabled: lower-cased "true" or "false", anything else unset.
func ociPPv2(svc *corev1.Service) (bool, taken) {
	raw, set := svc.Annotations[annOCINLBProxyV2]
	switch v := strings.ToLower(raw); {
	case !set:
		return false, valueAbsent
	case v == "true":
		return true, valueTaken
	case v == "false":
		return false, valueTaken
	}
	return false, valueIgnored
}

// ociBackendProtocol reads backend-protocol: HTTP, TCP or GRPC in any case, TCP when empty.
func ociBackendProtocol(svc *corev1.Service) (string, taken) {
	raw, set := svc.Annotations[annOCIBackendProtocol]
	switch v := strings.ToUpper(raw); {
	case !set:
		return "TCP", valueAbsent
	case v == "":
		return "TCP", valueTaken
	case v == "HTTP" || v == "TCP" || v == "GRPC":
		return v, valueTaken
	}
	return "", valueRejected
}

func (oracleCloud) read(v *cloudView) {
	svc := v.svc
	typ := ociType(svc)
	if raw, set := svc.Annotations[annOCILBType]; set && typ != ociNLB && strings.ToLower(raw) != "lb" {
		v.valueNote(valueIgnored, annOCILBType, "the Oracle controller takes \"nlb\" or \"lb\" in any case", srcOCIType)
	}
	mode, mst := ociIPMode(svc)
	v.valueNote(mst, annOCIIngressIPMode, "the Oracle controller takes \"proxy\" or \"vip\" in any case", srcOCIIPMode)
	if mst != valueAbsent {
		v.rd.vipHint = "on Oracle OKE set " + annOCIIngressIPMode + ": VIP"
	}
	_ = mode
	if typ == ociNLB {
		on, st := ociPPv2(svc)
		v.valueNote(st, annOCINLBProxyV2, "the Oracle controller takes \"true\" or \"false\" in any case", srcOCIPPv2)
		if on {
			v.expects("v2", ruleCCMProxyProtocol.Because("Oracle OKE: "+annOCINLBProxyV2+": "+quote(svc.Annotations[annOCINLBProxyV2])+" ["+srcOCIPPv2+"]"))
		}
		preserve, pst := ociPreserve(svc)
		if pst == valueRejected {
			what := "the Oracle controller reads a Go bool (strconv.ParseBool)"
			if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
				what = "the Oracle controller refuses it unless externalTrafficPolicy is Local"
			}
			v.valueNote(pst, annOCINLBPreserveSource, what, srcOCIPreserve)
			return
		}
		switch {
		case preserve && pst == valueTaken:
			v.sourceNAT(core.No, core.Unknown, ruleOCINLBPreserve.Because("Oracle OKE network load balancer: "+annOCINLBPreserveSource+": "+quote(svc.Annotations[annOCINLBPreserveSource])+" with externalTrafficPolicy Local"))
		case preserve:
			v.byDefault(core.No, core.Unknown, ruleOCINLBPreserve.Because("Oracle OKE network load balancer: with externalTrafficPolicy Local it preserves the client's address by default"+v.on()))
		case pst == valueTaken:
			v.sourceNAT(core.Yes, core.Unknown, ruleOCINLBPreserve.Because("Oracle OKE network load balancer: "+annOCINLBPreserveSource+": "+quote(svc.Annotations[annOCINLBPreserveSource])+": the backend sees the NLB's address"))
		default:
			why := "externalTrafficPolicy is not Local"
			if svc.Annotations[annOCILBType] != ociNLB {
				why = annOCILBType + " is " + quote(svc.Annotations[annOCILBType]) + ", not exactly \"nlb\""
			}
			v.byDefault(core.Yes, core.Unknown, ruleOCINLBPreserve.Because("Oracle OKE network load balancer: "+why+", so it does not preserve the source: the backend sees the NLB's address"+v.on()))
		}
		return
	}
	n, st := ociPPVersion(svc)
	v.valueNote(st, annOCIProxyProtocolVersion, "the Oracle controller reads an integer (strconv.Atoi, untrimmed)", srcOCIPPVersion)
	if st == valueTaken && (n == 1 || n == 2) {
		v.expects("v"+strconv.Itoa(n), ruleCCMProxyProtocol.Because("Oracle OKE: "+annOCIProxyProtocolVersion+": "+quote(svc.Annotations[annOCIProxyProtocolVersion])+" ["+srcOCIPPVersion+"]"))
	}
	proto, bst := ociBackendProtocol(svc)
	v.valueNote(bst, annOCIBackendProtocol, "the Oracle controller takes HTTP, TCP or GRPC in any case", srcOCIBackend)
	if !v.detected {
		return
	}
	what := "is a proxy"
	if proto == "HTTP" || proto == "GRPC" {
		what = "is an " + proto + " proxy (the client's address in X-Forwarded-For)"
	}
	v.byDefault(core.Yes, core.Unknown, ruleCloudDefault.Because("Oracle OKE: the OCI load balancer ("+annOCILBType+" "+quote(orDefault(svc.Annotations[annOCILBType], "lb"))+") "+what+v.on()+" ["+srcOracleDocs+"]"))
}

func (oracleCloud) fixes(v *cloudView) []cloudFix {
	out := standardFixes(v)
	// An NLB that keeps the client address loops for a client on the backend's node: turn it off.
	if ociType(v.svc) == ociNLB && v.e.LBSourceNAT == core.No && v.e.Intercept != core.Yes {
		clientIP := core.ClientIPLost
		if on, _ := ociPPv2(v.svc); on {
			clientIP = core.ClientIPProxyProtocol
		}
		o := core.Offer{ID: "oracle/nlb-preserve-off", Remedy: core.LBSourceNAT, Path: core.PathProxy,
			Action: "set metadata.annotations[\"" + annOCINLBPreserveSource + "\"]: \"false\" (add " + annOCINLBProxyV2 + ": \"true\" only if the backends read the PROXY header)",
			Costs:  core.Costs{ClientIP: clientIP}, Reason: ruleOfferOCIPreserve.Reason()}
		if f, ok := v.annotationFix(o, annOCINLBPreserveSource, "false"); ok {
			out = append([]cloudFix{f}, out...)
		}
	}
	return out
}

// userIPMode: the controller publishes the ipMode ingress-ip-mode names.
func (oracleCloud) userIPMode(v *cloudView) (corev1.LoadBalancerIPMode, core.Reason, bool) {
	mode, st := ociIPMode(v.svc)
	if st != valueTaken {
		return "", core.Reason{}, false
	}
	return mode, v.userSet(annOCIIngressIPMode, mode, srcOCIIPMode), true
}
