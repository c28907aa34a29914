package volcengine

import "github.com/loopguard/loopguard/core"

// Sources the VKE rules cite. Seed 003 is the Volcengine document on the LoadBalancer Service
// IP mode (docs/sources.md#vke-ip-mode); its sections are named as in the document.
const (
	srcModes        = "docs/sources.md#vke-ip-mode §背景信息 (IP mode table: VIP / Proxy)"
	srcPrereqs      = "docs/sources.md#vke-ip-mode §前提条件 (prerequisites)"
	srcRestriction  = "docs/sources.md#vke-ip-mode §使用限制 (Proxy: client and server Pods must not share a node)"
	srcAnnotation   = "docs/sources.md#vke-ip-mode §操作步骤 (annotation table: default VIP, 是否支持修改 = 否)"
	srcVerification = "docs/sources.md#vke-ip-mode §结果验证 (status.ipMode; CLB monitoring)"
	srcAnnotations  = "Volcengine docs 6460/100304 (Service annotations); volcengine/volcengine-cloud-controller-manager docs/usage.md"
	srcDomainVKE    = "docs/sources.md#vke (VKE + CLB)"
	srcKEP          = "docs/sources.md#kep-1860 (KEP-1860 status.loadBalancer.ingress[].ipMode)"
)

// The VKE dialect's rules. Codes are stable; they are listed by Rules for docs/reasons.md.
var (
	RuleIPModeVIP = core.Rule{Code: "vke-ip-mode-vip",
		Summary: "ip-mode VIP: kube-proxy (the eBPF dataplane) redirects traffic for the CLB IP and port straight to backend Pods; it never reaches the CLB, so it cannot loop, and in-cluster clients get none of the CLB's features.",
		Source:  srcModes + "; " + srcAnnotation}
	RuleIPModeDefault = core.Rule{Code: "vke-ip-mode-default",
		Summary: "The Service has no ip-mode annotation: VIP is the default.",
		Source:  srcAnnotation}
	RuleIPModeProxy = core.Rule{Code: "vke-ip-mode-proxy",
		Summary: "ip-mode Proxy: nodes do not intercept the CLB address; all in-cluster traffic goes through the CLB, which keeps every CLB feature (TLS offload, monitoring, protocol conversion, PROXY protocol/TOA).",
		Source:  srcModes + "; " + srcAnnotation}
	RuleCLBKeepsSource = core.Rule{Code: "vke-clb-keeps-source",
		Summary: "The CLB keeps the client's source IP (classic CLB listeners have no source NAT switch), so in Proxy mode a client Pod and a server Pod on the same node loop: the reply is delivered on the node and the request fails.",
		Source:  srcRestriction + "; " + srcDomainVKE}
	RuleStatusIPMode = core.Rule{Code: "vke-status-ip-mode",
		Summary: "status.loadBalancer.ingress[].ipMode shows the mode in effect; nodes act on it, not on the annotation.",
		Source:  srcVerification + "; " + srcKEP}
	RuleStatusDisagrees = core.Rule{Code: "vke-status-disagrees",
		Summary: "The status shows another ip-mode than the annotation asks for: the cloud-controller-manager is older than v1.43.0, a prerequisite is unmet, it has not reconciled the Service yet, or the annotation was edited after creation, which has no effect.",
		Source:  srcVerification + "; " + srcAnnotation}
	RuleStatusMixed = core.Rule{Code: "vke-status-mixed",
		Summary: "The status's ingress points carry different ipModes; which path a client takes depends on the address it uses.",
		Source:  srcKEP}
	RuleStatusHostname = core.Rule{Code: "vke-status-hostname",
		Summary: "The status publishes a hostname but no IP; nodes only intercept IPs, so in-cluster clients reach the CLB whatever the ip-mode.",
		Source:  srcKEP}

	RulePrereqKubernetes = core.Rule{Code: "vke-prereq-kubernetes",
		Summary: "ip-mode needs Kubernetes v1.30 or later.",
		Source:  srcPrereqs}
	RulePrereqNetwork = core.Rule{Code: "vke-prereq-network",
		Summary: "ip-mode needs the VPC-CNI network model with IPVlan Pod interfaces and eBPF service forwarding.",
		Source:  srcPrereqs}
	RulePrereqCCM = core.Rule{Code: "vke-prereq-ccm",
		Summary: "ip-mode needs the cloud-controller-manager add-on v1.43.0 or later.",
		Source:  srcPrereqs}
	RulePrereqUnknown = core.Rule{Code: "vke-prereq-unknown",
		Summary: "Proxy is requested but the profile does not say whether the cluster meets the ip-mode prerequisites, so whether nodes still intercept the CLB address is unknown.",
		Source:  srcPrereqs}

	RuleImmutable = core.Rule{Code: "vke-ip-mode-immutable",
		Summary: "The ip-mode annotation cannot be changed once the Service exists: switching modes means a new Service, with a new CLB and a new address.",
		Source:  srcAnnotation}

	RuleAddressPrivate = core.Rule{Code: "vke-address-private",
		Summary: "address-type PRIVATE: the CLB is reachable only inside the VPC and sees in-cluster clients' own addresses.",
		Source:  srcAnnotations}
	RuleReusedCLB = core.Rule{Code: "vke-reused-clb",
		Summary: "The Service reuses an existing CLB (loadbalancer-id); its address type is the CLB's own, which only a cloud read or a loopguard.io/lb-scope annotation can tell.",
		Source:  srcAnnotations}
	RuleCloudRead = core.Rule{Code: "vke-cloud-read",
		Summary: "A read of the CLB through the Volcengine API gave this fact.",
		Source:  "Volcengine CLB API 2020-04-01 (DescribeLoadBalancerAttributes, DescribeListenerAttributes); " + srcDomainVKE}

	RulePassThrough = core.Rule{Code: "vke-pass-through",
		Summary: "pass-through \"true\": the CLB's backends are the Pods' ENIs (direct to Pod), so a connection loops with the share of backends on the client's node.",
		Source:  srcAnnotations}
	RuleNodePortBackends = core.Rule{Code: "vke-nodeport-backends",
		Summary: "pass-through is off (the default): the CLB's backends are the nodes' NodePorts, chosen by externalTrafficPolicy.",
		Source:  srcAnnotations}
	RuleBackendsRead = core.Rule{Code: "vke-backends-read",
		Summary: "A read of the CLB's server groups gave its backends: Servers[].Type eni are Pod ENIs (the CLB sends straight to Pods), ecs are instances reached on their NodePort; mixed or other types leave the binding unknown.",
		Source:  "Volcengine CLB API 2020-04-01 DescribeServerGroupAttributes (Servers[].Type, Ip, InstanceId, Port; volcengine-go-sdk v1.1.35 service/clb); docs/sources.md#vke"}
	RulePassThroughNoENI = core.Rule{Code: "vke-pass-through-needs-vpc-cni",
		Summary: "pass-through sends to Pod ENIs, which only the VPC-CNI network gives Pods; with this CNI which addresses the CLB sends to is unknown.",
		Source:  srcAnnotations + "; volcengine/cello README (secondary-ENI Pod network)"}

	RuleProxyProtocolVIP = core.Rule{Code: "vke-proxy-protocol-vip",
		Summary: "PROXY protocol is on, but intercepted (VIP) in-cluster traffic reaches the backends without the PROXY header; a backend that requires the header rejects it.",
		Source:  srcModes + " (VIP limitations: no Proxy-Protocol pass-through); " + srcKEP + " (peers set Proxy when PROXY protocol is on)"}

	RuleVerify = core.Rule{Code: "vke-verify",
		Summary: "To verify: status.loadBalancer.ingress[].ipMode must show the requested mode; in the CLB's monitoring, requests from a Pod to the CLB address add new connections in Proxy mode and none in VIP mode (test from a Pod on a node without backends).",
		Source:  srcVerification}

	RuleIngress = core.Rule{Code: "vke-ingress-not-exposed",
		Summary: "VKE's ip-mode is a Service annotation; an Ingress is served by its ingress controller's LoadBalancer Service, which is what loopguard assesses.",
		Source:  srcAnnotation + "; " + srcKEP + " (Ingress objects have no ipMode)"}
	RuleOtherClass = core.Rule{Code: "vke-other-lb-class",
		Summary: "The Service names another loadBalancerClass; the Volcengine controller (volcengine.com/clb) does not serve it.",
		Source:  srcAnnotations + " (loadBalancerClass volcengine.com/clb); Kubernetes Service.spec.loadBalancerClass"}

	RuleOfferInterceptVIP = core.Rule{Code: "vke-offer-intercept-vip",
		Summary: "Use ip-mode VIP: nodes redirect in-cluster traffic for the CLB address to backend Pods, which cannot loop; in-cluster clients lose the CLB's TLS offload, monitoring, protocol conversion and PROXY protocol/TOA.",
		Source:  srcModes}
	RuleOfferProxySeparation = core.Rule{Code: "vke-offer-proxy-separation",
		Summary: "Use ip-mode Proxy and keep client Pods off every node that runs a backend, as the Proxy-mode restriction requires.",
		Source:  srcRestriction}
)

// Rules lists the dialect's rules, for docs/reasons.md and for tests that check every code a
// translation emits is documented.
func (d *Dialect) Rules() []core.Rule {
	return append([]core.Rule{
		RuleIPModeVIP, RuleIPModeDefault, RuleIPModeProxy, RuleCLBKeepsSource,
		RuleStatusIPMode, RuleStatusDisagrees, RuleStatusMixed, RuleStatusHostname,
		RulePrereqKubernetes, RulePrereqNetwork, RulePrereqCCM, RulePrereqUnknown,
		RuleImmutable, RuleAddressPrivate, RuleReusedCLB, RuleCloudRead,
		RulePassThrough, RuleNodePortBackends, RuleBackendsRead, RulePassThroughNoENI, RuleProxyProtocolVIP,
		RuleVerify, RuleIngress, RuleOtherClass, RuleOfferInterceptVIP, RuleOfferProxySeparation,
		RuleProxyNotInEffect, RulePublicCLBKeepsSource, RuleAddressPublic, RuleEBPFKeepsPodSource,
	}, driverRules...)
}
