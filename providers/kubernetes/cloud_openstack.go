package kubernetes

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// OpenStack: kubernetes/cloud-provider-openstack's openstack-cloud-controller-manager (OCCM),
// read at v1.36.0 and dated over its v* tags, makes an Octavia load balancer.
type openStackCloud struct{ cloudBase }

const (
	annOpenStackProxyProtocol = "loadbalancer.openstack.org/proxy-protocol"
	annOpenStackXFF           = "loadbalancer.openstack.org/x-forwarded-for"
	annOpenStackHostname      = "loadbalancer.openstack.org/hostname"
	// Keys of the [LoadBalancer] section of OCCM's cloud.conf, as a profile states them.
	settingOpenStackProvider        = "lb-provider"
	settingOpenStackIngressHostname = "enable-ingress-hostname"
)

// Upstream sources, at the tag read.
const (
	openStackRepo        = "kubernetes/cloud-provider-openstack "
	srcOpenStackProxy    = openStackRepo + "pkg/openstack/loadbalancer.go getProxyProtocolFromServiceAnnotation@v1.36.0 (exactly \"true\" or \"v1\": PROXY, \"v2\": PROXYV2, anything else: off, silently; on every port; v1 and v2 since v1.31.0, only \"true\" before)"
	srcOpenStackXFF      = openStackRepo + "pkg/openstack/loadbalancer.go getBoolFromServiceAnnotation, getListenerProtocol@v1.36.0 (x-forwarded-for exactly \"true\": every listener HTTP with the X-Forwarded-For header; anything but \"true\" or \"false\": the default, with a log line; with the PROXY protocol as well the Service is refused)"
	srcOpenStackStatus   = openStackRepo + "pkg/openstack/loadbalancer.go createLoadBalancerStatus@v1.36.0 (the hostname annotation; else with the PROXY protocol ipMode Proxy, or <ip>.<ingress-hostname-suffix> when cloud.conf sets enable-ingress-hostname; else ipMode VIP; since v1.30.0, #2587)"
	srcOpenStackProvider = openStackRepo + "pkg/openstack/openstack.go ReadConfig@v1.36.0 ([LoadBalancer] lb-provider, \"amphora\" by default) and docs/openstack-cloud-controller-manager/expose-applications-using-loadbalancer-type-service.md (\"Use PROXY protocol to preserve client IP\"; PROXY and X-Forwarded-For not supported with ovn); openstack/ovn-octavia-provider doc/source/contributor/loadbalancer.rst (OVN load balancers are OpenFlow DNAT on every chassis: no source NAT is described, so pass-through is inferred)"
	srcOpenStackInternal = openStackRepo + "pkg/openstack/loadbalancer.go checkService@v1.36.0 (exactly \"true\": no floating IP; cloud.conf internal-lb makes every load balancer internal)"
)

