package kubernetes

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// Name is the provider name of this dialect in profiles and output.
const Name = "kubernetes"

// Options tune the dialect. The zero value (or a nil *Options) is ready to use.
type Options struct {
	// ScopeAnnotations extends the built-in table of internal-LB annotations (ScopeAnnotations)
	// with a cloud or CCM fork loopguard does not know. They are read after the built-in rows.
	ScopeAnnotations []ScopeAnnotation
	// BehindLB says which nodes the load balancer sends to; the zero NodeFilter means every
	// node not labelled node.kubernetes.io/exclude-from-external-load-balancers. Give it a Key
	// so a Cluster computes it once.
	BehindLB core.NodeFilter
	// OwnsStatus says the host publishes status.loadBalancer.ingress[] itself (a CCM fork
	// with adapters/cloudprovider, which sets it through StatusOwner): ipMode is then the
	// host's to publish on any cloud, and what the cloud's own controller does with it
	// (CloudFacts.IPMode) no longer limits the offers.
	OwnsStatus bool
}

// StatusOwner returns d as a host that publishes the status sees it: a *Dialect gets a copy
// with Options.OwnsStatus set; any other dialect is returned unchanged.
func StatusOwner(d core.Dialect) core.Dialect {
	kd, ok := d.(*Dialect)
	if !ok || kd == nil || kd.opts.OwnsStatus {
		return d
	}
	opts := kd.opts
	opts.OwnsStatus = true
	return NewDialect(&opts)
}

// Dialect is the plain KEP-1860 dialect: it reads status.loadBalancer.ingress[] (ip, hostname,
// ipMode), the cluster's service proxy and its version, and the clouds' well-known annotations.
// It reads only. It is safe for concurrent use.
type Dialect struct {
	opts Options

	mu  sync.RWMutex
	dps map[dpKey]*dataplane
}

var _ core.Dialect = (*Dialect)(nil)

// NewDialect returns the dialect; opts may be nil.
func NewDialect(opts *Options) *Dialect {
	d := &Dialect{dps: map[dpKey]*dataplane{}}
	if opts != nil {
		d.opts = *opts
		d.opts.ScopeAnnotations = append([]ScopeAnnotation(nil), opts.ScopeAnnotations...)
	}
	return d
}

// Recognizes reports whether this dialect can read obj. It is the fallback dialect for any
// cloud, so it always says yes; Translate still answers ErrNotExposed for objects that are not
// LoadBalancer Services.
func Recognizes(obj runtime.Object) bool { return true }

// Name returns "kubernetes".
func (d *Dialect) Name() string { return Name }

// Rules lists the dialect's documented rules.
func (d *Dialect) Rules() []core.Rule { return append(rules(), cloudRules()...) }

// Translate reads one *corev1.Service. Ingress objects have no ipMode, so for them (and for
// Services that are not of type LoadBalancer, and any other kind) it returns an error matching
// core.ErrNotExposed. A status that the API server would reject, or a bad loopguard.io
// annotation, is a *core.InvalidError naming every field at fault; nothing partial is
// returned. c may be nil (nothing known about the cluster). Translate does not modify obj.
func (d *Dialect) Translate(obj runtime.Object, c *core.Cluster) (*core.Result, error) {
	switch o := obj.(type) {
	case *corev1.Service:
		if o == nil {
			return nil, &core.KindError{Kind: core.ErrNotExposed, Object: core.ObjectRef{Kind: "Service"}, Msg: "nil Service"}
		}
		return d.service(o, c)
	case *networkingv1.Ingress:
		ref := core.ObjectRef{Kind: "Ingress"}
		if o != nil {
			ref.Namespace, ref.Name = o.Namespace, o.Name
		}
		return nil, &core.KindError{Kind: core.ErrNotExposed, Object: ref,
			Msg: "Ingress objects have no ipMode: loopguard assesses the ingress controller's LoadBalancer Service instead", Reason: ruleIngressNoIPMode.Reason()}
	default:
		return nil, &core.KindError{Kind: core.ErrNotExposed, Object: core.ObjectRef{Kind: fmt.Sprintf("%T", obj)},
			Msg: "not a Service or Ingress"}
	}
}

