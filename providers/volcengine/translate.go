package volcengine

import (
	"errors"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// Reasons without per-object text, prepared once so a translation does not allocate them.
var (
	reasonIPModeVIP     = ruleIPModeVIP.Reason()
	reasonIPModeDefault = ruleIPModeDefault.Reason()
	reasonIPModeProxy   = ruleIPModeProxy.Reason()
	reasonKeepsSource   = ruleCLBKeepsSource.Reason()
	reasonStatusMixed   = ruleStatusMixed.Reason()
	reasonStatusHost    = ruleStatusHostname.Reason()
	reasonPrivate       = ruleAddressPrivate.Reason()
	reasonPassThrough   = rulePassThrough.Reason()
	reasonNoENI         = rulePassThroughNoENI.Reason()
	reasonPPVIP         = ruleProxyProtocolVIP.Reason()
	reasonOfferVIP      = ruleOfferInterceptVIP.Reason()
	reasonOfferProxySep = ruleOfferProxySeparation.Reason()
	reasonStatusVIP     = ruleStatusIPMode.Because("status.loadBalancer.ingress[].ipMode is VIP: nodes intercept the CLB address.")
	reasonStatusProxy   = ruleStatusIPMode.Because("status.loadBalancer.ingress[].ipMode is Proxy: nodes leave the CLB address alone and traffic goes through the CLB.")
	reasonNodePortLocal = ruleNodePortBackends.Because("pass-through is off (the default): the CLB sends to the NodePorts of nodes that run a backend (externalTrafficPolicy Local).")
	reasonNodePortAll   = ruleNodePortBackends.Because("pass-through is off (the default): the CLB sends to every node's NodePort (externalTrafficPolicy Cluster).")
)

// Translate reads one Service into the portable model and lists the remedies VKE can carry
// out for it. An Ingress, a Service of another type or loadBalancerClass, or any other object
// gives an error matching core.ErrNotExposed; bad annotation values give a *core.InvalidError
// naming every bad field, and no translation. obj and c are only read.
func (d *Dialect) Translate(obj runtime.Object, c *core.Cluster) (*core.Result, error) {
	var svc *corev1.Service
	switch o := obj.(type) {
	case *corev1.Service:
		svc = o
	case *networkingv1.Ingress:
		return nil, &core.KindError{Kind: core.ErrNotExposed,
			Object: core.ObjectRef{Kind: "Ingress", Namespace: o.Namespace, Name: o.Name},
			Msg:    ruleIngress.Summary, Reason: ruleIngress.Reason()}
	default:
		return nil, &core.KindError{Kind: core.ErrNotExposed, Object: refOf(obj), Msg: "the VKE dialect reads Services only"}
	}
	if c == nil {
		c, _ = core.NewCluster(core.ClusterProfile{})
	}
	ref := core.ObjectRef{Kind: "Service", Namespace: svc.Namespace, Name: svc.Name}
	if cls := svc.Spec.LoadBalancerClass; cls != nil && *cls != LoadBalancerClass && svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		return nil, &core.KindError{Kind: core.ErrNotExposed, Object: ref,
			Msg: "loadBalancerClass is " + quote(*cls) + ": " + ruleOtherClass.Summary, Reason: ruleOtherClass.Reason()}
	}

	e, ov, err := dialect.ServiceBase(Name, svc, c, core.NodeFilter{})
	f, errs := ReadService(svc)
	if err != nil {
		var inv *core.InvalidError
		if !errors.As(err, &inv) {
			return nil, err
		}
		all := make(field.ErrorList, 0, len(inv.Errs)+len(errs))
		all = append(all, inv.Errs...)
		errs = append(all, errs...)
	}
	if err := dialect.Invalid(ref, errs); err != nil {
		return nil, err
	}

	// Needed to tell whether Proxy takes effect, or what switching to it would take.
	all := prerequisites(&c.Profile)
	prereqs := all[:]
	cloud, cloudOK := d.lookupCLB(&f)

	// Room for the usual explanation (mode, source, scope, binding) in one allocation.
	e.Reasons = append(make([]core.Reason, 0, len(e.Reasons)+6), e.Reasons...)
	path := d.inEffect(&f, prereqs, &e)
	switch path {
	case core.PathVIP:
		e.Intercept = core.Yes
	case core.PathProxy:
		e.Intercept = core.No
	}
	if e.InterceptMasquerades == core.Unknown {
		if m, ok := d.opts.Assumptions.ebpfMasquerades(&c.Profile); ok {
			e.InterceptMasquerades = m
			if e.Intercept == core.Yes {
				e.Reasons = append(e.Reasons, reasonEBPFKeepsSource)
			}
		}
	}
	if f.HostnameOnly {
		e.Intercept = core.No
		e.Reasons = append(e.Reasons, reasonStatusHost)
	}
	// Classic CLB listeners expose no source NAT switch (docs/sources.md#vke) and the CLB keeps the
	// client's address (seed 003 restriction).
	e.LBSourceNAT = core.No
	explain := e.Intercept != core.Yes
	d.scope(&f, cloud, cloudOK, &e, explain)
	d.binding(&f, cloud, cloudOK, &c.Profile, &e, explain)
	e.ProxyProtocol = f.ProxyProtocol
	if cloudOK && cloud.ProxyProtocol.Known() {
		e.ProxyProtocol = cloud.ProxyProtocol
	}
	if e.ProxyProtocol == core.Yes && e.Intercept == core.Yes {
		e.Notes = append(e.Notes, reasonPPVIP)
	}
	ov.Apply(&e)
	e.Notes = append(e.Notes, verifyHint(svc, f.IPMode))

	t := &core.Result{Exposure: e}
	t.Offers = d.offers(svc, &f, &t.Exposure, prereqs)
	return t, nil
}

