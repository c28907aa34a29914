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
// progress" is a RetryError. The optional interfaces dialect.Remover,
// dialect.OwnershipChecker and dialect.Asker add removal, ownership checks and support-ticket
// wording.
type Driver interface {
	// Plan observes what it needs and returns the changes that make req.Result.Decision true.
	// An empty plan means the decision already holds.
	Plan(ctx context.Context, req *PlanRequest) (*Plan, error)
	// ApplyCloud makes one change with By == WriterCloud.
	ApplyCloud(ctx context.Context, ch *Change) (ApplyResult, error)
}

// A driver may also implement the optional interfaces that core/dialect names for driver
// authors (dialect.Remover, dialect.OwnershipChecker, dialect.Asker); the Reconciler asks
// for them by method set, so hosts never name them.
type (
	remover interface {
		PlanRemoval(ctx context.Context, req *PlanRequest) (*Plan, error)
	}
	ownershipChecker interface {
		CheckOwnership(ctx context.Context, req *PlanRequest, ch *Change) error
	}
	asker interface {
		Ask(Capability) string
	}
)
