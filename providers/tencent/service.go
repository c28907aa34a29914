package tencent

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// ServiceListeners returns the CLB listeners of a LoadBalancer Service: one per port, keyed by
// the port's protocol and its Service port (TkeServiceConfig selects listeners by them).
func ServiceListeners(svc *corev1.Service) []ListenerKey {
	out := make([]ListenerKey, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		proto := strings.ToUpper(string(p.Protocol))
		if proto == "" {
			proto = "TCP"
		}
		out = append(out, ListenerKey{Protocol: proto, Port: p.Port})
	}
	return out
}

func (d *Dialect) translateService(svc *corev1.Service, c *core.Cluster) (*core.Result, error) {
	ref := serviceRef(svc)
	ann := svc.Annotations
	var errs field.ErrorList
	prevent, ferr := dialect.BoolAnnotation(ann, AnnotationPreventLoopback)
	errs = appendErr(errs, ferr)
	direct, ferr := dialect.BoolAnnotation(ann, AnnotationDirectAccess)
	errs = appendErr(errs, ferr)
	cfgName, cfgAuto, cerrs := configRef(ann, AnnotationServiceConfig, AnnotationServiceConfigAuto, svc.Name, AutoServiceConfigSuffix)
	errs = append(errs, cerrs...)
	errs = appendErr(errs, nonEmpty(ann, AnnotationInternalSubnet, "a subnet (subnet-xxxxxxxx)"))
	errs = appendErr(errs, nonEmpty(ann, AnnotationExistedLB, "a CLB (lb-xxxxxxxx)"))
	skip, ferr := readMode(ann, AnnotationMode)
	errs = appendErr(errs, ferr)
	backendsLabel, ferr := readBackendsLabel(ann)
	errs = appendErr(errs, ferr)
	tlsPorts, ferr := tlsAtCLB(svc)
	errs = appendErr(errs, ferr)

	e, ov, err := dialect.ServiceBase(Name, svc, c, d.behindCLB(c, backendsLabel))
	if err != nil && !errors.Is(err, core.ErrInvalid) {
		return nil, err // not a LoadBalancer Service
	}
	if err := invalid(ref, err, errs); err != nil {
		return nil, err
	}
	if cls := svc.Spec.LoadBalancerClass; cls != nil && loadBalancerClassIsAnotherController {
		return nil, &core.KindError{Kind: core.ErrNotExposed, Object: ref, Msg: fmt.Sprintf(
			"spec.loadBalancerClass is %q: %s (%s; %s)", *cls, ruleLoadBalancerClass.Summary, ruleLoadBalancerClass.Code, ruleLoadBalancerClass.Source)}
	}
	if skip {
		if err := d.skipped(&e, ref, AnnotationMode, d.serviceController(c)); err != nil {
			return nil, err
		}
	}

	d.setScope(&e, ann, AnnotationInternalSubnet, AnnotationExistedLB)
	if direct == core.Yes {
		e.Binding = core.DirectToPod
		e.Reasons = append(e.Reasons, ruleDirectAccess.Reason())
	}
	d.notePlacement(&e, c, backendsLabel, direct == core.Yes)
	ipMode := statusIPMode(&svc.Status.LoadBalancer)
	d.setIntercept(&e, c, interception{layer: core.Layer4, preventLoopback: prevent, ipMode: ipMode})

	listeners := ServiceListeners(svc)
	cfg, err := d.serviceConfig(c, ref, svc.Namespace, cfgName, AnnotationServiceConfig, cfgAuto)
	if err != nil {
		return nil, err
	}
	setL4SNAT(&e, cfg, cfgName, svc.Namespace, listeners)
	if len(tlsPorts) > 0 {
		e.Needs.TLS = core.Yes
		e.Reasons = append(e.Reasons, ruleSpecifyProtocolTLS.Because("specify-protocol ends TLS at the CLB on port "+strings.Join(tlsPorts, ", ")))
	} else if ports := tlsListenersIn(cfg, svc); len(ports) > 0 {
		e.Needs.TLS = core.Yes
		e.Reasons = append(e.Reasons, ruleSpecifyProtocolTLS.Because("TkeServiceConfig "+svc.Namespace+"/"+cfgName+" configures a TCP_SSL listener, which ends TLS at the CLB, on port "+strings.Join(ports, ", ")))
	}

	// prevent-loopback is what intercepts in IPVS mode: turning it off is how in-cluster
	// traffic goes back through the CLB, for backends that need it to.
	stopIntercept := e.Intercept == core.Yes && prevent == core.Yes && c.Profile.ProxyMode == core.ProxyModeIPVS && needsLB(&e, &ov)
	offers := []core.Offer{
		d.offerPreventLoopback(&e, c, prevent),
		offerL4SNAT(&e, c, svc, cfgName, cfgAuto, listeners, stopIntercept),
		dialect.NodeSeparationOffer(&e, svc.Spec.Selector),
		dialect.DNSSteeringOffer(&e, svc.Namespace, svc.Name, nil),
	}
	if stopIntercept {
		o := dialect.ThroughLBOffer(&e, "set metadata.annotations[\""+AnnotationPreventLoopback+"\"]: \"false\"")
		o.Reason = ruleOfferStopPreventLoopback.Reason()
		offers = append(offers, o)
	}
	ov.Apply(&e)
	return &core.Result{Exposure: e, Offers: offers}, nil
}

