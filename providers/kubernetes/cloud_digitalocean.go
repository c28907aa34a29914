package kubernetes

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// DigitalOcean: digitalocean/digitalocean-cloud-controller-manager, read at v0.1.68 and dated
// over every v0.1.x tag. Its load balancer is a pass-through network LB (REGIONAL_NETWORK, the
// default since v0.1.61) or a connection-terminating one (REGIONAL).
type digitalOceanCloud struct{ cloudBase }

const (
	annDOType          = "service.beta.kubernetes.io/do-loadbalancer-type"
	annDOProxyProtocol = "service.beta.kubernetes.io/do-loadbalancer-enable-proxy-protocol"
	annDOHostname      = "service.beta.kubernetes.io/do-loadbalancer-hostname"
	annDOProtocol      = "service.beta.kubernetes.io/do-loadbalancer-protocol"
	annDONetwork       = "service.beta.kubernetes.io/do-loadbalancer-network"
	// envDODefaultLBType sets the type of a Service that names none (cloud.go, since v0.1.62).
	envDODefaultLBType = "DEFAULT_LB_TYPE"
	doRegional         = "REGIONAL"
	doRegionalNetwork  = "REGIONAL_NETWORK"
)

// Upstream sources, at the tag read.
const (
	doRepo          = "digitalocean/digitalocean-cloud-controller-manager "
	srcDOType       = doRepo + "cloud-controller-manager/do/loadbalancers.go getType@v0.1.68 (REGIONAL or REGIONAL_NETWORK exactly; absent or empty: the default; anything else fails the request and the admission webhook refuses it), cloud.go (DEFAULT_LB_TYPE, taken only when exactly one of the two, since v0.1.62; REGIONAL_NETWORK otherwise, the default since v0.1.61, REGIONAL before), retrieveAndAnnotateLoadBalancer (the real type written back onto the Service since v0.1.60; a user's change of it reverted)"
	srcDOKinds      = doRepo + "docs/controllers/services/annotations.md@v0.1.68 (\"REGIONAL_NETWORK (pass-through)\", \"REGIONAL (connection-terminating)\"), loadbalancers.go buildRegionalNetworkForwardingRule (the network LB forwards to the Service port on the nodes, which kube-proxy's LB-IP rule answers) and firewall_controller.go (that port opened on the nodes)"
	srcDOProxy      = doRepo + "cloud-controller-manager/do/annotations.go getBool@v0.1.68 (strconv.ParseBool; an error fails the request; sent for both types); DigitalOcean documents its PROXY protocol as v1"
	srcDOHostname   = doRepo + "cloud-controller-manager/do/loadbalancers.go EnsureLoadBalancer, getHostname@v0.1.68 (a non-empty hostname, lower-cased, is the only status entry; else the IP and IPv6, never an ipMode)"
	srcDOProtocol   = doRepo + "cloud-controller-manager/do/loadbalancers.go getProtocol@v0.1.68 (tcp, http, https, http2 or http3 exactly, tcp by default, anything else fails the request; only REGIONAL reads it)"
	srcDONetwork    = doRepo + "cloud-controller-manager/do/loadbalancers.go getNetwork@v0.1.68 (EXTERNAL or INTERNAL exactly, EXTERNAL when absent or empty, anything else fails the request; since v0.1.53)"
	srcDOProxyBlog  = "DigitalOcean blog \"Load Balancers now support Proxy Protocol\" (behind a REGIONAL load balancer, backends see requests as though they came from the load balancer)"
	doReleaseRNote  = "REGIONAL_NETWORK by default from v0.1.61, REGIONAL before; DEFAULT_LB_TYPE chooses from v0.1.62"
	codeDONetworkLB = core.Code("k8s-do-network-lb-needs-its-ip")
)

var ruleDONetworkLB = core.Rule{Code: codeDONetworkLB,
	Summary: "A DigitalOcean REGIONAL_NETWORK load balancer passes packets to the nodes still addressed to its IP and Service port, and kube-proxy's rule for that IP delivers them: a hostname or ipMode Proxy status removes the rule and stops the traffic from outside too, so neither is offered.",
	Source:  srcDOKinds}

