package kubernetes

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// Provider is the plain KEP-1860 dialect as a host holds it (core.Provider). Its driver plans
// the one thing that decides the path on any cloud, the Service's
// status.loadBalancer.ingress[].ipMode, as changes for the host that owns the status
// (core.WriterStatus): a cloud-controller-manager returns them from EnsureLoadBalancer
// (adapters/cloudprovider). Changes to workloads or DNS are for the user.
type Provider struct {
	dialect *Dialect
	driver  *StatusDriver
}

var _ core.Provider = (*Provider)(nil)

// NewProvider returns the provider; opts may be nil.
func NewProvider(opts *Options) *Provider {
	return &Provider{dialect: NewDialect(opts), driver: &StatusDriver{}}
}

// Name is "kubernetes".
func (p *Provider) Name() string { return Name }

// Dialect reads any cloud's LoadBalancer Services.
func (p *Provider) Dialect() core.Dialect { return p.dialect }

// Driver returns the status driver.
func (p *Provider) Driver() (core.Driver, bool) { return p.driver, true }

// StatusDriver plans a decision's path as the ipMode of every IP entry of the Service's status
// (hostname-only entries carry no ipMode and are left alone), for the host that owns the
// status. It reads nothing beyond the request and writes nothing itself. It is safe for
// concurrent use.
type StatusDriver struct{}

var _ core.Driver = (*StatusDriver)(nil)

// Plan returns, for a decision whose path is VIP or Proxy, the status changes PlanStatus
// makes (one core.WriterStatus change per IP entry whose ipMode must change); node separation
// and DNS steering add a change for the user. An empty plan means the status already says the
// decided path. lb-snat is refused: the plain driver cannot make a cloud's load balancer
// replace the source address. A cloud's own fix (the offer the decision names, with its
// changes: an annotation its controller reads, or a step for the user) is planned as it is.
func (sd StatusDriver) Plan(_ context.Context, req *core.PlanRequest) (*core.Plan, error) {
	if req == nil || req.Result == nil || req.Object == nil {
		return nil, fmt.Errorf("kubernetes: %w: a plan request needs the object and its evaluation", core.ErrInvalid)
	}
	if _, ok := req.Object.(*corev1.Service); !ok {
		return nil, &core.KindError{Kind: core.ErrUnsupported, Msg: fmt.Sprintf("only a Service has an ipMode, not %T", req.Object)}
	}
	dec := req.Result.Decision
	p := &core.Plan{Object: req.Result.Exposure.Object, Decision: dec}
	for i := range req.Result.Offers {
		if o := &req.Result.Offers[i]; o.Remedy == dec.Remedy {
			p.Notes = append(p.Notes, o.Notes...)
		}
	}
	if o := chosenOffer(req.Result); o != nil {
		p.Changes = append(p.Changes, o.Changes...)
		return p, nil
	}
	switch dec.Remedy {
	case core.RemedyNone, "":
		return p, nil
	case core.InterceptVIP, core.NodeSeparation, core.ThroughLB:
	case core.DNSSteering:
		p.Changes = append(p.Changes, userChange(p, &dec))
		return p, nil
	default:
		return nil, &core.KindError{Kind: core.ErrUnsupported, Object: p.Object, Msg: fmt.Sprintf("the plain Kubernetes driver cannot carry out remedy %q", dec.Remedy)}
	}
	changes, notes := PlanStatus(req)
	p.Changes = append(p.Changes, changes...)
	p.Notes = append(p.Notes, notes...)
	if dec.Remedy == core.NodeSeparation {
		p.Changes = append(p.Changes, userChange(p, &dec))
	}
	return p, nil
}

