package kubernetes

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// Hetzner Cloud: hetznercloud/hcloud-cloud-controller-manager (HCCM), read at v1.35.0.
type hetznerCloud struct{ cloudBase }

const (
	annHetznerProxyProtocol = "load-balancer.hetzner.cloud/uses-proxyprotocol"
	annHetznerHostname      = "load-balancer.hetzner.cloud/hostname"
	annHetznerProtocol      = "load-balancer.hetzner.cloud/protocol"
	annHetznerDisablePublic = "load-balancer.hetzner.cloud/disable-public-network"
	// envHetznerUsesProxyProtocol turns the PROXY protocol on for every Service that does not
	// set uses-proxyprotocol (internal/config/load_balancer_envs.go, since v1.29.0, #1052; the
	// status follows it since v1.29.1, #1131).
	envHetznerUsesProxyProtocol = "HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL"
)

// Upstream sources, at the tag read.
const (
	hetznerRepo         = "hetznercloud/hcloud-cloud-controller-manager "
	srcHetznerBool      = hetznerRepo + "internal/annotation/name.go BoolFromService@v1.35.0 (strconv.ParseBool; an unparsable value fails EnsureLoadBalancer)"
	srcHetznerStatus    = hetznerRepo + "hcloud/load_balancers.go buildLoadBalancerStatusIngress, getProxyProtocolEnabled@v1.35.0 (every IP entry gets ipMode Proxy while the PROXY protocol is on, by the annotation or, since v1.29.1, the HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL default; VIP otherwise; since v1.21.0, #727/#783)"
	srcHetznerDefaults  = hetznerRepo + "internal/config/load_balancer_envs.go, config.go getEnvBoolPtr@v1.35.0 (HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL, strconv.ParseBool, unset by default; since v1.29.0, #1052; an unparsable value stops the controller at start)"
	srcHetznerListener  = hetznerRepo + "internal/hcops/load_balancer.go@v1.35.0 (the PROXY protocol on every TCP port from the annotation, else the default; with neither an existing listener keeps its setting)"
	srcHetznerHostname  = hetznerRepo + "hcloud/load_balancers.go EnsureLoadBalancer@v1.35.0 (a hostname annotation is published as the only entry, verbatim)"
	srcHetznerProtocol  = hetznerRepo + "internal/annotation/name.go LBSvcProtocol@v1.35.0 (strings.ToLower, then tcp, http or https; anything else fails EnsureLoadBalancer)"
	srcHetznerProvider  = hetznerRepo + "internal/providerid/providerid.go@v1.35.0 (hcloud://<server-id>; Robot servers hrobot://<number> since v1.19.0, legacy hcloud://bm-<number>)"
	srcHetznerNoSources = "Neither HCCM nor Hetzner's load balancer FAQ (docs.hetzner.com/cloud/load-balancers/faq) says what a TCP listener without the PROXY protocol does to the client's address"
)

var hetznerFacts = cloudFacts{
	name:               "hetzner",
	title:              "Hetzner Cloud",
	providerIDPrefixes: []string{"hcloud://", "hrobot://"},
	annotationPrefixes: []string{"load-balancer.hetzner.cloud/"},
	sourceNAT:          core.Unknown, // only with the PROXY protocol or an HTTP listener: read
	hostnameAnnotation: annHetznerHostname,
	ipMode:             ccmIPMode{read: true, withProxyProtocol: true, since: "v1.21.0", source: srcHetznerStatus},
	settings:           []controllerSetting{{name: envHetznerUsesProxyProtocol, env: true, unset: "false"}},
	images:             []string{"hetznercloud/hcloud-cloud-controller-manager"},
	source:             srcHetznerStatus + "; " + srcHetznerNoSources,
	scope: []ScopeAnnotation{
		{Cloud: "Hetzner Cloud", Key: annHetznerDisablePublic,
			// strconv.ParseBool; "false" draws no conclusion: the LB may still be reached over
			// its private network, and the status then carries private addresses only.
			Private: []string{"1", "t", "T", "TRUE", "true", "True"},
			Source:  hetznerRepo + "internal/annotation/load_balancer.go LBDisablePublicNetwork, internal/hcops/load_balancer.go togglePublicInterface@v1.35.0 (\"all traffic is routed over the private network\"; applied in place; HCLOUD_LOAD_BALANCERS_DISABLE_PUBLIC_NETWORK when absent)"},
	},
	doc: cloudDoc{
		lb: "TCP listener: not stated in any source read (unknown); with the PROXY protocol the LB opens its own connection (the client's address only in the header); `protocol: http`/`https`: an HTTP proxy",
		backend: "the PROXY header (version not in the source) with `uses-proxyprotocol` (strconv.ParseBool: `True`, `1`, `t` are on; `yes`, empty: rejected, nothing applied), " +
			"or, without the annotation, with the controller's `HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL` (v1.29.0+; profile `controllerSettings` or the controller's Pod)",
		status: "every IP (public, IPv6, private network) with ipMode `Proxy` while the PROXY protocol is on (v1.21.0+; from the cluster-wide default v1.29.1+), else `VIP`; `hostname` publishes that name alone",
		remedy: "`load-balancer.hetzner.cloud/hostname` with the external-dns name; else the upgrade to v1.21.0 (v1.29.1 for the default)",
		sources: "hcloud-cloud-controller-manager v1.35.0: `internal/annotation/name.go`, `hcloud/load_balancers.go`, `internal/hcops/load_balancer.go`, " +
			"`internal/config/load_balancer_envs.go`, `internal/providerid/providerid.go`",
	},
}

