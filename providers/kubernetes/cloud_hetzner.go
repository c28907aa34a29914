package kubernetes

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// Hetzner Cloud: hetznercloud/hcloud-cloud-controller-manager.
type hetznerCloud struct{ cloudBase }

const (
	annHetznerProxyProtocol = "load-balancer.hetzner.cloud/uses-proxyprotocol"
	// envHetznerUsesProxyProtocol turns the PROXY protocol on for every Service that does not
	// set load-balancer.hetzner.cloud/uses-proxyprotocol (hcloud-cloud-controller-manager
	// internal/config/load_balancer_envs.go, since v1.29.0, #1052; the status follows it since
	// v1.29.1, #1131).
	envHetznerUsesProxyProtocol = "HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL"
)

const (
	srcHetznerDocs     = "hetznercloud/hcloud-cloud-controller-manager docs/reference/load_balancer_annotations.md (load-balancer.hetzner.cloud/hostname, uses-proxyprotocol); #727, #783 (ipMode Proxy with PROXY protocol)"
	srcCCMHetzner      = "hetznercloud/hcloud-cloud-controller-manager hcloud/load_balancers.go buildLoadBalancerStatusIngress (ipMode Proxy while uses-proxyprotocol is on) and CHANGELOG.md v1.21.0 (#727, #783)"
	srcHetznerDefaults = "hetznercloud/hcloud-cloud-controller-manager internal/config/load_balancer_envs.go (HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL: the PROXY protocol for every Service without the annotation, default false; v1.29.0, #1052), hcloud/load_balancers.go getProxyProtocolEnabled (the annotation, else that default, decides ipMode Proxy; v1.29.1, #1131), docs/reference/load_balancer_envs.md"
)

var hetznerFacts = cloudFacts{
	name:               "hetzner",
	title:              "Hetzner Cloud",
	providerIDPrefixes: []string{"hcloud://"},
	annotationPrefixes: []string{"load-balancer.hetzner.cloud/"},
	sourceNAT:          core.Unknown, // only with PROXY protocol: read
	hostnameAnnotation: "load-balancer.hetzner.cloud/hostname",
	ipMode:             ccmIPMode{read: true, withProxyProtocol: true, since: "v1.21.0", source: srcCCMHetzner},
	settings:           []string{envHetznerUsesProxyProtocol},
	source:             srcHetznerDocs,
	scope: []ScopeAnnotation{
		{Cloud: "Hetzner Cloud", Key: "load-balancer.hetzner.cloud/disable-public-network",
			// "false" draws no conclusion: the LB may still be reached over its private network.
			Private: []string{"true"},
			Source:  "hetznercloud/hcloud-cloud-controller-manager internal/annotation/load_balancer.go LBDisablePublicNetwork (\"all traffic is routed over the private network\")"},
	},
}

func (hetznerCloud) facts() *cloudFacts { return &hetznerFacts }

func (hetznerCloud) read(v *cloudView) {
	svc := v.svc
	raw, set := svc.Annotations[annHetznerProxyProtocol]
	// With PROXY protocol on, the LB proxies the connection and its CCM publishes Proxy so
	// in-cluster clients go through it.
	if raw == "true" {
		v.sourceNAT(core.Yes, core.Yes, ruleProxyProtocolSNAT.Because("Hetzner Cloud: "+annHetznerProxyProtocol+": \"true\""))
	}
	on, err := strconv.ParseBool(raw)
	on = set && err == nil && on
	if on {
		v.expects("", ruleCCMProxyProtocol.Because("Hetzner Cloud: "+annHetznerProxyProtocol+": "+quote(raw)))
	}
	if !v.detected {
		return
	}
	if f := hetznerDefaultProxyProtocol(svc, v.c, v.ownsStatus, v.on()); f != nil {
		v.byDefault(f.nat, f.proxy, f.reason)
	}
	hetznerUnseen(v, set)
	switch {
	case on:
		v.rd.ccmProxy, v.rd.ccmSince = true, v.f.ipMode.since
	case hetznerDefaultProxyProtocol(svc, v.c, true, "") != nil:
		// The status follows the cluster-wide default since v1.29.1 (#1131).
		v.rd.ccmProxy, v.rd.ccmSince, v.rd.ccmSource = true, "v1.29.1", srcHetznerDefaults
	}
}

// hetznerDefaultProxyProtocol: a Service without uses-proxyprotocol gets the controller's
// cluster-wide default. Its Pod's environment says it; failing that, a status with ipMode Proxy
// does, because this controller publishes Proxy only while the PROXY protocol is on.
func hetznerDefaultProxyProtocol(svc *corev1.Service, c *core.Cluster, ownsStatus bool, on string) *snatFact {
	if _, set := svc.Annotations[annHetznerProxyProtocol]; set {
		return nil
	}
	if env := podEnv(c, envHetznerUsesProxyProtocol); env.found && !env.fromRef {
		if b, err := strconv.ParseBool(env.value); err == nil && b {
			return &snatFact{nat: core.Yes, proxy: core.Yes, reason: ruleProxyProtocolSNAT.Because("Hetzner Cloud: the Service does not set " +
				annHetznerProxyProtocol + ", and Pod " + env.pod + " sets " + envHetznerUsesProxyProtocol + "=" + env.value +
				", the controller's default for it" + on + " [" + srcHetznerDefaults + "]")}
		}
		return nil
	}
	if ownsStatus {
		return nil
	}
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IPMode != nil && *ing.IPMode == corev1.LoadBalancerIPModeProxy {
			return &snatFact{nat: core.Yes, proxy: core.Yes, reason: ruleProxyProtocolSNAT.Because("Hetzner Cloud: the Service does not set " +
				annHetznerProxyProtocol + ", yet the controller published ipMode Proxy for " + ing.IP +
				", which it does only while the PROXY protocol is on: its cluster-wide " + envHetznerUsesProxyProtocol + " is true" + on +
				" [" + srcHetznerDefaults + "]")}
		}
	}
	return nil
}

// hetznerUnseen names the setting that decides the PROXY protocol when the inputs do not show it.
func hetznerUnseen(v *cloudView, set bool) {
	if set {
		v.unseenSetting("Hetzner Cloud: without the PROXY protocol, whether the load balancer replaces the client's address no source read here says; declare loopguard.io/lb-source-nat")
		return
	}
	env := podEnv(v.c, envHetznerUsesProxyProtocol)
	switch {
	case env.found && env.fromRef:
		v.unseenSetting("Hetzner Cloud: the Service does not set " + annHetznerProxyProtocol + ", so the controller's " + envHetznerUsesProxyProtocol +
			" decides the PROXY protocol; Pod " + env.pod + " takes it from a Secret or ConfigMap the inputs do not show: confirm it; without the PROXY protocol, whether the load balancer replaces the client's address no source read here says: declare loopguard.io/lb-source-nat")
	case env.found:
		v.unseenSetting("Hetzner Cloud: Pod " + env.pod + " sets " + envHetznerUsesProxyProtocol + "=" + quote(env.value) +
			" (PROXY protocol off by default); without it, whether the load balancer replaces the client's address no source read here says: declare loopguard.io/lb-source-nat")
	default:
		v.unseenSetting("Hetzner Cloud: the Service does not set " + annHetznerProxyProtocol + ", so the controller's cluster-wide " + envHetznerUsesProxyProtocol +
			" (v1.29.0 and later) decides the PROXY protocol, and no Pod in the inputs shows it (an ipMode VIP status says it is off, from v1.29.1); confirm it on the hcloud-cloud-controller-manager Deployment, and declare loopguard.io/lb-source-nat")
	}
}
