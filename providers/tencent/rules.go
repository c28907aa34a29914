package tencent

import "github.com/loopguard/loopguard/core"

// Codes of this dialect's rules; the dialect's Rules lists the rules themselves.
const (
	CodeInternalSubnet            core.Code = "tke-internal-subnet"
	CodeDefaultPublic             core.Code = "tke-default-public"
	CodeExistingLB                core.Code = "tke-existing-lb"
	CodeCLBType                   core.Code = "tke-clb-type-read"
	CodeSuperNodes                core.Code = "tke-super-node-intercepts"
	CodeIPTables                  core.Code = "tke-iptables-intercepts"
	CodeNFTables                  core.Code = "tke-nftables-intercepts"
	CodeIPVSNoIntercept           core.Code = "tke-ipvs-not-intercepted"
	CodePreventLoopback           core.Code = "tke-prevent-loopback"
	CodePreventLoopbackTooOld     core.Code = "tke-prevent-loopback-kube-proxy-too-old"
	CodePreventLoopbackUnverified core.Code = "tke-prevent-loopback-unverified"
	CodePreventLoopbackNoEffect   core.Code = "tke-prevent-loopback-no-effect"
	CodeLongConnections           core.Code = "tke-prevent-loopback-long-connections"
	CodeEBPF                      core.Code = "tke-ebpf-undocumented"
	CodeIPMode                    core.Code = "tke-status-ipmode"
	CodeProxyModeUnknown          core.Code = "tke-proxy-mode-unknown"
	CodeL7NotIntercepted          core.Code = "tke-l7-not-intercepted"
	CodeMixedNodes                core.Code = "tke-mixed-node-kinds"
	CodeClientNodes               core.Code = "tke-client-node-kinds"
	CodeNodesAssumed              core.Code = "tke-node-kind-assumed"
	CodeL4SNATOn                  core.Code = "tke-l4-snat-on"
	CodeL4SNATOff                 core.Code = "tke-l4-snat-off"
	CodeNoServiceConfig           core.Code = "tke-no-service-config"
	CodeServiceConfigMissing      core.Code = "tke-service-config-missing"
	CodeSNATQuoted                core.Code = "tke-snat-enable-string"
	CodeL7SNATOn                  core.Code = "tke-l7-snat-on"
	CodeL7SNATOff                 core.Code = "tke-l7-snat-off"
	CodeL7SNATVersion             core.Code = "tke-l7-snat-controller-version"
	CodeListenPorts               core.Code = "tke-ingress-listen-ports"
	CodeControllerVersionSource   core.Code = "tke-controller-version"
	CodeDirectAccess              core.Code = "tke-direct-access"
	CodeSuperNotBehindLB          core.Code = "tke-super-nodes-not-behind-clb"
	CodeBackendsLabel             core.Code = "tke-backends-label"
	CodeOfferPreventLoopback      core.Code = "tke-offer-prevent-loopback"
	CodeHealthCheckSource         core.Code = "tke-prevent-loopback-health-check-source"
	CodeOfferL4SNAT               core.Code = "tke-offer-l4-snat"
	CodeOfferL7SNAT               core.Code = "tke-offer-l7-snat"
	CodeL7NoForwarding            core.Code = "tke-l7-no-intra-cluster-forwarding"
	CodePreventLoopbackIPVSOnly   core.Code = "tke-prevent-loopback-ipvs-only"
	CodeProxyModeNeeded           core.Code = "tke-prevent-loopback-proxy-mode-unknown"
	CodeNeedsAllowlist            core.Code = "tke-needs-allowlist"
	CodeIngressControllerUnknown  core.Code = "tke-ingress-controller-version-unknown"
	CodeIngressBackendsUnknown    core.Code = "tke-ingress-backends-unknown"
	CodeIngressSeparationPolicy   core.Code = "tke-ingress-separation-binding"
	CodeDNSSeveralBackends        core.Code = "tke-dns-several-backends"
	CodeCreateServiceConfig       core.Code = "tke-create-service-config"
	CodeAutoConfigPending         core.Code = "tke-auto-config-pending"
	CodeL7SNATSecurityGroup       core.Code = "tke-l7-snat-security-group"
	CodeDirectCLB                 core.Code = "tke-direct-clb"
	CodeModeSkip                  core.Code = "tke-mode-skip"
	CodeSpecifyProtocolTLS        core.Code = "tke-specify-protocol-tls"
	CodeOfferStopPreventLoopback  core.Code = "tke-offer-prevent-loopback-off"
	CodeModeSkipIgnored           core.Code = "tke-mode-skip-ignored"
	CodeLoadBalancerClass         core.Code = "tke-load-balancer-class"
	CodeIngressClass              core.Code = "tke-ingress-class"
)

