package kubernetes

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// cloudFix is one documented remedy a user can make on their cloud: the offer Decide weighs,
// whose Changes (an annotation the cloud's controller reads, or a step for the user) are what
// the drivers plan for it.
type cloudFix struct {
	offer core.Offer
}

// Offer IDs of the standard fixes, after the unit's name ("hetzner/hostname").
const (
	fixHostname     = "hostname"
	fixIPModeAnn    = "ipmode-annotation"
	fixUpgradeCCM   = "upgrade-controller"
	offerIntercept  = "k8s/intercept-vip"
	offerSeparation = "k8s/node-separation"
	offerDNS        = "k8s/dns-steering"
	offerThroughLB  = "k8s/through-lb"
)

// annotate returns the cluster change that sets one annotation on the Service, or false when
// it already holds that value.
func (v *cloudView) annotate(key, value string, why core.Reason) (core.Change, bool) {
	cur, set := v.svc.Annotations[key]
	if set && cur == value {
		return core.Change{}, false
	}
	k, _ := core.KeyOf(v.svc)
	return core.Change{
		By: core.WriterCluster, Object: &k,
		Field: "metadata.annotations[\"" + key + "\"]", From: cur, To: value,
		Edits:    []core.Edit{{Path: []core.PathElem{dialect.F("metadata"), dialect.F("annotations"), dialect.F(key)}, Value: value}},
		Strategy: core.StrategyApply,
		Reason:   why,
	}, true
}

// annotationFix is an offer carried out by setting annotations (key, value pairs, in order);
// false when every one already holds.
func (v *cloudView) annotationFix(o core.Offer, kv ...string) (cloudFix, bool) {
	for i := 0; i+1 < len(kv); i += 2 {
		if ch, ok := v.annotate(kv[i], kv[i+1], o.Reason); ok {
			o.Changes = append(o.Changes, ch)
		}
	}
	return cloudFix{offer: o}, len(o.Changes) > 0
}

// userFix is an offer the user carries out by hand (an upgrade, a name only they know): its one
// change is theirs.
func (v *cloudView) userFix(o core.Offer) cloudFix {
	o.Changes = []core.Change{{By: core.WriterUser, Resource: v.e.Object.String(), Field: string(o.Remedy), To: o.Action, Reason: o.Reason}}
	return cloudFix{offer: o}
}

// standardFixes are the fixes a unit's facts allow: its hostname annotation, its ipMode
// annotation, and the upgrade of a controller that publishes ipMode Proxy by itself. They are
// for an exposure whose nodes intercept an address the backends need the load balancer for.
func standardFixes(v *cloudView) []cloudFix {
	var out []cloudFix
	// The hostname first: it needs no dataplane that honours ipMode Proxy, so a tie goes to it.
	if f, ok := hostnameFix(v); ok {
		out = append(out, f)
	}
	if f, ok := ipModeAnnotationFix(v); ok {
		out = append(out, f)
	}
	if f, ok := upgradeFix(v); ok {
		out = append(out, f)
	}
	return out
}

// hostnameFix sets the cloud's hostname annotation, so the controller publishes a hostname,
// which no node intercepts. A literal switch the user already set otherwise ("false") is their
// choice: not offered.
func hostnameFix(v *cloudView) (cloudFix, bool) {
	f, svc := v.f, v.svc
	h := f.hostnameAnnotation
	if h == "" || v.e.Intercept != core.Yes || !v.needsLB() || declined(svc, h, f.hostnameValue, f.hostnameOn) {
		return cloudFix{}, false
	}
	if have, set := svc.Annotations[h]; set && f.hostnameOn != nil && f.hostnameOn(have) {
		// The controller reads it as on already: the status predates its reconcile.
		return cloudFix{}, false
	}
	value := f.hostnameValue
	if value == "" {
		value = firstName(svc.Annotations[annExternalDNS])
	}
	action := "set metadata.annotations[\"" + h + "\"]: "
	if value != "" {
		action += quote(value)
	} else {
		action += "a DNS name that resolves to the load balancer"
	}
	action += " (the cloud-controller-manager then publishes a hostname, which no node intercepts)"
	o := dialect.ThroughLBOffer(v.e, action)
	o.ID = f.name + "/" + fixHostname
	o.Reason = ruleOfferHostname.Because(f.name + ": " + h + " (" + f.source + ")")
	if value == "" {
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnknown, Reason: ruleHostnameNeedsName.Reason()})
		return v.userFix(o), true
	}
	return v.annotationFix(o, h, value)
}

