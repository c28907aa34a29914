package tencent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

// TestDirectCAMActions: with exactly tencent.CAMActions(ModeDirect) granted, direct mode plans,
// writes and verifies; with any one of them missing, the run fails with
// core.ErrUnauthenticated naming the CAM action, and nothing is written: the listener read is
// needed to plan, and the task poll is checked before the first write.
func TestDirectCAMActions(t *testing.T) {
	all := tencent.CAMActions(tencent.ModeDirect)
	if len(all) != 3 {
		t.Fatalf("CAMActions(direct) = %v", all)
	}
	if got := tencent.CAMActions(tencent.ModeServiceConfig); len(got) != 0 {
		t.Errorf("service-config mode calls the CLB API: %v", got)
	}
	run := func(t *testing.T, allowed []string) (*cloud, error) {
		t.Helper()
		cl := startCloud(t, &clbtest.Options{Allowlist: []clbtest.Capability{clbtest.L4SNAT}, AllowedActions: allowed})
		cl.seedLB(t, lbID, "TCP/80", "UDP/53")
		drv := newDriver(t, fastRetries(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: cl.client}))
		svc := privateService("web", map[string]string{tencent.AnnotationLoadBalancerID: lbID}, "TCP/80", "UDP/53")
		_, err := core.NewReconciler(core.NewProvider(drv.Dialect(), drv), &core.ReconcilerOptions{Policy: snatPolicy}).
			Reconcile(context.Background(), svc, cluster(t, ipvsProfile(tencent.CapL4SNAT), svc))
		return cl, err
	}
	t.Run("all granted", func(t *testing.T) {
		cl, err := run(t, all)
		if err != nil {
			t.Fatal(err)
		}
		if !cl.listener(t, "TCP/80").SnatEnable || !cl.listener(t, "UDP/53").SnatEnable {
			t.Error("SNAT not on")
		}
		for _, c := range cl.srv.Calls() {
			if !slices.Contains(all, "clb:"+c.Action) {
				t.Errorf("called %s, which CAMActions does not list", c.Action)
			}
		}
	})
	for _, missing := range all {
		t.Run("without "+missing, func(t *testing.T) {
			cl, err := run(t, slices.DeleteFunc(slices.Clone(all), func(a string) bool { return a == missing }))
			if !errors.Is(err, core.ErrUnauthenticated) {
				t.Fatalf("error %v: want core.ErrUnauthenticated", err)
			}
			if msg := err.Error(); !strings.Contains(msg, "CAM permission for "+missing) || !strings.Contains(msg, "grant it") {
				t.Errorf("the error does not say which permission to grant: %v", err)
			}
			if w := cl.srv.Writes(); len(w) != 0 {
				t.Errorf("wrote %v before failing", w)
			}
			if cl.listener(t, "TCP/80").SnatEnable || cl.listener(t, "UDP/53").SnatEnable {
				t.Error("a listener changed")
			}
		})
	}
}
