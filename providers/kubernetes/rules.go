package kubernetes

import "github.com/loopguard/loopguard/core"

// Codes of this dialect's rules; the dialect's Rules lists the rules themselves.
const (
	codeNotProvisioned            core.Code = "k8s-not-provisioned"
	codeIPModeVIP                 core.Code = "k8s-ipmode-vip"
	codeIPModeDefaulted           core.Code = "k8s-ipmode-defaulted"
	codeIPModeProxy               core.Code = "k8s-ipmode-proxy"
	codeHostnameOnly              core.Code = "k8s-hostname-only"
	codeMixedEntries              core.Code = "k8s-mixed-entries"
	codeProxyModeUnknown          core.Code = "k8s-proxy-mode-unknown"
	codeKubeProxyVIP              core.Code = "k8s-kube-proxy-programs-vip"
	codeKubeProxyHonoursProxy     core.Code = "k8s-kube-proxy-honours-proxy"
	codeKubeProxyGateOff          core.Code = "k8s-kube-proxy-1.29-ignores-proxy"
	codeKubeProxyTooOld           core.Code = "k8s-kube-proxy-predates-ipmode"
	codeKubeProxySkewHonours      core.Code = "k8s-kube-proxy-skew-honours"
	codeKubeProxySkewIgnores      core.Code = "k8s-kube-proxy-skew-ignores"
	codeKubeProxySkewUnknown      core.Code = "k8s-kube-proxy-skew-unknown"
	codeKubeProxyVersionUnknown   core.Code = "k8s-kube-proxy-version-unknown"
	codeEBPFVIP                   core.Code = "k8s-ebpf-programs-vip"
	codeCiliumHonoursProxy        core.Code = "k8s-cilium-honours-proxy"
	codeCiliumTooOld              core.Code = "k8s-cilium-predates-ipmode"
	codeCilium1180                core.Code = "k8s-cilium-1.18.0-ignores-proxy"
	codeCiliumVersionUnknown      core.Code = "k8s-cilium-version-unknown"
	codeEBPFProxyUnknown          core.Code = "k8s-ebpf-ipmode-unknown"
	codeInterceptMasquerade       core.Code = "k8s-intercept-masquerade"
	codeIPVSProbe                 core.Code = "k8s-ipvs-lb-probe"
	codeScopeAnnotation           core.Code = "k8s-scope-annotation"
	codeScopeConflict             core.Code = "k8s-scope-conflict"
	codeScopeUndeclared           core.Code = "k8s-scope-undeclared"
	codeScopeValueUnknown         core.Code = "k8s-scope-value-unrecognised"
	codePrivateAddresses          core.Code = "k8s-private-addresses"
	codeProxyProtocolSNAT         core.Code = "k8s-proxy-protocol-lb-proxies"
	codeSNATConflict              core.Code = "k8s-lb-source-nat-conflict"
	codeSNATUndeclared            core.Code = "k8s-lb-source-nat-undeclared"
	codeIngressNoIPMode           core.Code = "k8s-ingress-no-ipmode"
	codeOfferInterceptVIP         core.Code = "k8s-offer-intercept-vip"
	codeVIPNeedsIP                core.Code = "k8s-vip-needs-ip"
	codeVIPBreaksProxyProtocol    core.Code = "k8s-vip-breaks-proxy-protocol"
	codeCCMProxyProtocol          core.Code = "k8s-ccm-proxy-protocol"
	codeIngressNginxProxyProtocol core.Code = "k8s-ingress-nginx-proxy-protocol"
	codeThroughLBNeedsProxy       core.Code = "k8s-through-lb-needs-proxy"
	codeNodeSeparationNeedsProxy  core.Code = "k8s-node-separation-needs-proxy"
	CodeKeepCloudProxy            core.Code = "k8s-keep-cloud-proxy"
)

