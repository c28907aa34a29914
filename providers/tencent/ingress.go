package tencent

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
	"github.com/loopguard/loopguard/internal/ingress"
)

// IngressClass returns the Ingress's class and where it was read ("" when it has none):
// the kubernetes.io/ingress.class annotation wins over spec.ingressClassName, as TKE's
// controller reads the annotation (457/56112).
func IngressClass(ing *networkingv1.Ingress) (class, from string) {
	if v := ing.Annotations[AnnotationIngressClass]; v != "" {
		return v, "metadata.annotations[" + AnnotationIngressClass + "]"
	}
	if ing.Spec.IngressClassName != nil && *ing.Spec.IngressClassName != "" {
		return *ing.Spec.IngressClassName, "spec.ingressClassName"
	}
	return "", ""
}

// IngressListeners returns the CLB listeners of a TKE Ingress: HTTP without TLS, HTTPS with
// TLS, both with kubernetes.io/ingress.rule-mix: "true" (457/45693), on ports 80 and 443
// (UNCONFIRMED, see unconfirmed.go). custom is set when ingress.cloud.tencent.com/listen-ports
// changes the ports, which loopguard does not read.
func IngressListeners(ing *networkingv1.Ingress) (listeners []ListenerKey, custom bool) {
	_, custom = ing.Annotations[AnnotationIngressListenPorts]
	http := ListenerKey{Protocol: "HTTP", Port: ingressHTTPPort}
	https := ListenerKey{Protocol: "HTTPS", Port: ingressHTTPSPort}
	switch {
	case ing.Annotations[AnnotationIngressRuleMix] == "true":
		return []ListenerKey{http, https}, custom
	case len(ing.Spec.TLS) > 0:
		return []ListenerKey{https}, custom
	}
	return []ListenerKey{http}, custom
}

func (d *Dialect) translateIngress(ing *networkingv1.Ingress, c *core.Cluster) (*core.Result, error) {
	ref := ingressRef(ing)
	if class, from := IngressClass(ing); class != "" && class != IngressClassQCloud {
		return nil, &core.KindError{Kind: core.ErrNotExposed, Object: ref, Msg: fmt.Sprintf(
			"%s is %q, not %s: %s (%s; %s)", from, class, IngressClassQCloud, ruleIngressClass.Summary, ruleIngressClass.Code, ruleIngressClass.Source)}
	}
	ann := ing.Annotations
	var errs field.ErrorList
	direct, ferr := dialect.BoolAnnotation(ann, AnnotationIngressDirectAccess)
	errs = appendErr(errs, ferr)
	_, ferr = dialect.BoolAnnotation(ann, AnnotationIngressRuleMix)
	errs = appendErr(errs, ferr)
	cfgName, cfgAuto, cerrs := configRef(ann, AnnotationIngressServiceConfig, AnnotationIngressServiceConfigAuto, ing.Name, AutoIngressConfigSuffix)
	errs = append(errs, cerrs...)
	errs = appendErr(errs, nonEmpty(ann, AnnotationIngressSubnet, "a subnet (subnet-xxxxxxxx)"))
	errs = appendErr(errs, nonEmpty(ann, AnnotationIngressExistLB, "a CLB (lb-xxxxxxxx)"))
	skip, ferr := readMode(ann, AnnotationIngressMode)
	errs = appendErr(errs, ferr)

	e, ov, err := dialect.IngressBase(Name, ing, c, d.behindCLB(c, nil))
	if err != nil && !errors.Is(err, core.ErrInvalid) {
		return nil, err
	}
	if err := invalid(ref, err, errs); err != nil {
		return nil, err
	}
	ctrl := d.ingressController(c)
	if skip {
		if err := d.skipped(&e, ref, AnnotationIngressMode, ctrl); err != nil {
			return nil, err
		}
	}

	d.setScope(&e, ann, AnnotationIngressSubnet, AnnotationIngressExistLB)
	if direct == core.Yes {
		e.Binding = core.DirectToPod
		e.Reasons = append(e.Reasons, ruleDirectAccess.Reason())
	}
	d.notePlacement(&e, c, nil, direct == core.Yes)
	if _, ok := ann[AnnotationPreventLoopback]; ok {
		e.Notes = append(e.Notes, rulePreventLoopbackNoEffect.Because(AnnotationPreventLoopback+" is set on an Ingress; intra-cluster forwarding does not apply to layer 7"))
	}
	d.setIntercept(&e, c, interception{layer: core.Layer7})
	if ctrl.note != "" {
		e.Notes = append(e.Notes, ruleControllerVersionSource.Because(ctrl.note+"; the ingress controller version is taken as unknown"))
	}

	listeners, custom := IngressListeners(ing)
	cfg, err := d.serviceConfig(c, ref, ing.Namespace, cfgName, AnnotationIngressServiceConfig, cfgAuto)
	if err != nil {
		return nil, err
	}
	setL7SNAT(&e, cfg, cfgName, ing.Namespace, listeners, custom, ctrl)

	offers := []core.Offer{
		offerL7Intercept(),
		offerL7SNAT(c, ing, cfgName, listeners, ctrl),
		offerIngressSeparation(&e, c, ing),
		offerIngressDNS(&e, c, ing),
	}
	ov.Apply(&e)
	return &core.Result{Exposure: e, Offers: offers}, nil
}