func appendErr(errs field.ErrorList, e *field.Error) field.ErrorList {
	if e != nil {
		return append(errs, e)
	}
	return errs
}

// skipped returns ErrNotExposed for an object the TKE controller skips, or nil (with a note)
// when the controller is known to be too old to honour mode: skip.
func (d *Dialect) skipped(e *core.Exposure, ref core.ObjectRef, key string, ctrl controllerVersion) error {
	if ctrl.atLeast(modeSkipVersion) == core.No {
		e.Notes = append(e.Notes, ruleModeSkipIgnored.Because(fmt.Sprintf("%s: skip is set, but the controller is %s (%s), older than %s, so it still manages the object",
			key, ctrl.raw, ctrl.source, modeSkipVersion)))
		return nil
	}
	return &core.KindError{Kind: core.ErrNotExposed, Object: ref,
		Msg: fmt.Sprintf("%s: skip: %s (%s; %s)", key, ruleModeSkip.Summary, ruleModeSkip.Code, ruleModeSkip.Source)}
}

// notePlacement explains which nodes count as behind the CLB.
func (d *Dialect) notePlacement(e *core.Exposure, c *core.Cluster, backendsLabel labels.Selector, direct bool) {
	if direct {
		return
	}
	if supers := d.kinds(c).supers; supers > 0 {
		e.Notes = append(e.Notes, ruleSuperNotBehindLB.Because(fmt.Sprintf("%d super node(s) are not counted among the %d node(s) behind the CLB", supers, e.Placement.NodesBehindLB)))
	}
	if backendsLabel != nil {
		e.Reasons = append(e.Reasons, ruleBackendsLabel.Because(fmt.Sprintf("the CLB binds only nodes matching %q: %d node(s)", backendsLabel.String(), e.Placement.NodesBehindLB)))
	}
}

// serviceConfig finds and parses the referenced TkeServiceConfig; nil when none is referenced
// or it is not in the input.
func (d *Dialect) serviceConfig(c *core.Cluster, ref core.ObjectRef, ns, name, key string, auto bool) (*ServiceConfig, error) {
	if name == "" {
		return nil, nil
	}
	u := c.Custom(ServiceConfigGroup, ServiceConfigKind, ns, name)
	if u == nil {
		return nil, nil
	}
	cfg, errs := ParseServiceConfig(u)
	if len(errs) > 0 {
		how := key + ": " + name
		if auto {
			how = "the -auto annotation"
		}
		return nil, fmt.Errorf("%s: TkeServiceConfig referenced by %s is malformed: %w", ref, how,
			dialect.Invalid(core.ObjectRef{Kind: ServiceConfigKind, Namespace: ns, Name: name}, errs))
	}
	return cfg, nil
}

// setL4SNAT: SNAT is on when every listener of the Service has snatEnable: true in the config
// (seeds solution 2); a listener without it keeps the client address (CLB default off).
func setL4SNAT(e *core.Exposure, cfg *ServiceConfig, name, ns string, listeners []ListenerKey) {
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
	var missing, quoted []string
	for _, k := range listeners {
		l := cfg.L4(k)
		if l == nil || !l.SNAT() {
			missing = append(missing, k.String())
			continue
		}
		if l.SnatEnableQuoted {
			quoted = append(quoted, L4ListenersPath.Index(l.Index).Child("snatEnable").String())
		}
	}
	if len(quoted) > 0 {
		e.Notes = append(e.Notes, ruleSNATQuoted.Because("TkeServiceConfig "+ns+"/"+name+" writes "+strings.Join(quoted, ", ")+" as the string \"true\"; write the boolean true"))
	}
	if len(missing) > 0 || len(listeners) == 0 {
		e.LBSourceNAT = core.No
		e.Reasons = append(e.Reasons, ruleL4SNATOff.Because("TkeServiceConfig "+ns+"/"+name+" has no snatEnable: true for "+strings.Join(missing, ", ")))
		return
	}
	e.LBSourceNAT = core.Yes
	e.Reasons = append(e.Reasons, ruleL4SNATOn.Because("TkeServiceConfig "+ns+"/"+name+" sets snatEnable: true for every listener ("+keysText(listeners)+")"))
}

func keysText(ks []ListenerKey) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = k.String()
	}
	return strings.Join(parts, ", ")
}