var openStackFacts = cloudFacts{
	name:               "openstack",
	title:              "OpenStack Octavia",
	providerIDPrefixes: []string{"openstack://"},
	annotationPrefixes: []string{"loadbalancer.openstack.org/", "service.beta.kubernetes.io/openstack-"},
	sourceNAT:          core.Unknown, // amphora proxies, OVN passes through: the cloud's choice
	hostnameAnnotation: annOpenStackHostname,
	ipMode:             ccmIPMode{read: true, withProxyProtocol: true, since: "v1.30.0", source: srcOpenStackStatus},
	settings:           []controllerSetting{{name: settingOpenStackProvider}, {name: settingOpenStackIngressHostname}},
	images:             []string{"provider-os/openstack-cloud-controller-manager"},
	source:             srcOpenStackProvider,
	scope: []ScopeAnnotation{
		{Cloud: "OpenStack", Key: "service.beta.kubernetes.io/openstack-internal-load-balancer",
			// "false" draws no conclusion: cloud.conf [LoadBalancer] internal-lb can make every LB internal.
			Private: []string{"true"},
			Source:  srcOpenStackInternal},
	},
	doc: cloudDoc{
		lb: "`lb-provider` in OCCM's cloud.conf decides: `amphora` (the default) is a proxy, the client's address only with the PROXY protocol or X-Forwarded-For; `ovn` passes it through (inferred from the OVN provider's design)",
		backend: "the PROXY header with `proxy-protocol: true`, `v1` (PROXY) or `v2` (PROXYV2; v1 and v2 from v1.31.0), exact strings (`True`, `1`: off); " +
			"X-Forwarded-For on an HTTP listener with `x-forwarded-for: \"true\"` (the backends must speak HTTP)",
		status: "one entry: ipMode `Proxy` with the PROXY protocol (v1.30.0+), or the hostname `<ip>.<suffix>` when cloud.conf sets `enable-ingress-hostname`; else `VIP`; X-Forwarded-For leaves `VIP`; `hostname` publishes that name",
		remedy: "`loadbalancer.openstack.org/hostname` with the external-dns name (also for X-Forwarded-For); else the upgrade to v1.30.0 (v1.31.0 for `v1`/`v2`)",
		sources: "cloud-provider-openstack v1.36.0 (dated over v1.21–v1.36): `pkg/openstack/loadbalancer.go`, `pkg/openstack/openstack.go`, " +
			"`docs/openstack-cloud-controller-manager/expose-applications-using-loadbalancer-type-service.md`; ovn-octavia-provider `doc/source/contributor/loadbalancer.rst`",
	},
}

func (openStackCloud) facts() *cloudFacts { return &openStackFacts }

// openStackProxy reads proxy-protocol as getProxyProtocolFromServiceAnnotation does: "v1",
// "v2" or "" (off); a set value other than "true", "v1", "v2" and "false" is off, silently.
func openStackProxy(svc *corev1.Service) (string, taken) {
	raw, set := svc.Annotations[annOpenStackProxyProtocol]
	switch {
	case !set:
		return "", valueAbsent
	case raw == "true" || raw == "v1":
		return "v1", valueTaken
	case raw == "v2":
		return "v2", valueTaken
	case raw == "false":
		return "", valueTaken
	}
	return "", valueIgnored
}

// openStackBool reads an OpenStack bool annotation as getBoolFromServiceAnnotation does:
// exactly "true" or "false"; anything else is the default, with a log line.
func openStackBool(svc *corev1.Service, key string) (bool, taken) {
	raw, set := svc.Annotations[key]
	switch {
	case !set:
		return false, valueAbsent
	case raw == "true":
		return true, valueTaken
	case raw == "false":
		return false, valueTaken
	}
	return false, valueIgnored
}