// Sources the Tencent rules cite. Seeds 000 (Chinese) and 001 (English) are the same TKE guide,
// "CLB loopback"; section numbers are the guide's.
const (
	srcQuick    = "docs/sources.md#tke-guide §1 quick check"
	srcQuickEN  = "docs/sources.md#tke-guide (English edition) §1 quick check (English only row: super nodes + private CLB + CLB Ingress)"
	srcNodes    = "docs/sources.md#tke-guide §2 node types in IPVS mode"
	srcL4       = "docs/sources.md#tke-guide §3 layer-4 quick reference"
	srcL7       = "docs/sources.md#tke-guide §4 layer-7 quick reference"
	srcSol1     = "docs/sources.md#tke-guide solution 1 (intra-cluster forwarding)"
	srcSol2     = "docs/sources.md#tke-guide solution 2 (CLB layer-4 listener SNAT)"
	srcSol3     = "docs/sources.md#tke-guide solution 3 (CLB SNAT for layer-7 Ingress)"
	srcCompare  = "docs/sources.md#tke-guide comparison of solutions 1 and 2"
	srcFAQ1     = "docs/sources.md#tke-guide FAQ Q1"
	srcFAQ2     = "docs/sources.md#tke-guide FAQ Q2"
	srcFAQ3     = "docs/sources.md#tke-guide FAQ Q3"
	srcSvcAnn   = "Tencent doc 457/51258 (Service annotations)"
	srcIngAnn   = "Tencent doc 457/56112 (Ingress annotations)"
	srcSvcCfg   = "Tencent doc 457/45490 (Service TkeServiceConfig)"
	srcIngCfg   = "Tencent doc 457/45700 (Ingress TkeServiceConfig)"
	srcRuleMix  = "Tencent doc 457/45693 (Ingress mixed HTTP/HTTPS)"
	srcRevision = "Tencent intl doc 457/42976 (CLB loopback; kube-proxy revisions), 457/9315 (revision history)"
	srcDomain33 = "docs/sources.md#tke-annotations"
	srcDomain34 = "docs/sources.md#tkeserviceconfig"
	srcDomain5  = "docs/sources.md#kep-1860 (KEP-1860)"
	srcGuide    = "tke-guide docs/faq/clb-loopback.md"
	srcNative   = "TencentCloud/karpenter-provider-tke staging/nativenode/well_known_labels.go"
	srcUnconf   = "UNCONFIRMED (providers/tencent/unconfirmed.go)"
	srcProtocol = "Tencent TKE doc \"Service 扩展协议\" (console guide, Service management: service.cloud.tencent.com/specify-protocol; TCP_SSL and HTTPS need a certificate Secret)"
)

