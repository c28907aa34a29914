package kubernetes_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// statusChange is the change PlanStatus makes for one entry.
func statusChange(ip string, mode corev1.LoadBalancerIPMode) core.Change {
	return core.Change{By: core.WriterStatus, Field: "status.loadBalancer.ingress[ip=" + ip + "].ipMode", To: string(mode),
		Edits: []core.Edit{{Path: []core.PathElem{{Field: "status"}, {Field: "loadBalancer"}, {Field: "ingress"},
			{Keys: map[string]any{"ip": ip}}, {Field: "ipMode"}}, Value: string(mode)}}}
}

func TestPublishStatus(t *testing.T) {
	vip, proxy := corev1.LoadBalancerIPModeVIP, corev1.LoadBalancerIPModeProxy
	mixed := &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
		{IP: "192.0.2.10"}, {IP: "192.0.2.11", IPMode: &proxy}, {Hostname: "lb.example"}, {IP: "192.0.2.012"}}}
	toProxy := []core.Change{statusChange("192.0.2.10", proxy)}
	for name, tc := range map[string]struct {
		changes []core.Change
		stores  core.Fact
		in      *corev1.LoadBalancerStatus
		want    []*corev1.LoadBalancerIPMode
	}{
		"a change sets its entry, the others are explicit": {toProxy, core.Yes, mixed, []*corev1.LoadBalancerIPMode{&proxy, &proxy, nil, &vip}},
		"a change to VIP":                        {[]core.Change{statusChange("192.0.2.11", vip)}, core.Yes, mixed, []*corev1.LoadBalancerIPMode{&vip, &vip, nil, &vip}},
		"no change keeps or defaults":            {nil, core.Yes, mixed, []*corev1.LoadBalancerIPMode{&vip, &proxy, nil, &vip}},
		"a legacy address is the same address":   {[]core.Change{statusChange("192.0.2.12", proxy)}, core.Yes, mixed, []*corev1.LoadBalancerIPMode{&vip, &proxy, nil, &proxy}},
		"version unknown still explicit":         {toProxy, core.Unknown, mixed, []*corev1.LoadBalancerIPMode{&proxy, &proxy, nil, &vip}},
		"server drops ipMode: inner as it is":    {toProxy, core.No, mixed, []*corev1.LoadBalancerIPMode{nil, &proxy, nil, nil}},
		"a change of another writer is not made": {[]core.Change{{By: core.WriterCloud, Edits: toProxy[0].Edits}}, core.Yes, mixed, []*corev1.LoadBalancerIPMode{&vip, &proxy, nil, &vip}},
	} {
		t.Run(name, func(t *testing.T) {
			before := tc.in.DeepCopy()
			got := kubernetes.PublishStatus(tc.in, tc.changes, tc.stores)
			if !cmp.Equal(before, tc.in) {
				t.Error("PublishStatus modified its input")
			}
			var modes []*corev1.LoadBalancerIPMode
			for _, in := range got.Ingress {
				modes = append(modes, in.IPMode)
			}
			if diff := cmp.Diff(tc.want, modes); diff != "" {
				t.Errorf("ipModes (-want +got):\n%s", diff)
			}
			if errs := kubernetes.ValidateIngressStatusUpdate(kubernetes.IngressStatusPath(), got.Ingress, tc.in.Ingress); len(errs) > 0 {
				t.Errorf("the API server would refuse it as an update: %v", errs)
			}
		})
	}
	if kubernetes.PublishStatus(nil, nil, core.Yes) != nil {
		t.Error("a nil status is not nil")
	}
}

func TestCanonicalIngressStatus(t *testing.T) {
	in := []corev1.LoadBalancerIngress{{IP: "203.0.113.07"}, {IP: "::ffff:203.0.113.8"}, {IP: "2001:db8::1"}, {Hostname: "lb.example"}}
	got := kubernetes.CanonicalIngressStatus(in)
	want := []string{"203.0.113.7", "203.0.113.8", "2001:db8::1", ""}
	for i := range want {
		if got[i].IP != want[i] {
			t.Errorf("entry %d: ip %q, want %q", i, got[i].IP, want[i])
		}
	}
	if in[0].IP != "203.0.113.07" {
		t.Error("CanonicalIngressStatus modified its input")
	}
	if errs := kubernetes.ValidateIngressStatus(kubernetes.IngressStatusPath(), got); len(errs) > 0 {
		t.Errorf("the canonical form is not valid as new: %v", errs)
	}
}

func TestStoresIPMode(t *testing.T) {
	for v, want := range map[string]core.Fact{"v1.37.2": core.Yes, "v1.30.0": core.Yes, "v1.29.4": core.Unknown, "v1.28.9": core.No, "": core.Unknown} {
		if got := kubernetes.StoresIPMode(v); got != want {
			t.Errorf("StoresIPMode(%q) = %v, want %v", v, got, want)
		}
	}
}