// Sources cited by this dialect's rules. Each names the document or the exact code a rule
// was read from, so a user can check it.
const (
	srcDomain5 = "docs/sources.md#kep-1860 (upstream Kubernetes: KEP-1860, kube-proxy)"
	srcKEP     = "KEP-1860 (kubernetes/enhancements keps/sig-network/1860-kube-proxy-IP-node-binding)"
	srcGate    = "feature gate LoadBalancerIPMode: alpha 1.29 (off by default), beta 1.30 (on), GA 1.32, removed after 1.34 (kubernetes/website feature-gates/LoadBalancerIPMode.md)"
	// Before the gate's removal, kube-proxy's IsVIPMode returned true whenever the gate was off
	// ("backwards compat"), so a kube-proxy without the gate treats every LB IP as VIP.
	srcKubeProxy         = "kube-proxy: k8s.io/kubernetes v1.37.2 pkg/proxy/serviceport.go (only VIP-mode LB IPs become loadBalancerVIPs) and pkg/proxy/util/utils.go IsVIPMode; earlier releases returned true from IsVIPMode while the gate was off"
	srcIPVS              = "kube-proxy ipvs mode binds every VIP-mode LB IP to the dummy device kube-ipvs0 (k8s.io/kubernetes pkg/proxy/ipvs/proxier.go)"
	srcSkew              = "Kubernetes version skew policy (kubernetes.io/releases/version-skew-policy): kube-proxy must not be newer than kube-apiserver and may be up to three minor versions older (two before 1.25)"
	srcDefaults          = "k8s.io/kubernetes v1.37.2 pkg/apis/core/v1/defaults.go SetDefaults_Service (type LoadBalancer: ip without ipMode gets ipMode VIP)"
	srcValidate          = "k8s.io/kubernetes v1.37.2 pkg/apis/core/validation/validation.go ValidateLoadBalancerStatus"
	srcCilium117         = "cilium/cilium#34780 (KEP-1860 for kube-proxy replacement, first released in 1.17.0)"
	srcCilium118         = "cilium/cilium#40913 (1.18.0 no longer skips Proxy-mode LB IPs), fixed by cilium/cilium#40915 in 1.18.1"
	srcMasq              = "kube-proxy k8s.io/kubernetes v1.37.2 pkg/proxy/iptables/proxier.go and pkg/proxy/nftables/proxier.go: the external-traffic chain masquerades when externalTrafficPolicy is not Local"
	srcIPVSProbe         = "Kubernetes blog 2023-12-18 \"Kubernetes 1.29: LoadBalancer IP mode\" (health checks from the LB never return once its IP is bound to kube-ipvs0); kubernetes/kubernetes#79783"
	srcPPv               = "KEP-1860 motivation (kubernetes/kubernetes#66607: bypassing the LB loses TLS termination and PROXY protocol, causing protocol errors)"
	srcIngress           = "docs/sources.md#kep-1860 (Ingress objects have no ipMode; networking.k8s.io/v1 IngressLoadBalancerIngress has only ip, hostname, ports)"
	srcOverride          = "docs/annotations.md (loopguard.io annotations)"
	srcIngressNginxProxy = "kubernetes/ingress-nginx internal/ingress/controller/config/config.go (use-proxy-protocol) and deploy/static/provider/cloud/deploy.yaml (ConfigMap ingress-nginx-controller, --configmap)"
)

