package tencent

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
)

// DriverMode says how the driver turns CLB source NAT on.
type DriverMode string

const (
	// ModeServiceConfig, the default, writes TkeServiceConfig entries (and, when the object
	// references none, creates one and the reference annotation); TKE's service and ingress
	// controllers carry them to the CLB (seeds 000/001 solutions 2 and 3).
	ModeServiceConfig DriverMode = "service-config"
	// ModeDirect calls the CLB API itself (ModifyListener SnatEnable / KeepaliveEnable), for
	// hosts that own the CLB: cloud-controller-manager forks and Terraform backends. It needs
	// DriverOptions.CLB.
	ModeDirect DriverMode = "direct"
)

// CAMActions are the Tencent Cloud CAM actions a driver in mode calls, for a sub-account's or
// role's policy (docs/permissions.md): none in ModeServiceConfig, where TKE's own controllers
// call the CLB API with their own role; in ModeDirect the listener read, the listener write
// and the write's task poll. A missing one is a core.ErrUnauthenticated naming it, before
// anything is written.
func CAMActions(mode DriverMode) []string {
	if mode == ModeDirect {
		return []string{"clb:DescribeListeners", "clb:ModifyListener", "clb:DescribeTaskStatus"}
	}
	return nil
}

// Defaults of DriverOptions.
const (
	// DefaultRateLimit is CLB's default frequency limit per API action (docs/sources.md#tke-clb-api,
	// Tencent API docs 214/33789); the driver stays under it on its own side.
	DefaultRateLimit = 20.0
	// DefaultTaskPollInterval is how often a write's task is polled with DescribeTaskStatus.
	DefaultTaskPollInterval = time.Second
	// DefaultTaskTimeout is how long ApplyCloud waits for a task before it returns a
	// core.RetryError (the write is in progress; a later run converges).
	DefaultTaskTimeout = 2 * time.Minute
)

// Backoff says how the driver waits between retries of one CLB call that failed with
// throttling (RequestLimitExceeded*), a busy load balancer
// (FailedOperation.ResourceInOperating) or a transient failure (HTTP 5xx, network,
// InternalError). Delays double from Initial up to Max, with jitter; when the next delay
// would pass Budget the call gives up with a core.RetryError.
type Backoff struct {
	// Initial is the first delay; default 250 ms.
	Initial time.Duration
	// Max caps one delay; default 8 s.
	Max time.Duration
	// Budget is the total time one call may spend retrying; default 60 s.
	Budget time.Duration
}

// DriverOptions configure a Driver. A nil *DriverOptions is the zero value: ModeServiceConfig,
// the documented dialect, no declared allowlists, no logging.
type DriverOptions struct {
	// Dialect configures the dialect the driver reads objects with (Driver.Dialect) and the
	// kube-proxy revision table the intercept-vip plan checks; nil uses the defaults.
	Dialect *Options
	// Mode is ModeServiceConfig (the default) or ModeDirect.
	Mode DriverMode
	// Allowlists are CLB capabilities the account is known to have (CapL4SNAT, CapL7SNAT,
	// CapKeepalive), in addition to the ClusterProfile's allowlists.
	Allowlists []core.Capability

	// CLB is the CLB API client for ModeDirect: a *clb.Client of
	// github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317 (v1.3.156), or
	// anything with the same three methods.
	CLB CLBAPI
	// LoadBalancerID returns the CLB of a Service or Ingress in ModeDirect ("" when it has
	// none yet). Nil reads service.kubernetes.io/loadbalance-id (then tke-existed-lbid) on a
	// Service and kubernetes.io/ingress.qcloud-loadbalance-id (then ingress.existLbId) on an
	// Ingress.
	LoadBalancerID func(obj runtime.Object) (string, error)
	// RateLimit is the client-side limit in requests per second per CLB API action; zero
	// means DefaultRateLimit. Burst is the limiter's burst; zero means 1, which spaces
	// requests evenly and so never exceeds the cloud's per-second window.
	RateLimit float64
	Burst     int
	// ActionRateLimits overrides RateLimit for single actions ("ModifyListener": 5).
	ActionRateLimits map[string]float64
	// Backoff tunes retries of throttled, busy and transiently failed calls.
	Backoff Backoff
	// OnCall, when set, is told of every CLB API request the driver sends (each retry
	// too), with the cloud's error code when it failed ("ClientError.NetworkError" and the
	// like for failures on the way), else "". It runs on the calling goroutine, so it must be
	// quick and safe for concurrent use (adapters/controller.CloudAPIMetrics counts the calls
	// for Prometheus).
	OnCall func(action, code string)
	// TaskPollInterval and TaskTimeout tune waiting for a write's task; zero means
	// DefaultTaskPollInterval and DefaultTaskTimeout.
	TaskPollInterval time.Duration
	TaskTimeout      time.Duration

	// Logger receives the driver's logs (named "tencent"); nil discards. Credentials are
	// never logged.
	Logger hclog.Logger
}

