package kubernetes

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	netutils "k8s.io/utils/net"

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

// PublishStatus is the LoadBalancerStatus a cloud-controller-manager returns from
// EnsureLoadBalancer: the inner provider's status with the status changes of a Reconciler's
// Outcome (Outcome.ForStatus, planned by PlanStatus) made on it, and nothing else. It is pure
// and does not modify inner.
//
//   - A change names its entry by ip (status.loadBalancer.ingress[ip=...].ipMode); an entry
//     whose ip the server stored in a legacy form (203.0.113.07, ::ffff:203.0.113.7) is the
//     same address and gets the change too.
//   - Every other IP entry keeps the ipMode the inner provider gave it, or gets VIP, what the
//     API server stores for an absent one (SetDefaults_Service): the service controller
//     compares the status it gets with the stored one by value (LoadBalancerStatusEqual), so an
//     absent ipMode would be patched on every sync.
//   - Hostname-only entries carry no ipMode (the API server forbids it without an ip).
//   - When the API server does not store ipMode (stores is core.No: before v1.29) the inner
//     status is returned as it is, or it would differ from the stored status forever.
func PublishStatus(inner *corev1.LoadBalancerStatus, changes []core.Change, stores core.Fact) *corev1.LoadBalancerStatus {
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
			continue
		}
		if ch := StatusChangeFor(changes, in.IP); ch != nil {
			m := corev1.LoadBalancerIPMode(ch.To)
			in.IPMode = &m
		}
		if in.IPMode == nil {
			vip := corev1.LoadBalancerIPModeVIP
			in.IPMode = &vip
		}
	}
	return out
}

// StatusChangeFor returns the last of changes (PlanStatus's) that sets the ipMode of the entry
// with this ip, compared as the API server's legacy parser reads addresses; nil when none does.
// Its To is the ipMode it sets.
func StatusChangeFor(changes []core.Change, ip string) *core.Change {
	var found *core.Change
	for i := range changes {
		if at, mode, ok := ipModeEdit(&changes[i]); ok && sameIP(at, ip) && string(mode) == changes[i].To {
			found = &changes[i]
		}
	}
	return found
}

// ipModeEdit reads a change PlanStatus made: the ip of its entry and the ipMode it sets.
func ipModeEdit(ch *core.Change) (string, corev1.LoadBalancerIPMode, bool) {
	if ch.By != core.WriterStatus {
		return "", "", false
	}
	for _, e := range ch.Edits {
		n := len(e.Path)
		if n < 2 || e.Path[n-1].Field != "ipMode" || e.Remove {
			continue
		}
		ip, _ := e.Path[n-2].Keys["ip"].(string)
		mode, _ := e.Value.(string)
		if ip != "" && (mode == string(corev1.LoadBalancerIPModeVIP) || mode == string(corev1.LoadBalancerIPModeProxy)) {
			return ip, corev1.LoadBalancerIPMode(mode), true
		}
	}
	return "", "", false
}

// sameIP compares two addresses as the API server's legacy parser reads them, so 203.0.113.07
// and ::ffff:203.0.113.7 are 203.0.113.7.
func sameIP(a, b string) bool {
	if a == b {
		return true
	}
	x, y := netutils.ParseIPSloppy(a), netutils.ParseIPSloppy(b)
	return x != nil && y != nil && x.Equal(y)
}

// CanonicalIngressStatus returns a copy of ing with every ip the API server accepted in a
// legacy form (leading zeros, IPv4-mapped IPv6: stored before StrictIPCIDRValidation, and kept
// on update) written canonically, so the dialect, which validates as for a new object, can read
// a status the server already holds. Entries keep their order; nothing else changes.
func CanonicalIngressStatus(ing []corev1.LoadBalancerIngress) []corev1.LoadBalancerIngress {
	if ing == nil {
		return nil
	}
	out := make([]corev1.LoadBalancerIngress, len(ing))
	for i := range ing {
		ing[i].DeepCopyInto(&out[i])
		if out[i].IP == "" {
			continue
		}
		if ip := netutils.ParseIPSloppy(out[i].IP); ip != nil {
			if v4 := ip.To4(); v4 != nil {
				out[i].IP = v4.String()
			} else {
				out[i].IP = ip.String()
			}
		}
	}
	return out
}
