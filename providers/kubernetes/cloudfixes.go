package kubernetes

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// cloudFix is one documented remedy a user can make on their cloud by annotating the Service:
// the offer Decide weighs, and the annotation edits the driver plans for it.
type cloudFix struct {
	offer core.Offer
	// edits are annotation key → value; nil when the value is not known (the plan is the
	// user's then).
	edits map[string]string
}

// cloudFixes lists the fixes of the cloud the exposure is on. They are carried out through the
// cluster writer (server-side apply of one annotation), which the cloud's controller reads.
func cloudFixes(svc *corev1.Service, e *core.Exposure, st *statusFacts, dp *dataplane, det detection) []cloudFix {
	if det.row == nil {
		return nil
	}
	var out []cloudFix
	needsLB := e.Needs.Any() == core.Yes || e.ProxyProtocol == core.Yes
	switch det.row.Cloud {
	case CloudAWS:
		if e.LBSourceNAT == core.No && e.Intercept != core.Yes {
			out = append(out, awsClientIPFix(svc, e))
		}
	case CloudOracle:
		if e.Intercept == core.Yes && needsLB && len(st.ips()) > 0 {
			o := throughLBOffer(e, st, dp)
			o.Action = "set metadata.annotations[\"" + annOCIIngressIPMode + "\"]: \"proxy\" (the OKE cloud-controller-manager then publishes ipMode Proxy)"
			o.Reason = ruleOfferOCIIPMode.Reason()
			out = append(out, cloudFix{offer: o, edits: map[string]string{annOCIIngressIPMode: "proxy"}})
		}
	}
	if h := det.row.HostnameAnnotation; h != "" && e.Intercept == core.Yes && needsLB {
		value := det.row.HostnameValue
		if value == "" {
			value = firstName(svc.Annotations[annExternalDNS])
		}
		action := "set metadata.annotations[\"" + h + "\"]: "
		if value != "" {
			action += quote(value)
		} else {
			action += "a DNS name that resolves to the load balancer"
		}
		action += " (the cloud-controller-manager then publishes a hostname, which no node intercepts)"
		o := dialect.ThroughLBOffer(e, action)
		o.Reason = ruleOfferHostname.Because(string(det.row.Cloud) + ": " + h + " (" + det.row.Source + ")")
		f := cloudFix{offer: o}
		if value == "" {
			f.offer.Unmet = append(f.offer.Unmet, core.Precondition{Kind: core.PreconditionUnknown, Reason: ruleHostnameNeedsName.Reason()})
		} else {
			f.edits = map[string]string{h: value}
		}
		out = append(out, f)
	}
	return out
}

// awsClientIPFix turns client IP preservation off on an AWS Load Balancer Controller NLB.
func awsClientIPFix(svc *corev1.Service, e *core.Exposure) cloudFix {
	cur := svc.Annotations[annAWSTargetGroupAttrs]
	want := setStringMapValue(cur, "preserve_client_ip.enabled", "false")
	clientIP := core.ClientIPLost
	if stringMapValue(cur, "proxy_protocol_v2.enabled") == "true" {
		clientIP = core.ClientIPProxyProtocol
	}
	o := core.Offer{
		Remedy: core.LBSourceNAT, Path: core.PathProxy,
		Action: "set metadata.annotations[\"" + annAWSTargetGroupAttrs + "\"]: " + quote(want) +
			" (add proxy_protocol_v2.enabled=true only if the backends read the PROXY header)",
		Costs:  core.Costs{ClientIP: clientIP},
		Reason: ruleOfferAWSClientIP.Reason(),
	}
	f := awsFlavourOf(svc)
	switch {
	case !f.lbc:
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnsupported, Reason: ruleAWSLegacyNoKnob.Because(f.what + ": move the Service to the AWS Load Balancer Controller (a new load balancer and address)")})
		o.Costs.NewObject = true
		return cloudFix{offer: o}
	case e.Protocols&core.UDP != 0:
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnsupported, Reason: ruleAWSClientIPUDP.Reason()})
		return cloudFix{offer: o}
	}
	return cloudFix{offer: o, edits: map[string]string{annAWSTargetGroupAttrs: want}}
}

// setStringMapValue sets key=value in a stringMap annotation ("k1=v1,k2=v2"), keeping every
// other pair in its place.
func setStringMapValue(v, key, value string) string {
	var parts []string
	found := false
	for _, kv := range strings.Split(v, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		if k, _, ok := strings.Cut(kv, "="); ok && strings.TrimSpace(k) == key {
			kv, found = key+"="+value, true
		}
		parts = append(parts, kv)
	}
	if !found {
		parts = append(parts, key+"="+value)
	}
	return strings.Join(parts, ",")
}