// inEffect decides which ip-mode nodes act on and explains it: the status when it shows one
// (seed 003 "配置确认"), else the requested mode when it can take effect.
func (d *Dialect) inEffect(f *ServiceFacts, prereqs []Prerequisite, e *core.Exposure) core.Path {
	if !f.IPModeSet {
		e.Reasons = append(e.Reasons, reasonIPModeDefault)
	}
	var path core.Path
	switch {
	case f.StatusMixed:
		e.Reasons = append(e.Reasons, reasonStatusMixed)
		return core.PathUnknown
	case f.Status != core.PathUnknown:
		path = f.Status
		if path == core.PathVIP {
			e.Reasons = append(e.Reasons, reasonStatusVIP)
		} else {
			e.Reasons = append(e.Reasons, reasonStatusProxy)
		}
		if f.Status != f.IPMode {
			e.Reasons = append(e.Reasons, disagreement(f, prereqs))
		}
	case f.IPMode == core.PathVIP:
		path = core.PathVIP
	default:
		path = d.proxyTakesEffect(prereqs, e)
	}
	switch path {
	case core.PathVIP:
		if !f.HostnameOnly { // nothing to intercept: Translate explains it instead
			e.Reasons = append(e.Reasons, reasonIPModeVIP)
		}
	case core.PathProxy:
		e.Reasons = append(e.Reasons, reasonIPModeProxy, reasonKeepsSource)
	}
	return path
}

