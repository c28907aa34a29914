package tencent

import (
	"context"
	"fmt"
	"slices"
	"strings"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
)

// Values of DescribeLoadBalancers' LoadBalancerType (docs/sources.md#tke-clb-api).
const (
	// LoadBalancerTypeOpen is a public CLB.
	LoadBalancerTypeOpen = "OPEN"
	// LoadBalancerTypeInternal is a private CLB, reachable inside the VPC only.
	LoadBalancerTypeInternal = "INTERNAL"
)

// CLBFacts is what DescribeLoadBalancers says about one CLB, for a fact the manifest does not
// carry: the type of a CLB that a Service (service.kubernetes.io/tke-existed-lbid) or an
// Ingress (kubernetes.io/ingress.existLbId) reuses (docs/sources.md#tke-clb-api).
type CLBFacts struct {
	// ID is the CLB's LoadBalancerId.
	ID string
	// Type is LoadBalancerType: LoadBalancerTypeOpen or LoadBalancerTypeInternal. Any other
	// value leaves the scope unknown.
	Type string
}

// Scope is the LB scope the type means: Public for OPEN, Private for INTERNAL, ScopeUnknown
// otherwise.
func (f CLBFacts) Scope() core.Scope {
	switch strings.ToUpper(f.Type) {
	case LoadBalancerTypeOpen:
		return core.Public
	case LoadBalancerTypeInternal:
		return core.Private
	}
	return core.ScopeUnknown
}

// CLBLookup finds the facts read about a CLB by its ID. It answers from facts gathered
// beforehand (Driver.ReadCLBs): Translate is pure and never waits on the network.
type CLBLookup interface {
	LookupCLB(id string) (CLBFacts, bool)
}

// CLBSnapshot is a CLBLookup over facts gathered beforehand, keyed by CLB ID.
type CLBSnapshot map[string]CLBFacts

// LookupCLB implements CLBLookup.
func (s CLBSnapshot) LookupCLB(id string) (CLBFacts, bool) {
	f, ok := s[id]
	return f, ok
}

// lookupCLB returns the facts read about a reused CLB; false without Options.CLBs, for a CLB
// that was not read, or for a type that says no scope.
func (d *Dialect) lookupCLB(id string) (CLBFacts, bool) {
	if d.opts.CLBs == nil || id == "" {
		return CLBFacts{}, false
	}
	f, ok := d.opts.CLBs.LookupCLB(id)
	if !ok || f.Scope() == core.ScopeUnknown {
		return CLBFacts{}, false
	}
	return f, true
}

// LoadBalancerDescriber is the CLB API call Driver.ReadCLBs makes. *clb.Client of
// tencentcloud-sdk-go (clb v20180317, v1.3.156) implements it; a DriverOptions.CLB that does
// not cannot read CLB types.
type LoadBalancerDescriber interface {
	DescribeLoadBalancersWithContext(ctx context.Context, req *clb.DescribeLoadBalancersRequest) (*clb.DescribeLoadBalancersResponse, error)
}

var _ LoadBalancerDescriber = (*clb.Client)(nil)

// ReadCAMActions are the CAM actions Driver.ReadCLBs calls: a read only, and optional (without
// it, a reused CLB's scope stays unknown unless loopguard.io/lb-scope says).
func ReadCAMActions() []string { return []string{"clb:DescribeLoadBalancers"} }

// ReusedCLB returns the CLB a Service (service.kubernetes.io/tke-existed-lbid) or an Ingress
// (kubernetes.io/ingress.existLbId) reuses, "" when it names none: the CLB whose type the
// manifest does not say (457/51258, 457/56112).
func ReusedCLB(obj runtime.Object) string {
	switch o := obj.(type) {
	case *corev1.Service:
		if o != nil {
			return strings.TrimSpace(o.Annotations[AnnotationExistedLB])
		}
	case *networkingv1.Ingress:
		if o != nil {
			return strings.TrimSpace(o.Annotations[AnnotationIngressExistLB])
		}
	}
	return ""
}

// maxLoadBalancerIDs is DescribeLoadBalancers' limit on LoadBalancerIds.
const maxLoadBalancerIDs = 20

// ReadCLBs reads, with DescribeLoadBalancers, the type of every CLB the objects reuse
// (ReusedCLB), 20 IDs per call, through the driver's rate limiter and retries. The snapshot is
// for Options.CLBs (WithCLBs gives a driver whose dialect reads it): read first, then translate.
// A CLB the API does not list (a wrong ID, another region) is left out, and the object's scope
// stays unknown as without a read.
//
// A failed read is an error, not a silent unknown: the caller learns why (a *CLBError matching
// core.ErrUnauthenticated that names clb:DescribeLoadBalancers, a core.RetryError after
// throttling) and can still translate without the snapshot, which gives the unknown scope
// and its reason. What was read before the error is returned with it. It needs a CLB client
// (DriverOptions.CLB) that is also a LoadBalancerDescriber; otherwise it is an error matching
// core.ErrUnsupported.
func (d *Driver) ReadCLBs(ctx context.Context, objs ...runtime.Object) (CLBSnapshot, error) {
	snap := CLBSnapshot{}
	var ids []string
	for _, o := range objs {
		if id := ReusedCLB(o); id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return snap, nil
	}
	if d.clb == nil {
		return snap, &core.KindError{Kind: core.ErrUnsupported, Msg: "reading CLB types needs a CLB client (DriverOptions.CLB)"}
	}
	api, ok := d.clb.api.(LoadBalancerDescriber)
	if !ok {
		return snap, &core.KindError{Kind: core.ErrUnsupported, Msg: fmt.Sprintf("the CLB client (%T) has no DescribeLoadBalancersWithContext", d.clb.api)}
	}
	for start := 0; start < len(ids); start += maxLoadBalancerIDs {
		batch := ids[start:min(start+maxLoadBalancerIDs, len(ids))]
		var resp *clb.DescribeLoadBalancersResponse
		err := d.clb.do(ctx, "DescribeLoadBalancers", strings.Join(batch, ","), func(ctx context.Context) error {
			// A request object is not reused across calls: the SDK keeps state in it.
			req := clb.NewDescribeLoadBalancersRequest()
			req.LoadBalancerIds = common.StringPtrs(batch)
			req.Limit = common.Int64Ptr(maxLoadBalancerIDs)
			var err error
			resp, err = api.DescribeLoadBalancersWithContext(ctx, req)
			return err
		})
		if err != nil {
			return snap, err
		}
		if resp.Response == nil {
			continue
		}
		for _, lb := range resp.Response.LoadBalancerSet {
			if lb == nil || lb.LoadBalancerId == nil || !slices.Contains(batch, *lb.LoadBalancerId) {
				continue
			}
			f := CLBFacts{ID: *lb.LoadBalancerId}
			if lb.LoadBalancerType != nil {
				f.Type = *lb.LoadBalancerType
			}
			snap[f.ID] = f
		}
	}
	d.log.Debug("read CLB types", "asked", len(ids), "found", len(snap))
	return snap, nil
}

// WithCLBs returns a driver like d whose dialect (Dialect) reads the facts of l, typically a
// snapshot from ReadCLBs; it shares d's CLB client, rate limiters and options. Build the
// Provider for the objects read with core.NewProvider(w.Dialect(), w).
func (d *Driver) WithCLBs(l CLBLookup) *Driver {
	w := *d
	dl := *d.dialect
	dl.opts.CLBs = l
	w.dialect = &dl
	return &w
}