func (hetznerCloud) facts() *cloudFacts { return &hetznerFacts }

// hetznerProtocol reads load-balancer.hetzner.cloud/protocol as LBSvcProtocol does: lower-cased,
// then tcp, http or https; anything else fails EnsureLoadBalancer. The default is tcp.
func hetznerProtocol(svc *corev1.Service) (string, taken) {
	raw, set := svc.Annotations[annHetznerProtocol]
	if !set {
		return "tcp", valueAbsent
	}
	switch p := strings.ToLower(raw); p {
	case "tcp", "http", "https":
		return p, valueTaken
	}
	return "", valueRejected
}

// hetznerDefault is HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL as the controller reads it at
// start (strconv.ParseBool; unset: no default; unparsable: the controller does not start).
func hetznerDefault(v *cloudView) (on bool, s setting, st taken) {
	s = v.setting(envHetznerUsesProxyProtocol)
	switch {
	case !s.found || s.fromRef:
		return false, s, valueAbsent
	}
	b, ok := goBool(s.value)
	if !ok {
		return false, s, valueRejected
	}
	return b, s, valueTaken
}

func (hetznerCloud) read(v *cloudView) {
	svc := v.svc
	raw := svc.Annotations[annHetznerProxyProtocol]
	pp, st := strictBool(svc, annHetznerProxyProtocol) // BoolFromService: set but unparsable fails EnsureLoadBalancer
	v.valueNote(st, annHetznerProxyProtocol, "the hcloud-cloud-controller-manager reads a Go bool (strconv.ParseBool)", srcHetznerBool)
	if st == valueTaken && pp {
		// With the PROXY protocol on, the LB proxies the connection and the controller
		// publishes Proxy so in-cluster clients go through it.
		v.sourceNAT(core.Yes, core.Yes, ruleProxyProtocolSNAT.Because("Hetzner Cloud: "+annHetznerProxyProtocol+": "+quote(raw)+" ["+srcHetznerBool+"]"))
		v.expects("", ruleCCMProxyProtocol.Because("Hetzner Cloud: "+annHetznerProxyProtocol+": "+quote(raw)+" ["+srcHetznerListener+"]"))
	}
	proto, pst := hetznerProtocol(svc)
	v.valueNote(pst, annHetznerProtocol, "the hcloud-cloud-controller-manager takes tcp, http or https in any case", srcHetznerProtocol)
	if proto == "http" || proto == "https" {
		v.sourceNAT(core.Yes, core.Unknown, ruleCloudL7.Because("Hetzner Cloud: "+annHetznerProtocol+": "+quote(svc.Annotations[annHetznerProtocol])+
			": the load balancer is an HTTP proxy and opens its own connection to the backend (X-Forwarded-For is not in the controller's source) ["+srcHetznerProtocol+"]"))
		if proto == "https" {
			v.needsTLS(ruleCloudL7.Because("Hetzner Cloud: " + annHetznerProtocol + ": \"https\": the load balancer ends TLS, the backends speak HTTP [" + srcHetznerProtocol + "]"))
		}
	}
	if !v.detected {
		return
	}
	switch st {
	case valueTaken:
		if pp {
			v.rd.ccmProxy, v.rd.ccmSince = true, v.f.ipMode.since
		} else {
			v.unseenSetting("Hetzner Cloud: " + annHetznerProxyProtocol + ": " + quote(raw) + " turns the PROXY protocol off; without the PROXY protocol, what the load balancer does to the client's address no source read here says: declare loopguard.io/lb-source-nat [" + srcHetznerNoSources + "]")
		}
	case valueRejected:
		v.unseenSetting("Hetzner Cloud: the controller applies nothing while " + annHetznerProxyProtocol + " is " + quote(raw) + ", so the load balancer keeps what it had: fix the value, or declare loopguard.io/lb-source-nat")
	case valueAbsent:
		hetznerDefaults(v)
	}
}

