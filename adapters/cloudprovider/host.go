package cloudprovider

import (
	"context"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// hostProvider is the provider a cloud-controller-manager's Reconciler plans with: the cloud's
// own dialect and driver, with the status part of every plan added by the one ipMode rule
// (kubernetes.PlanStatus). Publishing the status is what a CCM owns, whatever the cloud, so
// through-lb (ipMode Proxy) and intercept-vip (VIP) are carried out here even for a provider
// whose own driver plans only cloud or cluster changes.
type hostProvider struct {
	core.Provider
	// d is the provider's dialect as the status's owner sees it (kubernetes.StatusOwner).
	d core.Dialect
}

func (p hostProvider) Dialect() core.Dialect { return p.d }

func (p hostProvider) Driver() (core.Driver, bool) {
	drv, ok := p.Provider.Driver()
	if !ok {
		// No cloud driver: the status is still the host's to publish.
		drv = kubernetes.StatusDriver{}
	}
	return hostDriver{Driver: drv}, true
}

// hostDriver adds the status changes to the cloud driver's plan and passes every optional
// interface of core through, so the Reconciler sees the cloud driver's removals, ownership
// checks and allowlist wording.
type hostDriver struct{ core.Driver }

var (
	_ dialect.Remover          = hostDriver{}
	_ dialect.OwnershipChecker = hostDriver{}
	_ dialect.Asker            = hostDriver{}
)

func (d hostDriver) Plan(ctx context.Context, req *core.PlanRequest) (*core.Plan, error) {
	p, err := d.Driver.Plan(ctx, req)
	if err != nil || p == nil {
		return p, err
	}
	switch d.Driver.(type) {
	case kubernetes.StatusDriver, *kubernetes.StatusDriver:
		return p, nil // it plans the status itself, with the same rule
	}
	for _, ch := range p.Changes {
		if ch.By == core.WriterStatus {
			return p, nil // the driver plans the status itself
		}
	}
	changes, notes := kubernetes.PlanStatus(req)
	p.Changes = append(p.Changes, changes...)
	p.Notes = append(p.Notes, notes...)
	return p, nil
}

// PlanRemoval is the cloud driver's; a driver that sets nothing it can take back has nothing
// to remove.
func (d hostDriver) PlanRemoval(ctx context.Context, req *core.PlanRequest) (*core.Plan, error) {
	if rem, ok := d.Driver.(dialect.Remover); ok {
		return rem.PlanRemoval(ctx, req)
	}
	ref := core.ObjectRef{}
	if k, ok := core.KeyOf(req.Object); ok {
		ref = core.ObjectRef{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name}
	}
	return &core.Plan{Object: ref, Removal: true}, nil
}

func (d hostDriver) CheckOwnership(ctx context.Context, req *core.PlanRequest, ch *core.Change) error {
	if oc, ok := d.Driver.(dialect.OwnershipChecker); ok {
		return oc.CheckOwnership(ctx, req, ch)
	}
	return nil
}

func (d hostDriver) Ask(c core.Capability) string {
	if a, ok := d.Driver.(dialect.Asker); ok {
		return a.Ask(c)
	}
	return ""
}