// l7Field is the TkeServiceConfig field that turns layer-7 SNAT on for a controller version.
func l7Field(ctrl controllerVersion) string {
	switch ctrl.atLeast(l7SNATFieldVersion) {
	case core.Yes:
		return "snatEnable: true"
	case core.No:
		return "keepaliveEnable: 1"
	}
	return "snatEnable: true (ingress controller >= v2.9.0) or keepaliveEnable: 1 (older)"
}

// setL7SNAT: seeds solution 3. With controller >= v2.9.0 a listener has SNAT when its entry
// sets snatEnable: true; before v2.9.0 when it sets keepaliveEnable: 1. With the version
// unknown, only an entry that sets both is sure either way.
func setL7SNAT(e *core.Exposure, cfg *ServiceConfig, name, ns string, listeners []ListenerKey, custom bool, ctrl controllerVersion) {
	if name == "" {
		e.LBSourceNAT = core.No
		e.Reasons = append(e.Reasons, ruleNoServiceConfig.Reason())
		return
	}
	if cfg == nil {
		e.LBSourceNAT = core.Unknown
		e.Reasons = append(e.Reasons, ruleServiceConfigMissing.Because("TkeServiceConfig "+ns+"/"+name+" is referenced but not in the input; include it, or declare loopguard.io/lb-source-nat"))
		return
	}
	what := "TkeServiceConfig " + ns + "/" + name
	if custom {
		any := false
		for i := range cfg.L7Listeners {
			any = any || cfg.L7Listeners[i].SNAT() || cfg.L7Listeners[i].Keepalive()
		}
		if !any {
			e.LBSourceNAT = core.No
			e.Reasons = append(e.Reasons, ruleL7SNATOff.Because(what+" turns layer-7 SNAT on for no listener"))
			return
		}
		e.LBSourceNAT = core.Unknown
		e.Reasons = append(e.Reasons, ruleListenPorts.Reason())
		return
	}
	var missing, ambiguous, quoted []string
	var notes []string
	atLeast := ctrl.atLeast(l7SNATFieldVersion)
	for _, k := range listeners {
		l := cfg.L7(k)
		var snat, ka bool
		if l != nil {
			snat, ka = l.SNAT(), l.Keepalive()
			if l.SnatEnableQuoted && snat {
				quoted = append(quoted, L7ListenersPath.Index(l.Index).Child("snatEnable").String())
			}
		}
		switch atLeast {
		case core.Yes:
			switch {
			case snat:
			case ka:
				ambiguous = append(ambiguous, k.String())
				notes = append(notes, fmt.Sprintf("%s sets only keepaliveEnable: 1 on %s; from ingress controller v2.9.0 (this one is %s) the guide turns SNAT on with snatEnable: true", what, k, ctrl.raw))
			default:
				missing = append(missing, k.String())
			}
		case core.No:
			switch {
			case ka:
			case snat:
				missing = append(missing, k.String())
				notes = append(notes, fmt.Sprintf("%s sets snatEnable on %s, but ingress controller %s (before v2.9.0) turns layer-7 SNAT on with keepaliveEnable: 1", what, k, ctrl.raw))
			default:
				missing = append(missing, k.String())
			}
		default:
			switch {
			case snat && ka:
			case snat || ka:
				ambiguous = append(ambiguous, k.String())
			default:
				missing = append(missing, k.String())
			}
		}
	}
	for _, n := range notes {
		e.Notes = append(e.Notes, ruleL7SNATVersion.Because(n))
	}
	if len(quoted) > 0 {
		e.Notes = append(e.Notes, ruleSNATQuoted.Because(what+" writes "+strings.Join(quoted, ", ")+" as the string \"true\"; write the boolean true"))
	}
	switch {
	case len(missing) > 0:
		e.LBSourceNAT = core.No
		e.Reasons = append(e.Reasons, ruleL7SNATOff.Because(what+" does not turn layer-7 SNAT ("+l7Field(ctrl)+") on for "+strings.Join(missing, ", ")))
	case len(ambiguous) > 0:
		e.LBSourceNAT = core.Unknown
		msg := what + " sets only one of snatEnable / keepaliveEnable on " + strings.Join(ambiguous, ", ") + ", and the ingress controller version is not known; declare ingressControllerVersion"
		if atLeast == core.Yes {
			msg = what + " sets keepaliveEnable: 1 but not snatEnable: true on " + strings.Join(ambiguous, ", ") + "; whether keepalive alone still turns SNAT on from controller v2.9.0 is not documented"
		}
		e.Reasons = append(e.Reasons, ruleL7SNATVersion.Because(msg))
	default:
		e.LBSourceNAT = core.Yes
		e.Reasons = append(e.Reasons, ruleL7SNATOn.Because(what+" turns layer-7 SNAT on for every listener ("+keysText(listeners)+")"))
	}
}

