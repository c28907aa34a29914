package tencent

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/loopguard/loopguard/core"
)

// NodeKind is the kind of TKE node, which decides whether the node intercepts the CLB VIP
// (seeds 000/001 §2).
type NodeKind string

const (
	// RegularNode is a CVM node.
	RegularNode NodeKind = "regular"
	// NativeNode is a TKE native node; it behaves like a regular node (seeds §2).
	NativeNode NodeKind = "native"
	// SuperNode is a virtual (eklet) node; it intercepts the CLB VIP by default (seeds §2, FAQ Q1).
	SuperNode NodeKind = "super"
)

// nodeKind classifies n with the user's function or the default labels.
func (d *Dialect) nodeKind(n *corev1.Node) NodeKind {
	if d.opts.NodeKind != nil {
		if k := d.opts.NodeKind(n); k != "" {
			return k
		}
	}
	return defaultNodeKind(n)
}

// nodeKinds is the kind of every known node of one Cluster, computed once per Cluster and
// dialect (core.Cluster.Memo) instead of once per object.
type nodeKinds struct {
	kind           map[string]NodeKind
	supers, others int
}

type nodeKindsKey struct{ d *Dialect }

func (d *Dialect) kinds(c *core.Cluster) *nodeKinds {
	return c.Memo(nodeKindsKey{d}, func() any {
		k := &nodeKinds{kind: map[string]NodeKind{}}
		for _, n := range c.Nodes() {
			kind := d.nodeKind(n)
			k.kind[n.Name] = kind
			if kind == SuperNode {
				k.supers++
			} else {
				k.others++
			}
		}
		return k
	}).(*nodeKinds)
}

// behindCLB is the NodeFilter for the nodes a CLB can send a NodePort connection to: not
// super nodes (they are not NodePort targets), not nodes excluded from load balancers, and,
// when the Service sets a backends label, only matching nodes.
func (d *Dialect) behindCLB(c *core.Cluster, backends labels.Selector) core.NodeFilter {
	var kinds *nodeKinds
	if c != nil {
		kinds = d.kinds(c)
	}
	key := fmt.Sprintf("tencent/%p/behind-clb", d)
	if backends != nil {
		key += "/" + backends.String()
	}
	return core.NodeFilter{Key: key, Match: func(n *corev1.Node) bool {
		if _, excluded := n.Labels[corev1.LabelNodeExcludeBalancers]; excluded {
			return false
		}
		kind, ok := NodeKind(""), false
		if kinds != nil {
			kind, ok = kinds.kind[n.Name]
		}
		if !ok {
			kind = d.nodeKind(n)
		}
		if kind == SuperNode {
			return false
		}
		return backends == nil || backends.Matches(labels.Set(n.Labels))
	}}
}

// clientsOnRegularNodes says whether any client that matters can run on a regular or native
// node (the kinds that may not intercept), and appends the reason that explains which nodes
// were looked at. The regular/native nodes decide the verdict whenever a client can run on one.
func (d *Dialect) clientsOnRegularNodes(e *core.Exposure, c *core.Cluster) bool {
	nodes := c.Nodes()
	if len(nodes) == 0 {
		e.Reasons = append(e.Reasons, ruleNodesAssumed.Reason())
		return noNodesKind != SuperNode
	}
	if len(e.Placement.ClientNodes) > 0 {
		var supers, others []string
		seen := map[string]bool{}
		for _, name := range e.Placement.ClientNodes {
			if seen[name] {
				continue
			}
			seen[name] = true
			// A client on a node the input does not describe is taken to be on a regular
			// node, the side that can loop.
			if d.kinds(c).kind[name] == SuperNode {
				supers = append(supers, name)
			} else {
				others = append(others, name)
			}
		}
		msg := "declared clients run on "
		switch {
		case len(others) == 0:
			msg += "super nodes only (" + strings.Join(supers, ", ") + ")"
		case len(supers) == 0:
			msg += "regular or native nodes (" + strings.Join(others, ", ") + ")"
		default:
			msg += fmt.Sprintf("super nodes (%s), which intercept the CLB VIP, and regular or native nodes (%s), which decide the verdict", strings.Join(supers, ", "), strings.Join(others, ", "))
		}
		e.Reasons = append(e.Reasons, ruleClientNodes.Because(msg))
		return len(others) > 0
	}
	k := d.kinds(c)
	nSuper, nOther := k.supers, k.others
	if nSuper > 0 && nOther > 0 {
		e.Reasons = append(e.Reasons, ruleMixedNodes.Because(fmt.Sprintf(
			"%d super node(s) intercept the CLB VIP, %d regular or native node(s) may not; no clients are declared, so the verdict is for clients on the regular and native nodes (declare clients to narrow it)", nSuper, nOther)))
	}
	return nOther > 0
}