// Rules for the LB scope.
var (
	ruleInternalSubnet = core.Rule{Code: CodeInternalSubnet,
		Summary: "The object names a subnet for its CLB, which makes the CLB private (internal).",
		Source:  srcSvcAnn + "; " + srcIngAnn + "; " + srcDomain33}
	ruleDefaultPublic = core.Rule{Code: CodeDefaultPublic,
		Summary: "Without an internal-subnet annotation TKE creates a public CLB, and public CLBs do not loop.",
		Source:  srcSvcAnn + "; " + srcIngAnn + "; " + srcQuick}
	ruleExistingLB = core.Rule{Code: CodeExistingLB,
		Summary: "The object reuses an existing CLB whose type (private or public) the manifest does not say; declare loopguard.io/lb-scope or read the CLB (DescribeLoadBalancers LoadBalancerType).",
		Source:  srcSvcAnn + "; " + srcIngAnn + "; docs/sources.md#tke-clb-api"}
	ruleCLBType = core.Rule{Code: CodeCLBType,
		Summary: "The object reuses an existing CLB, and DescribeLoadBalancers reports its LoadBalancerType: OPEN is a public CLB, INTERNAL a private one.",
		Source:  "docs/sources.md#tke-clb-api (DescribeLoadBalancers LoadBalancerType); " + srcSvcAnn + "; " + srcIngAnn}
)

// Rules for interception.
var (
	ruleSuperNodes = core.Rule{Code: CodeSuperNodes,
		Summary: "Super nodes intercept the CLB VIP by default: traffic goes straight to a backend Pod and never reaches the CLB.",
		Source:  srcNodes + "; " + srcFAQ1 + "; " + srcQuickEN}
	ruleIPTables = core.Rule{Code: CodeIPTables,
		Summary: "In iptables mode the destination is translated before routing, so traffic to the CLB VIP is forwarded to a backend Pod inside the cluster.",
		Source:  srcFAQ2 + "; " + srcL4}
	ruleNFTables = core.Rule{Code: CodeNFTables,
		Summary: "kube-proxy in nftables mode programs LoadBalancer addresses like iptables mode (DNAT before routing); the TKE guide does not cover nftables.",
		Source:  srcDomain5 + "; " + srcFAQ2}
	ruleIPVSNoIntercept = core.Rule{Code: CodeIPVSNoIntercept,
		Summary: "In IPVS mode TKE does not bind the CLB VIP to kube-ipvs0 on regular and native nodes (binding it would drop the CLB's health probes, kubernetes/kubernetes#79783), so traffic goes through the CLB.",
		Source:  srcNodes + "; " + srcL4 + "; docs/sources.md#tke-risk"}
	rulePreventLoopback = core.Rule{Code: CodePreventLoopback,
		Summary: "service.cloud.tencent.com/prevent-loopback: \"true\" makes IPVS intercept the CLB VIP on the node (intra-cluster forwarding).",
		Source:  srcSol1 + "; " + srcL4}
	rulePreventLoopbackTooOld = core.Rule{Code: CodePreventLoopbackTooOld,
		Summary: "prevent-loopback needs a TKE kube-proxy revision that binds LB addresses to the IPVS interface; this kube-proxy is older, so the annotation has no effect.",
		Source:  srcRevision + "; " + srcSol1}
	rulePreventLoopbackUnverified = core.Rule{Code: CodePreventLoopbackUnverified,
		Summary: "prevent-loopback is taken to work, but the kube-proxy revision that must support it is not known; declare kubeProxyVersion in the profile.",
		Source:  srcRevision + "; " + srcSol1}
	rulePreventLoopbackNoEffect = core.Rule{Code: CodePreventLoopbackNoEffect,
		Summary: "prevent-loopback only changes IPVS mode on regular and native nodes for layer-4 Services; here it has no effect.",
		Source:  srcSol1 + "; " + srcL7}
	ruleLongConnections = core.Rule{Code: CodeLongConnections,
		Summary: "Connections opened before prevent-loopback took effect keep the CLB path (their conntrack entries match first) until they close; new connections are intercepted by IPVS.",
		Source:  srcFAQ3}
	ruleEBPF = core.Rule{Code: CodeEBPF,
		Summary: "The TKE guide does not say whether an eBPF dataplane (DataPlaneV2) intercepts the CLB VIP, and the Service status carries no ipMode to say it.",
		Source:  srcDomain33 + "; " + srcUnconf}
	ruleIPMode = core.Rule{Code: CodeIPMode,
		Summary: "status.loadBalancer.ingress[].ipMode says whether the dataplane intercepts the LB address: VIP intercepts, Proxy goes through the LB.",
		Source:  srcDomain5}
	ruleProxyModeUnknown = core.Rule{Code: CodeProxyModeUnknown,
		Summary: "The kube-proxy mode (iptables, ipvs, nftables, ebpf) is not declared; declare proxyMode in the profile (DescribeClusters ClusterNetworkSettings.Ipvs / KubeProxyMode).",
		Source:  srcDomain33}
	ruleL7NotIntercepted = core.Rule{Code: CodeL7NotIntercepted,
		Summary: "A CLB Ingress's VIP belongs to no Service, so no service proxy on regular or native nodes intercepts it, in iptables or IPVS mode: traffic goes through the CLB.",
		Source:  srcL7 + "; " + srcQuick + "; " + srcGuide}
	ruleMixedNodes = core.Rule{Code: CodeMixedNodes,
		Summary: "The cluster mixes super nodes (which intercept the CLB VIP) with regular or native nodes (which may not); the verdict follows the regular and native nodes, where clients can loop.",
		Source:  srcNodes}
	ruleClientNodes = core.Rule{Code: CodeClientNodes,
		Summary: "The verdict follows the kinds of the nodes the declared clients run on (super nodes are told apart by node.kubernetes.io/instance-type: eklet; every other node is regular or native).",
		Source:  srcNodes + "; " + srcNative + "; " + srcUnconf}
	ruleNodesAssumed = core.Rule{Code: CodeNodesAssumed,
		Summary: "No Nodes are in the input; clients are taken to run on regular nodes (TKE's default node kind). Add the Nodes if clients run on super nodes.",
		Source:  srcNodes + "; " + srcUnconf}
)

