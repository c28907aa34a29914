package volcengine

import "github.com/loopguard/loopguard/core"

// Codes of this dialect's rules; the dialect's Rules lists the rules themselves.
const (
	CodePlanCreate             core.Code = "vke-plan-create"
	CodePlanReplace            core.Code = "vke-plan-replace"
	CodeMoveClients            core.Code = "vke-move-clients"
	CodeRequestedMode          core.Code = "vke-requested-mode-differs"
	CodeReplaceReused          core.Code = "vke-replace-reused-clb"
	CodeReplaceNameTaken       core.Code = "vke-replace-name-taken"
	CodeSwitchNeedsReplacement core.Code = "vke-switch-needs-replacement"
	CodeCoLocated              core.Code = "vke-same-node-present"
	CodeAntiAffinity           core.Code = "vke-anti-affinity-patch"
	CodeLocalPolicy            core.Code = "vke-external-traffic-local"
	CodeProxyProbability       core.Code = "vke-proxy-loop-probability"
	CodeProxyRefused           core.Code = "vke-proxy-refused-co-located"
	CodeStatusPending          core.Code = "vke-status-pending"
	CodeVerifyWithoutIPMode    core.Code = "vke-verify-without-ipmode"
	CodeServerVersion          core.Code = "vke-server-version"
	CodeClusterNetwork         core.Code = "vke-cluster-network"
	CodeClusterCCM             core.Code = "vke-cluster-ccm"
	CodeIPModeVIP              core.Code = "vke-ip-mode-vip"
	CodeIPModeDefault          core.Code = "vke-ip-mode-default"
	CodeIPModeProxy            core.Code = "vke-ip-mode-proxy"
	CodeCLBKeepsSource         core.Code = "vke-clb-keeps-source"
	CodeStatusIPMode           core.Code = "vke-status-ip-mode"
	CodeStatusDisagrees        core.Code = "vke-status-disagrees"
	CodeStatusMixed            core.Code = "vke-status-mixed"
	CodeStatusHostname         core.Code = "vke-status-hostname"
	CodePrereqKubernetes       core.Code = "vke-prereq-kubernetes"
	CodePrereqNetwork          core.Code = "vke-prereq-network"
	CodePrereqCCM              core.Code = "vke-prereq-ccm"
	CodePrereqUnknown          core.Code = "vke-prereq-unknown"
	CodeImmutable              core.Code = "vke-ip-mode-immutable"
	CodeAddressPrivate         core.Code = "vke-address-private"
	CodeReusedCLB              core.Code = "vke-reused-clb"
	CodeCloudRead              core.Code = "vke-cloud-read"
	CodePassThrough            core.Code = "vke-pass-through"
	CodeNodePortBackends       core.Code = "vke-nodeport-backends"
	CodeBackendsRead           core.Code = "vke-backends-read"
	CodePassThroughNoENI       core.Code = "vke-pass-through-needs-vpc-cni"
	CodeProxyProtocolVIP       core.Code = "vke-proxy-protocol-vip"
	CodeVerify                 core.Code = "vke-verify"
	CodeIngress                core.Code = "vke-ingress-not-exposed"
	CodeOtherClass             core.Code = "vke-other-lb-class"
	CodeOfferInterceptVIP      core.Code = "vke-offer-intercept-vip"
	CodeOfferProxySeparation   core.Code = "vke-offer-proxy-separation"
	CodeProxyNotInEffect       core.Code = "vke-proxy-not-in-effect"
	CodePublicCLBKeepsSource   core.Code = "vke-public-clb-keeps-source"
	CodeAddressPublic          core.Code = "vke-address-public"
	CodeEBPFKeepsPodSource     core.Code = "vke-ebpf-keeps-pod-source"
)

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
	ruleIPModeVIP = core.Rule{Code: CodeIPModeVIP,
		Summary: "ip-mode VIP: kube-proxy (the eBPF dataplane) redirects traffic for the CLB IP and port straight to backend Pods; it never reaches the CLB, so it cannot loop, and in-cluster clients get none of the CLB's features.",
		Source:  srcModes + "; " + srcAnnotation}
	ruleIPModeDefault = core.Rule{Code: CodeIPModeDefault,
		Summary: "The Service has no ip-mode annotation: VIP is the default.",
		Source:  srcAnnotation}
	ruleIPModeProxy = core.Rule{Code: CodeIPModeProxy,
		Summary: "ip-mode Proxy: nodes do not intercept the CLB address; all in-cluster traffic goes through the CLB, which keeps every CLB feature (TLS offload, monitoring, protocol conversion, PROXY protocol/TOA).",
		Source:  srcModes + "; " + srcAnnotation}
	ruleCLBKeepsSource = core.Rule{Code: CodeCLBKeepsSource,
		Summary: "The CLB keeps the client's source IP (classic CLB listeners have no source NAT switch), so in Proxy mode a client Pod and a server Pod on the same node loop: the reply is delivered on the node and the request fails.",
		Source:  srcRestriction + "; " + srcDomainVKE}
	ruleStatusIPMode = core.Rule{Code: CodeStatusIPMode,
		Summary: "status.loadBalancer.ingress[].ipMode shows the mode in effect; nodes act on it, not on the annotation.",
		Source:  srcVerification + "; " + srcKEP}
	ruleStatusDisagrees = core.Rule{Code: CodeStatusDisagrees,
		Summary: "The status shows another ip-mode than the annotation asks for: the cloud-controller-manager is older than v1.43.0, a prerequisite is unmet, it has not reconciled the Service yet, or the annotation was edited after creation, which has no effect.",
		Source:  srcVerification + "; " + srcAnnotation}
	ruleStatusMixed = core.Rule{Code: CodeStatusMixed,
		Summary: "The status's ingress points carry different ipModes; which path a client takes depends on the address it uses.",
		Source:  srcKEP}
	ruleStatusHostname = core.Rule{Code: CodeStatusHostname,
		Summary: "The status publishes a hostname but no IP; nodes only intercept IPs, so in-cluster clients reach the CLB whatever the ip-mode.",
		Source:  srcKEP}

	rulePrereqKubernetes = core.Rule{Code: CodePrereqKubernetes,
		Summary: "ip-mode needs Kubernetes v1.30 or later.",
		Source:  srcPrereqs}
	rulePrereqNetwork = core.Rule{Code: CodePrereqNetwork,
		Summary: "ip-mode needs the VPC-CNI network model with IPVlan Pod interfaces and eBPF service forwarding.",
		Source:  srcPrereqs}
	rulePrereqCCM = core.Rule{Code: CodePrereqCCM,
		Summary: "ip-mode needs the cloud-controller-manager add-on v1.43.0 or later.",
		Source:  srcPrereqs}
	rulePrereqUnknown = core.Rule{Code: CodePrereqUnknown,
		Summary: "Proxy is requested but the profile does not say whether the cluster meets the ip-mode prerequisites, so whether nodes still intercept the CLB address is unknown.",
		Source:  srcPrereqs}

	ruleImmutable = core.Rule{Code: CodeImmutable,
		Summary: "The ip-mode annotation cannot be changed once the Service exists: switching modes means a new Service, with a new CLB and a new address.",
		Source:  srcAnnotation}

	ruleAddressPrivate = core.Rule{Code: CodeAddressPrivate,
		Summary: "address-type PRIVATE: the CLB is reachable only inside the VPC and sees in-cluster clients' own addresses.",
		Source:  srcAnnotations}
	ruleReusedCLB = core.Rule{Code: CodeReusedCLB,
		Summary: "The Service reuses an existing CLB (loadbalancer-id); its address type is the CLB's own, which only a cloud read or a loopguard.io/lb-scope annotation can tell.",
		Source:  srcAnnotations}
	ruleCloudRead = core.Rule{Code: CodeCloudRead,
		Summary: "A read of the CLB through the Volcengine API gave this fact.",
		Source:  "Volcengine CLB API 2020-04-01 (DescribeLoadBalancerAttributes, DescribeListenerAttributes); " + srcDomainVKE}

	rulePassThrough = core.Rule{Code: CodePassThrough,
		Summary: "pass-through \"true\": the CLB's backends are the Pods' ENIs (direct to Pod), so a connection loops with the share of backends on the client's node.",
		Source:  srcAnnotations}
	ruleNodePortBackends = core.Rule{Code: CodeNodePortBackends,
		Summary: "pass-through is off (the default): the CLB's backends are the nodes' NodePorts, chosen by externalTrafficPolicy.",
		Source:  srcAnnotations}
	ruleBackendsRead = core.Rule{Code: CodeBackendsRead,
		Summary: "A read of the CLB's server groups gave its backends: Servers[].Type eni are Pod ENIs (the CLB sends straight to Pods), ecs are instances reached on their NodePort; mixed or other types leave the binding unknown.",
		Source:  "Volcengine CLB API 2020-04-01 DescribeServerGroupAttributes (Servers[].Type, Ip, InstanceId, Port; volcengine-go-sdk v1.1.35 service/clb); docs/sources.md#vke"}
	rulePassThroughNoENI = core.Rule{Code: CodePassThroughNoENI,
		Summary: "pass-through sends to Pod ENIs, which only the VPC-CNI network gives Pods; with this CNI which addresses the CLB sends to is unknown.",
		Source:  srcAnnotations + "; volcengine/cello README (secondary-ENI Pod network)"}

	ruleProxyProtocolVIP = core.Rule{Code: CodeProxyProtocolVIP,
		Summary: "PROXY protocol is on, but intercepted (VIP) in-cluster traffic reaches the backends without the PROXY header; a backend that requires the header rejects it.",
		Source:  srcModes + " (VIP limitations: no Proxy-Protocol pass-through); " + srcKEP + " (peers set Proxy when PROXY protocol is on)"}

	ruleVerify = core.Rule{Code: CodeVerify,
		Summary: "To verify: status.loadBalancer.ingress[].ipMode must show the requested mode; in the CLB's monitoring, requests from a Pod to the CLB address add new connections in Proxy mode and none in VIP mode (test from a Pod on a node without backends).",
		Source:  srcVerification}

	ruleIngress = core.Rule{Code: CodeIngress,
		Summary: "VKE's ip-mode is a Service annotation; an Ingress is served by its ingress controller's LoadBalancer Service, which is what loopguard assesses.",
		Source:  srcAnnotation + "; " + srcKEP + " (Ingress objects have no ipMode)"}
	ruleOtherClass = core.Rule{Code: CodeOtherClass,
		Summary: "The Service names another loadBalancerClass; the Volcengine controller (volcengine.com/clb) does not serve it.",
		Source:  srcAnnotations + " (loadBalancerClass volcengine.com/clb); Kubernetes Service.spec.loadBalancerClass"}

	ruleOfferInterceptVIP = core.Rule{Code: CodeOfferInterceptVIP,
		Summary: "Use ip-mode VIP: nodes redirect in-cluster traffic for the CLB address to backend Pods, which cannot loop; in-cluster clients lose the CLB's TLS offload, monitoring, protocol conversion and PROXY protocol/TOA.",
		Source:  srcModes}
	ruleOfferProxySeparation = core.Rule{Code: CodeOfferProxySeparation,
		Summary: "Use ip-mode Proxy and keep client Pods off every node that runs a backend, as the Proxy-mode restriction requires.",
		Source:  srcRestriction}
)

// Rules lists the dialect's rules, for docs/reasons.md and for tests that check every code a
// translation emits is documented.
func (d *Dialect) Rules() []core.Rule {
	return append([]core.Rule{
		ruleIPModeVIP, ruleIPModeDefault, ruleIPModeProxy, ruleCLBKeepsSource,
		ruleStatusIPMode, ruleStatusDisagrees, ruleStatusMixed, ruleStatusHostname,
		rulePrereqKubernetes, rulePrereqNetwork, rulePrereqCCM, rulePrereqUnknown,
		ruleImmutable, ruleAddressPrivate, ruleReusedCLB, ruleCloudRead,
		rulePassThrough, ruleNodePortBackends, ruleBackendsRead, rulePassThroughNoENI, ruleProxyProtocolVIP,
		ruleVerify, ruleIngress, ruleOtherClass, ruleOfferInterceptVIP, ruleOfferProxySeparation,
		ruleProxyNotInEffect, rulePublicCLBKeepsSource, ruleAddressPublic, ruleEBPFKeepsPodSource,
	}, driverRules...)
}