func (openStackCloud) read(v *cloudView) {
	svc := v.svc
	pp, pst := openStackProxy(svc)
	v.valueNote(pst, annOpenStackProxyProtocol, "OCCM takes exactly \"true\", \"v1\", \"v2\" or \"false\"", srcOpenStackProxy)
	rel := v.release()
	if (svc.Annotations[annOpenStackProxyProtocol] == "v1" || pp == "v2") && rel.atLeast("v1.31.0") == core.No {
		v.valueNote(valueIgnored, annOpenStackProxyProtocol, "OCCM "+rel.raw+" ("+rel.from+") takes only \"true\" (v1 and v2 from v1.31.0)", srcOpenStackProxy)
		pp = ""
	}
	xff, xst := openStackBool(svc, annOpenStackXFF)
	v.valueNote(xst, annOpenStackXFF, "OCCM takes exactly \"true\" or \"false\"", srcOpenStackXFF)
	if pp != "" && xff {
		v.valueNote(valueRejected, annOpenStackXFF, "OCCM refuses it together with "+annOpenStackProxyProtocol, srcOpenStackXFF)
		return
	}
	if pp != "" {
		raw := svc.Annotations[annOpenStackProxyProtocol]
		v.expects(pp, ruleCCMProxyProtocol.Because("OpenStack: "+annOpenStackProxyProtocol+": "+quote(raw)+" ["+srcOpenStackProxy+"]"))
		// With PROXY protocol on, the LB proxies the connection and OCCM publishes Proxy (or,
		// with enable-ingress-hostname, a hostname) so in-cluster clients go through it.
		v.sourceNAT(core.Yes, core.Yes, ruleProxyProtocolSNAT.Because("OpenStack: "+annOpenStackProxyProtocol+": "+quote(raw)))
	}
	if xff {
		v.sourceNAT(core.Yes, core.Unknown, ruleCloudL7.Because("OpenStack: "+annOpenStackXFF+": \"true\": every listener is HTTP, the backend sees the load balancer's address and the client's in X-Forwarded-For, and OCCM still publishes ipMode VIP ["+srcOpenStackXFF+"]"))
	}
	if !v.detected {
		return
	}
	if s := v.setting(settingOpenStackProvider); s.found {
		switch s.value {
		case "amphora", "octavia", "amphorav2":
			v.byDefault(core.Yes, core.Unknown, ruleCloudDefault.Because("OpenStack: "+s.from+" states lb-provider "+quote(s.value)+": an amphora (HAProxy) ends the connection and opens its own to the backend ["+srcOpenStackProvider+"]"))
		case "ovn":
			v.byDefault(core.No, core.Unknown, ruleCloudDefault.Because("OpenStack: "+s.from+" states lb-provider \"ovn\": OVN load balancers translate the destination on every chassis and pass the client's address through (inferred: no source NAT is described) ["+srcOpenStackProvider+"]"))
		default:
			v.unseenSetting("OpenStack: " + s.from + " states lb-provider " + quote(s.value) + ", which loopguard has not read: declare loopguard.io/lb-source-nat")
		}
	} else {
		v.unseenSetting("OpenStack: whether the Octavia load balancer replaces the client's address depends on lb-provider in the [LoadBalancer] section of the openstack-cloud-controller-manager's cloud.conf (\"amphora\", the default, is a proxy: the client's address comes only with the PROXY protocol or X-Forwarded-For; \"ovn\" passes it through, inferred), which the inputs do not show; state it in the profile's controllerSettings (lb-provider), or declare loopguard.io/lb-source-nat")
	}
	if pp == "" {
		return
	}
	if s := v.setting(settingOpenStackIngressHostname); s.found {
		// gcfg bools: true, yes, on, 1 in any case.
		switch strings.ToLower(s.value) {
		case "true", "yes", "on", "1", "":
			return // a hostname status, never Proxy: nothing to upgrade
		}
	}
	v.rd.ccmProxy, v.rd.ccmSince = true, v.f.ipMode.since
	if svc.Annotations[annOpenStackProxyProtocol] != "true" {
		v.rd.ccmSince = "v1.31.0"
	}
}

// userIPMode: OCCM publishes Proxy while proxy-protocol is on and VIP while it is "false".
func (openStackCloud) userIPMode(v *cloudView) (corev1.LoadBalancerIPMode, core.Reason, bool) {
	pp, st := openStackProxy(v.svc)
	if st != valueTaken {
		return "", core.Reason{}, false
	}
	mode := corev1.LoadBalancerIPModeVIP
	if pp != "" {
		mode = corev1.LoadBalancerIPModeProxy
	}
	return mode, v.userSet(annOpenStackProxyProtocol, mode, srcOpenStackStatus), true
}

// fixes: the standard ones; X-Forwarded-For needs the load balancer too (an HTTP listener), and
// OCCM never publishes Proxy for it, so only the hostname serves there.
func (openStackCloud) fixes(v *cloudView) []cloudFix { return standardFixes(v) }

// OpenStackController is what the openstack-cloud-controller-manager runs with, as a host that
// knows it states it.
type OpenStackController struct {
	// Version is the controller's release ("v1.36.0"); "" when not known.
	Version string
	// LBProvider is lb-provider in the [LoadBalancer] section of its cloud.conf ("amphora",
	// "ovn"); "" when not known.
	LBProvider string
	// EnableIngressHostname is enable-ingress-hostname there ("true"); "" when not known.
	EnableIngressHostname string
}

// Overlay states the controller's release and settings in p.
func (c OpenStackController) Overlay(p *core.ClusterProfile) {
	overlayController(p, c.Version, settingOpenStackProvider, c.LBProvider, settingOpenStackIngressHostname, c.EnableIngressHostname)
}