// PlanStatus is the one rule that turns a decision into status.loadBalancer.ingress[].ipMode,
// for every host that owns a Service's status: this provider's StatusDriver, and
// adapters/cloudprovider, which adds it to any other cloud's plan. It returns one
// core.WriterStatus change per IP entry of req.Object's status whose ipMode differs from the
// decided path (an entry without one reads as VIP, as the API server defaults it), and notes
// for the entries it leaves alone on purpose:
//
//   - a decision without a path (no remedy) changes nothing;
//   - an entry the cloud published as Proxy becomes VIP only when the backends are known to
//     need nothing from the load balancer (Exposure.Dependence().Any() is No): the cloud may
//     have set Proxy for a reason loopguard cannot see (a PROXY protocol turned on by the
//     CCM's defaults, TLS ended at the LB), and intercepting would break every in-cluster
//     client of such a backend (docs/ccm.md). One note (k8s-keep-cloud-proxy) names every
//     entry kept;
//   - an entry whose ipMode the user set in the cloud's own annotation (UserIPMode) gets the
//     user's value, never the decision's: where the decided path differs, UserIPModeNote says
//     what loopguard would publish and why.
//
// A tentative decision's changes are planned like any other; the Reconciler refuses to apply
// them until the facts are known.
func PlanStatus(req *core.PlanRequest) ([]core.Change, []core.Reason) {
	svc, ok := req.Object.(*corev1.Service)
	if !ok || req.Result == nil {
		return nil, nil
	}
	dec := req.Result.Decision
	mode, ok := decidedIPMode(&dec)
	if !ok {
		return nil, nil
	}
	needs := req.Result.Exposure.Dependence().Any()
	key, _ := core.KeyOf(svc)
	user, userWhy, userSet := UserIPMode(svc, req.Cluster)
	var changes []core.Change
	var notes []core.Reason
	var kept []string
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IP == "" {
			continue
		}
		have := corev1.LoadBalancerIPModeVIP
		if ing.IPMode != nil {
			have = *ing.IPMode
		}
		if userSet {
			// What the user wrote, as the cloud's controller publishes it; never the decision's.
			if have != user {
				changes = append(changes, ipModeChange(key, ing.IP, have, user, userWhy))
			}
			continue
		}
		if have == mode {
			continue
		}
		if have == corev1.LoadBalancerIPModeProxy && needs != core.No {
			kept = append(kept, ing.IP)
			continue
		}
		changes = append(changes, ipModeChange(key, ing.IP, have, mode, dec.Reason))
	}
	if len(kept) > 0 {
		// One note for the Service: every entry is kept for the same reason, and a host that
		// reports it (the decorator's Event) needs no merging and no search for an address.
		why := "unknown"
		if needs == core.Yes {
			why = "yes: " + req.Result.Exposure.Dependence().String()
		}
		notes = append(notes, ruleKeepCloudProxy.Because("kept ipMode Proxy on "+strings.Join(kept, ", ")+" ("+string(dec.Remedy)+
			" would publish VIP; whether the backends need the load balancer: "+why+")"))
	}
	if n, ok := UserIPModeNote(req); ok {
		notes = append(notes, n)
	}
	return changes, notes
}

// ipModeChange is the status change that sets the ipMode of the entry with this ip.
func ipModeChange(key core.ObjectKey, ip string, from, to corev1.LoadBalancerIPMode, why core.Reason) core.Change {
	return core.Change{
		By: core.WriterStatus, Object: &key,
		Field: "status.loadBalancer.ingress[ip=" + ip + "].ipMode", From: string(from), To: string(to),
		Edits: []core.Edit{{Path: []core.PathElem{dialect.F("status"), dialect.F("loadBalancer"), dialect.F("ingress"),
			dialect.K(map[string]any{"ip": ip}), dialect.F("ipMode")}, Value: string(to)}},
		Reason: why,
	}
}

// decidedIPMode is the ipMode a decision's path means; false when it has none.
func decidedIPMode(dec *core.Decision) (corev1.LoadBalancerIPMode, bool) {
	switch {
	case dec.Remedy == core.RemedyNone || dec.Remedy == "":
		return "", false
	case dec.Path == core.PathProxy:
		return corev1.LoadBalancerIPModeProxy, true
	case dec.Path == core.PathVIP:
		return corev1.LoadBalancerIPModeVIP, true
	}
	return "", false
}

func userChange(p *core.Plan, dec *core.Decision) core.Change {
	return core.Change{By: core.WriterUser, Resource: p.Object.String(), Field: string(dec.Remedy), To: dec.Action, Reason: dec.Reason}
}

// ApplyCloud reports core.ErrUnsupported: the plain driver writes no cloud.
func (StatusDriver) ApplyCloud(context.Context, *core.Change) (core.ApplyResult, error) {
	return core.ApplyResult{}, &core.KindError{Kind: core.ErrUnsupported, Msg: "the plain Kubernetes driver makes no cloud changes: the ipMode is the cloud-controller-manager's to publish"}
}
