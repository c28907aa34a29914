package kubernetes

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/loopguard/loopguard/core"
)

// Version gates of docs/sources.md#kep-1860, in one place.
var (
	// kube-proxy honours ipMode Proxy from 1.30 (LoadBalancerIPMode beta, on by default).
	kubeProxyHonoursProxy = version.MajorMinor(1, 30)
	// 1.29 has the gate alpha, off by default.
	kubeProxyGateAlpha = version.MajorMinor(1, 29)
	// Cilium implements ipMode from 1.17.0; 1.18.0 regressed; 1.18.1 fixed it.
	ciliumHonoursProxy = version.MajorMinor(1, 17)
)

// kubeProxySkew is how many minor versions kube-proxy may lag kube-apiserver (two before 1.25).
func kubeProxySkew(apiserver *version.Version) uint {
	if apiserver.LessThan(version.MajorMinor(1, 25)) {
		return 2
	}
	return 3
}

// dataplane says what the cluster's service proxy does with LB IPs.
type dataplane struct {
	mode core.ProxyMode
	// programsVIP: the dataplane intercepts VIP-mode LB IPs.
	programsVIP core.Fact
	vipReason   core.Reason
	// honoursProxy: the dataplane leaves Proxy-mode LB IPs alone.
	honoursProxy core.Fact
	proxyReason  core.Reason
	// component and have describe what decides honoursProxy, for preconditions.
	component, have, need string
}

// dpKey is what dataplaneOf reads from a profile.
type dpKey struct{ mode, kubeProxy, kubernetes, cni, cilium string }

// maxCachedDataplanes bounds the dialect's cache; a host evaluates a handful of clusters.
const maxCachedDataplanes = 64

// dataplane returns dataplaneOf(p), computed once per distinct profile: parsing versions and
// building messages is most of a translation's cost otherwise.
func (d *Dialect) dataplane(p *core.ClusterProfile) *dataplane {
	k := dpKey{string(p.ProxyMode), p.KubeProxyVersion, p.KubernetesVersion, p.Dataplane.CNI, p.Dataplane.CiliumVersion}
	d.mu.RLock()
	dp, ok := d.dps[k]
	d.mu.RUnlock()
	if ok {
		return dp
	}
	v := dataplaneOf(p)
	dp = &v
	d.mu.Lock()
	if d.dps == nil {
		d.dps = map[dpKey]*dataplane{}
	}
	if len(d.dps) < maxCachedDataplanes {
		d.dps[k] = dp
	}
	d.mu.Unlock()
	return dp
}

// dataplaneOf applies docs/sources.md#kep-1860 to the profile.
func dataplaneOf(p *core.ClusterProfile) dataplane {
	d := dataplane{mode: p.ProxyMode}
	switch p.ProxyMode {
	case core.ProxyModeIPTables, core.ProxyModeNFTables, core.ProxyModeIPVS:
		d.programsVIP = core.Yes
		if p.ProxyMode == core.ProxyModeIPVS {
			d.vipReason = ruleKubeProxyVIP.Because("kube-proxy in ipvs mode programs VIP-mode LB IPs and binds them to kube-ipvs0 on every node.")
		} else {
			d.vipReason = ruleKubeProxyVIP.Because("kube-proxy in " + string(p.ProxyMode) + " mode programs VIP-mode LB IPs on every node.")
		}
		d.component, d.need = "kube-proxy", ">= v1.30 (LoadBalancerIPMode on)"
		d.kubeProxyHonours(p)
	case core.ProxyModeEBPF:
		d.programsVIP = core.Yes
		if strings.EqualFold(p.Dataplane.CNI, "cilium") {
			d.vipReason = ruleEBPFVIP.Because("Cilium's kube-proxy replacement intercepts VIP-mode LB IPs.")
			d.component, d.need = "Cilium", ">= v1.17.0, not v1.18.0"
			d.ciliumHonours(p)
			return d
		}
		name := p.Dataplane.CNI
		if name == "" {
			name = "an undeclared CNI"
		}
		d.vipReason = ruleEBPFVIP.Because("The eBPF dataplane (" + name + ") intercepts VIP-mode LB IPs (UNCONFIRMED for dataplanes other than Cilium).")
		d.honoursProxy, d.proxyReason = core.Unknown, ruleEBPFProxyUnknown.Because("The eBPF dataplane is "+name+"; only Cilium's ipMode support is known.")
		d.component = "eBPF dataplane"
	default:
		r := ruleProxyModeUnknown.Reason()
		d.programsVIP, d.vipReason = core.Unknown, r
		d.honoursProxy, d.proxyReason = core.Unknown, r
		d.component = "service proxy"
	}
	return d
}

