package kubernetes_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

func TestIngressStatus(t *testing.T) {
	vip, proxy := corev1.LoadBalancerIPModeVIP, corev1.LoadBalancerIPModeProxy
	mixed := &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
		{IP: "192.0.2.10"}, {IP: "192.0.2.11", IPMode: &proxy}, {Hostname: "lb.example"}}}
	for name, tc := range map[string]struct {
		path   core.Path
		stores core.Fact
		in     *corev1.LoadBalancerStatus
		want   []*corev1.LoadBalancerIPMode
	}{
		"Proxy on every IP entry":             {core.PathProxy, core.Yes, mixed, []*corev1.LoadBalancerIPMode{&proxy, &proxy, nil}},
		"VIP on every IP entry":               {core.PathVIP, core.Yes, mixed, []*corev1.LoadBalancerIPMode{&vip, &vip, nil}},
		"no decision keeps or defaults":       {core.PathUnknown, core.Yes, mixed, []*corev1.LoadBalancerIPMode{&vip, &proxy, nil}},
		"version unknown still explicit":      {core.PathProxy, core.Unknown, mixed, []*corev1.LoadBalancerIPMode{&proxy, &proxy, nil}},
		"server drops ipMode: inner as it is": {core.PathProxy, core.No, mixed, []*corev1.LoadBalancerIPMode{nil, &proxy, nil}},
	} {
		t.Run(name, func(t *testing.T) {
			before := tc.in.DeepCopy()
			got := kubernetes.IngressStatus(tc.path, tc.stores, tc.in)
			if !cmp.Equal(before, tc.in) {
				t.Error("IngressStatus modified its input")
			}
			var modes []*corev1.LoadBalancerIPMode
			for _, in := range got.Ingress {
				modes = append(modes, in.IPMode)
			}
			if diff := cmp.Diff(tc.want, modes); diff != "" {
				t.Errorf("ipModes (-want +got):\n%s", diff)
			}
			if errs := kubernetes.ValidateIngressStatus(kubernetes.IngressStatusPath(), got.Ingress); len(errs) > 0 {
				t.Errorf("the API server would refuse it: %v", errs)
			}
		})
	}
	if kubernetes.IngressStatus(core.PathVIP, core.Yes, nil) != nil {
		t.Error("a nil status is not nil")
	}
}

func TestStoresIPMode(t *testing.T) {
	for v, want := range map[string]core.Fact{"v1.37.2": core.Yes, "v1.30.0": core.Yes, "v1.29.4": core.Unknown, "v1.28.9": core.No, "": core.Unknown} {
		if got := kubernetes.StoresIPMode(v); got != want {
			t.Errorf("StoresIPMode(%q) = %v, want %v", v, got, want)
		}
	}
}