func (d *Dialect) service(svc *corev1.Service, c *core.Cluster) (*core.Result, error) {
	if c == nil {
		// NewCluster fails only on a bad profile client selector; the zero profile has none.
		c, _ = core.NewCluster(core.ClusterProfile{})
	}
	ingress := svc.Status.LoadBalancer.Ingress
	var statusErrs field.ErrorList
	if !obviouslyValid(ingress) {
		statusErrs = ValidateIngressStatus(IngressStatusPath(), ingress)
	}
	base, ov, err := dialect.ServiceBase(Name, svc, c, d.opts.BehindLB)
	if err != nil {
		var ie *core.InvalidError
		if len(statusErrs) > 0 && errors.As(err, &ie) {
			all := append(append(field.ErrorList(nil), ie.Errs...), statusErrs...)
			return nil, dialect.Invalid(ie.Object, all)
		}
		return nil, err
	}
	if len(statusErrs) > 0 {
		return nil, dialect.Invalid(base.Object, statusErrs)
	}
	// The Result is made here and the exposure built in it: a cloud unit keeps a pointer to
	// the exposure, which would otherwise move it to the heap and cost a second copy.
	r := &core.Result{Exposure: base}
	e := &r.Exposure

	// Which units read the Service (units.go): every unit whose annotations it carries, and
	// the unit of the cloud it is on. The status facts live in the units' view when there is
	// one (a unit keeps a pointer to them), else on the stack.
	det := detectCloud(svc, c)
	var v *cloudView
	var own statusFacts
	st := &own
	if det.unit != nil || det.annotated != 0 {
		v = &cloudView{svc: svc, c: c, protos: e.Protocols, ownsStatus: d.opts.OwnsStatus}
		st = &v.st
	}
	*st = statusOf(ingress)
	dp := d.dataplane(&c.Profile)
	e.Intercept = intercept(st, dp, e)
	// dialect.ServiceBase sets InterceptMasquerades from the proxy mode and the traffic policy;
	// say why when it matters, that is when the traffic is intercepted.
	if e.Intercept == core.Yes && e.InterceptMasquerades == core.Yes {
		e.Reasons = append(e.Reasons, ruleInterceptMasquerade.Reason())
	}
	if dp.mode == core.ProxyModeIPVS && len(st.vips)+len(st.defaulted) > 0 {
		e.Notes = append(e.Notes, ruleIPVSProbe.Reason())
	}

	if ov.Scope == core.ScopeUnknown {
		d.scopeOf(svc, e)
	}
	if v != nil {
		readClouds(v, &det)
		if det.unit != nil {
			e.Notes = append(e.Notes, ruleCloudDetected.Because(v.f.name+", from "+det.why))
		}
		e.Notes = append(e.Notes, v.rd.notes...)
	}
	var rd cloudReading
	if v != nil {
		rd = v.rd
	}
	snat := rd.snat
	if len(snat) == 0 {
		// The cloud's default, only where the Service's own settings said nothing.
		snat = rd.defaults
	}
	if ov.LBSourceNAT == core.Unknown || len(snat) > 0 {
		applySourceNAT(e, snat, rd.unseen)
	}
	header := rd.header
	if f, ok := ingressNginxProxy(svc, c); ok {
		header = append(header, f)
	}
	applyProxyHeader(e, header)
	if len(rd.tls) > 0 {
		e.Needs.TLS = core.Yes
		e.Reasons = append(e.Reasons, rd.tls...)
	}
	ov.Apply(e)

	var fixes []cloudFix
	if det.unit != nil {
		v.e, v.dp = e, dp
		fixes = det.unit.fixes(v)
	}
	// Sized once: an Offer is 240 bytes, and growing the slice for the cloud's fixes
	// and the through-LB offer copied every offer again.
	// The other direction: an intercepted address whose backends need the LB.
	throughLB := e.Intercept == core.Yes && len(st.ips()) > 0 && (e.Needs.Any() == core.Yes || e.ProxyProtocol == core.Yes)
	n := 3 + len(fixes)
	if throughLB {
		n++
	}
	offers := make([]core.Offer, 3, n)
	offers[0] = interceptOffer(e, st, dp, rd.vipHint)
	offers[1] = nodeSeparationOffer(svc, e, st, dp)
	offers[2] = dialect.DNSSteeringOffer(e, svc.Namespace, svc.Name, st.hostnames)
	offers[1].ID, offers[2].ID = offerSeparation, offerDNS
	// The cloud's own fixes come before the generic ones a CCM fork carries out, so a tie in
	// Decide's ranking goes to what the user can apply.
	for _, f := range fixes {
		offers = append(offers, f.offer)
	}
	if throughLB {
		// Publishing
		// ipMode Proxy is the controller's; where the cloud's controller never does it, the
		// offer says so (the unit's facts), unless the host is the controller.
		o := throughLBOffer(e, st, dp)
		o.Unmet = append(o.Unmet, rd.throughLBUnmet...)
		if !d.opts.OwnsStatus && det.unit != nil {
			ccmIPModeLimits(&o, v)
		}
		offers = append(offers, o)
	}
	r.Offers = offers
	return r, nil
}