// hetznerDefaults: a Service without uses-proxyprotocol gets the controller's cluster-wide
// default, stated in the profile or in the controller's Pod; failing that, a status with ipMode
// Proxy says it, because this controller publishes Proxy only while the PROXY protocol is on.
func hetznerDefaults(v *cloudView) {
	on, s, st := hetznerDefault(v)
	if rel := v.release(); st != valueAbsent && rel.atLeast("v1.29.0") == core.No {
		v.note(ruleValueIgnored.Because("Hetzner Cloud: " + s.from + " sets " + envHetznerUsesProxyProtocol + "=" + quote(s.value) + ", which the hcloud-cloud-controller-manager reads from v1.29.0 on; it is " +
			rel.raw + " (" + rel.from + ") and ignores it [" + srcHetznerDefaults + "]"))
		on, st = false, valueAbsent
		s.found = false
	}
	switch st {
	case valueTaken:
		if on {
			r := ruleProxyProtocolSNAT.Because("Hetzner Cloud: the Service does not set " + annHetznerProxyProtocol + ", and " + s.from + " sets " +
				envHetznerUsesProxyProtocol + "=" + s.value + ", the controller's default for it" + v.on() + " [" + srcHetznerDefaults + "]")
			v.byDefault(core.Yes, core.Yes, r)
			// The status follows the cluster-wide default since v1.29.1 (#1131).
			v.rd.ccmProxy, v.rd.ccmSince, v.rd.ccmSource = true, "v1.29.1", srcHetznerDefaults
			return
		}
		v.unseenSetting("Hetzner Cloud: " + s.from + " sets " + envHetznerUsesProxyProtocol + "=" + quote(s.value) +
			" (PROXY protocol off by default, though a listener that had it keeps it: the controller sends no setting then); without it, what the load balancer does to the client's address no source read here says: declare loopguard.io/lb-source-nat")
		return
	case valueRejected:
		v.note(ruleValueRejected.Because("Hetzner Cloud: " + s.from + " states " + envHetznerUsesProxyProtocol + "=" + quote(s.value) +
			", which the hcloud-cloud-controller-manager refuses at start (strconv.ParseBool): no running controller has it [" + srcHetznerDefaults + "]"))
	}
	if s.fromRef {
		v.unseenSetting("Hetzner Cloud: the Service does not set " + annHetznerProxyProtocol + ", so the controller's " + envHetznerUsesProxyProtocol +
			" decides the PROXY protocol; " + s.from + " takes it from a Secret or ConfigMap the inputs do not show: confirm it (or state it in the profile's controllerSettings); without the PROXY protocol, what the load balancer does to the client's address no source read here says: declare loopguard.io/lb-source-nat")
		return
	}
	if !v.ownsStatus {
		for _, ing := range v.svc.Status.LoadBalancer.Ingress {
			if ing.IPMode != nil && *ing.IPMode == corev1.LoadBalancerIPModeProxy {
				v.byDefault(core.Yes, core.Yes, ruleProxyProtocolSNAT.Because("Hetzner Cloud: the Service does not set "+
					annHetznerProxyProtocol+", yet the controller published ipMode Proxy for "+ing.IP+
					", which it does only while the PROXY protocol is on: its cluster-wide "+envHetznerUsesProxyProtocol+" is true"+v.on()+
					" ["+srcHetznerStatus+"]"))
				return
			}
		}
	}
	v.unseenSetting("Hetzner Cloud: the Service does not set " + annHetznerProxyProtocol + ", so the controller's cluster-wide " + envHetznerUsesProxyProtocol +
		" (v1.29.0 and later) decides the PROXY protocol, and the inputs do not show it (an ipMode VIP status says it is off, from v1.29.1); confirm it on the hcloud-cloud-controller-manager Deployment and state it in the profile's controllerSettings (a fork of the controller: adapters/cloudprovider.WithControllerSettings), or declare loopguard.io/lb-source-nat")
}

// userIPMode: the controller publishes Proxy while uses-proxyprotocol is true and VIP while it
// is false (getProxyProtocolEnabled); a value it rejects changes no status.
func (hetznerCloud) userIPMode(v *cloudView) (corev1.LoadBalancerIPMode, core.Reason, bool) {
	pp, st := strictBool(v.svc, annHetznerProxyProtocol)
	if st != valueTaken {
		return "", core.Reason{}, false
	}
	mode := corev1.LoadBalancerIPModeVIP
	if pp {
		mode = corev1.LoadBalancerIPModeProxy
	}
	return mode, v.userSet(annHetznerProxyProtocol, mode, srcHetznerStatus), true
}

// HetznerController is what the hcloud-cloud-controller-manager runs with, as a host that knows
// it states it (a fork of the controller, a platform that deploys it).
type HetznerController struct {
	// Version is the controller's release ("v1.35.0"); "" when not known.
	Version string
	// UsesProxyProtocol is HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL as the controller's
	// environment has it ("true"); "" when it is not set.
	UsesProxyProtocol string
}

// Overlay states the controller's release and settings in p.
func (h HetznerController) Overlay(p *core.ClusterProfile) {
	overlayController(p, h.Version, envHetznerUsesProxyProtocol, h.UsesProxyProtocol)
}
