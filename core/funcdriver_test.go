package core

import "context"

// funcDriver adapts functions to a Driver (and a Remover), for this package's tests
// (drivertest.DriverFuncs is the same for other packages; it cannot be imported here).
type funcDriver struct {
	PlanFn        func(ctx context.Context, req *PlanRequest) (*Plan, error)
	ApplyCloudFn  func(ctx context.Context, ch *Change) (ApplyResult, error)
	PlanRemovalFn func(ctx context.Context, req *PlanRequest) (*Plan, error)
}

// Plan calls PlanFn.
func (f funcDriver) Plan(ctx context.Context, req *PlanRequest) (*Plan, error) {
	return f.PlanFn(ctx, req)
}

// ApplyCloud calls ApplyCloudFn, or reports ErrUnsupported when it is nil.
func (f funcDriver) ApplyCloud(ctx context.Context, ch *Change) (ApplyResult, error) {
	if f.ApplyCloudFn == nil {
		return ApplyResult{}, &KindError{Kind: ErrUnsupported, Msg: "this driver makes no cloud changes"}
	}
	return f.ApplyCloudFn(ctx, ch)
}

// PlanRemoval calls PlanRemovalFn, or reports ErrUnsupported when it is nil.
func (f funcDriver) PlanRemoval(ctx context.Context, req *PlanRequest) (*Plan, error) {
	if f.PlanRemovalFn == nil {
		return nil, &KindError{Kind: ErrUnsupported, Msg: "this driver cannot plan a removal"}
	}
	return f.PlanRemovalFn(ctx, req)
}
