package kubernetes

import (
	"context"
	"fmt"
	"sort"
	"strconv"
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
// ownsStatus is Options.OwnsStatus: a host that is the controller has no controller to upgrade.
// cl holds the inputs' other objects (the cloud controller's Pod).
func cloudFixes(svc *corev1.Service, e *core.Exposure, st *statusFacts, dp *dataplane, det detection, ownsStatus bool, cl *core.Cluster) []cloudFix {
	if det.row == nil {
		return nil
	}
	var out []cloudFix
	needsLB := e.Needs.Any() == core.Yes || e.ProxyProtocol == core.Yes
	intercepted := e.Intercept == core.Yes && needsLB
	switch det.row.Cloud {
	case CloudAWS:
		if e.LBSourceNAT == core.No && e.Intercept != core.Yes {
			out = append(out, awsClientIPFix(svc, e))
		}
	case CloudAlibaba:
		if alibabaNLB(svc) && e.LBSourceNAT == core.No && e.Intercept != core.Yes {
			out = append(out, alibabaClientIPFix(svc, e))
		}
	}
	// The hostname first: it needs no dataplane that honours ipMode Proxy, so a tie goes to it.
	// A literal switch the user already set otherwise ("false") is their choice: not offered.
	if h := det.row.HostnameAnnotation; h != "" && intercepted && !declined(svc, h, det.row.HostnameValue) {
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
	m := det.row.IPMode
	if !intercepted || len(st.ips()) == 0 {
		return out
	}
	// The annotation the controller reads for the ipMode (Oracle, Scaleway).
	if have := svc.Annotations[m.Annotation]; m.Annotation != "" && have != m.ProxyValue &&
		!(det.row.Cloud == CloudOracle && strings.EqualFold(have, m.ProxyValue)) { // OKE lowercases it
		o := throughLBOffer(e, st, dp)
		ccm := "the " + string(det.row.Cloud) + " cloud-controller-manager"
		if m.Since != "" {
			ccm += " (" + m.Since + " or later)"
		}
		o.Action = "set metadata.annotations[\"" + m.Annotation + "\"]: " + quote(m.ProxyValue) + " (" + ccm + " then publishes ipMode Proxy)"
		o.Reason = ruleOfferIPModeAnnotation.Because(string(det.row.Cloud) + ": the cloud-controller-manager publishes the ipMode " + m.Annotation + " names (" + m.Source + ")")
		if det.row.Cloud == CloudOracle {
			o.Reason = ruleOfferOCIIPMode.Reason()
		}
		out = append(out, cloudFix{offer: o, edits: map[string]string{m.Annotation: m.ProxyValue}})
	}
	// A controller that publishes Proxy by itself with the PROXY protocol, yet this status
	// has VIP: it is older than the release that began to (or was told otherwise).
	if on, since := ccmProxyProtocolFor(det.row, svc, cl); on && !ownsStatus && len(st.vips)+len(st.defaulted) > 0 &&
		(m.Annotation == "" || svc.Annotations[m.Annotation] == "") {
		o := throughLBOffer(e, st, dp)
		o.Action = "upgrade the " + string(det.row.Cloud) + " cloud-controller-manager to " + since +
			" or later (it publishes ipMode Proxy by itself while the PROXY protocol is on; this status has VIP for " +
			strings.Join(append(append([]string(nil), st.vips...), st.defaulted...), ", ") + ")"
		src := m.Source
		if since != m.Since {
			src += "; " + srcHetznerDefaults
		}
		o.Reason = ruleOfferCCMUpgrade.Because(string(det.row.Cloud) + ": the cloud-controller-manager publishes ipMode Proxy by itself while the PROXY protocol is on, since " +
			since + "; an older one publishes VIP (" + src + ")")
		out = append(out, cloudFix{offer: o})
	}
	return out
}

// declined reports a switch annotation (want is its "on" value) that the Service sets to
// something else.
func declined(svc *corev1.Service, key, want string) bool {
	have, set := svc.Annotations[key]
	return want != "" && set && have != want
}

// ccmIPModeLimits marks the generic "publish ipMode Proxy" offer unsupported on a cloud whose
// controller's source was read and does not publish it for this Service: there only a fork
// of the controller could, and the user runs the cloud's. The fixes the controller does read
// are offered by cloudFixes.
func ccmIPModeLimits(o *core.Offer, svc *corev1.Service, det detection, cl *core.Cluster) {
	if det.row == nil || !det.row.IPMode.Read {
		return
	}
	m := det.row.IPMode
	if bareMetal(det.row.Cloud) {
		// No box to go through: the announcing node's service proxy is the load balancer, and
		// kube-proxy programs no Proxy-mode address (KEP-1860), so Proxy would strand even the
		// traffic from outside on the node that answers the address.
		o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnsupported,
			Reason: ruleCCMNoProxyIPMode.Because(string(det.row.Cloud) + ": the controller publishes the address as an IP, never a hostname or ipMode Proxy, and there is no load balancer in front of the nodes to go through: the nodes announce the address and their service proxy answers it [" + m.Source + "]")})
		return
	}
	var what string
	on, since := ccmProxyProtocolFor(det.row, svc, cl)
	switch {
	case m.Annotation != "":
		what = "publishes ipMode from " + m.Annotation + " (offered on its own)"
	case on:
		what = "publishes ipMode Proxy by itself while the PROXY protocol is on, since " + since + " (offered on its own as an upgrade)"
	case m.WithProxyProtocol:
		what = "publishes ipMode Proxy only while the PROXY protocol is on, which this Service does not turn on"
	default:
		what = "never publishes ipMode Proxy; only a fork of it could (loopguard's adapters/cloudprovider)"
	}
	o.Unmet = append(o.Unmet, core.Precondition{Kind: core.PreconditionUnsupported,
		Reason: ruleCCMNoProxyIPMode.Because(string(det.row.Cloud) + ": the cloud-controller-manager " + what + " [" + m.Source + "]")})
}

