package volcengine

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// ServiceFacts is what one Service says in VKE's own terms, before any physics: the requested
// ip-mode, what the status shows, and the CLB it asks for. Planning and applying (issue 5)
// build on it; Translate turns it into a core.Exposure.
type ServiceFacts struct {
	// IPMode is the requested mode: core.PathVIP or core.PathProxy. Without the annotation it
	// is PathVIP, the documented default (seed 003).
	IPMode core.Path
	// IPModeSet says the annotation is present.
	IPModeSet bool
	// Status is the ipMode the status shows for the Service's ingress points (seed 003,
	// "配置确认"); PathUnknown when no entry carries one or when they disagree (StatusMixed).
	Status core.Path
	// StatusMixed: entries carry different ipModes.
	StatusMixed bool
	// HostnameOnly: the status publishes hostnames but no IP, which no node intercepts
	// (KEP-1860; docs/sources.md#kep-1860).
	HostnameOnly bool

	// AddressType is AddressTypePublic or AddressTypePrivate for a CLB the controller creates
	// (PUBLIC when the annotation is absent); "" when the Service reuses a CLB and declares none.
	AddressType string
	// AddressTypeSet says the annotation is present.
	AddressTypeSet bool
	// LoadBalancerID is the reused CLB's ID, "" when the controller creates one.
	LoadBalancerID string
	// PassThrough is Yes when the CLB's backends are Pod ENIs, No for NodePorts (the default).
	PassThrough core.Fact
	// ProxyProtocol is Yes when listeners send a PROXY protocol header (default No).
	ProxyProtocol core.Fact

	// Exists says the Service was already created: the manifest carries a uid, a
	// creationTimestamp or a load-balancer status. Its ip-mode can then no longer change.
	Exists bool
	// Addresses are the IPs in the status, for cloud lookups by address.
	Addresses []string
}

// Reused reports whether the Service reuses an existing CLB.
func (f *ServiceFacts) Reused() bool { return f.LoadBalancerID != "" }

// CreatedMode is the ip-mode the existing Service was created with, as far as can be told: the
// status when it shows one, else the annotation (which cannot have changed anything since).
func (f *ServiceFacts) CreatedMode() core.Path {
	if f.Status != core.PathUnknown {
		return f.Status
	}
	return f.IPMode
}

// ReadService reads the VKE annotations and status of a Service. Every bad value is reported
// as a field error naming the annotation; the facts are meaningful only when the list is empty.
func ReadService(svc *corev1.Service) (ServiceFacts, field.ErrorList) {
	var f ServiceFacts
	var errs field.ErrorList
	ann := svc.Annotations

	f.IPMode = core.PathVIP
	if v, ok := ann[AnnotationIPMode]; ok {
		f.IPModeSet = true
		p, err := ParseIPMode(v)
		if err != nil {
			errs = append(errs, err.(*valueError).fe)
		} else {
			f.IPMode = p
		}
	}

	f.LoadBalancerID = ann[AnnotationLoadBalancerID]
	if v, ok := ann[AnnotationAddressType]; ok {
		f.AddressTypeSet = true
		switch v {
		case AddressTypePublic, AddressTypePrivate:
			f.AddressType = v
		default:
			errs = append(errs, notSupported(AnnotationAddressType, v, []string{AddressTypePublic, AddressTypePrivate}))
		}
	} else if f.LoadBalancerID == "" {
		// Docs 6460/100304: "If you do not specify this annotation, the network type is PUBLIC".
		f.AddressType = AddressTypePublic
	}

	f.PassThrough = core.No
	if _, ok := ann[AnnotationPassThrough]; ok {
		v, fe := dialect.BoolAnnotation(ann, AnnotationPassThrough)
		if fe != nil {
			errs = append(errs, fe)
		}
		f.PassThrough = v
	}

	f.ProxyProtocol = core.No
	if v, ok := ann[AnnotationProxyProtocol]; ok {
		switch v {
		case ProxyProtocolStandard:
			f.ProxyProtocol = core.Yes
		case ProxyProtocolOff:
		default:
			errs = append(errs, notSupported(AnnotationProxyProtocol, v, []string{ProxyProtocolStandard, ProxyProtocolOff}))
		}
	}

	ingress := svc.Status.LoadBalancer.Ingress
	f.Exists = svc.UID != "" || !svc.CreationTimestamp.IsZero() || len(ingress) > 0
	hostnames := 0
	for i := range ingress {
		in := &ingress[i]
		if in.IP != "" {
			f.Addresses = append(f.Addresses, in.IP)
		} else if in.Hostname != "" {
			hostnames++
		}
		if in.IPMode == nil {
			continue
		}
		var p core.Path
		switch *in.IPMode {
		case corev1.LoadBalancerIPModeVIP:
			p = core.PathVIP
		case corev1.LoadBalancerIPModeProxy:
			p = core.PathProxy
		default:
			// The API server rejects other values (docs/sources.md#kep-1860); a manifest may not.
			errs = append(errs, field.NotSupported(field.NewPath("status", "loadBalancer", "ingress").Index(i).Child("ipMode"),
				*in.IPMode, []corev1.LoadBalancerIPMode{corev1.LoadBalancerIPModeVIP, corev1.LoadBalancerIPModeProxy}))
			continue
		}
		switch {
		case f.StatusMixed:
		case f.Status == core.PathUnknown:
			f.Status = p
		case f.Status != p:
			f.Status, f.StatusMixed = core.PathUnknown, true
		}
	}
	f.HostnameOnly = hostnames > 0 && len(f.Addresses) == 0
	return f, errs
}
