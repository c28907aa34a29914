package core

import "context"

// Provider is one cloud as a host holds it: its name, the dialect that reads its objects, and,
// when loopguard can carry out its remedies, the driver that plans and applies them. Each of
// providers/tencent, providers/volcengine and providers/kubernetes returns one; a host hands it
// to NewReconciler, or uses only Dialect to assess.
//
// Driver is capability discovery, as cloudprovider.Interface.LoadBalancer() is: a provider
// whose cloud has nothing loopguard can write returns (nil, false), and a read-only host never
// needs to build one.
type Provider interface {
	Name() string
	Dialect() Dialect
	Driver() (Driver, bool)
}

// NewProvider returns a Provider made of a dialect and a driver (nil for none); for tests and
// for hosts that bring their own driver.
func NewProvider(d Dialect, drv Driver) Provider { return staticProvider{d: d, drv: drv} }

type staticProvider struct {
	d   Dialect
	drv Driver
}

func (p staticProvider) Name() string     { return p.d.Name() }
func (p staticProvider) Dialect() Dialect { return p.d }
func (p staticProvider) Driver() (Driver, bool) {
	return p.drv, p.drv != nil
}

// ApplyResult is what applying one cloud change did. It is a struct, not a bool, so fields can
// be added without breaking drivers (crossplane-runtime's ExternalUpdate is the model).
type ApplyResult struct {
	// Wrote is false when the change already held and nothing was written.
	Wrote bool
}

// Driver carries out a cloud's remedies. Observing and planning never change anything;
// ApplyCloud is idempotent: "already so" is success with ApplyResult.Wrote false, "still in
// progress" is a RetryError.
type Driver interface {
	// Plan observes what it needs and returns the changes that make req.Result.Decision true.
	// An empty plan means the decision already holds.
	Plan(ctx context.Context, req *PlanRequest) (*Plan, error)
	// ApplyCloud makes one change with By == WriterCloud.
	ApplyCloud(ctx context.Context, ch *Change) (ApplyResult, error)
}

// Remover is implemented by drivers that can undo what loopguard set for an object. Without
// it, Reconciler.Remove undoes only the cluster changes the driver's plan names.
type Remover interface {
	// PlanRemoval observes and returns the changes that take back what loopguard set for
	// req.Object (the annotation it added, the entries or the config it created, listener
	// attributes in direct mode), leaving everything others set. An empty plan means there is
	// nothing of loopguard's left.
	PlanRemoval(ctx context.Context, req *PlanRequest) (*Plan, error)
}

// OwnershipChecker is implemented by drivers whose cloud changes find their target through
// something a tenant can edit, such as an annotation naming a load balancer. A Reconciler with
// ReconcilerOptions.OwnershipCheck asks before any cloud change is planned to be written.
type OwnershipChecker interface {
	// CheckOwnership returns nil when ch's target belongs to req.Object (a load balancer one of
	// whose addresses is in the object's status), and an error naming the object, the target
	// and what was compared otherwise, or when it cannot tell.
	CheckOwnership(ctx context.Context, req *PlanRequest, ch *Change) error
}

// Asker is implemented by drivers whose cloud grants capabilities by support ticket: Ask says
// what to request, in the cloud's words ("CLB Layer 4 SNAT capability"), so an AllowlistError
// the Reconciler raises names the request rather than the bare capability.
type Asker interface {
	Ask(Capability) string
}