// The dialect's rules. Codes are stable; docs/reasons.md lists them with these sources.
var (
	ruleNotProvisioned = core.Rule{Code: codeNotProvisioned,
		Summary: "status.loadBalancer.ingress is empty: the load balancer is not provisioned yet, so which address clients use and whether nodes intercept it is not known.",
		Source:  srcKEP}
	ruleIPModeVIP = core.Rule{Code: codeIPModeVIP,
		Summary: "An ingress entry with ip and ipMode VIP: the service proxy programs the LB IP on every node and rewrites in-cluster traffic to it before routing.",
		Source:  srcKEP + "; " + srcDomain5}
	ruleIPModeDefaulted = core.Rule{Code: codeIPModeDefaulted,
		Summary: "An ingress entry with ip and no ipMode: the API server defaults ipMode to VIP, and dataplanes without KEP-1860 treat every LB IP as VIP.",
		Source:  srcDefaults + "; " + srcKubeProxy}
	ruleIPModeProxy = core.Rule{Code: codeIPModeProxy,
		Summary: "An ingress entry with ipMode Proxy: a service proxy that honours it installs no rule for the LB IP, so in-cluster traffic is routed out to the load balancer.",
		Source:  srcKEP + "; " + srcKubeProxy}
	ruleHostnameOnly = core.Rule{Code: codeHostnameOnly,
		Summary: "An ingress entry with only a hostname (AWS, DigitalOcean, Linode, Alibaba style): no node holds the address the name resolves to, so traffic always reaches the load balancer.",
		Source:  srcDomain5 + "; " + srcKubeProxy + " (entries without ip are skipped)"}
	ruleMixedEntries = core.Rule{Code: codeMixedEntries,
		Summary: "The ingress entries disagree: clients that use some addresses are intercepted, clients that use the others reach the load balancer and can loop.",
		Source:  srcKEP}
	ruleProxyModeUnknown = core.Rule{Code: codeProxyModeUnknown,
		Summary: "The service proxy mode is not declared (profile proxyMode: iptables, ipvs, nftables or ebpf), so whether nodes intercept LB IPs is not known.",
		Source:  srcDomain5}
	ruleKubeProxyVIP = core.Rule{Code: codeKubeProxyVIP,
		Summary: "kube-proxy (iptables, nftables, ipvs) programs every VIP-mode LB IP; ipvs also binds it to kube-ipvs0.",
		Source:  srcKubeProxy + "; " + srcIPVS}
	ruleKubeProxyHonoursProxy = core.Rule{Code: codeKubeProxyHonoursProxy,
		Summary: "kube-proxy 1.30 and later skips Proxy-mode LB IPs (LoadBalancerIPMode beta, on by default; GA in 1.32).",
		Source:  srcGate + "; " + srcKubeProxy}
	ruleKubeProxyGateOff = core.Rule{Code: codeKubeProxyGateOff,
		Summary: "kube-proxy 1.29 has LoadBalancerIPMode alpha, off by default: it treats Proxy-mode LB IPs as VIP and intercepts them.",
		Source:  srcGate + "; " + srcKubeProxy}
	ruleKubeProxyTooOld = core.Rule{Code: codeKubeProxyTooOld,
		Summary: "kube-proxy older than 1.29 does not know ipMode: it intercepts every LB IP, Proxy or not.",
		Source:  srcGate + "; " + srcKubeProxy}
	ruleKubeProxySkewHonours = core.Rule{Code: codeKubeProxySkewHonours,
		Summary: "The kube-proxy version is not declared, but the control plane is new enough that even the oldest kube-proxy the skew policy allows honours Proxy.",
		Source:  srcSkew + "; " + srcGate}
	ruleKubeProxySkewIgnores = core.Rule{Code: codeKubeProxySkewIgnores,
		Summary: "The kube-proxy version is not declared, but the control plane is older than 1.30, so kube-proxy is too (it must not be newer): it ignores Proxy and intercepts.",
		Source:  srcSkew + "; " + srcGate}
	ruleKubeProxySkewUnknown = core.Rule{Code: codeKubeProxySkewUnknown,
		Summary: "The kube-proxy version is not declared and may lag the control plane by up to three minor versions, to a release that ignores Proxy and still intercepts; declare kubeProxyVersion.",
		Source:  srcSkew + "; " + srcGate}
	ruleKubeProxyVersionUnknown = core.Rule{Code: codeKubeProxyVersionUnknown,
		Summary: "Neither kubeProxyVersion nor kubernetesVersion is declared: whether kube-proxy honours ipMode Proxy (1.30 and later) is not known.",
		Source:  srcGate}
	ruleEBPFVIP = core.Rule{Code: codeEBPFVIP,
		Summary: "An eBPF service dataplane that replaces kube-proxy intercepts VIP-mode LB IPs itself.",
		Source:  srcDomain5 + "; UNCONFIRMED for eBPF dataplanes other than Cilium"}
	ruleCiliumHonoursProxy = core.Rule{Code: codeCiliumHonoursProxy,
		Summary: "Cilium's kube-proxy replacement skips Proxy-mode LB IPs since 1.17 (except 1.18.0).",
		Source:  srcCilium117 + "; " + srcCilium118}
	ruleCiliumTooOld = core.Rule{Code: codeCiliumTooOld,
		Summary: "Cilium older than 1.17 does not implement ipMode: it intercepts every LB IP, Proxy or not.",
		Source:  srcCilium117}
	ruleCilium1180 = core.Rule{Code: codeCilium1180,
		Summary: "Cilium 1.18.0 regressed and no longer skips Proxy-mode LB IPs: it intercepts them (fixed in 1.18.1).",
		Source:  srcCilium118}
	ruleCiliumVersionUnknown = core.Rule{Code: codeCiliumVersionUnknown,
		Summary: "The Cilium version is not declared (profile dataplane.ciliumVersion): whether it honours ipMode Proxy (1.17+, not 1.18.0) is not known.",
		Source:  srcCilium117 + "; " + srcCilium118}
	ruleEBPFProxyUnknown = core.Rule{Code: codeEBPFProxyUnknown,
		Summary: "An eBPF dataplane other than Cilium: whether it honours ipMode Proxy is not known.",
		Source:  srcDomain5}
	ruleInterceptMasquerade = core.Rule{Code: codeInterceptMasquerade,
		Summary: "kube-proxy masquerades intercepted traffic to an LB IP when externalTrafficPolicy is Cluster: the backend sees a node address.",
		Source:  srcMasq + "; dialect.KubeProxyMasquerades"}
	ruleIPVSProbe = core.Rule{Code: codeIPVSProbe,
		Summary: "In ipvs mode the LB IP is bound to kube-ipvs0 on every node; a load balancer whose health probes come from its own IP gets no replies and marks the nodes unhealthy.",
		Source:  srcIPVSProbe}

	ruleScopeAnnotation = core.Rule{Code: codeScopeAnnotation,
		Summary: "A cloud's well-known annotation says whether the load balancer is internal or internet-facing.",
		Source:  "kubernetes/website docs/concepts/services-networking/service.md (Internal load balancer) and each cloud's documentation (see the annotation table)"}
	ruleScopeConflict = core.Rule{Code: codeScopeConflict,
		Summary: "Cloud annotations on the object disagree about the load balancer's scope; it is left unknown (declare loopguard.io/lb-scope).",
		Source:  "providers/kubernetes scope.go (the internal-LB annotation table)"}
	ruleScopeUndeclared = core.Rule{Code: codeScopeUndeclared,
		Summary: "No recognised cloud annotation says whether the load balancer is private; declare it with loopguard.io/lb-scope.",
		Source:  srcOverride}
	ruleScopeValueUnknown = core.Rule{Code: codeScopeValueUnknown,
		Summary: "A cloud's scope annotation has a value loopguard does not recognise; it draws no conclusion from it.",
		Source:  "providers/kubernetes scope.go (the internal-LB annotation table)"}
	rulePrivateAddresses = core.Rule{Code: codePrivateAddresses,
		Summary: "Every LB address in the status is in a private range (RFC 1918, RFC 6598, RFC 4193), which suggests a private load balancer; it is not taken as proof.",
		Source:  "RFC 1918, RFC 6598, RFC 4193"}

	ruleProxyProtocolSNAT = core.Rule{Code: codeProxyProtocolSNAT,
		Summary: "PROXY protocol is on: the load balancer opens its own connection to the backend (the backend sees the LB's address, the client's in the PROXY header), and the CCM publishes Proxy so in-cluster clients go through it.",
		Source:  srcClouds + "; " + srcDomain5 + "; UNCONFIRMED: source NAT is inferred from PROXY protocol, not stated by these CCMs"}
	ruleSNATConflict = core.Rule{Code: codeSNATConflict,
		Summary: "Cloud annotations on the object disagree about whether the LB replaces the source address; it is left unknown (declare loopguard.io/lb-source-nat).",
		Source:  "providers/kubernetes snat.go (the source-NAT table)"}
	ruleSNATUndeclared = core.Rule{Code: codeSNATUndeclared,
		Summary: "A generic cloud does not say whether its load balancer replaces the client's source address; declare it with loopguard.io/lb-source-nat.",
		Source:  srcOverride}

	ruleIngressNoIPMode = core.Rule{Code: codeIngressNoIPMode,
		Summary: "Ingress objects have no ipMode; loopguard assesses the ingress controller's LoadBalancer Service instead.",
		Source:  srcIngress}

	ruleOfferInterceptVIP = core.Rule{Code: codeOfferInterceptVIP,
		Summary: "Publish status.loadBalancer.ingress[].ipMode: VIP so every node intercepts the LB IP; only the owner of the status (the cloud-controller-manager, or a CCM fork) can do it.",
		Source:  srcKEP + "; docs/sources.md#design (adapters/cloudprovider)"}
	ruleVIPNeedsIP = core.Rule{Code: codeVIPNeedsIP,
		Summary: "The load balancer publishes only hostnames: there is no IP for nodes to intercept.",
		Source:  srcKubeProxy + " (entries without ip are skipped)"}
	ruleVIPBreaksProxyProtocol = core.Rule{Code: codeVIPBreaksProxyProtocol,
		Summary: "The backends expect the PROXY protocol header from the load balancer; intercepted in-cluster traffic would arrive without it and fail.",
		Source:  srcPPv}
	ruleCCMProxyProtocol = core.Rule{Code: codeCCMProxyProtocol,
		Summary: "The cloud-controller-manager's annotation turns on the PROXY protocol toward the backends: they expect its header on every connection.",
		Source:  srcClouds + " (each cloud's row names the file its controller reads the annotation in)"}
	ruleIngressNginxProxyProtocol = core.Rule{Code: codeIngressNginxProxyProtocol,
		Summary: "ingress-nginx is configured with use-proxy-protocol: it expects a PROXY protocol header on every connection to this Service's ports.",
		Source:  srcIngressNginxProxy}
	ruleThroughLBNeedsProxy = core.Rule{Code: codeThroughLBNeedsProxy,
		Summary: "Publishing ipMode Proxy stops the interception only where the dataplane honours it (kube-proxy 1.30+, Cilium 1.17+ but not 1.18.0).",
		Source:  srcGate + "; " + srcCilium117 + "; " + srcCilium118}
	ruleKeepCloudProxy = core.Rule{Code: CodeKeepCloudProxy,
		Summary: "The cloud published ipMode Proxy; loopguard turns it into VIP only when it knows nothing behind the load balancer needs the load balancer (no PROXY protocol, no TLS ended there, no layer-7 rules): declare loopguard.io/backend-expects: none to allow it.",
		Source:  "docs/ccm.md#the-clouds-proxy-stands; " + srcClouds}
	ruleNodeSeparationNeedsProxy = core.Rule{Code: codeNodeSeparationNeedsProxy,
		Summary: "Node separation keeps traffic on the load balancer: the dataplane must honour ipMode Proxy (kube-proxy 1.30+, Cilium 1.17+ but not 1.18.0).",
		Source:  srcGate + "; " + srcCilium117 + "; " + srcCilium118}
)

