package volcengine

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// NewProvider returns VKE as a host holds it (core.Provider): the dialect and the driver
// (also a dialect.Remover); opts may be nil. Invalid options are an error matching
// core.ErrInvalid.
func NewProvider(opts *DriverOptions) (core.Provider, error) {
	d, err := NewDriver(opts)
	if err != nil {
		return nil, err
	}
	return core.NewProvider(d.Dialect(), d), nil
}

var _ dialect.Remover = (*Driver)(nil)

// PlanRemoval plans taking back what loopguard sets on a Service that it can take back:
// externalTrafficPolicy Local (set for node separation), which the API server then defaults
// back to Cluster. The ip-mode annotation is read by the cloud-controller-manager only when the
// Service is created, so removing it would change nothing, and a replacement Service loopguard
// created carries traffic of its own: both are left, and the plan says so in a note.
func (d *Driver) PlanRemoval(_ context.Context, req *core.PlanRequest) (*core.Plan, error) {
	if req == nil || req.Object == nil {
		return nil, fmt.Errorf("volcengine: %w: a removal request needs the object", core.ErrInvalid)
	}
	svc, ok := req.Object.(*corev1.Service)
	if !ok {
		return nil, &core.KindError{Kind: core.ErrUnsupported, Msg: fmt.Sprintf("loopguard sets nothing on a %T on VKE", req.Object)}
	}
	key := serviceKey(svc.Namespace, svc.Name)
	p := &core.Plan{Object: core.ObjectRef{Kind: "Service", Namespace: svc.Namespace, Name: svc.Name}, Removal: true,
		Decision: core.Decision{Remedy: core.RemedyNone}}
	if svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		e := etpEdit
		e.Remove = true
		p.Changes = append(p.Changes, core.Change{By: core.WriterCluster, Object: &key, Field: "spec.externalTrafficPolicy",
			From: string(corev1.ServiceExternalTrafficPolicyLocal), To: "(unset: the API server defaults it to Cluster)",
			Edits: []core.Edit{e}, Strategy: core.StrategyUpdate, Reason: ruleLocalPolicy.Reason()})
	}
	return p, nil
}