// interceptOffer is "publish ipMode VIP". Only the owner of the status can carry it out: the
// cloud-controller-manager (a CCM fork, with adapters/cloudprovider). A dataplane never ignores
// VIP (one that does not know ipMode treats every LB IP as VIP), so there is no version gate.
func interceptOffer(e *core.Exposure, st *statusFacts, dp *dataplane, hint string) core.Offer {
	o := core.Offer{
		ID:     offerIntercept,
		Remedy: core.InterceptVIP,
		Path:   core.PathVIP,
		Costs:  core.Costs{LosesLBFeatures: true, ClientIP: core.ClientIPKept},
		Reason: ruleOfferInterceptVIP.Reason(),
	}
	switch e.InterceptMasquerades {
	case core.Yes:
		// Intercepted traffic reaches the backend from a node address (ruleInterceptMasquerade).
		o.Costs.ClientIP = core.ClientIPLost
	case core.Unknown:
		o.Costs.ClientIP = core.ClientIPUnknown
	}
	// Built in one concatenation (a Builder grew and copied twice per Service).
	var what, ips string
	switch {
	case len(st.proxy) > 0:
		what, ips = "change status.loadBalancer.ingress[].ipMode from Proxy to VIP for ", strings.Join(st.proxy, ", ")
	case len(st.vips)+len(st.defaulted) > 0:
		what, ips = "keep status.loadBalancer.ingress[].ipMode VIP for ", strings.Join(st.ips(), ", ")
	default:
		what = "publish an ip with status.loadBalancer.ingress[].ipMode: VIP"
	}
	sep := ""
	if hint != "" {
		// The cloud's own knob for it (a unit's cloudReading.vipHint).
		sep = "; "
	}
	o.Action = what + ips + " (the status belongs to the cloud-controller-manager: a CCM fork publishes it through loopguard's adapters/cloudprovider)" + sep + hint

	switch {
	case st.n == 0:
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnknown, Reason: ruleNotProvisioned.Reason()})
	case len(st.ips()) == 0:
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnsupported,
			Reason: ruleVIPNeedsIP.Because("The load balancer publishes only " + strings.Join(st.hostnames, ", ") + "; there is no IP for nodes to intercept.")})
	}
	switch dp.programsVIP {
	case core.Unknown:
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnknown, Reason: dp.vipReason})
	case core.No:
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnsupported, Reason: dp.vipReason})
	}
	if e.ProxyProtocol == core.Yes {
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnsupported, Reason: ruleVIPBreaksProxyProtocol.Reason()})
	}
	return o
}

// nodeSeparationOffer is core's node separation, which needs in-cluster traffic to stay on the
// load balancer: Proxy-mode addresses only do when the dataplane honours Proxy.
func nodeSeparationOffer(svc *corev1.Service, e *core.Exposure, st *statusFacts, dp *dataplane) core.Offer {
	o := dialect.NodeSeparationOffer(e, svc.Spec.Selector)
	switch {
	case st.n == 0:
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnknown, Reason: ruleNotProvisioned.Reason()})
	case len(st.proxy) > 0 && dp.honoursProxy != core.Yes:
		kind := core.PreconditionUnknown
		if dp.honoursProxy == core.No {
			kind = core.PreconditionVersion
		}
		o.Unmet = append(o.Unmet, core.Precondition{Kind: kind,
			Reason: ruleNodeSeparationNeedsProxy.Because(dp.proxyReason.Message + " (" + dp.component + " " + orUnknown(dp.have) + ", need " + orUnknown(dp.need) + ")")})
	}
	return o
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