// rules lists the dialect's rules, for docs/reasons.md and for tests that check every emitted
// code is documented.
func rules() []core.Rule {
	return []core.Rule{
		ruleNotProvisioned, ruleIPModeVIP, ruleIPModeDefaulted, ruleIPModeProxy, ruleHostnameOnly,
		ruleMixedEntries, ruleProxyModeUnknown, ruleKubeProxyVIP, ruleKubeProxyHonoursProxy,
		ruleKubeProxyGateOff, ruleKubeProxyTooOld, ruleKubeProxySkewHonours, ruleKubeProxySkewIgnores,
		ruleKubeProxySkewUnknown, ruleKubeProxyVersionUnknown, ruleEBPFVIP, ruleCiliumHonoursProxy,
		ruleCiliumTooOld, ruleCilium1180, ruleCiliumVersionUnknown, ruleEBPFProxyUnknown,
		ruleInterceptMasquerade, ruleIPVSProbe,
		ruleScopeAnnotation, ruleScopeConflict, ruleScopeUndeclared, ruleScopeValueUnknown, rulePrivateAddresses,
		ruleProxyProtocolSNAT, ruleSNATConflict,
		ruleSNATUndeclared, ruleIngressNoIPMode,
		ruleOfferInterceptVIP, ruleVIPNeedsIP, ruleVIPBreaksProxyProtocol, ruleNodeSeparationNeedsProxy,
		ruleCCMProxyProtocol, ruleIngressNginxProxyProtocol, ruleThroughLBNeedsProxy, ruleKeepCloudProxy,
	}
}