// Driver carries out TKE's remedies for loopguard's Reconciler (core.Driver):
//
//   - intercept-vip: the Service annotation service.cloud.tencent.com/prevent-loopback:
//     "true", written by server-side apply;
//   - lb-snat on a Service: spec.loadBalancer.l4Listeners[].snatEnable: true in its
//     TkeServiceConfig for exactly the Service's (protocol, port) listeners;
//   - lb-snat on an Ingress: spec.loadBalancer.l7Listeners[].snatEnable: true (ingress
//     controller >= v2.9.0) or keepaliveEnable: 1 (older);
//   - in ModeDirect, lb-snat through the CLB API instead (ModifyListener, DescribeListeners,
//     DescribeTaskStatus);
//   - node-separation and dns-steering as changes for the user to make.
//
// Planning observes only; a plan is empty when the decision already holds, so a second run
// writes nothing. Edits touch only the leaves loopguard owns, so every other field, listener
// and annotation survives. A Driver is safe for concurrent use.
type Driver struct {
	dialect *Dialect
	mode    DriverMode
	lbID    func(runtime.Object) (string, error)
	clb     *clbCaller // nil outside ModeDirect
	log     hclog.Logger
	// declared are DriverOptions.Allowlists; read only after NewDriver.
	declared map[core.Capability]bool
}

var _ core.Driver = (*Driver)(nil)

// NewDriver returns the Tencent driver. opts may be nil. Invalid options (an unknown mode or
// capability, ModeDirect without a CLB client, a bad revision table) are an error matching
// core.ErrInvalid.
func NewDriver(opts *DriverOptions) (*Driver, error) {
	var o DriverOptions
	if opts != nil {
		o = *opts
	}
	if err := o.Dialect.Validate(); err != nil {
		return nil, err
	}
	d := &Driver{
		dialect:  NewDialect(o.Dialect),
		mode:     o.Mode,
		lbID:     o.LoadBalancerID,
		log:      o.Logger,
		declared: map[core.Capability]bool{},
	}
	if d.mode == "" {
		d.mode = ModeServiceConfig
	}
	if d.log == nil {
		d.log = hclog.NewNullLogger()
	}
	d.log = d.log.Named("tencent")
	if d.lbID == nil {
		d.lbID = LoadBalancerIDOf
	}
	for _, c := range o.Allowlists {
		if !ValidCapability(c) {
			return nil, fmt.Errorf("tencent.DriverOptions: %w: unknown allowlist %q (want one of %v)", core.ErrInvalid, c, Capabilities())
		}
		d.declared[c] = true
	}
	switch d.mode {
	case ModeServiceConfig:
	case ModeDirect:
		if o.CLB == nil {
			return nil, fmt.Errorf("tencent.DriverOptions: %w: ModeDirect needs a CLB client", core.ErrInvalid)
		}
	default:
		return nil, fmt.Errorf("tencent.DriverOptions: %w: unknown mode %q (want %q or %q)", core.ErrInvalid, d.mode, ModeServiceConfig, ModeDirect)
	}
	if o.CLB != nil {
		c, err := newCLBCaller(o.CLB, &o, d.log)
		if err != nil {
			return nil, err
		}
		d.clb = c
	}
	return d, nil
}