// Rules for LB source NAT.
var (
	ruleL4SNATOn = core.Rule{Code: CodeL4SNATOn,
		Summary: "The TkeServiceConfig turns snatEnable on for every port of the Service: the CLB replaces the client source address.",
		Source:  srcSol2 + "; " + srcL4 + "; " + srcSvcCfg}
	ruleL4SNATOff = core.Rule{Code: CodeL4SNATOff,
		Summary: "Some of the Service's listeners have no snatEnable: true in the TkeServiceConfig, so the CLB keeps the client source address on them.",
		Source:  srcSol2 + "; " + srcL4 + "; " + srcSvcCfg}
	ruleNoServiceConfig = core.Rule{Code: CodeNoServiceConfig,
		Summary: "The object references no TkeServiceConfig; CLB listeners keep the client source address unless SNAT is turned on (off by default).",
		Source:  srcSol2 + "; " + srcSol3 + "; " + srcDomain34}
	ruleServiceConfigMissing = core.Rule{Code: CodeServiceConfigMissing,
		Summary: "The referenced TkeServiceConfig is not in the input, so whether the CLB replaces the source address is not known.",
		Source:  srcSvcCfg + "; " + srcIngCfg}
	ruleSNATQuoted = core.Rule{Code: CodeSNATQuoted,
		Summary: "snatEnable is written as a string (\"true\"), as the Chinese guide does; the English guide writes a boolean. loopguard reads both, but whether TKE's CRD accepts the string is not known: write snatEnable: true without quotes.",
		Source:  srcSol2 + "; " + srcSol3 + "; " + srcUnconf}
	ruleL7SNATOn = core.Rule{Code: CodeL7SNATOn,
		Summary: "The TkeServiceConfig turns layer-7 SNAT on for every listener of the Ingress (snatEnable: true from ingress controller v2.9.0, keepaliveEnable: 1 before): the CLB replaces the client source address.",
		Source:  srcSol3 + "; " + srcL7 + "; " + srcIngCfg}
	ruleL7SNATOff = core.Rule{Code: CodeL7SNATOff,
		Summary: "Some of the Ingress's listeners lack layer-7 SNAT in the TkeServiceConfig (snatEnable: true from ingress controller v2.9.0, keepaliveEnable: 1 before), so the CLB keeps the client source address on them.",
		Source:  srcSol3 + "; " + srcL7 + "; " + srcIngCfg + "; " + srcRuleMix + " (which listeners an Ingress has)"}
	ruleL7SNATVersion = core.Rule{Code: CodeL7SNATVersion,
		Summary: "Which TkeServiceConfig field turns layer-7 SNAT on depends on the ingress controller version (snatEnable from v2.9.0, keepaliveEnable: 1 before), and the version is not known or does not match the field set.",
		Source:  srcSol3}
	ruleListenPorts = core.Rule{Code: CodeListenPorts,
		Summary: "The Ingress sets custom listener ports (ingress.cloud.tencent.com/listen-ports), which loopguard does not read, so it cannot tell whether every listener has SNAT.",
		Source:  srcIngAnn + "; " + srcRuleMix}
	ruleControllerVersionSource = core.Rule{Code: CodeControllerVersionSource,
		Summary: "The controller version comes from the profile, else from the kube-system ConfigMap's data.VERSION.",
		Source:  srcSvcAnn + "; " + srcIngAnn}
)