// The rules the units share (units.go); each unit lists its own in cloudFacts.rules.
const (
	// srcClouds is the users' table, generated from the units: each row cites the upstream
	// files and the release read.
	srcClouds = "docs/clouds.md"

	codeCloudDetected     core.Code = "k8s-cloud-detected"
	codeCloudDefault      core.Code = "k8s-cloud-lb-default"
	codeOfferHostname     core.Code = "k8s-offer-hostname-status"
	codeHostnameNeedsName core.Code = "k8s-hostname-needs-dns-name"
	// codeCCMNoProxyIPMode: the cloud's controller does not publish ipMode Proxy for this
	// Service, so the generic offer is unsupported there (the unit's ccmIPMode).
	codeCCMNoProxyIPMode      core.Code = "k8s-ccm-publishes-no-proxy-ipmode"
	codeOfferIPModeAnnotation core.Code = "k8s-offer-ccm-ipmode-annotation"
	codeOfferCCMUpgrade       core.Code = "k8s-offer-ccm-upgrade-ipmode"
	// CodeCloudDefaultUnseen: the cloud's default for this Service depends on a setting the
	// inputs do not show.
	CodeCloudDefaultUnseen core.Code = "k8s-cloud-default-unseen"
	codeCloudL7            core.Code = "k8s-cloud-lb-layer7"
	// codeCCMLagging: the controller's release publishes the ipMode the status lacks; the
	// status is older than its last reconcile.
	codeCCMLagging core.Code = "k8s-ccm-status-lags"
	// CodeUserIPMode: the Service's own annotation sets the ipMode its cloud's controller
	// publishes (UserIPMode).
	CodeUserIPMode core.Code = "k8s-user-ipmode"
)