// Dialect returns the dialect the driver plans with: the Tencent dialect, which also counts
// the capabilities declared in DriverOptions.Allowlists as allowlisted, so decisions see them.
// A Provider (NewProvider) hands it to the Reconciler.
func (d *Driver) Dialect() core.Dialect { return driverDialect{d} }

type driverDialect struct{ d *Driver }

func (w driverDialect) Name() string       { return Name }
func (w driverDialect) Rules() []core.Rule { return w.d.dialect.Rules() }

func (w driverDialect) Translate(obj runtime.Object, c *core.Cluster) (*core.Result, error) {
	if c != nil {
		if extra := w.d.grantedBeyond(&c.Profile); len(extra) > 0 {
			p := c.Profile
			p.Allowlists = append(slices.Clone(c.Profile.Allowlists), extra...)
			cc, err := c.WithProfile(p)
			if err != nil {
				return nil, err
			}
			c = cc
		}
	}
	return w.d.dialect.Translate(obj, c)
}

// grantedBeyond lists the capabilities declared in the options that the profile does not list.
func (d *Driver) grantedBeyond(p *core.ClusterProfile) []core.Capability {
	var out []core.Capability
	for _, c := range Capabilities() {
		if d.declared[c] && !p.HasAllowlist(c) {
			out = append(out, c)
		}
	}
	return out
}

// granted reports whether a capability is declared, in the options or the profile.
func (d *Driver) granted(p *core.ClusterProfile, c core.Capability) bool {
	return d.declared[c] || p != nil && p.HasAllowlist(c)
}

// missingAllowlist returns the first capability of caps that is not declared granted, as a
// typed error naming what to ask support for; nil when all are. Refusals by the cloud are not
// remembered here: a host that wants them remembered wires a core.CapabilityCache into its
// Reconciler.
func (d *Driver) missingAllowlist(obj core.ObjectRef, p *core.ClusterProfile, caps []core.Capability) error {
	for _, c := range caps {
		if !d.granted(p, c) {
			return NewAllowlistError(obj, c, nil)
		}
	}
	return nil
}