// interception holds what decides whether nodes intercept the LB address for one object.
type interception struct {
	layer core.Layer
	// preventLoopback is the Service's annotation (Unknown when absent).
	preventLoopback core.Fact
	// ipMode is the Service status's ipMode ("" when none says).
	ipMode corev1.LoadBalancerIPMode
}

// setIntercept fills e.Intercept from the node kinds, the proxy mode, prevent-loopback and the
// kube-proxy revision, with a reason for each step. Whether kube-proxy masquerades intercepted
// traffic is the core's physics (ServiceBase); only for super nodes, which run no kube-proxy,
// does the dialect say it is unknown.
func (d *Dialect) setIntercept(e *core.Exposure, c *core.Cluster, in interception) {
	if !d.clientsOnRegularNodes(e, c) {
		// Seeds §2 (Service) and the English §1 row (Ingress): super nodes intercept. The
		// guide does not say which source address the backend then sees.
		e.Intercept = core.Yes
		e.InterceptMasquerades = core.Unknown
		e.Reasons = append(e.Reasons, ruleSuperNodes.Reason())
		if in.preventLoopback == core.Yes {
			e.Notes = append(e.Notes, rulePreventLoopbackNoEffect.Because("prevent-loopback is set, but super nodes intercept the CLB VIP anyway"))
		}
		return
	}
	if in.layer == core.Layer7 {
		e.Intercept = core.No
		e.Reasons = append(e.Reasons, ruleL7NotIntercepted.Reason())
		return
	}
	p := &c.Profile
	switch p.ProxyMode {
	case core.ProxyModeIPTables, core.ProxyModeNFTables:
		rule := ruleIPTables
		if p.ProxyMode == core.ProxyModeNFTables {
			rule = ruleNFTables
			if !nftablesInterceptsLikeIPTables {
				e.Intercept = core.Unknown
				e.Reasons = append(e.Reasons, rule.Reason())
				return
			}
		}
		if in.ipMode == corev1.LoadBalancerIPModeProxy {
			d.kubeProxyIPModeProxy(e, p.KubeProxyVersion)
		} else {
			e.Intercept = core.Yes
			e.Reasons = append(e.Reasons, rule.Reason())
		}
		if in.preventLoopback == core.Yes {
			e.Notes = append(e.Notes, rulePreventLoopbackNoEffect.Because(
				"prevent-loopback is set, but kube-proxy in "+string(p.ProxyMode)+" mode intercepts the CLB VIP anyway"))
		}
	case core.ProxyModeIPVS:
		if in.preventLoopback != core.Yes {
			e.Intercept = core.No
			e.Reasons = append(e.Reasons, ruleIPVSNoIntercept.Reason())
			return
		}
		support, min, hasMin := d.revisions.check(p.KubeProxyVersion)
		switch support {
		case TooOld:
			e.Intercept = core.No
			e.Reasons = append(e.Reasons, ruleIPVSNoIntercept.Reason(), rulePreventLoopbackTooOld.Because(fmt.Sprintf(
				"prevent-loopback is set, but kube-proxy %s is older than %s, the first revision of its minor that binds LB addresses to the IPVS interface; the annotation has no effect until kube-proxy is upgraded",
				p.KubeProxyVersion, min)))
		case Supported:
			e.Intercept = core.Yes
			e.Reasons = append(e.Reasons, rulePreventLoopback.Because(
				"prevent-loopback: \"true\" and kube-proxy "+p.KubeProxyVersion+" supports it: IPVS intercepts the CLB VIP"))
			e.Notes = append(e.Notes, ruleLongConnections.Reason())
		default:
			e.Intercept = core.Yes
			e.Reasons = append(e.Reasons, rulePreventLoopback.Reason())
			minText := ""
			if hasMin {
				minText = min.String()
			}
			e.Notes = append(e.Notes, rulePreventLoopbackUnverified.Because(d.unverifiedMessage(p.KubeProxyVersion, minText)), ruleLongConnections.Reason())
		}
	case core.ProxyModeEBPF:
		d.ebpfIntercept(e, p, in.ipMode)
	default:
		e.Intercept = core.Unknown
		e.Reasons = append(e.Reasons, ruleProxyModeUnknown.Reason())
	}
}

