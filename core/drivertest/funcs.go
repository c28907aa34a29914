package drivertest

import (
	"context"

	"github.com/loopguard/loopguard/core"
)

// DriverFuncs adapts functions to a core.Driver (and a dialect.Remover), for tests and small hosts.
type DriverFuncs struct {
	PlanFn        func(ctx context.Context, req *core.PlanRequest) (*core.Plan, error)
	ApplyCloudFn  func(ctx context.Context, ch *core.Change) (core.ApplyResult, error)
	PlanRemovalFn func(ctx context.Context, req *core.PlanRequest) (*core.Plan, error)
}

// Plan calls PlanFn.
func (f DriverFuncs) Plan(ctx context.Context, req *core.PlanRequest) (*core.Plan, error) {
	return f.PlanFn(ctx, req)
}

// ApplyCloud calls ApplyCloudFn, or reports core.ErrUnsupported when it is nil.
func (f DriverFuncs) ApplyCloud(ctx context.Context, ch *core.Change) (core.ApplyResult, error) {
	if f.ApplyCloudFn == nil {
		return core.ApplyResult{}, &core.KindError{Kind: core.ErrUnsupported, Msg: "this driver makes no cloud changes"}
	}
	return f.ApplyCloudFn(ctx, ch)
}

// PlanRemoval calls PlanRemovalFn, or reports core.ErrUnsupported when it is nil.
func (f DriverFuncs) PlanRemoval(ctx context.Context, req *core.PlanRequest) (*core.Plan, error) {
	if f.PlanRemovalFn == nil {
		return nil, &core.KindError{Kind: core.ErrUnsupported, Msg: "this driver cannot plan a removal"}
	}
	return f.PlanRemovalFn(ctx, req)
}