// ipModeAnnotationFix sets the annotation the controller reads for the ipMode to its Proxy value.
func ipModeAnnotationFix(v *cloudView) (cloudFix, bool) {
	m := v.f.ipMode
	if m.annotation == "" || !v.interceptedNeedsLB() {
		return cloudFix{}, false
	}
	have := v.svc.Annotations[m.annotation]
	if have == m.proxyValue || m.foldCase && strings.EqualFold(have, m.proxyValue) {
		return cloudFix{}, false
	}
	o := throughLBOffer(v.e, &v.st, v.dp)
	o.ID = v.f.name + "/" + fixIPModeAnn
	ccm := "the " + v.f.name + " cloud-controller-manager"
	if m.since != "" {
		ccm += " (" + m.since + " or later)"
	}
	o.Action = "set metadata.annotations[\"" + m.annotation + "\"]: " + quote(m.proxyValue) + " (" + ccm + " then publishes ipMode Proxy)"
	o.Reason = ruleOfferIPModeAnnotation.Because(v.f.name + ": the cloud-controller-manager publishes the ipMode " + m.annotation + " names (" + m.source + ")")
	if m.offerRule.Code != "" {
		o.Reason = m.offerRule.Reason()
	}
	return v.annotationFix(o, m.annotation, m.proxyValue)
}

// upgradeFix: a controller that publishes Proxy by itself with the PROXY protocol, yet this
// status has VIP: it is older than the release that began to (or was told otherwise).
func upgradeFix(v *cloudView) (cloudFix, bool) {
	m, rd, st := v.f.ipMode, &v.rd, &v.st
	if !rd.ccmProxy || v.ownsStatus || !v.interceptedNeedsLB() || len(st.vips)+len(st.defaulted) == 0 ||
		m.annotation != "" && v.svc.Annotations[m.annotation] != "" {
		return cloudFix{}, false
	}
	rel := v.release()
	have := " or later"
	switch rel.atLeast(rd.ccmSince) {
	case core.Yes:
		// The release publishes Proxy already: the status follows on its next reconcile.
		v.e.Notes = append(v.e.Notes, ruleCCMLagging.Because(v.f.name+": the cloud-controller-manager is "+rel.raw+" ("+rel.from+"), which publishes ipMode Proxy by itself while the PROXY protocol is on (since "+rd.ccmSince+"); this status with VIP is from before it reconciled the Service"))
		return cloudFix{}, false
	case core.No:
		have += " (it is " + rel.raw + ", from " + rel.from + ")"
	default:
		have += " (its release is not known here: the profile's ccmVersion or its Pod's image would say)"
	}
	o := throughLBOffer(v.e, st, v.dp)
	o.ID = v.f.name + "/" + fixUpgradeCCM
	o.Action = "upgrade the " + v.f.name + " cloud-controller-manager to " + rd.ccmSince + have +
		"; it publishes ipMode Proxy by itself while the PROXY protocol is on, and this status has VIP for " +
		strings.Join(append(append([]string(nil), st.vips...), st.defaulted...), ", ")
	src := m.source
	if rd.ccmSource != "" {
		src += "; " + rd.ccmSource
	}
	o.Reason = ruleOfferCCMUpgrade.Because(v.f.name + ": the cloud-controller-manager publishes ipMode Proxy by itself while the PROXY protocol is on, since " +
		rd.ccmSince + "; an older one publishes VIP (" + src + ")")
	return v.userFix(o), true
}

// interceptedNeedsLB: the nodes intercept an IP the backends need the load balancer for.
func (v *cloudView) interceptedNeedsLB() bool {
	return v.e.Intercept == core.Yes && v.needsLB() && len(v.st.ips()) > 0
}

// declined reports a switch annotation (want is its "on" value, on how the controller reads
// it when not nil) that the Service sets to something the controller does not read as on.
func declined(svc *corev1.Service, key, want string, on func(string) bool) bool {
	have, set := svc.Annotations[key]
	if want == "" || !set {
		return false
	}
	if on != nil {
		return !on(have)
	}
	return have != want
}

