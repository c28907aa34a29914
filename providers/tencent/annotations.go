package tencent

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// configRef reads a TkeServiceConfig reference: the named config, or the -auto one
// (<object><autoSuffix>). The two may not be combined, and a name given by hand may not end
// with a suffix the controllers reserve (457/45490, 457/45700).
func configRef(ann map[string]string, nameKey, autoKey, objName, autoSuffix string) (string, bool, field.ErrorList) {
	var errs field.ErrorList
	auto, ferr := dialect.BoolAnnotation(ann, autoKey)
	if ferr != nil {
		errs = append(errs, ferr)
	}
	name, named := ann[nameKey]
	if named {
		p := dialect.AnnotationPath(nameKey)
		switch {
		case name == "":
			errs = append(errs, field.Required(p, "must name a TkeServiceConfig in the same namespace"))
		case strings.HasSuffix(name, AutoServiceConfigSuffix) || strings.HasSuffix(name, AutoIngressConfigSuffix):
			errs = append(errs, field.Invalid(p, name, "a TkeServiceConfig named by hand may not end with "+AutoServiceConfigSuffix+" or "+AutoIngressConfigSuffix+" (reserved for "+autoKey+")"))
		default:
			for _, msg := range validation.IsDNS1123Subdomain(name) {
				errs = append(errs, field.Invalid(p, name, msg))
			}
		}
		if auto == core.Yes {
			errs = append(errs, field.Forbidden(dialect.AnnotationPath(autoKey), "may not be combined with "+nameKey+" (TKE reads one or the other)"))
		}
	}
	if len(errs) > 0 {
		return "", false, errs
	}
	if named {
		return name, false, nil
	}
	if auto == core.Yes {
		return objName + autoSuffix, true, nil
	}
	return "", false, nil
}

// ServiceConfigName returns the TkeServiceConfig a Service uses ("" for none) and whether it
// is the controller-created -auto config; a bad reference is a *core.InvalidError.
func ServiceConfigName(svc *corev1.Service) (name string, auto bool, err error) {
	name, auto, errs := configRef(svc.Annotations, AnnotationServiceConfig, AnnotationServiceConfigAuto, svc.Name, AutoServiceConfigSuffix)
	return name, auto, dialect.Invalid(serviceRef(svc), errs)
}

// IngressConfigName returns the TkeServiceConfig an Ingress uses ("" for none) and whether it
// is the controller-created -auto config; a bad reference is a *core.InvalidError.
func IngressConfigName(ing *networkingv1.Ingress) (name string, auto bool, err error) {
	name, auto, errs := configRef(ing.Annotations, AnnotationIngressServiceConfig, AnnotationIngressServiceConfigAuto, ing.Name, AutoIngressConfigSuffix)
	return name, auto, dialect.Invalid(ingressRef(ing), errs)
}

func serviceRef(svc *corev1.Service) core.ObjectRef {
	return core.ObjectRef{Kind: "Service", Namespace: svc.Namespace, Name: svc.Name}
}

func ingressRef(ing *networkingv1.Ingress) core.ObjectRef {
	return core.ObjectRef{Kind: "Ingress", Namespace: ing.Namespace, Name: ing.Name}
}

// nonEmpty checks an annotation whose value must not be empty when present.
func nonEmpty(ann map[string]string, key, what string) *field.Error {
	if v, ok := ann[key]; ok && strings.TrimSpace(v) == "" {
		return field.Required(dialect.AnnotationPath(key), "must name "+what)
	}
	return nil
}

// readMode checks a mode annotation; skip is its only documented value.
func readMode(ann map[string]string, key string) (bool, *field.Error) {
	v, ok := ann[key]
	if !ok {
		return false, nil
	}
	if v != ModeSkip {
		return false, field.NotSupported(dialect.AnnotationPath(key), v, []string{ModeSkip})
	}
	return true, nil
}

// readBackendsLabel parses the Service's backends-label selector; nil when absent.
func readBackendsLabel(ann map[string]string) (labels.Selector, *field.Error) {
	v, ok := ann[AnnotationBackendsLabel]
	if !ok {
		return nil, nil
	}
	sel, err := labels.Parse(v)
	if err != nil || strings.TrimSpace(v) == "" {
		msg := "must be a non-empty label selector"
		if err != nil {
			msg += ": " + err.Error()
		}
		return nil, field.Invalid(dialect.AnnotationPath(AnnotationBackendsLabel), v, msg)
	}
	return sel, nil
}

// setScope fills the LB scope from the internal-subnet and existing-LB annotations
// (docs/sources.md#tke-annotations).
func (d *Dialect) setScope(e *core.Exposure, ann map[string]string, subnetKey, existKey string) {
	subnet, private := ann[subnetKey]
	lbID, existing := ann[existKey]
	cloud, read := d.lookupCLB(strings.TrimSpace(lbID))
	switch {
	case existing && read:
		e.Scope = cloud.Scope()
		e.Reasons = append(e.Reasons, ruleCLBType.Because(existKey+": "+lbID+": DescribeLoadBalancers reports LoadBalancerType "+cloud.Type+": the reused CLB is "+string(e.Scope)))
		if private && existingLBIgnoresSubnet {
			e.Notes = append(e.Notes, ruleExistingLB.Because(subnetKey+" is set too, but it does not change the type of an existing CLB"))
		}
	case existing:
		e.Scope = core.ScopeUnknown
		e.Reasons = append(e.Reasons, ruleExistingLB.Because(existKey+": "+lbID+": the reused CLB's type is not in the manifest; declare loopguard.io/lb-scope (private or public) or read it from the cloud"))
		if private && existingLBIgnoresSubnet {
			e.Notes = append(e.Notes, ruleExistingLB.Because(subnetKey+" is set too, but it does not change the type of an existing CLB"))
		}
	case private:
		e.Scope = core.Private
		e.Reasons = append(e.Reasons, ruleInternalSubnet.Because(subnetKey+": "+subnet+": the CLB is private"))
	default:
		e.Scope = core.Public
		e.Reasons = append(e.Reasons, ruleDefaultPublic.Reason())
	}
}

// invalid merges a base helper's error (an *core.InvalidError) with the dialect's own field
// errors into one *core.InvalidError.
func invalid(ref core.ObjectRef, base error, errs field.ErrorList) error {
	if base != nil {
		if ie, ok := base.(*core.InvalidError); ok {
			errs = append(append(field.ErrorList(nil), ie.Errs...), errs...)
		} else {
			return base
		}
	}
	return dialect.Invalid(ref, errs)
}