// offerL7Intercept is offered only to be rejected with its reason: users ask why the layer-4
// fix does not apply (seeds §4: "the intra-cluster forwarding solution is not applicable to
// Layer 7 scenarios").
func offerL7Intercept() core.Offer {
	return core.Offer{
		Remedy: core.InterceptVIP,
		Path:   core.PathVIP,
		Action: "none: " + AnnotationPreventLoopback + " applies to layer-4 Services only",
		Costs:  core.Costs{LosesLBFeatures: true, ClientIP: core.ClientIPKept},
		Unmet:  []core.Precondition{{Kind: core.PreconditionUnsupported, Reason: ruleL7NoForwarding.Reason()}},
		Reason: ruleL7NoForwarding.Reason(),
	}
}

// offerL7SNAT is solution 3.
func offerL7SNAT(c *core.Cluster, ing *networkingv1.Ingress, cfgName string, listeners []ListenerKey, ctrl controllerVersion) core.Offer {
	target := ing.Namespace + "/" + cfgName
	prefix := "in TkeServiceConfig " + target + " set"
	if cfgName == "" {
		prefix = "annotate " + AnnotationIngressServiceConfigAuto + ": \"true\" (or reference your own TkeServiceConfig with " +
			AnnotationIngressServiceConfig + ") and in " + ing.Namespace + "/" + ing.Name + AutoIngressConfigSuffix + " set"
	}
	action := prefix + " spec.loadBalancer.l7Listeners[]." + l7Field(ctrl) + " for " + keysText(listeners) +
		"; read the client address from X-Forwarded-For; allow 100.127.0.0/16 in the nodes' security groups (or turn on CLB pass-to-target)"
	o := core.Offer{
		Remedy: core.LBSourceNAT,
		Path:   core.PathProxy,
		Action: action,
		Costs:  core.Costs{ClientIP: core.ClientIPForwardedFor, Tickets: []core.Capability{CapL7SNAT, CapKeepalive}},
		Reason: ruleOfferL7SNAT.Reason(),
	}
	o.Unmet = allowlistUnmet(&c.Profile, CapL7SNAT, CapKeepalive)
	if !ctrl.known() {
		msg := ruleIngressControllerUnknown.Summary
		if ctrl.note != "" {
			msg += " (" + ctrl.note + ")"
		}
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionVersion, Reason: ruleIngressControllerUnknown.Because(msg)})
	}
	return o
}