var digitalOceanFacts = cloudFacts{
	name:               "digitalocean",
	title:              "DigitalOcean",
	providerIDPrefixes: []string{"digitalocean://"},
	annotationPrefixes: []string{"service.beta.kubernetes.io/do-loadbalancer-", "kubernetes.digitalocean.com/"},
	sourceNAT:          core.Unknown, // per type: read
	hostnameAnnotation: annDOHostname,
	ipMode:             ccmIPMode{read: true, source: srcDOHostname},
	settings:           []controllerSetting{{name: envDODefaultLBType, env: true}},
	images:             []string{"digitalocean/digitalocean-cloud-controller-manager"},
	source:             srcDOKinds + "; " + srcDOType,
	scope: []ScopeAnnotation{
		{Cloud: "DigitalOcean", Key: annDONetwork,
			Private: []string{"INTERNAL"}, Public: []string{"EXTERNAL", ""},
			Source: srcDONetwork},
	},
	rules: []core.Rule{ruleDONetworkLB},
	doc: cloudDoc{
		lb: "`REGIONAL_NETWORK` (the default from v0.1.61): pass-through, the client's address; `REGIONAL` (the default before): a proxy, the LB's address. " +
			"`do-loadbalancer-type` says which (exactly, case-sensitive; the controller writes the real type back since v0.1.60); without it the release and `DEFAULT_LB_TYPE` decide, or the verdict is tentative",
		backend: "`REGIONAL`: PROXY v1 with `do-loadbalancer-enable-proxy-protocol` (strconv.ParseBool; `yes`, empty: rejected), X-Forwarded-For with `do-loadbalancer-protocol: http`, plain HTTP behind `https`",
		status:  "the IP (and IPv6), never an ipMode; `do-loadbalancer-hostname` publishes that name alone",
		remedy:  "`REGIONAL`: `do-loadbalancer-hostname` with the external-dns name; `REGIONAL_NETWORK`: none (a hostname or ipMode Proxy would cut off the traffic from outside)",
		sources: "digitalocean-cloud-controller-manager v0.1.68 (dated over v0.1.x): `cloud-controller-manager/do/loadbalancers.go`, `annotations.go`, `cloud.go`, `docs/controllers/services/annotations.md`",
	},
}

func (digitalOceanCloud) facts() *cloudFacts { return &digitalOceanFacts }

// doType reads do-loadbalancer-type as getType does: absent or empty is the default; exactly
// REGIONAL or REGIONAL_NETWORK; anything else fails the request.
func doType(svc *corev1.Service) (string, taken) {
	raw, set := svc.Annotations[annDOType]
	switch {
	case !set || raw == "":
		return "", valueAbsent
	case raw == doRegional || raw == doRegionalNetwork:
		return raw, valueTaken
	}
	return "", valueRejected
}

// doDefaultType is the type of a Service that names none: DEFAULT_LB_TYPE when it is exactly
// one of the two (from v0.1.62), else REGIONAL_NETWORK from v0.1.61 and REGIONAL before; ""
// when the release that decides is not known. from says what decided.
func doDefaultType(v *cloudView) (typ, from string) {
	rel := v.release()
	if s := v.setting(envDODefaultLBType); s.found && !s.fromRef && rel.atLeast("v0.1.62") != core.No {
		if s.value == doRegional || s.value == doRegionalNetwork {
			return s.value, s.from + " sets " + envDODefaultLBType + "=" + s.value
		}
		// Any other value keeps the built-in default, silently.
		v.note(ruleValueIgnored.Because("DigitalOcean: " + s.from + " sets " + envDODefaultLBType + "=" + quote(s.value) +
			", which the controller takes only as REGIONAL or REGIONAL_NETWORK exactly; it keeps REGIONAL_NETWORK [" + srcDOType + "]"))
	}
	switch rel.atLeast("v0.1.61") {
	case core.Yes:
		return doRegionalNetwork, "the controller's default at " + rel.raw + " (" + rel.from + ")"
	case core.No:
		return doRegional, "the controller's default at " + rel.raw + " (" + rel.from + ")"
	}
	return "", ""
}

// doProtocol reads do-loadbalancer-protocol as getProtocol does.
func doProtocol(svc *corev1.Service) (string, taken) {
	raw, set := svc.Annotations[annDOProtocol]
	if !set {
		return "tcp", valueAbsent
	}
	switch raw {
	case "tcp", "http", "https", "http2", "http3":
		return raw, valueTaken
	}
	return "", valueRejected
}