// firstName is the first of external-dns's comma-separated hostnames.
func firstName(v string) string {
	n, _, _ := strings.Cut(v, ",")
	return strings.TrimSpace(n)
}

// planCloudFix plans the annotation edits of the cloud fix whose action the decision carries;
// ok is false when the decision is not a cloud fix.
func planCloudFix(d *Dialect, svc *corev1.Service, req *core.PlanRequest, p *core.Plan) (bool, error) {
	tr, err := d.Translate(svc, req.Cluster)
	if err != nil {
		return false, err
	}
	c := req.Cluster
	if c == nil {
		c, _ = core.NewCluster(core.ClusterProfile{})
	}
	st := statusOf(svc.Status.LoadBalancer.Ingress)
	fixes := cloudFixes(svc, &tr.Exposure, &st, d.dataplane(&c.Profile), detectCloud(svc, c))
	dec := &p.Decision
	for i := range fixes {
		f := &fixes[i]
		if f.offer.Remedy != dec.Remedy || f.offer.Action != dec.Action {
			continue
		}
		if f.edits == nil {
			p.Changes = append(p.Changes, userChange(p, dec))
			return true, nil
		}
		key, _ := core.KeyOf(svc)
		keys := make([]string, 0, len(f.edits))
		for k := range f.edits {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			cur, set := svc.Annotations[k]
			if set && cur == f.edits[k] {
				continue
			}
			k2 := key
			p.Changes = append(p.Changes, core.Change{
				By: core.WriterCluster, Object: &k2,
				Field: "metadata.annotations[\"" + k + "\"]", From: cur, To: f.edits[k],
				Edits:    []core.Edit{{Path: []core.PathElem{dialect.F("metadata"), dialect.F("annotations"), dialect.F(k)}, Value: f.edits[k]}},
				Strategy: core.StrategyApply,
				Reason:   f.offer.Reason,
			})
		}
		return true, nil
	}
	return false, nil
}

func (sd StatusDriver) planCloudFix(svc *corev1.Service, req *core.PlanRequest, p *core.Plan) (bool, error) {
	switch p.Decision.Remedy {
	case core.LBSourceNAT, core.ThroughLB:
	default:
		return false, nil
	}
	d := sd.d
	if d == nil {
		d = NewDialect(nil)
	}
	return planCloudFix(d, svc, req, p)
}

// CloudFixDriver plans only the clouds' own fixes (clouds.go): annotations the user's cloud
// controller reads, written through the cluster writer. Every other decision is the
// cloud-controller-manager's to publish (ipMode) and answers core.ErrUnsupported, so a host
// without the status in hand (the CLI) plans what it can write and says so for the rest.
type CloudFixDriver struct{ d *Dialect }

var _ core.Driver = (*CloudFixDriver)(nil)

// NewCloudFixProvider returns the plain dialect with the CloudFixDriver; opts may be nil.
func NewCloudFixProvider(opts *Options) core.Provider {
	d := NewDialect(opts)
	return core.NewProvider(d, &CloudFixDriver{d: d})
}

// Plan plans the cloud fix the decision carries, or answers core.ErrUnsupported.
func (cd *CloudFixDriver) Plan(_ context.Context, req *core.PlanRequest) (*core.Plan, error) {
	if req == nil || req.Result == nil || req.Object == nil {
		return nil, fmt.Errorf("kubernetes: %w: a plan request needs the object and its evaluation", core.ErrInvalid)
	}
	svc, ok := req.Object.(*corev1.Service)
	p := &core.Plan{Object: req.Result.Exposure.Object, Decision: req.Result.Decision}
	if p.Decision.Remedy == core.RemedyNone || p.Decision.Remedy == "" {
		return p, nil
	}
	if ok && (p.Decision.Remedy == core.LBSourceNAT || p.Decision.Remedy == core.ThroughLB) {
		if done, err := planCloudFix(cd.d, svc, req, p); done || err != nil {
			return p, err
		}
	}
	return nil, &core.KindError{Kind: core.ErrUnsupported, Object: p.Object,
		Msg: "only the cloud's own annotation fixes are written here; " + string(p.Decision.Remedy) + " is the cloud-controller-manager's to publish (status.loadBalancer.ingress[].ipMode) or the user's; the decision's action says who can"}
}

// ApplyCloud reports core.ErrUnsupported: the fixes are annotations the cloud's controller reads.
func (*CloudFixDriver) ApplyCloud(context.Context, *core.Change) (core.ApplyResult, error) {
	return core.ApplyResult{}, &core.KindError{Kind: core.ErrUnsupported, Msg: "the plain Kubernetes driver makes no cloud API calls"}
}