// Rules for the binding and the nodes behind the CLB.
var (
	ruleDirectAccess = core.Rule{Code: CodeDirectAccess,
		Summary: "direct-access: \"true\": the CLB sends straight to Pod addresses (VPC-CNI), not NodePorts; a connection still loops when the client shares a node with the chosen Pod.",
		Source:  srcGuide + "; " + srcDomain33}
	ruleSuperNotBehindLB = core.Rule{Code: CodeSuperNotBehindLB,
		Summary: "Super nodes are not NodePort targets of the CLB; they are not counted among the nodes a connection can land on.",
		Source:  srcNodes + "; " + srcDomain33}
	ruleBackendsLabel = core.Rule{Code: CodeBackendsLabel,
		Summary: "The CLB binds only the nodes matching service.kubernetes.io/qcloud-loadbalancer-backends-label.",
		Source:  srcSvcAnn}
)

// Rules behind the offers.
var (
	ruleOfferPreventLoopback = core.Rule{Code: CodeOfferPreventLoopback,
		Summary: "Intra-cluster forwarding: annotate the Service service.cloud.tencent.com/prevent-loopback: \"true\"; IPVS then intercepts the CLB VIP on the node. In-cluster traffic loses CLB features. The guide says the real client address can be obtained; that holds with externalTrafficPolicy Local, while under Cluster kube-proxy masquerades intercepted traffic and the backend sees a node's address (the costs say which applies).",
		Source:  srcSol1 + "; " + srcCompare}
	ruleHealthCheckSource = core.Rule{Code: CodeHealthCheckSource,
		Summary: "With prevent-loopback the CLB's health probes come from the 100.64.0.0/10 range instead of the VIP, automatically; anything that filters probes by source address must allow that range.",
		Source:  srcSol1 + "; " + srcFAQ3 + "; docs/sources.md#source-address"}
	ruleOfferL4SNAT = core.Rule{Code: CodeOfferL4SNAT,
		Summary: "CLB layer-4 listener SNAT through TkeServiceConfig spec.loadBalancer.l4Listeners[].snatEnable: true: traffic keeps CLB features; backends see the CLB address (TCP can recover the client with the PROXY protocol, UDP cannot).",
		Source:  srcSol2 + "; " + srcCompare}
	ruleOfferL7SNAT = core.Rule{Code: CodeOfferL7SNAT,
		Summary: "CLB layer-7 SNAT through TkeServiceConfig spec.loadBalancer.l7Listeners[] (snatEnable: true from ingress controller v2.9.0, keepaliveEnable: 1 before); the client address is in X-Forwarded-For; node security groups must allow the CLB's source range 100.127.0.0/16 (or the CLB must use pass-to-target).",
		Source:  srcSol3 + "; " + srcRevision}
	ruleL7NoForwarding = core.Rule{Code: CodeL7NoForwarding,
		Summary: "Layer-7 loopback can only be resolved by enabling SNAT on the CLB; intra-cluster forwarding (prevent-loopback) does not apply to Ingress.",
		Source:  srcL7}
	rulePreventLoopbackIPVSOnly = core.Rule{Code: CodePreventLoopbackIPVSOnly,
		Summary: "prevent-loopback is a fix for IPVS mode on regular and native nodes; it does not apply to this cluster's proxy mode.",
		Source:  srcSol1}
	ruleProxyModeNeeded = core.Rule{Code: CodeProxyModeNeeded,
		Summary: "prevent-loopback only works in IPVS mode, and the proxy mode is not declared.",
		Source:  srcSol1 + "; " + srcDomain33}
	ruleNeedsAllowlist = core.Rule{Code: CodeNeedsAllowlist,
		Summary: "The account must be allowlisted for this CLB capability by a support ticket; the profile's allowlists do not list it.",
		Source:  srcSol2 + "; " + srcSol3}
	ruleIngressControllerUnknown = core.Rule{Code: CodeIngressControllerUnknown,
		Summary: "The ingress controller version decides the field (snatEnable from v2.9.0, keepaliveEnable: 1 before) and is not known: declare ingressControllerVersion or include ConfigMap kube-system/tke-ingress-controller-config.",
		Source:  srcSol3 + "; " + srcIngAnn}
	ruleIngressBackendsUnknown = core.Rule{Code: CodeIngressBackendsUnknown,
		Summary: "None of the Ingress's backend Services is in the input, so clients cannot be kept apart from them.",
		Source:  "docs/sources.md#loopback"}
	ruleIngressSeparationPolicy = core.Rule{Code: CodeIngressSeparationPolicy,
		Summary: "Node separation for an Ingress needs every backend Service on externalTrafficPolicy: Local, or the Ingress on direct-access: \"true\" (VPC-CNI); otherwise the CLB sends to any node.",
		Source:  srcGuide + " (anti-affinity plus externalTrafficPolicy Local)"}
	ruleDNSSeveralBackends = core.Rule{Code: CodeDNSSeveralBackends,
		Summary: "A host routes paths to several Services; a CoreDNS rewrite can point the name at only one. Rewrite to an in-cluster ingress controller instead (tke-guide).",
		Source:  srcGuide}
)