var (
	ruleCloudDetected = core.Rule{Code: codeCloudDetected,
		Summary: "The cloud was recognised from the Service's loadBalancerClass, a cloud-specific annotation, or every Node's spec.providerID; its row of the fact table applies.",
		Source:  srcClouds}
	ruleCloudDefault = core.Rule{Code: codeCloudDefault,
		Summary: "The cloud's documented default: its load balancer either replaces the client's address (a proxy) or passes it through.",
		Source:  srcClouds}
	ruleOfferHostname = core.Rule{Code: codeOfferHostname,
		Summary: "The cloud's hostname annotation makes its CCM publish a hostname instead of the IP, so no node intercepts the address and in-cluster traffic reaches the load balancer (and its PROXY header).",
		Source:  srcClouds}
	ruleHostnameNeedsName = core.Rule{Code: codeHostnameNeedsName,
		Summary: "The hostname annotation needs a DNS name that resolves to the load balancer; none is known (external-dns.alpha.kubernetes.io/hostname names one).",
		Source:  srcClouds}
	ruleCCMNoProxyIPMode = core.Rule{Code: codeCCMNoProxyIPMode,
		Summary: "The cloud's own cloud-controller-manager does not publish ipMode Proxy for this Service (its source says when it does, if ever), so publishing it takes a fork of the controller; the cloud's own knobs are offered instead.",
		Source:  srcClouds}
	ruleOfferIPModeAnnotation = core.Rule{Code: codeOfferIPModeAnnotation,
		Summary: "The cloud's controller reads an annotation for the ipMode: setting it to Proxy makes it publish ipMode Proxy, so in-cluster traffic goes through the load balancer (the dataplane must honour Proxy).",
		Source:  srcClouds}
	ruleOfferCCMUpgrade = core.Rule{Code: codeOfferCCMUpgrade,
		Summary: "The cloud's controller publishes ipMode Proxy by itself while the PROXY protocol is on, since the release named; a status with VIP comes from an older one: upgrading it is the fix (the dataplane must honour Proxy).",
		Source:  srcClouds}
	ruleCloudL7 = core.Rule{Code: codeCloudL7,
		Summary: "The cloud's load-balancer listener is an HTTP(S) proxy for this Service: it opens its own connection to the backend (the client's address at most in X-Forwarded-For), and with HTTPS it ends TLS, so the backends speak plain HTTP.",
		Source:  srcClouds}
	ruleCCMLagging = core.Rule{Code: codeCCMLagging,
		Summary: "The cloud's controller, at the release the inputs state, publishes ipMode Proxy by itself for this Service; the status with VIP predates its reconcile (or the controller fails to reconcile the Service: see its Events), so no upgrade is offered.",
		Source:  srcClouds}
	ruleUserIPMode = core.Rule{Code: CodeUserIPMode,
		Summary: "The Service carries its cloud controller's own ip-mode or PROXY-protocol annotation: the controller publishes the ipMode it says, and that is the user's choice, which loopguard does not override.",
		Source:  srcClouds}
	ruleCloudDefaultUnseen = core.Rule{Code: CodeCloudDefaultUnseen,
		Summary: "What the load balancer does here depends on a cluster-wide setting of the cloud's controller, or on a cloud API default no public source states, which the inputs do not show; the note names it and what to confirm (then declare loopguard.io/lb-source-nat).",
		Source:  srcClouds}
)

// cloudRules lists the rules the units share and every unit's own.
func cloudRules() []core.Rule {
	out := []core.Rule{ruleCloudDetected, ruleCloudDefault, ruleOfferHostname, ruleHostnameNeedsName,
		ruleCCMNoProxyIPMode, ruleOfferIPModeAnnotation, ruleOfferCCMUpgrade, ruleCloudDefaultUnseen, ruleCloudL7, ruleCCMLagging, ruleUserIPMode,
		ruleValueRejected, ruleValueIgnored, ruleReleaseDecides}
	for _, u := range registry {
		out = append(out, u.facts().rules...)
	}
	return out
}

// annExternalDNS names the DNS name external-dns publishes for the Service, which a hostname
// annotation can take.
const annExternalDNS = "external-dns.alpha.kubernetes.io/hostname"
