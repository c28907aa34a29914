package kubernetes

import (
	"strconv"
	"strings"

	"github.com/loopguard/loopguard/core"
)

// Oracle OKE: oracle/oci-cloud-controller-manager makes an OCI load balancer, or a network
// load balancer with oci.oraclecloud.com/load-balancer-type "nlb".
type oracleCloud struct{ cloudBase }

const (
	annOCINLBPreserveSource    = "oci-network-load-balancer.oraclecloud.com/is-preserve-source"
	annOCIIngressIPMode        = "oci.oraclecloud.com/ingress-ip-mode"
	annOCILBType               = "oci.oraclecloud.com/load-balancer-type"
	annOCINLBProxyV2           = "oci-network-load-balancer.oraclecloud.com/is-ppv2-enabled"
	annOCIProxyProtocolVersion = "service.beta.kubernetes.io/oci-load-balancer-connection-proxy-protocol-version"
)

const (
	srcOracle    = "Oracle OKE docs \"Specifying IPMode to adjust traffic routing\" (oci.oraclecloud.com/ingress-ip-mode: \"VIP\" or \"proxy\"; the OCI load balancer is a proxy, the network load balancer preserves the source with is-preserve-source); oracle/oci-cloud-controller-manager docs/load-balancer-annotations.md"
	srcCCMOracle = "oracle/oci-cloud-controller-manager pkg/cloudprovider/providers/oci/load_balancer_spec.go getIngressIpMode (oci.oraclecloud.com/ingress-ip-mode)"
	srcOCINLB    = "Oracle OKE docs contengconfiguringloadbalancersnetworkloadbalancers-subtopic (private NLB with is-preserve-source \"true\": no traffic where source and backend node are the same)"
)

const (
	codeOfferOCIIPMode core.Code = "k8s-offer-oci-ingress-ip-mode"
	codeOCINLBPreserve core.Code = "k8s-oci-nlb-preserve-source"
)

var (
	ruleOfferOCIIPMode = core.Rule{Code: codeOfferOCIIPMode,
		Summary: "Oracle OKE's oci.oraclecloud.com/ingress-ip-mode: \"proxy\" makes the CCM publish ipMode Proxy, so in-cluster traffic goes through the load balancer (Kubernetes 1.30 or later).",
		Source:  srcOracle}
	ruleOCINLBPreserve = core.Rule{Code: codeOCINLBPreserve,
		Summary: "An OCI network load balancer with is-preserve-source \"true\" keeps the client's source address; Oracle documents that traffic fails when source and backend are on the same node.",
		Source:  srcOCINLB}
)

var oracleFacts = cloudFacts{
	name:               "oracle",
	title:              "Oracle OKE",
	providerIDPrefixes: []string{"oci://", "ocid1."},
	annotationPrefixes: []string{"service.beta.kubernetes.io/oci-", "oci-network-load-balancer.oraclecloud.com/", "oci.oraclecloud.com/"},
	sourceNAT:          core.Unknown, // LB or NLB, and the NLB's is-preserve-source: read
	ipMode: ccmIPMode{read: true, annotation: annOCIIngressIPMode, proxyValue: "proxy", foldCase: true,
		offerRule: ruleOfferOCIIPMode, source: srcCCMOracle},
	source: srcOracle,
	scope: []ScopeAnnotation{
		{Cloud: "Oracle OKE (load balancer)", Key: "service.beta.kubernetes.io/oci-load-balancer-internal",
			Private: []string{"true"}, Public: []string{"false"},
			Source: "Oracle OKE docs contengconfiguringloadbalancersnetworkloadbalancers-subtopic (Creating Internal Load Balancers)"},
		{Cloud: "Oracle OKE (network load balancer)", Key: "oci-network-load-balancer.oraclecloud.com/internal",
			Private: []string{"true"}, Public: []string{"false"},
			Source: "Oracle OKE docs contengconfiguringloadbalancersnetworkloadbalancers-subtopic; oracle/oci-cloud-controller-manager ServiceAnnotationNetworkLoadBalancerInternal"},
	},
	rules: []core.Rule{ruleOfferOCIIPMode, ruleOCINLBPreserve},
}

func (oracleCloud) facts() *cloudFacts { return &oracleFacts }

func (oracleCloud) read(v *cloudView) {
	ann := v.svc.Annotations
	// A network load balancer that preserves the source.
	if ann[annOCINLBPreserveSource] == "true" {
		v.sourceNAT(core.No, core.Unknown, ruleOCINLBPreserve.Because("Oracle OKE: "+annOCINLBPreserveSource+": \"true\""))
	}
	// The network load balancer's PROXY v2 switch (true, any case), and the classic load
	// balancer's backend PROXY protocol version.
	if p := ann[annOCINLBProxyV2]; strings.EqualFold(p, "true") {
		v.expects("v2", ruleCCMProxyProtocol.Because("Oracle OKE: "+annOCINLBProxyV2+": "+quote(p)))
	}
	if p, ok := ann[annOCIProxyProtocolVersion]; ok {
		if n, err := strconv.Atoi(strings.TrimSpace(p)); err == nil && (n == 1 || n == 2) {
			v.expects("v"+strconv.Itoa(n), ruleCCMProxyProtocol.Because("Oracle OKE: "+annOCIProxyProtocolVersion+": "+quote(p)))
		}
	}
	if _, ok := ann[annOCIIngressIPMode]; ok {
		v.rd.vipHint = "on Oracle OKE set " + annOCIIngressIPMode + ": VIP"
	}
	if !v.detected {
		return
	}
	// The OCI load balancer (not the NLB) is a proxy.
	if t := ann[annOCILBType]; t == "" || t == "lb" {
		if _, nlb := ann[annOCINLBPreserveSource]; !nlb {
			v.byDefault(core.Yes, core.Unknown, ruleCloudDefault.Because("Oracle OKE: the OCI load balancer (oci.oraclecloud.com/load-balancer-type "+quote(orDefault(t, "lb"))+") is a proxy"+v.on()))
		}
	}
}