// proxyTakesEffect applies the prerequisites to a Proxy request that the status does not
// settle: all met, Proxy; one unmet, assumption 1 (unconfirmed.go); none unmet but one
// unknown, the path is unknown and the reasons name the missing profile fields.
func (d *Dialect) proxyTakesEffect(prereqs []Prerequisite, e *core.Exposure) core.Path {
	unmet, unknown := false, false
	for i := range prereqs {
		switch prereqs[i].Met {
		case core.No:
			unmet = true
		case core.Unknown:
			unknown = true
		}
	}
	switch {
	case unmet:
		for i := range prereqs {
			if prereqs[i].Met == core.No {
				e.Reasons = append(e.Reasons, prereqs[i].Reason)
			}
		}
		e.Reasons = append(e.Reasons, reasonProxyNotInEffect)
		return d.opts.Assumptions.unmetProxyPath()
	case unknown:
		var missing []string
		for i := range prereqs {
			if prereqs[i].Met == core.Unknown {
				e.Reasons = append(e.Reasons, prereqs[i].Reason)
				missing = append(missing, prereqs[i].Missing...)
			}
		}
		e.Reasons = append(e.Reasons, rulePrereqUnknown.Because(rulePrereqUnknown.Summary+" Missing from the ClusterProfile: "+strings.Join(missing, ", ")+"."))
		return core.PathUnknown
	}
	return core.PathProxy
}

func disagreement(f *ServiceFacts, prereqs []Prerequisite) core.Reason {
	var b strings.Builder
	b.WriteString("The annotation asks for ")
	b.WriteString(string(f.IPMode))
	if !f.IPModeSet {
		b.WriteString(" (the default)")
	}
	b.WriteString(" but status.loadBalancer.ingress[].ipMode is ")
	b.WriteString(string(f.Status))
	b.WriteString(", and nodes act on the status.")
	var unmet []string
	for i := range prereqs {
		if prereqs[i].Met == core.No {
			unmet = append(unmet, prereqs[i].Reason.Message)
		}
	}
	if len(unmet) > 0 {
		b.WriteString(" An ip-mode prerequisite is unmet: ")
		b.WriteString(strings.Join(unmet, " "))
	} else {
		b.WriteString(" Either the cloud-controller-manager is older than v1.43.0 or has not reconciled the Service yet (look again shortly), or the annotation was edited after the Service was created, which has no effect: ip-mode cannot be changed, a new Service is needed.")
	}
	return ruleStatusDisagrees.Because(b.String())
}

// scope fills the LB scope. explain adds the reasons, which only matter when the traffic may
// reach the CLB.
func (d *Dialect) scope(f *ServiceFacts, cloud CLBFacts, cloudOK bool, e *core.Exposure, explain bool) {
	at := f.AddressType
	if cloudOK && cloud.AddressType != "" {
		at = cloud.AddressType
		if explain {
			e.Reasons = append(e.Reasons, ruleCloudRead.Because("The CLB's address type is "+at+" (cloud read)."))
		}
	} else if f.Reused() {
		if d.opts.Assumptions.PublicCLBHidesPodSource {
			e.Scope = core.ScopeUnknown
			if explain {
				e.Reasons = append(e.Reasons, ruleReusedCLB.Because("The Service reuses CLB "+f.LoadBalancerID+"; whether it is PUBLIC or PRIVATE is unknown without a cloud read or a loopguard.io/lb-scope annotation (address-type describes a CLB to be created)."))
			}
			return
		}
		// Assumption 2: either type sees the client Pod's address, so the type does not matter.
		e.Scope = core.Private
		if explain {
			e.Reasons = append(e.Reasons, ruleReusedCLB.Because("The Service reuses CLB "+f.LoadBalancerID+", whose type is unknown without a cloud read; on VKE a PUBLIC CLB loops like a PRIVATE one (assumption 2 in unconfirmed.go), so the type does not change the verdict."))
		}
		return
	}
	switch at {
	case AddressTypePrivate:
		e.Scope = core.Private
		if explain {
			e.Reasons = append(e.Reasons, reasonPrivate)
		}
	case AddressTypePublic:
		var r core.Reason
		e.Scope, r = d.opts.Assumptions.publicScope()
		if explain || e.Scope == core.Public {
			e.Reasons = append(e.Reasons, r)
		}
	}
}