// Rules behind the driver's plans.
var (
	ruleCreateServiceConfig = core.Rule{Code: CodeCreateServiceConfig,
		Summary: "The object references no TkeServiceConfig (or one that does not exist): loopguard creates <object>-loopguard (TKE's own are <object>-auto-service-config / -auto-ingress-config, so the names never collide) holding only the listener entries it needs, then references it with the tke-service-config annotation. A listener without an entry, and an attribute absent from an entry, are left alone by TKE.",
		Source:  srcSvcCfg + "; " + srcIngCfg + "; " + srcDomain34}
	ruleAutoConfigPending = core.Rule{Code: CodeAutoConfigPending,
		Summary: "The object asks for a TkeServiceConfig with the -auto annotation, and TKE's controller has not created it yet; loopguard does not create it in the controller's place, and merges into it once it exists.",
		Source:  srcSvcCfg + "; " + srcIngCfg}
	ruleL7SNATSecurityGroup = core.Rule{Code: CodeL7SNATSecurityGroup,
		Summary: "With layer-7 SNAT the nodes receive the CLB's traffic from the CLB's own range (100.127.0.0/16 is cited): allow it in the nodes' security groups, or turn on CLB pass-to-target.",
		Source:  srcSol3 + "; docs/sources.md#tke-fixes"}
	ruleDirectCLB = core.Rule{Code: CodeDirectCLB,
		Summary: "Direct mode writes the CLB listener with ModifyListener (SnatEnable, or KeepaliveEnable for ingress controllers before v2.9.0), waits for the task with DescribeTaskStatus and reads the listener back (SNAT on: AttrFlags contains SnatEnable). TKE's controllers leave a listener attribute alone when no TkeServiceConfig entry sets it; one that sets snatEnable: false would turn it back off.",
		Source:  "docs/sources.md#tke-clb-api; " + srcDomain34}
)