// bareMetal reports the implementations without a load-balancer box (MetalLB, kube-vip,
// Cilium LB IPAM): the nodes announce the address and their service proxy answers it.
func bareMetal(c Cloud) bool {
	return c == CloudMetalLB || c == CloudKubeVIP || c == CloudCilium
}

// ccmProxyProtocolFor says whether the controller sees the PROXY protocol on for the Service
// and publishes ipMode Proxy for it, and from which release: the Service's annotation since the
// row's release, or, for Hetzner, the controller's cluster-wide default (its Pod's environment
// in the inputs) since v1.29.1, when the status began to follow the default (#1131).
func ccmProxyProtocolFor(row *CloudFacts, svc *corev1.Service, cl *core.Cluster) (bool, string) {
	m := row.IPMode
	switch {
	case !m.WithProxyProtocol:
		return false, ""
	case ccmProxyProtocolOn(row.Cloud, svc):
		return true, m.Since
	case row.Cloud == CloudHetzner && len(hetznerDefaultProxyProtocol(svc, cl, true, "")) > 0:
		return true, "v1.29.1"
	}
	return false, ""
}

// ccmProxyProtocolOn is the controller's own test for "the PROXY protocol is on", where it
// publishes ipMode Proxy from it.
func ccmProxyProtocolOn(c Cloud, svc *corev1.Service) bool {
	ann := svc.Annotations
	switch c {
	case CloudHetzner:
		on, err := strconv.ParseBool(ann[annHetznerProxyProtocol])
		return err == nil && on
	case CloudOpenStack:
		switch ann[annOpenStackProxyProtocol] {
		case "true", "v1", "v2":
			return true
		}
	case CloudScaleway:
		// Every port, by the v1 or the v2 annotation (scaleway/loadbalancers.go ipMode).
		if len(svc.Spec.Ports) == 0 {
			return false
		}
		for _, p := range svc.Spec.Ports {
			if !scalewayPortOn(ann[annScalewayProxyV1], p.Port) && !scalewayPortOn(ann[annScalewayProxyV2], p.Port) &&
				!scalewayPortOn(ann[annScalewaySendProxyV2], p.Port) {
				return false
			}
		}
		return true
	}
	return false
}

// alibabaNLB reports an ACK Service whose load balancer is an NLB (the class, or the type
// annotation behind a feature gate: pkg/controller/helper/service_utils.go NeedNLB).
func alibabaNLB(svc *corev1.Service) bool {
	if c := svc.Spec.LoadBalancerClass; c != nil {
		return *c == alibabaNLBClass
	}
	return svc.Annotations[annAlibabaLBType] == "nlb"
}

// alibabaClientIPFix turns client IP preservation off on an ACK NLB's server groups, which the
// CCM updates in place (pkg/controller/service/nlbv2/server_groups.go).
func alibabaClientIPFix(svc *corev1.Service, e *core.Exposure) cloudFix {
	clientIP := core.ClientIPLost
	if strings.EqualFold(svc.Annotations[annAlibabaProxyProto], "on") && e.Protocols&(core.UDP|core.SCTP) == 0 {
		clientIP = core.ClientIPProxyProtocol
	}
	o := core.Offer{
		Remedy: core.LBSourceNAT, Path: core.PathProxy,
		Action: "set metadata.annotations[\"" + annAlibabaPreserveClient + "\"]: \"off\" (add " + annAlibabaProxyProto +
			": \"on\" only if the backends read the PROXY header)",
		Costs:  core.Costs{ClientIP: clientIP},
		Reason: ruleOfferAlibabaClientIP.Reason(),
	}
	return cloudFix{offer: o, edits: map[string]string{annAlibabaPreserveClient: "off"}}
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
	fixes := cloudFixes(svc, &tr.Exposure, &st, d.dataplane(&c.Profile), detectCloud(svc, c), d.opts.OwnsStatus, c)
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
