package dialect

import (
	"context"

	"github.com/loopguard/loopguard/core"
)

// Remover is implemented by drivers that can undo what loopguard set for an object. Without
// it, Reconciler.Remove undoes only the cluster changes the driver's plan names.
type Remover interface {
	// PlanRemoval observes and returns the changes that take back what loopguard set for
	// req.Object (the annotation it added, the entries or the config it created, listener
	// attributes in direct mode), leaving everything others set. An empty plan means there is
	// nothing of loopguard's left.
	PlanRemoval(ctx context.Context, req *core.PlanRequest) (*core.Plan, error)
}

// OwnershipChecker is implemented by drivers whose cloud changes find their target through
// something a tenant can edit, such as an annotation naming a load balancer. A Reconciler with
// ReconcilerOptions.OwnershipCheck asks before any cloud change is planned to be written.
type OwnershipChecker interface {
	// CheckOwnership returns nil when ch's target belongs to req.Object (a load balancer one of
	// whose addresses is in the object's status), and an error naming the object, the target
	// and what was compared otherwise, or when it cannot tell.
	CheckOwnership(ctx context.Context, req *core.PlanRequest, ch *core.Change) error
}

// Asker is implemented by drivers whose cloud grants capabilities by support ticket: Ask says
// what to request, in the cloud's words ("CLB Layer 4 SNAT capability"), so an AllowlistError
// the Reconciler raises names the request rather than the bare capability.
type Asker interface {
	Ask(core.Capability) string
}