func (d *Dialect) unverifiedMessage(kubeProxy, min string) string {
	switch {
	case kubeProxy == "":
		return "prevent-loopback is taken to work, but kubeProxyVersion is not declared; it needs at least " + d.revisions.minimumsText() + " (for its minor); declare kubeProxyVersion in the profile"
	case min != "":
		return "prevent-loopback is taken to work, but kube-proxy " + kubeProxy + " carries no -tke.N revision to compare with " + min + "; declare the kube-proxy image tag as kubeProxyVersion"
	default:
		return "prevent-loopback is taken to work, but no minimum revision is known for kube-proxy " + kubeProxy + "; add its minor to Options.PreventLoopbackMinimums"
	}
}

// kubeProxyIPModeProxy: kube-proxy (iptables/nftables) skips LB addresses whose status ipMode is
// Proxy from v1.30 (gate LoadBalancerIPMode beta, on by default); v1.29 has it off by default;
// older versions ignore the field (docs/sources.md#kep-1860).
func (d *Dialect) kubeProxyIPModeProxy(e *core.Exposure, kubeProxy string) {
	v, err := version.ParseGeneric(kubeProxy)
	switch {
	case kubeProxy == "" || err != nil:
		e.Intercept = core.Unknown
		e.Reasons = append(e.Reasons, ruleIPMode.Because("status ipMode is Proxy; kube-proxy honours it from v1.30 (v1.29 behind a gate), and kubeProxyVersion is not declared"))
	case v.Major() == 1 && v.Minor() >= 30 || v.Major() > 1:
		e.Intercept = core.No
		e.Reasons = append(e.Reasons, ruleIPMode.Because("status ipMode is Proxy and kube-proxy "+kubeProxy+" honours it: the LB address is not intercepted"))
	case v.Major() == 1 && v.Minor() == 29:
		e.Intercept = core.Unknown
		e.Reasons = append(e.Reasons, ruleIPMode.Because("status ipMode is Proxy; kube-proxy v1.29 honours it only with the LoadBalancerIPMode gate on"))
	default:
		e.Intercept = core.Yes
		e.Reasons = append(e.Reasons, ruleIPMode.Because("status ipMode is Proxy, but kube-proxy "+kubeProxy+" predates the field and intercepts the LB address anyway"))
	}
}

// ebpfIntercept: the guide says nothing about eBPF dataplanes; the status ipMode decides when
// present (ebpfIPModeTrusted), with Cilium's KEP-1860 support (1.17+, broken in 1.18.0).
func (d *Dialect) ebpfIntercept(e *core.Exposure, p *core.ClusterProfile, mode corev1.LoadBalancerIPMode) {
	if mode == "" || !ebpfIPModeTrusted {
		e.Intercept = core.Unknown
		e.Reasons = append(e.Reasons, ruleEBPF.Reason())
		return
	}
	cilium := p.Dataplane.CiliumVersion
	v, err := version.ParseGeneric(cilium)
	known := cilium != "" && err == nil
	if mode == corev1.LoadBalancerIPModeVIP {
		e.Intercept = core.Yes
		e.Reasons = append(e.Reasons, ruleIPMode.Because("eBPF dataplane and status ipMode VIP: the LB address is intercepted"))
		return
	}
	switch {
	case known && v.Major() == 1 && v.Minor() < 17:
		e.Intercept = core.Yes
		e.Reasons = append(e.Reasons, ruleIPMode.Because("status ipMode is Proxy, but Cilium "+cilium+" predates KEP-1860 support (1.17) and intercepts anyway"))
	case known && v.Major() == 1 && v.Minor() == 18 && v.Patch() == 0:
		e.Intercept = core.Unknown
		e.Reasons = append(e.Reasons, ruleIPMode.Because("status ipMode is Proxy, but Cilium 1.18.0's ipMode support is broken (fixed in 1.18.1)"))
	default:
		e.Intercept = core.No
		e.Reasons = append(e.Reasons, ruleIPMode.Because("eBPF dataplane and status ipMode Proxy: the LB address is not intercepted"))
	}
}

// statusIPMode reads status.loadBalancer.ingress[].ipMode: Proxy if any entry says Proxy
// (some traffic then reaches the LB), else VIP if any says VIP, else "".
func statusIPMode(st *corev1.LoadBalancerStatus) corev1.LoadBalancerIPMode {
	var mode corev1.LoadBalancerIPMode
	for _, in := range st.Ingress {
		if in.IPMode == nil {
			continue
		}
		if *in.IPMode == corev1.LoadBalancerIPModeProxy {
			return corev1.LoadBalancerIPModeProxy
		}
		mode = *in.IPMode
	}
	return mode
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