// ccmIPModeLimits marks the generic "publish ipMode Proxy" offer unsupported on a cloud whose
// controller's source was read and does not publish it for this Service: there only a fork
// of the controller could, and the user runs the cloud's. The fixes the controller does read
// are offered by the unit.
func ccmIPModeLimits(o *core.Offer, v *cloudView) {
	f := v.f
	m := f.ipMode
	if !m.read {
		return
	}
	if f.noBox {
		// No box to go through: the announcing node's service proxy is the load balancer, and
		// kube-proxy programs no Proxy-mode address (KEP-1860), so Proxy would strand even the
		// traffic from outside on the node that answers the address.
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnsupported,
			Reason: ruleCCMNoProxyIPMode.Because(f.name + ": the controller publishes the address as an IP, never a hostname or ipMode Proxy, and there is no load balancer in front of the nodes to go through: the nodes announce the address and their service proxy answers it [" + m.source + "]")})
		return
	}
	var what string
	switch {
	case m.annotation != "":
		what = "publishes ipMode from " + m.annotation + " (offered on its own)"
	case v.rd.ccmProxy:
		what = "publishes ipMode Proxy by itself while the PROXY protocol is on, since " + v.rd.ccmSince + " (offered on its own as an upgrade)"
	case m.withProxyProtocol:
		what = "publishes ipMode Proxy only while the PROXY protocol is on, which this Service does not turn on"
	default:
		what = "never publishes ipMode Proxy; only a fork of it could (loopguard's adapters/cloudprovider)"
	}
	o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnsupported,
		Reason: ruleCCMNoProxyIPMode.Because(f.name + ": the cloud-controller-manager " + what + " [" + m.source + "]")})
}

// firstName is the first of external-dns's comma-separated hostnames.
func firstName(v string) string {
	n, _, _ := strings.Cut(v, ",")
	return strings.TrimSpace(n)
}

// chosenOffer is the offer the decision names (Decision.Offer), when it carries its changes.
func chosenOffer(res *core.Result) *core.Offer {
	id := res.Decision.Offer
	if id == "" {
		return nil
	}
	for i := range res.Offers {
		if o := &res.Offers[i]; o.ID == id && len(o.Changes) > 0 {
			return o
		}
	}
	return nil
}

// CloudFixDriver plans only the clouds' own fixes (the units'): annotations the user's cloud
// controller reads, written through the cluster writer, and steps for the user. Every other
// decision is the cloud-controller-manager's to publish (ipMode) and answers
// core.ErrUnsupported, so a host without the status in hand (the CLI) plans what it can write
// and says so for the rest.
type CloudFixDriver struct{}

var _ core.Driver = (*CloudFixDriver)(nil)

// NewCloudFixProvider returns the plain dialect with the CloudFixDriver; opts may be nil.
func NewCloudFixProvider(opts *Options) core.Provider {
	return core.NewProvider(NewDialect(opts), &CloudFixDriver{})
}

// Plan plans the cloud fix the decision names, or answers core.ErrUnsupported.
func (*CloudFixDriver) Plan(_ context.Context, req *core.PlanRequest) (*core.Plan, error) {
	if req == nil || req.Result == nil || req.Object == nil {
		return nil, fmt.Errorf("kubernetes: %w: a plan request needs the object and its evaluation", core.ErrInvalid)
	}
	p := &core.Plan{Object: req.Result.Exposure.Object, Decision: req.Result.Decision}
	if p.Decision.Remedy == core.RemedyNone || p.Decision.Remedy == "" {
		return p, nil
	}
	if o := chosenOffer(req.Result); o != nil {
		p.Changes = append(p.Changes, o.Changes...)
		return p, nil
	}
	return nil, &core.KindError{Kind: core.ErrUnsupported, Object: p.Object,
		Msg: "only the cloud's own annotation fixes are written here; " + string(p.Decision.Remedy) + " is the cloud-controller-manager's to publish (status.loadBalancer.ingress[].ipMode) or the user's; the decision's action says who can"}
}

// ApplyCloud reports core.ErrUnsupported: the fixes are annotations the cloud's controller reads.
func (*CloudFixDriver) ApplyCloud(context.Context, *core.Change) (core.ApplyResult, error) {
	return core.ApplyResult{}, &core.KindError{Kind: core.ErrUnsupported, Msg: "the plain Kubernetes driver makes no cloud API calls"}
}
