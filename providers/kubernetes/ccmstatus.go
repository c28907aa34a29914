package kubernetes

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/loopguard/loopguard/core"
)

// ipModeStored is the first Kubernetes release whose API server stores
// status.loadBalancer.ingress[].ipMode by default: KEP-1860's LoadBalancerIPMode gate is beta
// and on in v1.30 (alpha, off, in v1.29; the field is dropped before that).
var ipModeStored = version.MajorMinor(1, 30)

// StoresIPMode says whether an API server of this version keeps an ipMode written to a
// Service's status: Yes from v1.30, Unknown for v1.29 (behind the alpha gate), No before, and
// Unknown when the version is not known.
func StoresIPMode(kubernetesVersion string) core.Fact {
	v, err := version.ParseGeneric(kubernetesVersion)
	switch {
	case err != nil:
		return core.Unknown
	case v.AtLeast(ipModeStored):
		return core.Yes
	case v.AtLeast(version.MajorMinor(1, 29)):
		return core.Unknown
	}
	return core.No
}

// IngressStatus is the LoadBalancerStatus a cloud-controller-manager returns from
// EnsureLoadBalancer for a decision: the inner provider's status with ipMode set on every IP
// entry to path (VIP or Proxy). It is pure and does not modify inner.
//
//   - Every IP entry gets an explicit ipMode: the API server defaults an absent one to VIP, and
//     the service controller compares the status it gets with the stored one by value
//     (LoadBalancerStatusEqual), so an absent ipMode would be patched on every sync.
//   - With path unknown (the decision changes nothing), an entry keeps the ipMode the inner
//     provider gave it, or gets VIP, the API server's default.
//   - Hostname-only entries carry no ipMode (the API server forbids it without an ip).
//   - When the API server does not store ipMode (stores is core.No: before v1.29) the inner
//     status is returned as it is, or it would differ from the stored status forever.
func IngressStatus(path core.Path, stores core.Fact, inner *corev1.LoadBalancerStatus) *corev1.LoadBalancerStatus {
	if inner == nil {
		return nil
	}
	out := inner.DeepCopy()
	if stores == core.No {
		return out
	}
	for i := range out.Ingress {
		in := &out.Ingress[i]
		if in.IP == "" {
			in.IPMode = nil
			continue
		}
		var mode corev1.LoadBalancerIPMode
		switch {
		case path == core.PathProxy:
			mode = corev1.LoadBalancerIPModeProxy
		case path == core.PathVIP:
			mode = corev1.LoadBalancerIPModeVIP
		case in.IPMode != nil:
			mode = *in.IPMode
		default:
			mode = corev1.LoadBalancerIPModeVIP
		}
		in.IPMode = &mode
	}
	return out
}