// offerPreventLoopback is solution 1, intra-cluster forwarding (seeds; costs from the
// comparison table; effects from FAQ Q3).
func (d *Dialect) offerPreventLoopback(e *core.Exposure, c *core.Cluster, current core.Fact) core.Offer {
	// The guide's comparison says the real source address "can be obtained"; that holds
	// unless kube-proxy masquerades intercepted traffic, which the core decides from the
	// proxy mode and externalTrafficPolicy (ServiceBase).
	clientIP := core.ClientIPKept
	if e.InterceptMasquerades == core.Yes {
		clientIP = core.ClientIPLost
	}
	o := core.Offer{
		Remedy: core.InterceptVIP,
		Path:   core.PathVIP,
		Action: "set metadata.annotations[\"" + AnnotationPreventLoopback + "\"]: \"true\"",
		Costs:  core.Costs{LosesLBFeatures: true, ClientIP: clientIP},
		Reason: ruleOfferPreventLoopback.Reason(),
		// FAQ Q3: consequences of carrying it out that change no ranking.
		Notes: []core.Reason{ruleHealthCheckSource.Reason(), ruleLongConnections.Reason()},
	}
	p := &c.Profile
	switch p.ProxyMode {
	case core.ProxyModeIPVS:
		support, min, _ := d.revisions.check(p.KubeProxyVersion)
		switch support {
		case TooOld:
			m := min.String()
			if current == core.Yes {
				o.Action = "upgrade the kube-proxy DaemonSet image to " + m + " or later; " + AnnotationPreventLoopback + " is already \"true\""
			}
			o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionVersion,
				Reason: rulePreventLoopbackTooOld.Because("kube-proxy " + p.KubeProxyVersion + " is older than " + m + "; upgrade the kube-proxy DaemonSet image to " + m + " or later (TKE Kubernetes revision history)")})
		case SupportUnknown:
			o.Action += " (needs a kube-proxy revision that binds LB addresses to the IPVS interface: " + d.revisions.minimumsText() + " or later for its minor; the revision is not known)"
		}
	case core.ProxyModeUnknown:
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnknown, Reason: ruleProxyModeNeeded.Reason()})
	default:
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnsupported,
			Reason: rulePreventLoopbackIPVSOnly.Because("the proxy mode is " + string(p.ProxyMode) + "; prevent-loopback only changes IPVS mode on regular and native nodes")})
	}
	return o
}

// offerL4SNAT is solution 2: snatEnable on exactly the Service's listeners.
func offerL4SNAT(e *core.Exposure, c *core.Cluster, svc *corev1.Service, cfgName string, auto bool, listeners []ListenerKey, stopIntercept bool) core.Offer {
	clientIP := core.ClientIPProxyProtocol
	if e.Protocols&core.UDP != 0 {
		clientIP = core.ClientIPLost
	}
	// One concatenation per action: appending the client-address note built the string twice.
	note := "; turn on the PROXY protocol to recover TCP clients' addresses"
	if e.Protocols&core.UDP != 0 {
		note = "; UDP clients' addresses are lost behind SNAT"
	}
	if stopIntercept {
		note += "; and set " + AnnotationPreventLoopback + ": \"false\" so in-cluster traffic reaches the CLB"
	}
	var action string
	switch {
	case cfgName != "":
		action = "in TkeServiceConfig " + svc.Namespace + "/" + cfgName + " set spec.loadBalancer.l4Listeners[].snatEnable: true for " + keysText(listeners) + note
	default:
		action = "annotate " + AnnotationServiceConfigAuto + ": \"true\" (or reference your own TkeServiceConfig with " + AnnotationServiceConfig +
			") and set spec.loadBalancer.l4Listeners[].snatEnable: true for " + keysText(listeners) + " in " + svc.Namespace + "/" + svc.Name + AutoServiceConfigSuffix + note
	}
	o := core.Offer{
		Remedy: core.LBSourceNAT,
		Path:   core.PathProxy,
		Action: action,
		Costs:  core.Costs{ClientIP: clientIP, Tickets: []core.Capability{CapL4SNAT}},
		Reason: ruleOfferL4SNAT.Reason(),
	}
	o.Unmet = allowlistUnmet(&c.Profile, CapL4SNAT)
	return o
}

// allowlistUnmet lists one precondition per capability the profile lacks; each names every
// missing ticket so a rejection that cites the first one says what to ask for.
func allowlistUnmet(p *core.ClusterProfile, caps ...core.Capability) []core.Precondition {
	var buf [3]core.Capability
	missing := buf[:0]
	for _, cp := range caps {
		if !p.HasAllowlist(cp) {
			missing = append(missing, cp)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	msg := "submit a support ticket asking for "
	for i, cp := range missing {
		if i > 0 {
			msg += " and "
		}
		msg += "\"" + Ask(cp) + "\" (allowlists: " + string(cp) + ")"
	}
	out := make([]core.Precondition, len(missing))
	for i, cp := range missing {
		out[i] = core.Precondition{Kind: core.PreconditionAllowlist, Capability: cp, Reason: ruleNeedsAllowlist.Because(msg)}
	}
	return out
}

// needsLB is whether the backends need in-cluster traffic to pass through the CLB, with what a
// loopguard.io/backend-expects annotation declares (applied to the exposure after the offers).
func needsLB(e *core.Exposure, ov *dialect.Overrides) bool {
	needs := e.Needs
	if ov.Needs != nil {
		needs = *ov.Needs
	}
	return needs.Any() == core.Yes || e.ProxyProtocol == core.Yes
}
