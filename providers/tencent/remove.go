package tencent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

var _ dialect.Remover = (*Driver)(nil)

// PlanRemoval plans taking back what loopguard sets for a Service or an Ingress (the
// Reconciler's Remove):
//
//   - the prevent-loopback annotation, when it still says "true";
//   - a TkeServiceConfig loopguard created (labelled app.kubernetes.io/managed-by: loopguard,
//     annotated with its owner) is deleted, after the reference annotation to it is removed, so
//     TKE's controller never reads a reference to a config that is gone;
//   - in a config someone else owns, the listener attributes loopguard turns on
//     (snatEnable: true, keepaliveEnable: 1) for the object's own listeners;
//   - in ModeDirect, the same attributes on the CLB's listeners, turned off again. The CLB API
//     keeps no record of who set an attribute, so direct mode takes the host's word that it
//     owns the load balancer (a cloud-controller-manager or a Terraform provider does).
//
// The Reconciler writes a removal only where the value is still loopguard's: a leaf that holds
// another value, or that another field manager owns, is left alone. An empty plan means nothing
// of loopguard's is left.
func (d *Driver) PlanRemoval(ctx context.Context, req *core.PlanRequest) (*core.Plan, error) {
	if req == nil || req.Object == nil {
		return nil, fmt.Errorf("tencent: %w: a removal request needs the object", core.ErrInvalid)
	}
	key, ok := core.KeyOf(req.Object)
	if !ok {
		return nil, &core.KindError{Kind: core.ErrUnsupported, Msg: fmt.Sprintf("loopguard sets nothing on a %T", req.Object)}
	}
	p := &core.Plan{Object: core.ObjectRef{Kind: key.Kind, Namespace: key.Namespace, Name: key.Name}, Removal: true,
		Decision: core.Decision{Remedy: core.RemedyNone}}
	pr := &planning{d: d, req: req, plan: p, profile: profileOf(req.Cluster)}
	var err error
	switch o := req.Object.(type) {
	case *corev1.Service:
		err = pr.removeService(ctx, key, o)
	case *networkingv1.Ingress:
		err = pr.removeIngress(ctx, key, o)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (pr *planning) removeService(ctx context.Context, key core.ObjectKey, svc *corev1.Service) error {
	ann, err := pr.liveAnnotations(ctx, key, svc.Annotations)
	if err != nil {
		return err
	}
	if ann[AnnotationPreventLoopback] == "true" {
		pr.plan.Changes = append(pr.plan.Changes, removeAnnotation(key, AnnotationPreventLoopback, "true", ruleOfferPreventLoopback.Reason()))
	}
	listeners := ServiceListeners(svc)
	if pr.d.mode == ModeDirect {
		return pr.directWrites(ctx, listeners, attrSnatEnable, []core.Capability{CapL4SNAT}, ruleOfferL4SNAT.Reason(), true)
	}
	live := *svc
	live.Annotations = ann
	name, _, err := ServiceConfigName(&live)
	if err != nil {
		return err
	}
	return pr.removeFromConfig(ctx, key, name, AnnotationServiceConfig, ann, "l4Listeners", listeners,
		[]attrValue{{"snatEnable", true}}, ruleOfferL4SNAT.Reason())
}

func (pr *planning) removeIngress(ctx context.Context, key core.ObjectKey, ing *networkingv1.Ingress) error {
	ann, err := pr.liveAnnotations(ctx, key, ing.Annotations)
	if err != nil {
		return err
	}
	listeners, custom := IngressListeners(ing)
	if custom {
		listeners = nil // loopguard set nothing for listeners it cannot read
	}
	if pr.d.mode == ModeDirect {
		if err := pr.directWrites(ctx, listeners, attrSnatEnable, []core.Capability{CapL7SNAT}, ruleOfferL7SNAT.Reason(), true); err != nil {
			return err
		}
		return pr.directWrites(ctx, listeners, attrKeepaliveEnable, []core.Capability{CapKeepalive}, ruleOfferL7SNAT.Reason(), true)
	}
	live := *ing
	live.Annotations = ann
	name, _, err := IngressConfigName(&live)
	if err != nil {
		return err
	}
	// Either attribute may be loopguard's, by the ingress controller's version when it was
	// written; the Reconciler takes back only what loopguard's field manager still owns.
	return pr.removeFromConfig(ctx, key, name, AnnotationIngressServiceConfig, ann, "l7Listeners", listeners,
		[]attrValue{{"snatEnable", true}, {"keepaliveEnable", int64(1)}}, ruleOfferL7SNAT.Reason())
}

type attrValue struct {
	field string
	value any
}

// removeFromConfig plans the removal from the object's TkeServiceConfig: the whole config
// when loopguard created it for this object, else the attributes of the object's listeners.
func (pr *planning) removeFromConfig(ctx context.Context, owner core.ObjectKey, name, refAnnotation string, ann map[string]string,
	list string, listeners []ListenerKey, attrs []attrValue, reason core.Reason) error {
	if name == "" {
		return nil
	}
	key := core.ObjectKey{APIVersion: ServiceConfigAPIVersion, Kind: ServiceConfigKind, Namespace: owner.Namespace, Name: name}
	live, err := pr.get(ctx, key)
	if err != nil {
		return err
	}
	if live == nil {
		return nil
	}
	if createdFor(live, owner) {
		if ann[refAnnotation] == name {
			pr.plan.Changes = append(pr.plan.Changes, removeAnnotation(owner, refAnnotation, name, ruleCreateServiceConfig.Reason()))
		}
		pr.plan.Changes = append(pr.plan.Changes, core.Change{
			By: core.WriterCluster, Object: &key, Field: "(the object)", From: name, To: "(deleted)",
			Delete: true, Strategy: core.StrategyUpdate,
			Reason: ruleCreateServiceConfig.Because(owner.Kind + "/" + owner.Name + " no longer needs the " + ServiceConfigKind + " loopguard created for it"),
		})
		return nil
	}
	cfg, errs := ParseServiceConfig(live)
	if len(errs) > 0 {
		return dialect.Invalid(core.ObjectRef{Kind: ServiceConfigKind, Namespace: key.Namespace, Name: key.Name}, errs)
	}
	var edits []core.Edit
	for _, k := range listeners {
		idx := -1
		if list == "l4Listeners" {
			if l := cfg.L4(k); l != nil {
				idx = l.Index
			}
		} else if l := cfg.L7(k); l != nil {
			idx = l.Index
		}
		if idx < 0 {
			continue
		}
		protocol := entryValue(live, list, idx, "protocol", k.Protocol)
		for _, a := range attrs {
			e := core.Edit{Path: []core.PathElem{dialect.F("spec"), dialect.F("loadBalancer"), dialect.F(list),
				dialect.K(map[string]any{"protocol": protocol, "port": int64(k.Port)}), dialect.F(a.field)}, Value: a.value, Remove: true}
			if !e.Satisfied(live.Object) {
				edits = append(edits, e)
			}
		}
	}
	if len(edits) > 0 {
		pr.plan.Changes = append(pr.plan.Changes, core.Change{
			By: core.WriterCluster, Object: &key, Field: "spec.loadBalancer." + list, To: "(loopguard's attributes removed)",
			Edits: edits, Strategy: core.StrategyUpdate, Reason: reason,
		})
	}
	return nil
}

// createdFor reports whether loopguard created a config for owner.
func createdFor(u *unstructured.Unstructured, owner core.ObjectKey) bool {
	return u.GetLabels()[LabelManagedBy] == "loopguard" && u.GetAnnotations()[AnnotationConfigOwner] == owner.Kind+"/"+owner.Name
}

func removeAnnotation(key core.ObjectKey, name, value string, reason core.Reason) core.Change {
	e := annotationEdit(name, value)
	e.Remove = true
	return core.Change{By: core.WriterCluster, Object: &key, Field: annotationField(name), From: value, To: "(unset)",
		Edits: []core.Edit{e}, Strategy: core.StrategyApply, Reason: reason}
}
