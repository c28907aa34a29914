package cloudprovider_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	fakecloud "k8s.io/cloud-provider/fake"

	lgcloud "github.com/loopguard/loopguard/adapters/cloudprovider"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// returning is a cloud whose EnsureLoadBalancer returns a fixed status, as a real cloud may:
// in a form the API server stored long ago, or one it would refuse.
type returning struct {
	fakecloud.Cloud
	st *corev1.LoadBalancerStatus
}

func (r *returning) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return r, true }

func (r *returning) EnsureLoadBalancer(context.Context, string, *corev1.Service, []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	return r.st.DeepCopy(), nil
}

func ensureWith(t *testing.T, st *corev1.LoadBalancerStatus, svc *corev1.Service, opts ...lgcloud.Option) (*corev1.LoadBalancerStatus, string) {
	t.Helper()
	rec := record.NewFakeRecorder(20)
	lb, _ := lgcloud.Wrap(&returning{st: st}, kubernetes.NewProvider(nil),
		append([]lgcloud.Option{lgcloud.WithProfile(modern), lgcloud.WithEventRecorder(rec)}, opts...)...).LoadBalancer()
	got, err := lb.EnsureLoadBalancer(context.Background(), "c", svc, nil)
	if err != nil {
		t.Fatalf("EnsureLoadBalancer: %v", err)
	}
	return got, events(rec)
}

// TestLegacyAddressIsValidatedAsAnUpdate: an address the API server stored before strict
// validation (leading zeros, IPv4-mapped IPv6) is accepted on update when it is already there;
// the decorator judges its own change as such an update and publishes the decided ipMode.
func TestLegacyAddressIsValidatedAsAnUpdate(t *testing.T) {
	for _, ip := range []string{"203.0.113.07", "::ffff:203.0.113.7"} {
		t.Run(ip, func(t *testing.T) {
			svc := lbService("shop", "web", map[string]string{"load-balancer.hetzner.cloud/uses-proxyprotocol": "true"})
			svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
			got, ev := ensureWith(t, &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: ip}}}, svc)
			if len(got.Ingress) != 1 || got.Ingress[0].IP != ip || got.Ingress[0].IPMode == nil || *got.Ingress[0].IPMode != corev1.LoadBalancerIPModeProxy {
				t.Errorf("status %+v, want %s with ipMode Proxy (through-lb); events %s", got.Ingress, ip, ev)
			}
			if strings.Contains(ev, lgcloud.EventFailedOpen) {
				t.Errorf("failed open on a status the server accepts: %s", ev)
			}
		})
	}
}

// TestBadCloudStatusPassesThrough: a status the API server would refuse (a hostname that is
// an IP address) is the cloud's to fix: returned exactly as the cloud gave it, as without
// loopguard, with an Event.
func TestBadCloudStatusPassesThrough(t *testing.T) {
	bad := &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}, {Hostname: "203.0.113.8"}}}
	got, ev := ensureWith(t, bad, lbService("shop", "web", map[string]string{"load-balancer.hetzner.cloud/uses-proxyprotocol": "true"}))
	if diff := cmp.Diff(bad, got); diff != "" {
		t.Errorf("the cloud's status was changed (-cloud +returned):\n%s", diff)
	}
	if !strings.Contains(ev, lgcloud.EventStatusPassedThrough) {
		t.Errorf("events %q", ev)
	}
}

// TestLogsEveryIPModeChangeThroughLogr: a fork that logs with klog passes a logr.Logger; the
// ipMode loopguard changes is logged there with before, after, the remedy and the reason code
// (a DigitalOcean Service with the PROXY protocol on, whose controller never publishes Proxy:
// loopguard's through-lb does). An ipMode the Service's own annotation says (Hetzner's PROXY
// switch) is logged as that.
func TestLogsEveryIPModeChangeThroughLogr(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	l := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 4})
	st := &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}}}
	got, _ := ensureWith(t, st, lbService("shop", "web", map[string]string{"service.beta.kubernetes.io/do-loadbalancer-enable-proxy-protocol": "true", "service.beta.kubernetes.io/do-loadbalancer-type": "REGIONAL"}), lgcloud.WithLogr(l))
	if m := got.Ingress[0].IPMode; m == nil || *m != corev1.LoadBalancerIPModeProxy {
		t.Fatalf("status %+v", got.Ingress)
	}
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(lines, "\n")
	for _, want := range []string{"loopguard", `"published ipMode"`, `"service"="shop/web"`, `"from"="(unset)"`, `"to"="Proxy"`, `"remedy"="through-lb"`, `"reason"="`} {
		if !strings.Contains(all, want) {
			t.Errorf("log lacks %s:\n%s", want, all)
		}
	}
	lines = nil
	mu.Unlock()
	ensureWith(t, st, lbService("shop", "web", map[string]string{"load-balancer.hetzner.cloud/uses-proxyprotocol": "true"}), lgcloud.WithLogr(l))
	mu.Lock()
	all = strings.Join(lines, "\n")
	for _, want := range []string{`"published the ipMode the Service's annotation says"`, `"from"="(unset)"`, `"to"="Proxy"`, "uses-proxyprotocol"} {
		if !strings.Contains(all, want) {
			t.Errorf("log lacks %s:\n%s", want, all)
		}
	}
}

// TestNotExposedAndUnknownKeepTheCloudsValue: a decision that changes nothing returns the
// cloud's ipMode, made explicit where the cloud left it out (VIP, what the API server stores).
func TestNotExposedAndUnknownKeepTheCloudsValue(t *testing.T) {
	proxy := corev1.LoadBalancerIPModeProxy
	st := &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "203.0.113.7", IPMode: &proxy}, {IP: "203.0.113.8"}, {Hostname: "lb.example"}}}
	got, _ := ensureWith(t, st, lbService("shop", "web", nil))
	want := st.DeepCopy()
	vip := corev1.LoadBalancerIPModeVIP
	want.Ingress[1].IPMode = &vip
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}