// Rules for objects the dialect does not assess (used in error messages).
var (
	ruleModeSkip = core.Rule{Code: CodeModeSkip,
		Summary: "mode: skip makes the TKE controller (>= v2.10.0) leave the object and its CLB alone; loopguard does not assess it.",
		Source:  srcSvcAnn + "; " + srcIngAnn}
	ruleSpecifyProtocolTLS = core.Rule{Code: CodeSpecifyProtocolTLS,
		Summary: "The CLB listener ends TLS (TCP_SSL or HTTPS set by specify-protocol, with a certificate): the backend port speaks plain text, so intercepted in-cluster clients would speak TLS to it.",
		Source:  srcProtocol + "; docs/sources.md#lb-dependence"}
	ruleOfferStopPreventLoopback = core.Rule{Code: CodeOfferStopPreventLoopback,
		Summary: "Set service.cloud.tencent.com/prevent-loopback: \"false\": IPVS stops intercepting the CLB VIP and in-cluster traffic reaches the CLB again; loop-safe only with the listener's SNAT on.",
		Source:  srcSol1 + "; docs/sources.md#lb-dependence"}
	ruleModeSkipIgnored = core.Rule{Code: CodeModeSkipIgnored,
		Summary: "mode: skip needs controller v2.10.0 or later; this controller is older and still manages the object.",
		Source:  srcSvcAnn + "; " + srcIngAnn}
	ruleLoadBalancerClass = core.Rule{Code: CodeLoadBalancerClass,
		Summary: "The Service sets spec.loadBalancerClass, so another load-balancer implementation serves it, not TKE's CLB service controller.",
		Source:  "Kubernetes Service spec.loadBalancerClass (k8s.io/cloud-provider skips such Services); " + srcUnconf}
	ruleIngressClass = core.Rule{Code: CodeIngressClass,
		Summary: "Only Ingresses of class qcloud, or with no class at all, get a TKE CLB; another class's load balancer is that controller's own Service.",
		Source:  srcIngAnn}
)

var rules = []core.Rule{
	ruleInternalSubnet, ruleDefaultPublic, ruleExistingLB, ruleCLBType,
	ruleSuperNodes, ruleIPTables, ruleNFTables, ruleIPVSNoIntercept, rulePreventLoopback,
	rulePreventLoopbackTooOld, rulePreventLoopbackUnverified, rulePreventLoopbackNoEffect,
	ruleLongConnections, ruleHealthCheckSource, ruleEBPF, ruleIPMode, ruleProxyModeUnknown, ruleL7NotIntercepted,
	ruleMixedNodes, ruleClientNodes, ruleNodesAssumed,
	ruleL4SNATOn, ruleL4SNATOff, ruleNoServiceConfig, ruleServiceConfigMissing, ruleSNATQuoted,
	ruleL7SNATOn, ruleL7SNATOff, ruleL7SNATVersion, ruleListenPorts, ruleControllerVersionSource,
	ruleDirectAccess, ruleSuperNotBehindLB, ruleBackendsLabel,
	ruleOfferPreventLoopback, ruleOfferL4SNAT, ruleOfferL7SNAT, ruleL7NoForwarding,
	rulePreventLoopbackIPVSOnly, ruleProxyModeNeeded, ruleNeedsAllowlist,
	ruleIngressControllerUnknown, ruleIngressBackendsUnknown, ruleIngressSeparationPolicy,
	ruleDNSSeveralBackends,
	ruleCreateServiceConfig, ruleAutoConfigPending, ruleL7SNATSecurityGroup, ruleDirectCLB,
	ruleModeSkip, ruleModeSkipIgnored, ruleSpecifyProtocolTLS, ruleOfferStopPreventLoopback, ruleLoadBalancerClass, ruleIngressClass,
}
