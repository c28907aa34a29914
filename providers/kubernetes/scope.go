package kubernetes

import (
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// ScopeAnnotation is one cloud's annotation that says whether its load balancer is internal
// (private) or internet-facing (public). Values are compared exactly unless FoldCase is set,
// because that is how the clouds' controllers compare them.
type ScopeAnnotation struct {
	// Cloud names the cloud or controller, for messages ("GKE", "AWS cloud-controller-manager").
	Cloud string
	// Key is the annotation key.
	Key string
	// Private lists values that make the LB private; Public lists values that make it public.
	// The value "*" in one list matches every value not in the other list (the controller's
	// behaviour for any other value). A value in neither list draws no conclusion.
	Private, Public []string
	// FoldCase compares values case-insensitively.
	FoldCase bool
	// ShadowedBy names an annotation that, when present, takes precedence (the controller reads
	// it first), so this one is ignored.
	ShadowedBy string
	// Source cites where the behaviour was read.
	Source string
}

// ScopeClass is a spec.loadBalancerClass that implies the LB's scope.
type ScopeClass struct {
	Cloud  string
	Class  string
	Scope  core.Scope
	Source string
}

// scopeAnnotations is THE table of well-known internal-LB annotations. Each row was checked
// against the source it cites; the Kubernetes documentation's "Internal load balancer" list
// (kubernetes/website content/en/docs/concepts/services-networking/service.md) covers GCP, AWS,
// Azure, IBM Cloud, OpenStack, Baidu Cloud, Tencent Cloud and Alibaba Cloud.
var scopeAnnotations = []ScopeAnnotation{
	{Cloud: "GKE", Key: "networking.gke.io/load-balancer-type",
		// GetLoadBalancerAnnotationType: "Internal" (or the deprecated "internal") makes an
		// internal passthrough NLB; any other value falls back to the external default.
		Private: []string{"Internal", "internal"}, Public: []string{"*"},
		Source: "GKE docs concepts/service-load-balancer-parameters; kubernetes/legacy-cloud-providers gce/gce_annotations.go GetLoadBalancerAnnotationType"},
	{Cloud: "GKE (deprecated key)", Key: "cloud.google.com/load-balancer-type",
		Private: []string{"Internal", "internal"}, Public: []string{"*"},
		ShadowedBy: "networking.gke.io/load-balancer-type",
		Source:     "kubernetes/website service.md (Internal load balancer, GCP); gce_annotations.go (networking.gke.io/load-balancer-type is read first)"},
	{Cloud: "AWS cloud-controller-manager", Key: "service.beta.kubernetes.io/aws-load-balancer-internal",
		// The legacy AWS provider: "false" is public, any other non-empty value is internal
		// (old manifests use "0.0.0.0/0").
		Private: []string{"*"}, Public: []string{"false"},
		Source: "kubernetes/website service.md (Internal load balancer, AWS); cloud-provider-aws aws.go EnsureLoadBalancer (internalAnnotation == \"false\" → public, other non-empty → internal)"},
	{Cloud: "AWS Load Balancer Controller", Key: "service.beta.kubernetes.io/aws-load-balancer-scheme",
		Private: []string{"internal"}, Public: []string{"internet-facing"},
		Source: "aws-load-balancer-controller guide/service/annotations (scheme; default internal since v2.2.0, guide/service/nlb)"},
	{Cloud: "Azure", Key: "service.beta.kubernetes.io/azure-load-balancer-internal",
		// requiresInternalLoadBalancer: value == "true"; anything else keeps the public default.
		Private: []string{"true"}, Public: []string{"*"},
		Source: "learn.microsoft.com azure/aks/internal-lb; cloud-provider-azure requiresInternalLoadBalancer (l == \"true\")"},
	{Cloud: "Oracle OKE (load balancer)", Key: "service.beta.kubernetes.io/oci-load-balancer-internal",
		Private: []string{"true"}, Public: []string{"false"},
		Source: "Oracle OKE docs contengconfiguringloadbalancersnetworkloadbalancers-subtopic (Creating Internal Load Balancers)"},
	{Cloud: "Oracle OKE (network load balancer)", Key: "oci-network-load-balancer.oraclecloud.com/internal",
		Private: []string{"true"}, Public: []string{"false"},
		Source: "Oracle OKE docs contengconfiguringloadbalancersnetworkloadbalancers-subtopic; oracle/oci-cloud-controller-manager ServiceAnnotationNetworkLoadBalancerInternal"},
	{Cloud: "OpenStack", Key: "service.beta.kubernetes.io/openstack-internal-load-balancer",
		// "false" draws no conclusion: cloud.conf [LoadBalancer] internal-lb can make every LB internal.
		Private: []string{"true"},
		Source:  "kubernetes/website service.md (Internal load balancer, OpenStack); cloud-provider-openstack docs (\"If 'true', the loadbalancer VIP won't be associated with a floating IP\")"},
	{Cloud: "IBM Cloud", Key: "service.kubernetes.io/ibm-load-balancer-cloud-provider-ip-type",
		Private: []string{"private"}, Public: []string{"public"},
		Source: "kubernetes/website service.md (Internal load balancer, IBM Cloud)"},
	{Cloud: "Baidu Cloud", Key: "service.beta.kubernetes.io/cce-load-balancer-internal-vpc",
		Private: []string{"true"},
		Source:  "kubernetes/website service.md (Internal load balancer, Baidu Cloud)"},
	{Cloud: "Tencent Cloud", Key: "service.kubernetes.io/qcloud-loadbalancer-internal-subnetid",
		// Any subnet ID makes the CLB private.
		Private: []string{"*"},
		Source:  "kubernetes/website service.md (Internal load balancer, Tencent Cloud); docs/sources.md#tke-annotations (Tencent doc 457/51258)"},
	{Cloud: "Alibaba Cloud", Key: "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type",
		// The NLB model compares with strings.EqualFold; the CLB model's constants are lower case.
		Private: []string{"intranet"}, Public: []string{"internet"}, FoldCase: true,
		Source: "kubernetes/website service.md (Internal load balancer, Alibaba Cloud); cloud-provider-alibaba-cloud pkg/model/nlb GetAddressType (EqualFold)"},
	{Cloud: "DigitalOcean", Key: "service.beta.kubernetes.io/do-loadbalancer-network",
		Private: []string{"INTERNAL"}, Public: []string{"EXTERNAL"},
		Source: "digitalocean/digitalocean-cloud-controller-manager CHANGELOG v0.1.53 and DigitalOcean Kubernetes load balancer docs (do-loadbalancer-network: \"INTERNAL\")"},
	{Cloud: "Hetzner Cloud", Key: "load-balancer.hetzner.cloud/disable-public-network",
		// "false" draws no conclusion: the LB may still be reached over its private network.
		Private: []string{"true"},
		Source:  "hetznercloud/hcloud-cloud-controller-manager internal/annotation/load_balancer.go LBDisablePublicNetwork (\"all traffic is routed over the private network\")"},
	{Cloud: "Volcengine", Key: "service.beta.kubernetes.io/volcengine-loadbalancer-address-type",
		Private: []string{"PRIVATE"}, Public: []string{"PUBLIC"},
		Source: "docs/sources.md#vke (Volcengine docs 6460/100304)"},
}

// scopeClasses are load-balancer classes that fix the LB's scope.
var scopeClasses = []ScopeClass{
	{Cloud: "GKE", Class: "networking.gke.io/l4-regional-internal", Scope: core.Private,
		Source: "GKE docs concepts/service-load-balancer-parameters (spec.loadBalancerClass: networking.gke.io/l4-regional-internal)"},
}

// ScopeAnnotations returns a copy of the built-in table of internal-LB annotations.
func ScopeAnnotations() []ScopeAnnotation {
	return append([]ScopeAnnotation(nil), scopeAnnotations...)
}

// match says what one annotation value means: Private, Public, or unknown (ok false).
func (a *ScopeAnnotation) match(v string) (core.Scope, bool) {
	in := func(list []string) bool {
		for _, x := range list {
			if x == v || a.FoldCase && strings.EqualFold(x, v) {
				return true
			}
		}
		return false
	}
	wild := func(list []string) bool {
		for _, x := range list {
			if x == "*" {
				return true
			}
		}
		return false
	}
	switch {
	case in(a.Private):
		return core.Private, true
	case in(a.Public):
		return core.Public, true
	case wild(a.Private) && v != "":
		return core.Private, true
	case wild(a.Public):
		return core.Public, true
	}
	return core.ScopeUnknown, false
}

// scopeOf reads the LB's scope from the cloud annotations and class. It adds a reason for
// what it concluded, or a note when annotations disagree or a value is not recognised.
func (d *Dialect) scopeOf(svc *corev1.Service, e *core.Exposure) {
	ann := svc.Annotations
	scope := core.ScopeUnknown
	// first holds the only reason in the common case; more the rest, so one annotation costs
	// no slice.
	var first string
	var more []string
	conflict := false
	decide := func(s core.Scope, what string) {
		if scope != core.ScopeUnknown && scope != s {
			conflict = true
		}
		scope = s
		if first == "" {
			first = what
		} else {
			more = append(more, what)
		}
	}
	if svc.Spec.LoadBalancerClass != nil {
		for i := range scopeClasses {
			if c := &scopeClasses[i]; c.Class == *svc.Spec.LoadBalancerClass {
				decide(c.Scope, c.Cloud+": spec.loadBalancerClass "+c.Class+" is "+string(c.Scope)+" ("+c.Source+")")
			}
		}
	}
	if len(ann) > 0 {
		for _, table := range [2][]ScopeAnnotation{scopeAnnotations, d.opts.ScopeAnnotations} {
			for i := range table {
				a := &table[i]
				v, ok := ann[a.Key]
				if !ok {
					continue
				}
				if a.ShadowedBy != "" {
					if _, shadowed := ann[a.ShadowedBy]; shadowed {
						continue
					}
				}
				s, known := a.match(v)
				if !known {
					e.Notes = append(e.Notes, ruleScopeValueUnknown.Because(a.Cloud+": "+a.Key+": "+quote(v)+" is not a value loopguard recognises ("+a.Source+")"))
					continue
				}
				decide(s, a.Cloud+": "+a.Key+": "+quote(v)+" makes the load balancer "+string(s)+" ("+a.Source+")")
			}
		}
	}
	joined := func() string {
		if len(more) == 0 {
			return first
		}
		return first + "; " + strings.Join(more, "; ")
	}
	switch {
	case conflict:
		e.Notes = append(e.Notes, ruleScopeConflict.Because(joined()))
	case scope != core.ScopeUnknown:
		e.Scope = scope
		e.Reasons = append(e.Reasons, ruleScopeAnnotation.Because(joined()))
	default:
		if allPrivate(svc.Status.LoadBalancer.Ingress) {
			e.Notes = append(e.Notes, rulePrivateAddresses.Reason())
		}
		e.Notes = append(e.Notes, ruleScopeUndeclared.Reason())
	}
}

// privateRanges are address ranges no internet-facing load balancer answers on.
var privateRanges = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("fc00::/7"),
}

// allPrivate reports whether the status has at least one IP and every IP is in a private range.
func allPrivate(ing []corev1.LoadBalancerIngress) bool {
	n := 0
	for i := range ing {
		if ing[i].IP == "" {
			continue
		}
		a, err := netip.ParseAddr(ing[i].IP)
		if err != nil {
			return false
		}
		a = a.Unmap()
		ok := false
		for _, p := range privateRanges {
			ok = ok || p.Contains(a)
		}
		if !ok {
			return false
		}
		n++
	}
	return n > 0
}

func quote(s string) string { return "\"" + s + "\"" }
