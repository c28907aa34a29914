package kubernetes

import (
	"testing"

	"github.com/loopguard/loopguard/core"

	corev1 "k8s.io/api/core/v1"
)

// TestEveryUnitIsDetectedByEachMark asks every unit of the registry, through detectCloud,
// whether each mark it declares (a loadBalancerClass, an annotation prefix, a Node providerID
// prefix) alone finds it. A mark that another unit shadows, or that detection no longer reads,
// fails here: the units that are only data (Azure, Exoscale, MetalLB, kube-vip, Cilium, Baidu,
// Tencent, Volcengine) have no other test of their own recognition.
func TestEveryUnitIsDetectedByEachMark(t *testing.T) {
	for _, u := range registry {
		f := u.facts()
		if len(f.classes)+len(f.annotationPrefixes)+len(f.providerIDPrefixes) == 0 {
			// A unit nothing detects may only lend its internal-LB annotation to scope.go (Baidu,
			// Tencent and Volcengine, whose own dialects live elsewhere): any default it stated
			// could never apply.
			if len(f.scope) == 0 || f.sourceNAT != core.Unknown || f.ipMode != (ccmIPMode{}) || len(f.rules)+len(f.settings)+len(f.images) > 0 {
				t.Errorf("unit %s declares no mark, so nothing can detect it, yet states more than an internal-LB annotation", f.name)
			}
			continue
		}
		for _, cls := range f.classes {
			t.Run(f.name+"/class "+cls, func(t *testing.T) {
				s := cloudService("a", nil, "TCP", ipVIP)
				s.Spec.LoadBalancerClass = &cls
				wantDetected(t, detectCloud(s, cloudCluster(t, "")), f.name)
			})
		}
		for _, p := range f.annotationPrefixes {
			t.Run(f.name+"/annotation "+p, func(t *testing.T) {
				// A key under the prefix that no controller reads: only detection looks at it.
				s := cloudService("a", map[string]string{p + "loopguard-detection-test": "x"}, "TCP", ipVIP)
				wantDetected(t, detectCloud(s, cloudCluster(t, "")), f.name)
			})
		}
		for _, p := range f.providerIDPrefixes {
			t.Run(f.name+"/providerID "+p, func(t *testing.T) {
				wantDetected(t, detectCloud(cloudService("a", nil, "TCP", ipVIP), cloudCluster(t, p)), f.name)
			})
		}
	}
	// And a Service with none of the marks, on Nodes without a providerID, is on no unit.
	s := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	if det := detectCloud(s, cloudCluster(t, "")); det.unit != nil {
		t.Errorf("a Service with no mark is detected as %s (%s)", det.unit.facts().name, det.why)
	}
}

func wantDetected(t *testing.T, det detection, want string) {
	t.Helper()
	if det.unit == nil {
		t.Fatalf("no unit detected, want %s", want)
	}
	if got := det.unit.facts().name; got != want {
		t.Fatalf("detected %s (%s), want %s", got, det.why, want)
	}
}
