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
	// when, if set, says whether the row's controller is the one that makes this Service's
	// load balancer (AWS: the cloud-controller-manager and the Load Balancer Controller read
	// aws-load-balancer-internal differently).
	when func(*corev1.Service) bool
}

// ScopeClass is a spec.loadBalancerClass that implies the LB's scope.
type ScopeClass struct {
	Cloud  string
	Class  string
	Scope  core.Scope
	Source string
}

// scopeAnnotations is the table of well-known internal-LB annotations, the units' rows in
// registry order. Each row was checked against the source it cites; the Kubernetes
// documentation's "Internal load balancer" list (kubernetes/website
// content/en/docs/concepts/services-networking/service.md) covers GCP, AWS, Azure, IBM Cloud,
// OpenStack, Baidu Cloud, Tencent Cloud and Alibaba Cloud.
var scopeAnnotations, scopeClasses = func() (ann []ScopeAnnotation, cls []ScopeClass) {
	for _, u := range registry {
		ann = append(ann, u.facts().scope...)
		cls = append(cls, u.facts().scopeClasses...)
	}
	return ann, cls
}()

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
				if a.when != nil && !a.when(svc) {
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