// binding fills which addresses the CLB sends to. A cloud read of the backends decides when
// it has them (cloudBinding); else Pod ENIs with pass-through, else NodePorts as
// externalTrafficPolicy says (dialect.ServiceBase already set that).
func (d *Dialect) binding(f *ServiceFacts, cloud CLBFacts, cloudOK bool, p *core.ClusterProfile, e *core.Exposure, explain bool) {
	if cloudOK && cloud.Backends != BackendsNotRead {
		cloudBinding(f, cloud.Backends, e, explain)
		return
	}
	if f.PassThrough == core.Yes {
		if cni := strings.ToLower(p.Dataplane.CNI); cni != "" && !isVPCCNI(cni) {
			e.Binding = core.BindingUnknown
			if explain {
				e.Reasons = append(e.Reasons, reasonNoENI)
			}
			return
		}
		e.Binding = core.DirectToPod
		if explain {
			e.Reasons = append(e.Reasons, reasonPassThrough)
		}
		return
	}
	if !explain {
		return
	}
	if e.Binding == core.NodePortLocal {
		e.Reasons = append(e.Reasons, reasonNodePortLocal)
	} else {
		e.Reasons = append(e.Reasons, reasonNodePortAll)
	}
}

// cloudBinding sets the binding from the backends DescribeServerGroupAttributes lists: eni
// servers are Pods' ENIs (direct to Pod), ecs servers instances reached on their NodePort (the
// binding externalTrafficPolicy gives). Mixed or unrecognised types leave it unknown: the
// model has one binding per Service, and picking one would misstate how often a connection
// lands on the client's own node. What the cloud shows wins over the pass-through annotation,
// which only asks for it.
func cloudBinding(f *ServiceFacts, b Backends, e *core.Exposure, explain bool) {
	var msg string
	switch b {
	case BackendsENI:
		e.Binding = core.DirectToPod
		msg = "The CLB's backends are ENIs (DescribeServerGroupAttributes Servers[].Type eni): it sends straight to the Pods."
		if f.PassThrough != core.Yes {
			msg += " The pass-through annotation does not ask for it; the backends are what traffic follows."
		}
	case BackendsECS:
		if e.Binding != core.NodePortLocal {
			e.Binding = core.NodePortCluster
		}
		msg = "The CLB's backends are instances (DescribeServerGroupAttributes Servers[].Type ecs): it sends to the nodes' NodePorts (" + string(e.Binding) + ")."
		if f.PassThrough == core.Yes {
			msg += " pass-through is \"true\", but the backends are not Pod ENIs (yet); they are what traffic follows."
		}
	case BackendsMixed:
		e.Binding = core.BindingUnknown
		msg = "The CLB's backends are both instances (ecs, the nodes' NodePorts) and ENIs (eni, straight to Pods), as while pass-through is being switched: how often a connection lands on the client's node is unknown until they agree."
	default:
		e.Binding = core.BindingUnknown
		msg = "A backend of the CLB has a DescribeServerGroupAttributes Servers[].Type other than ecs or eni, so which addresses it sends to is unknown."
	}
	if explain {
		e.Reasons = append(e.Reasons, ruleBackendsRead.Because(msg))
	}
}

// verifyHint is seed 003's "结果验证" for this Service.
func verifyHint(svc *corev1.Service, want core.Path) core.Reason {
	return ruleVerify.Because("Verify: status.loadBalancer.ingress[*].ipMode of Service " + svc.Namespace + "/" + svc.Name +
		" must be " + string(want) +
		"; then, from a Pod on a node without backends, connect to the CLB address: the CLB's monitoring shows new connections in Proxy mode and none in VIP mode.")
}

func refOf(obj runtime.Object) core.ObjectRef {
	ref := core.ObjectRef{Kind: "object"}
	if obj != nil {
		if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
			ref.Kind = k
		}
	}
	if m, ok := obj.(metav1.Object); ok {
		ref.Namespace, ref.Name = m.GetNamespace(), m.GetName()
	}
	return ref
}