// Plan observes what the decision in req needs and returns the changes that make it true; an
// empty plan when it holds already. It never writes. Preconditions that do not hold (an
// allowlist not granted, a kube-proxy too old, an unknown ingress controller version) are set
// as Plan.Blocked, which the Reconciler returns before writing anything; errors reading the
// cluster or the cloud are returned.
func (d *Driver) Plan(ctx context.Context, req *core.PlanRequest) (*core.Plan, error) {
	if req == nil || req.Result == nil || req.Object == nil {
		return nil, fmt.Errorf("tencent: %w: a plan request needs the object and its evaluation", core.ErrInvalid)
	}
	dec := req.Result.Decision
	dec.Tickets = slices.Clone(dec.Tickets)
	p := &core.Plan{Object: req.Result.Exposure.Object, Decision: dec}
	offer := findOffer(req.Result.Offers, dec.Remedy)
	if offer != nil {
		p.Notes = append(p.Notes, offer.Notes...)
	}
	pr := &planning{d: d, req: req, plan: p, offer: offer, profile: profileOf(req.Cluster)}
	var err error
	switch dec.Remedy {
	case core.RemedyNone, "":
		return p, nil
	case core.InterceptVIP:
		err = pr.interceptVIP(ctx)
	case core.LBSourceNAT:
		err = pr.sourceNAT(ctx)
		if err == nil && pr.stopsIntercept() {
			// SNAT makes the path through the CLB loop-safe; the backends need traffic on it.
			err = pr.preventLoopbackOff(ctx)
		}
	case core.ThroughLB:
		pr.blockUnmet()
		err = pr.preventLoopbackOff(ctx)
	case core.NodeSeparation, core.DNSSteering:
		pr.forUser()
	default:
		return nil, &core.KindError{Kind: core.ErrUnsupported, Object: p.Object, Msg: fmt.Sprintf("the Tencent driver cannot carry out remedy %q", dec.Remedy)}
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// planning is one Plan call's state.
type planning struct {
	d       *Driver
	req     *core.PlanRequest
	plan    *core.Plan
	offer   *core.Offer
	profile *core.ClusterProfile
}

func profileOf(c *core.Cluster) *core.ClusterProfile {
	if c == nil {
		return &core.ClusterProfile{}
	}
	return &c.Profile
}

func findOffer(offers []core.Offer, r core.Remedy) *core.Offer {
	for i := range offers {
		if offers[i].Remedy == r {
			return &offers[i]
		}
	}
	return nil
}

// block sets the plan's Blocker unless one is set already.
func (pr *planning) block(err error) { pr.plan.Block(err) }

// blockUnmet turns the chosen offer's unmet preconditions, other than allowlists (which the
// driver checks with what it knows), into the plan's Blocked error. Decide never chooses such
// an offer; a host that overrides the decision gets the reason here.
func (pr *planning) blockUnmet() {
	if pr.offer == nil {
		return
	}
	for _, u := range pr.offer.Unmet {
		switch u.Kind {
		case core.PreconditionAllowlist:
		case core.PreconditionUnsupported:
			pr.block(&core.KindError{Kind: core.ErrUnsupported, Object: pr.plan.Object, Msg: u.Reason.Message, Reason: u.Reason})
		case core.PreconditionImmutable:
			pr.block(&core.KindError{Kind: core.ErrImmutable, Object: pr.plan.Object, Msg: u.Reason.Message, Reason: u.Reason})
		default:
			// A version or a fact this plan has no specific check for: the offer's reason
			// says what is missing.
			pr.block(&core.KindError{Kind: core.ErrPrecondition, Object: pr.plan.Object, Msg: u.Reason.Message, Reason: u.Reason})
		}
	}
}

// checkAllowlists blocks a plan that writes something needing capabilities the account is not
// known to have, and drops from the decision's tickets those the driver knows are granted (the
// Reconciler refuses a decision that still lists tickets).
func (pr *planning) checkAllowlists(caps []core.Capability) {
	p := pr.plan
	p.Decision.Tickets = slices.DeleteFunc(p.Decision.Tickets, func(c core.Capability) bool {
		return pr.d.granted(pr.profile, c)
	})
	if p.Empty() {
		return
	}
	if err := pr.d.missingAllowlist(p.Object, pr.profile, caps); err != nil {
		pr.block(err)
	}
}

// forUser plans node-separation and dns-steering: changes to workloads or DNS that loopguard
// does not make; the plan shows them.
func (pr *planning) forUser() {
	pr.blockUnmet()
	ch := core.Change{By: core.WriterUser, Resource: pr.plan.Object.String(), Field: string(pr.plan.Decision.Remedy), To: pr.plan.Decision.Action}
	if pr.offer != nil {
		ch.Reason = pr.offer.Reason
	}
	pr.plan.Changes = append(pr.plan.Changes, ch)
}

// sourceNAT plans lb-snat for a Service (layer 4) or an Ingress (layer 7).
func (pr *planning) sourceNAT(ctx context.Context) error {
	pr.blockUnmetExceptVersion()
	switch o := pr.req.Object.(type) {
	case *corev1.Service:
		if pr.d.mode == ModeDirect {
			return pr.directService(ctx, o)
		}
		return pr.configService(ctx, o)
	case *networkingv1.Ingress:
		if pr.d.mode == ModeDirect {
			return pr.directIngress(ctx, o)
		}
		return pr.configIngress(ctx, o)
	}
	return &core.KindError{Kind: core.ErrUnsupported, Object: pr.plan.Object, Msg: fmt.Sprintf("lb-snat applies to Services and Ingresses, not %T", pr.req.Object)}
}

// blockUnmetExceptVersion is blockUnmet without version preconditions, which the SNAT plans
// check themselves with the component and the version needed.
func (pr *planning) blockUnmetExceptVersion() {
	if pr.offer == nil {
		return
	}
	saved := pr.offer
	o := *saved
	o.Unmet = slices.DeleteFunc(slices.Clone(o.Unmet), func(u core.Precondition) bool { return u.Kind == core.PreconditionVersion })
	pr.offer = &o
	pr.blockUnmet()
	pr.offer = saved
}