// offerIngressSeparation is node separation for an Ingress: every backend Service on
// externalTrafficPolicy Local (or the Ingress on direct-access), and clients kept off the
// backends' nodes (tke-guide: anti-affinity plus Local avoids the loop for private Ingresses).
func offerIngressSeparation(e *core.Exposure, c *core.Cluster, ing *networkingv1.Ingress) core.Offer {
	backends := c.IngressBackends(ing)
	o := core.Offer{
		Remedy: core.NodeSeparation,
		Path:   core.PathProxy,
		Costs:  core.Costs{ClientIP: core.ClientIPKept, SchedulingChange: true},
		Reason: dialect.Rule(dialect.CodeOfferNodeSeparation).Reason(),
	}
	var b strings.Builder
	b.WriteString("add a required podAntiAffinity (topologyKey kubernetes.io/hostname) to the client Pods against ")
	var cluster []string
	for i, s := range backends {
		if i > 0 {
			b.WriteString(" and ")
		}
		b.WriteString(dialect.PodsLabelled(s.Spec.Selector) + " (Service " + s.Name + ")")
		if s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
			cluster = append(cluster, s.Name)
		}
		if len(s.Spec.Selector) == 0 {
			o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnsupported,
				Reason: dialect.Rule(dialect.CodeOfferNodeSeparation).Because("backend Service " + s.Name + " has no selector labels to keep clients apart from")})
		}
	}
	if len(backends) == 0 {
		b.WriteString("the backend Pods")
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnknown, Reason: ruleIngressBackendsUnknown.Because(
			"backend Services " + strings.Join(ingress.BackendNames(ing), ", ") + " are not in the input")})
	}
	if e.Binding != core.DirectToPod && len(cluster) > 0 {
		b.WriteString("; set spec.externalTrafficPolicy: Local on Service " + strings.Join(cluster, ", ") +
			" (or annotate the Ingress " + AnnotationIngressDirectAccess + ": \"true\" on a VPC-CNI cluster): " + ruleIngressSeparationPolicy.Summary)
	}
	o.Action = b.String()
	if e.Placement.ClientNodes == nil {
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnknown, Reason: dialect.Rule(dialect.CodeClientsUndeclared).Reason()})
	}
	return o
}

// offerIngressDNS is DNS steering with the Ingress's hosts for the CoreDNS rewrite snippet
// (tke-guide); a host whose paths go to several Services cannot be rewritten to one.
func offerIngressDNS(e *core.Exposure, c *core.Cluster, ing *networkingv1.Ingress) core.Offer {
	hostSvcs := map[string]map[string]bool{}
	add := func(host string, b *networkingv1.IngressBackend) {
		if b == nil || b.Service == nil {
			return
		}
		if hostSvcs[host] == nil {
			hostSvcs[host] = map[string]bool{}
		}
		hostSvcs[host][b.Service.Name] = true
	}
	for i := range ing.Spec.Rules {
		r := &ing.Spec.Rules[i]
		if r.HTTP == nil {
			add(r.Host, ing.Spec.DefaultBackend)
			continue
		}
		for j := range r.HTTP.Paths {
			add(r.Host, &r.HTTP.Paths[j].Backend)
		}
	}
	if len(ing.Spec.Rules) == 0 {
		add("", ing.Spec.DefaultBackend)
	}
	svcHosts := map[string][]string{}
	var split []string
	for _, host := range sortedHostKeys(hostSvcs) {
		svcs := sortedKeys(hostSvcs[host])
		if len(svcs) > 1 {
			name := host
			if name == "" {
				name = "(no host)"
			}
			split = append(split, name+" → "+strings.Join(svcs, ", "))
		}
		for _, s := range svcs {
			if host != "" {
				svcHosts[s] = append(svcHosts[s], host)
			} else if _, ok := svcHosts[s]; !ok {
				svcHosts[s] = nil
			}
		}
	}
	names := make([]string, 0, len(svcHosts))
	for s := range svcHosts {
		names = append(names, s)
	}
	sort.Strings(names)
	if len(names) == 0 {
		o := dialect.DNSSteeringOffer(e, ing.Namespace, ing.Name, nil)
		o.Action = "point in-cluster clients at the backend Service instead of the LB address"
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnsupported, Reason: dialect.Rule(dialect.CodeOfferDNSSteering).Because("the Ingress routes to no Service")})
		return o
	}
	o := dialect.DNSSteeringOffer(e, ing.Namespace, names[0], svcHosts[names[0]])
	for _, s := range names[1:] {
		o.Action += "\n" + dialect.DNSSteeringOffer(e, ing.Namespace, s, svcHosts[s]).Action
	}
	if len(split) > 0 {
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnsupported,
			Reason: ruleDNSSeveralBackends.Because("hosts route to several Services: " + strings.Join(split, "; ") + "; rewrite them to an in-cluster ingress controller instead")})
	}
	return o
}

func sortedHostKeys(m map[string]map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