func (d *dataplane) kubeProxyHonours(p *core.ClusterProfile) {
	if kp, err := version.ParseGeneric(p.KubeProxyVersion); err == nil {
		d.have = p.KubeProxyVersion
		switch {
		case kp.AtLeast(kubeProxyHonoursProxy):
			d.honoursProxy, d.proxyReason = core.Yes, ruleKubeProxyHonoursProxy.Because("kube-proxy "+p.KubeProxyVersion+" skips Proxy-mode LB IPs.")
		case kp.AtLeast(kubeProxyGateAlpha):
			d.honoursProxy, d.proxyReason = core.No, ruleKubeProxyGateOff.Because("kube-proxy "+p.KubeProxyVersion+" has LoadBalancerIPMode alpha, off by default: it intercepts Proxy-mode LB IPs (unless the gate was turned on).")
		default:
			d.honoursProxy, d.proxyReason = core.No, ruleKubeProxyTooOld.Because("kube-proxy "+p.KubeProxyVersion+" predates ipMode: it intercepts every LB IP.")
		}
		return
	}
	api, err := version.ParseGeneric(p.KubernetesVersion)
	if err != nil {
		d.honoursProxy, d.proxyReason = core.Unknown, ruleKubeProxyVersionUnknown.Reason()
		return
	}
	skew := kubeProxySkew(api)
	oldest := api.SubtractMinor(skew)
	switch {
	case api.LessThan(kubeProxyHonoursProxy):
		d.have = "<= " + p.KubernetesVersion
		d.honoursProxy, d.proxyReason = core.No, ruleKubeProxySkewIgnores.Because(fmt.Sprintf(
			"The control plane is %s, so kube-proxy is at most v%d.%d: it intercepts Proxy-mode LB IPs.", p.KubernetesVersion, api.Major(), api.Minor()))
	case oldest.AtLeast(kubeProxyHonoursProxy):
		d.have = fmt.Sprintf(">= v%d.%d", oldest.Major(), oldest.Minor())
		d.honoursProxy, d.proxyReason = core.Yes, ruleKubeProxySkewHonours.Because(fmt.Sprintf(
			"The control plane is %s; kube-proxy may lag it by %d minor versions, to v%d.%d at the oldest, which still honours Proxy.", p.KubernetesVersion, skew, oldest.Major(), oldest.Minor()))
	default:
		d.honoursProxy, d.proxyReason = core.Unknown, ruleKubeProxySkewUnknown.Because(fmt.Sprintf(
			"The control plane is %s; kube-proxy may lag it by %d minor versions, to v%d.%d, and a kube-proxy older than v1.30 ignores Proxy and still intercepts. Declare kubeProxyVersion.", p.KubernetesVersion, skew, oldest.Major(), oldest.Minor()))
	}
}

func (d *dataplane) ciliumHonours(p *core.ClusterProfile) {
	v, err := version.ParseGeneric(p.Dataplane.CiliumVersion)
	if err != nil {
		d.honoursProxy, d.proxyReason = core.Unknown, ruleCiliumVersionUnknown.Reason()
		return
	}
	d.have = p.Dataplane.CiliumVersion
	is1180 := v.Major() == 1 && v.Minor() == 18 && v.Patch() == 0
	switch {
	case v.LessThan(ciliumHonoursProxy):
		d.honoursProxy, d.proxyReason = core.No, ruleCiliumTooOld.Because("Cilium "+p.Dataplane.CiliumVersion+" predates ipMode: it intercepts every LB IP.")
	case is1180 && len(v.Components()) < 3:
		// "1.18" could be the broken 1.18.0 or a fixed patch release.
		d.honoursProxy, d.proxyReason = core.Unknown, ruleCilium1180.Because("Cilium "+p.Dataplane.CiliumVersion+" without a patch version: 1.18.0 intercepts Proxy-mode LB IPs, 1.18.1 and later do not. Declare the patch version.")
	case is1180:
		d.honoursProxy, d.proxyReason = core.No, ruleCilium1180.Because("Cilium "+p.Dataplane.CiliumVersion+" intercepts Proxy-mode LB IPs (regression fixed in 1.18.1).")
	default:
		d.honoursProxy, d.proxyReason = core.Yes, ruleCiliumHonoursProxy.Because("Cilium "+p.Dataplane.CiliumVersion+" skips Proxy-mode LB IPs.")
	}
}

// entryKind classifies one status.loadBalancer.ingress entry.
type entryKind uint8

