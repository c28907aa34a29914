package cloudprovider_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	lgcloud "github.com/loopguard/loopguard/adapters/cloudprovider"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// TestEventsPerChange drives the decorator's load-balancer calls directly and counts the
// advice it records (LoopguardKeptUserIPMode) per step: repeats of one sync are folded; an
// UpdateLoadBalancer (the nodes changed) forgets nothing; an EnsureLoadBalancer without the
// condition forgets it, so it comes back once; deleting the Service, or another object under
// the same name (a new UID), starts afresh.
func TestEventsPerChange(t *testing.T) {
	proxy := corev1.LoadBalancerIPModeProxy
	inner := plainFake()
	inner.BalancerIPMode = &proxy
	rec := record.NewFakeRecorder(100)
	lb, _ := lgcloud.Wrap(inner, kubernetes.NewProvider(nil), lgcloud.WithProfile(modern), lgcloud.WithEventRecorder(rec)).LoadBalancer()
	ctx := context.Background()

	svc := lbService("shop", "web", oracleVIP("proxy-protocol"))
	svc.UID = types.UID("uid-1")
	ensure := func(s *corev1.Service) {
		t.Helper()
		st, err := lb.EnsureLoadBalancer(ctx, "c", s, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.Status.LoadBalancer = *st
	}
	update := func(s *corev1.Service) {
		t.Helper()
		if err := lb.UpdateLoadBalancer(ctx, "c", s, nil); err != nil {
			t.Fatal(err)
		}
	}
	advice := func() int {
		n := 0
		for {
			select {
			case ev := <-rec.Events:
				if len(byReason([]string{ev}, lgcloud.EventKeptUserIPMode)) == 1 {
					n++
				}
			default:
				return n
			}
		}
	}
	cleared := svc.DeepCopy()
	cleared.Annotations = oracleVIP("none")
	again := svc.DeepCopy()
	again.UID = types.UID("uid-2")
	for _, step := range []struct {
		name string
		do   func()
		want int
	}{
		{"first sync", func() { ensure(svc) }, 1},
		{"same sync three times", func() { ensure(svc); ensure(svc); ensure(svc) }, 0},
		{"nodes changed", func() { update(svc); update(svc) }, 0},
		{"sync after nodes changed", func() { ensure(svc) }, 0},
		{"advice cleared", func() { ensure(cleared); update(cleared) }, 0},
		{"advice back", func() { ensure(svc); ensure(svc) }, 1},
		{"another object, same name", func() { ensure(again) }, 1},
		{"deleted and synced again", func() {
			if err := lb.EnsureLoadBalancerDeleted(ctx, "c", svc); err != nil {
				t.Fatal(err)
			}
			ensure(svc)
		}, 1},
	} {
		step.do()
		if n := advice(); n != step.want {
			t.Errorf("%s: %d %s Events, want %d", step.name, n, lgcloud.EventKeptUserIPMode, step.want)
		}
	}
}
