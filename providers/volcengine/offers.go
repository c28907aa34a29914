package volcengine

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// offers lists what VKE can do for a Service: ip-mode VIP, ip-mode Proxy with clients kept off
// the backends' nodes, and DNS steering. There is no LB source NAT offer: classic CLB listeners
// expose no SNAT field (docs/sources.md#vke), and the CLB keeps the client address (seed 003).
func (d *Dialect) offers(svc *corev1.Service, f *ServiceFacts, e *core.Exposure, prereqs []Prerequisite) []core.Offer {
	return []core.Offer{
		interceptOffer(svc, f, e),
		separationOffer(svc, f, e, prereqs),
		dialect.DNSSteeringOffer(e, svc.Namespace, svc.Name, nil),
	}
}

// interceptOffer is ip-mode VIP. In-cluster clients then lose what the CLB adds (seed 003, VIP
// "局限性": TLS termination, protocol proxying, Proxy-Protocol pass-through; Proxy "优势":
// monitoring, uniform audit) and keep their own address unless the service proxy masquerades.
func interceptOffer(svc *corev1.Service, f *ServiceFacts, e *core.Exposure) core.Offer {
	o := core.Offer{
		Remedy: core.InterceptVIP,
		Path:   core.PathVIP,
		Costs:  core.Costs{LosesLBFeatures: true, ClientIP: core.ClientIPKept},
		Reason: reasonOfferVIP,
	}
	// A service proxy that masquerades intercepted traffic hides the client (docs/sources.md#source-address).
	switch e.InterceptMasquerades {
	case core.Yes:
		o.Costs.ClientIP = core.ClientIPLost
	case core.Unknown:
		o.Costs.ClientIP = core.ClientIPUnknown
	}
	switch {
	case f.Exists && f.CreatedMode() == core.PathProxy:
		o.Action = replaceAction(svc, IPModeVIP)
		o.Costs.NewObject = true
		o.Unmet = []core.Precondition{{Kind: core.PreconditionImmutable, Reason: immutable(svc, core.PathProxy, core.PathVIP)}}
	case f.IPMode == core.PathProxy:
		o.Action = "set " + AnnotationIPMode + ": \"" + IPModeVIP + "\" (or remove it: VIP is the default) before the Service is created"
	default:
		o.Action = "keep " + AnnotationIPMode + " VIP (the default)"
	}
	return o
}

// separationOffer is ip-mode Proxy with clients kept off every node the CLB can send to: the
// seed 003 restriction made a scheduling rule (dialect.NodeSeparationOffer). Proxy needs the
// prerequisites, so each one unmet or unknown is an unmet precondition, unless the status
// already shows Proxy in effect.
func separationOffer(svc *corev1.Service, f *ServiceFacts, e *core.Exposure, prereqs []Prerequisite) core.Offer {
	o := dialect.NodeSeparationOffer(e, svc.Spec.Selector)
	o.Reason = reasonOfferProxySep
	var unmet []core.Precondition
	switch {
	case f.Exists && f.CreatedMode() != core.PathProxy:
		o.Action = replaceAction(svc, IPModeProxy) + "; on the new Service " + o.Action
		o.Costs.NewObject = true
		unmet = append(unmet, core.Precondition{Kind: core.PreconditionImmutable, Reason: immutable(svc, f.CreatedMode(), core.PathProxy)})
	case !f.Exists && f.IPMode != core.PathProxy:
		o.Action = "set " + AnnotationIPMode + ": \"" + IPModeProxy + "\" before the Service is created; " + o.Action
	default:
		o.Action = "keep " + AnnotationIPMode + " Proxy; " + o.Action
	}
	if f.Status != core.PathProxy {
		for i := range prereqs {
			if p := &prereqs[i]; p.Met != core.Yes {
				unmet = append(unmet, core.Precondition{Kind: p.Kind, Reason: p.Reason})
			}
		}
	}
	// The core's own preconditions (clients declared, backend labels) come after ours.
	o.Unmet = append(unmet, o.Unmet...)
	return o
}

func replaceAction(svc *corev1.Service, mode string) string {
	return "create a new Service like " + svc.Namespace + "/" + svc.Name + " with " + AnnotationIPMode + ": \"" + mode +
		"\" (the annotation cannot be changed on the existing Service), move in-cluster clients to its new CLB address, then delete the old Service"
}

func immutable(svc *corev1.Service, from, to core.Path) core.Reason {
	return ruleImmutable.Because("Service " + svc.Namespace + "/" + svc.Name + " exists with ip-mode " + string(from) +
		"; the annotation cannot be changed after creation, so " + string(to) + " needs a new Service with a new CLB and a new address.")
}