const (
	entryHostname  entryKind = iota // no ip: never intercepted
	entryVIP                        // ip, ipMode VIP
	entryDefaulted                  // ip, no ipMode: defaulted to VIP
	entryProxy                      // ip, ipMode Proxy
)

func kindOf(in *corev1.LoadBalancerIngress) entryKind {
	switch {
	case in.IP == "":
		return entryHostname
	case in.IPMode == nil:
		return entryDefaulted
	case *in.IPMode == corev1.LoadBalancerIPModeProxy:
		return entryProxy
	default:
		return entryVIP
	}
}

// statusFacts summarises the status entries (validated before it is called).
type statusFacts struct {
	n                                 int
	hostnames, vips, defaulted, proxy []string
}

func statusOf(ing []corev1.LoadBalancerIngress) statusFacts {
	s := statusFacts{n: len(ing)}
	for i := range ing {
		in := &ing[i]
		switch kindOf(in) {
		case entryHostname:
			s.hostnames = append(s.hostnames, in.Hostname)
		case entryVIP:
			s.vips = append(s.vips, in.IP)
		case entryDefaulted:
			s.defaulted = append(s.defaulted, in.IP)
		case entryProxy:
			s.proxy = append(s.proxy, in.IP)
		}
	}
	return s
}

func (s *statusFacts) ips() []string {
	out := make([]string, 0, len(s.vips)+len(s.defaulted)+len(s.proxy))
	out = append(out, s.vips...)
	out = append(out, s.defaulted...)
	return append(out, s.proxy...)
}

// intercept decides whether nodes intercept in-cluster traffic to the LB's addresses: Yes only
// when every address is intercepted, No as soon as one address reaches the LB (clients using
// it can loop), Unknown otherwise. It appends the reasons to e.
func intercept(s *statusFacts, d *dataplane, e *core.Exposure) core.Fact {
	if s.n == 0 {
		e.Reasons = append(e.Reasons, ruleNotProvisioned.Reason())
		return core.Unknown
	}
	// Each group of entries shares one verdict.
	type group struct {
		addrs []string
		fact  core.Fact
	}
	groups := [...]group{
		{s.hostnames, core.No},
		{s.vips, d.programsVIP},
		{s.defaulted, d.programsVIP},
		{s.proxy, not(d.honoursProxy)},
	}
	if len(s.hostnames) > 0 {
		e.Reasons = append(e.Reasons, ruleHostnameOnly.Because("The load balancer publishes "+strings.Join(s.hostnames, ", ")+" without an ip; no node holds the address it resolves to."))
	}
	if len(s.vips) > 0 {
		e.Reasons = append(e.Reasons, ruleIPModeVIP.Because(strings.Join(s.vips, ", ")+" has ipMode VIP."))
	}
	if len(s.defaulted) > 0 {
		e.Reasons = append(e.Reasons, ruleIPModeDefaulted.Because(strings.Join(s.defaulted, ", ")+" has no ipMode; the API server defaults it to VIP."))
	}
	if len(s.vips)+len(s.defaulted) > 0 {
		e.Reasons = append(e.Reasons, d.vipReason)
	}
	if len(s.proxy) > 0 {
		e.Reasons = append(e.Reasons, ruleIPModeProxy.Because(strings.Join(s.proxy, ", ")+" has ipMode Proxy."), d.proxyReason)
	}
	var yes, no, unknown bool
	for _, g := range groups {
		if len(g.addrs) == 0 {
			continue
		}
		switch g.fact {
		case core.Yes:
			yes = true
		case core.No:
			no = true
		default:
			unknown = true
		}
	}
	if yes && (no || unknown) {
		var b strings.Builder
		for _, f := range [...]struct {
			fact core.Fact
			what string
		}{{core.Yes, "Intercepted: "}, {core.No, "Reaching the load balancer: "}, {core.Unknown, "Not known: "}} {
			first := true
			for _, g := range groups {
				if len(g.addrs) == 0 || g.fact != f.fact {
					continue
				}
				if first {
					b.WriteString(f.what)
				} else {
					b.WriteString(", ")
				}
				first = false
				b.WriteString(strings.Join(g.addrs, ", "))
			}
			if !first {
				b.WriteString(". ")
			}
		}
		b.WriteString("Clients that use the addresses reaching the load balancer can loop.")
		e.Reasons = append(e.Reasons, ruleMixedEntries.Because(b.String()))
	}
	switch {
	case no:
		return core.No
	case unknown:
		return core.Unknown
	default:
		return core.Yes
	}
}

func not(f core.Fact) core.Fact {
	switch f {
	case core.Yes:
		return core.No
	case core.No:
		return core.Yes
	}
	return core.Unknown
}