func (digitalOceanCloud) read(v *cloudView) {
	svc := v.svc
	_, st := doType(svc)
	v.valueNote(st, annDOType, "the DigitalOcean controller takes REGIONAL or REGIONAL_NETWORK exactly", srcDOType)
	pp, pst := strictBool(svc, annDOProxyProtocol) // getBool: strconv.ParseBool, an error fails the request
	v.valueNote(pst, annDOProxyProtocol, "the DigitalOcean controller reads a Go bool (strconv.ParseBool)", srcDOProxy)
	if pp {
		v.expects("v1", ruleCCMProxyProtocol.Because("DigitalOcean: "+annDOProxyProtocol+": "+quote(svc.Annotations[annDOProxyProtocol])+" ["+srcDOProxy+"]"))
	}
	proto, prst := doProtocol(svc)
	v.valueNote(prst, annDOProtocol, "the DigitalOcean controller takes tcp, http, https, http2 or http3 exactly", srcDOProtocol)
	if !v.detected || st == valueRejected {
		return
	}
	typ, _ := doType(svc)
	from := annDOType + ": " + typ
	if st != valueTaken {
		typ, from = doDefaultType(v)
	}
	v.rd.kind, v.rd.kindFrom = typ, from
	switch typ {
	case doRegionalNetwork:
		v.byDefault(core.No, core.Unknown, ruleCloudDefault.Because("DigitalOcean REGIONAL_NETWORK load balancer ("+from+v.on()+"): a pass-through network load balancer, the client's address reaches the backend ["+srcDOKinds+"]"))
		v.rd.throughLBUnmet = append(v.rd.throughLBUnmet, core.Precondition{Kind: core.PreconditionUnsupported,
			Reason: ruleDONetworkLB.Because("DigitalOcean REGIONAL_NETWORK (" + from + "): ipMode Proxy would remove kube-proxy's rule for the load balancer's IP, which delivers the traffic from outside")})
	case doRegional:
		v.byDefault(core.Yes, core.Unknown, ruleCloudDefault.Because("DigitalOcean REGIONAL load balancer ("+from+v.on()+"): it ends the connection and opens its own to the node, so the backend sees the load balancer's address ["+srcDOKinds+"; "+srcDOProxyBlog+"]"))
		if proto == "http" || proto == "https" || proto == "http2" || proto == "http3" {
			if proto != "http" {
				v.needsTLS(ruleCloudL7.Because("DigitalOcean REGIONAL: " + annDOProtocol + ": " + proto + ": the load balancer ends TLS, the backends speak HTTP [" + srcDOProtocol + "]"))
			}
		}
	default:
		v.rd.throughLBUnmet = append(v.rd.throughLBUnmet, core.Precondition{Kind: core.PreconditionUnknown,
			Reason: ruleReleaseDecides.Because("DigitalOcean: ipMode Proxy suits a REGIONAL load balancer only (a REGIONAL_NETWORK one needs kube-proxy's rule for its IP), and which one this is is not known: " + doReleaseRNote)})
		v.unseenSetting("DigitalOcean: the Service shows no " + annDOType + " (the controller writes the real type back from v0.1.60 on) and the controller's release is not known: " + doReleaseRNote +
			"; a REGIONAL_NETWORK load balancer passes the client's address through, a REGIONAL one replaces it. State the release (ccmVersion) or the type, or declare loopguard.io/lb-source-nat [" + srcDOType + "]")
	}
}

func (digitalOceanCloud) fixes(v *cloudView) []cloudFix {
	if !v.interceptedNeedsLB() {
		return nil
	}
	switch typ, from := v.rd.kind, v.rd.kindFrom; typ {
	case doRegionalNetwork:
		v.e.Notes = append(v.e.Notes, ruleDONetworkLB.Because("DigitalOcean REGIONAL_NETWORK ("+from+"): the backends need the load balancer, but a hostname or ipMode Proxy status would cut off the traffic from outside; a REGIONAL load balancer (a new Service: the controller reverts a change of the type) can carry the PROXY protocol or TLS for in-cluster clients behind its hostname"))
		return nil
	case doRegional:
		return standardFixes(v)
	}
	out := standardFixes(v)
	for i := range out {
		out[i].offer.Unmet = append(out[i].offer.Unmet, core.Precondition{Kind: core.PreconditionUnknown, Reason: ruleReleaseDecides.Because(
			"DigitalOcean: the hostname fix suits a REGIONAL load balancer only; a REGIONAL_NETWORK one needs kube-proxy's rule for its IP. Which one this is the Service does not show (" + annDOType + ") and the release that decides is not known: " + doReleaseRNote)})
	}
	return out
}

// DigitalOceanController is what the digitalocean-cloud-controller-manager runs with, as a host
// that knows it states it.
type DigitalOceanController struct {
	// Version is the controller's release ("v0.1.68"); "" when not known.
	Version string
	// DefaultLBType is DEFAULT_LB_TYPE as the controller's environment has it; "" when unset.
	// The controller takes only REGIONAL and REGIONAL_NETWORK, exactly.
	DefaultLBType string
}

// Overlay states the controller's release and settings in p.
func (c DigitalOceanController) Overlay(p *core.ClusterProfile) {
	overlayController(p, c.Version, envDODefaultLBType, c.DefaultLBType)
}
