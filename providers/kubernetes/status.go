package kubernetes

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// The validation here mirrors kube-apiserver v1.37.2 for status.loadBalancer.ingress[] of a
// Service (k8s.io/kubernetes pkg/apis/core/validation/validation.go ValidateLoadBalancerStatus),
// as seen through the API: the server decodes, defaults (pkg/apis/core/v1/defaults.go
// SetDefaults_Service: type LoadBalancer, ip set, ipMode nil → ipMode VIP) and only then
// validates. So an entry with ip and no ipMode is accepted and stored as VIP; the internal
// "must be specified when `ip` is set" (Required) error is unreachable through the API and is
// not reported here. Errors carry the same field path, type, detail and origin as the
// server's, so a test can compare them with the causes of a real 422 response.

// strictIPValidation mirrors the StrictIPCIDRValidation feature gate of the server this package
// tracks: beta and on by default since 1.36 (pkg/features/kube_features.go), so leading zeros
// and IPv4-mapped IPv6 addresses are rejected unless they were already in the old status.
const strictIPValidation = true

// supportedIPModes is sets.List(supportedLoadBalancerIPMode) in the server: sorted.
var supportedIPModes = []corev1.LoadBalancerIPMode{corev1.LoadBalancerIPModeProxy, corev1.LoadBalancerIPModeVIP}

// IngressStatusPath returns the field path of a Service's status.loadBalancer.ingress, the path
// the API server reports errors under.
func IngressStatusPath() *field.Path { return field.NewPath("status", "loadBalancer", "ingress") }

// ValidateIngressStatus validates the entries of a LoadBalancer Service's
// status.loadBalancer.ingress as kube-apiserver v1.37.2 does when the status is written, path
// being the path of the list itself (IngressStatusPath() for a Service):
//   - ip must be an IP address (field.Invalid at path[i].ip; no leading zeros, no IPv4-mapped
//     IPv6);
//   - ipMode is defaulted to VIP when ip is set (see DefaultIngressStatus), is forbidden
//     without ip (field.Forbidden at path[i].ipMode, "may not be specified when `ip` is not
//     set"), and must be VIP or Proxy (field.NotSupported at path[i].ipMode);
//   - hostname must be a DNS-1123 subdomain and not an IP address (field.Invalid at
//     path[i].hostname).
//
// It does not check spec.type (see ValidateServiceStatus). It is pure and does not modify ing.
func ValidateIngressStatus(path *field.Path, ing []corev1.LoadBalancerIngress) field.ErrorList {
	return ValidateIngressStatusUpdate(path, ing, nil)
}

// ValidateIngressStatusUpdate is ValidateIngressStatus for an update: an ip that is already in
// the old status is accepted even if it no longer passes strict validation, as the server
// does (IsValidIPForLegacyField with the old IPs).
func ValidateIngressStatusUpdate(path *field.Path, ing, old []corev1.LoadBalancerIngress) field.ErrorList {
	var oldIPs []string
	for i := range old {
		if old[i].IP != "" {
			oldIPs = append(oldIPs, old[i].IP)
		}
	}
	var errs field.ErrorList
	for i := range ing {
		in := &ing[i]
		idx := path.Index(i)
		if in.IP != "" {
			errs = append(errs, validation.IsValidIPForLegacyField(idx.Child("ip"), in.IP, strictIPValidation, oldIPs)...)
		}
		switch {
		case in.IPMode == nil:
			// Defaulted to VIP when ip is set; nothing to check when it is not.
		case in.IP == "":
			errs = append(errs, field.Forbidden(idx.Child("ipMode"), "may not be specified when `ip` is not set"))
		case *in.IPMode != corev1.LoadBalancerIPModeVIP && *in.IPMode != corev1.LoadBalancerIPModeProxy:
			// The server passes the pointer; the message is the same either way. The value is
			// given dereferenced so callers can compare it with ==.
			errs = append(errs, field.NotSupported(idx.Child("ipMode"), *in.IPMode, supportedIPModes))
		}
		if in.Hostname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(in.Hostname) {
				errs = append(errs, field.Invalid(idx.Child("hostname"), in.Hostname, msg))
			}
			if netutils.ParseIPSloppy(in.Hostname) != nil {
				errs = append(errs, field.Invalid(idx.Child("hostname"), in.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return errs
}

// obviouslyValid is a fast check that ValidateIngressStatus would find nothing wrong: an ip
// that netip parses strictly (no zone, not IPv4-mapped), a supported ipMode only with an ip,
// and no hostname (hostnames go through the server's regular expression). When it says no,
// the caller runs the full validation, which builds field paths.
func obviouslyValid(ing []corev1.LoadBalancerIngress) bool {
	for i := range ing {
		in := &ing[i]
		if in.Hostname != "" {
			return false
		}
		if in.IP != "" {
			a, err := netip.ParseAddr(in.IP)
			if err != nil || a.Zone() != "" || a.Is4In6() {
				return false
			}
		}
		if in.IPMode != nil && (in.IP == "" || *in.IPMode != corev1.LoadBalancerIPModeVIP && *in.IPMode != corev1.LoadBalancerIPModeProxy) {
			return false
		}
	}
	return true
}

// ValidateServiceStatus validates a Service's status.loadBalancer the way the server does on a
// status write (old may be nil for a create): ingress entries are forbidden unless spec.type is
// LoadBalancer ("may only be used when `spec.type` is 'LoadBalancer'"), and otherwise checked
// by ValidateIngressStatusUpdate against the old entries.
func ValidateServiceStatus(svc, old *corev1.Service) field.ErrorList {
	path := IngressStatusPath()
	ing := svc.Status.LoadBalancer.Ingress
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer && len(ing) != 0 {
		return field.ErrorList{field.Forbidden(path, "may only be used when `spec.type` is 'LoadBalancer'")}
	}
	var prev []corev1.LoadBalancerIngress
	if old != nil {
		prev = old.Status.LoadBalancer.Ingress
	}
	return ValidateIngressStatusUpdate(path, ing, prev)
}

// DefaultIngressStatus returns a copy of ing as the API server stores it for a LoadBalancer
// Service: every entry with an ip and no ipMode gets ipMode VIP (SetDefaults_Service). ing is
// not modified.
func DefaultIngressStatus(ing []corev1.LoadBalancerIngress) []corev1.LoadBalancerIngress {
	if ing == nil {
		return nil
	}
	out := make([]corev1.LoadBalancerIngress, len(ing))
	for i := range ing {
		ing[i].DeepCopyInto(&out[i])
		if out[i].IP != "" && out[i].IPMode == nil {
			vip := corev1.LoadBalancerIPModeVIP
			out[i].IPMode = &vip
		}
	}
	return out
}
