package cloudprovider_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	lgcloud "github.com/loopguard/loopguard/adapters/cloudprovider"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// tape reads the decorator's Events from a harness's recorder, keeping every one read.
type tape struct {
	h   *harness
	all []string
}

// read returns every Event recorded so far. The decorator records them inside the load-balancer
// call, so once the spy has seen a call return, its Events are here.
func (tp *tape) read() []string {
	for {
		select {
		case ev := <-tp.h.events.Events:
			tp.all = append(tp.all, ev)
		default:
			return append([]string(nil), tp.all...)
		}
	}
}

// byReason returns the Events of one reason ("Type Reason Message", as the fake recorder
// writes them).
func byReason(evs []string, reason string) []string {
	var out []string
	for _, ev := range evs {
		if f := strings.Fields(ev); len(f) > 1 && f[1] == reason {
			out = append(out, ev)
		}
	}
	return out
}

// addProviderNode adds a ready Node whose spec.providerID names its cloud (hcloud://4711 for
// Hetzner Cloud), as the cloud's node controller sets it.
func (h *harness) addProviderNode(name, providerID string) {
	h.t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	h.createNode(node)
}

// resync makes the service controller sync the Service n more times without changing anything
// loopguard reads (an annotation of nobody's), waiting for each sync to have returned.
func (h *harness) resync(name string, n int) {
	h.t.Helper()
	syncs := len(h.spy.find("ensure", name))
	for i := range n {
		h.annotate(name, "example.com/touched", fmt.Sprint(syncs+i))
		want := syncs + i + 1
		h.eventually(fmt.Sprintf("sync %d of %s", want, name), func() bool { return len(h.spy.find("ensure", name)) == want })
	}
}

func allIPModes(mode corev1.LoadBalancerIPMode, n int) func(*corev1.Service) bool {
	return func(s *corev1.Service) bool {
		in := s.Status.LoadBalancer.Ingress
		if len(in) != n {
			return false
		}
		for _, e := range in {
			if e.IPMode == nil || *e.IPMode != mode {
				return false
			}
		}
		return true
	}
}

// TestServiceControllerStatedDefaults: a Hetzner Cloud fork whose controller runs with
// HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL=true publishes ipMode Proxy on all three entries of
// a Service without the annotation, for a reason the Service does not carry. Stated once with
// WithControllerSettings (from the controller's own environment) or WithController (the same
// setting as kubernetes.HetznerController's field), loopguard's verdict is the
// controller's: the status stands and over five syncs the decorator records no Event at all.
// Not stated, the cloud's Proxy still stands, one LoopguardKeptCloudIPMode Event over the five
// syncs names the setting to state, and it does not advise loopguard.io/backend-expects: none,
// which would only get the plan blocked (the risk is unknown).
func TestServiceControllerStatedDefaults(t *testing.T) {
	env := map[string]string{"HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL": "true"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, how := range []string{"env", "controller", "not"} {
		stated := how != "not"
		t.Run("stated="+how, func(t *testing.T) {
			h := newHarness(t)
			h.addProviderNode("node-a", "hcloud://4711")
			opts := []lgcloud.Option{lgcloud.WithProfile(modern)}
			switch how {
			case "env":
				opts = append(opts, lgcloud.WithControllerSettings(kubernetes.SettingsFromEnv(lookup)))
			case "controller":
				opts = append(opts, lgcloud.WithController(kubernetes.HetznerController{UsesProxyProtocol: "true"}))
			}
			h.run(newHetzner(lookup), kubernetes.NewProvider(nil), opts...)
			h.create(lbService("", "web", nil))
			h.waitStatus("web", allIPModes(corev1.LoadBalancerIPModeProxy, 3))
			h.eventually("the first sync is recorded", func() bool { return len(h.spy.find("ensure", "web")) == 1 })
			tp := &tape{h: h}
			first := tp.read()
			h.resync("web", 4)
			all := tp.read()
			h.waitStatus("web", allIPModes(corev1.LoadBalancerIPModeProxy, 3))
			if diff := cmp.Diff(first, all); diff != "" {
				t.Errorf("syncs 2-5 recorded Events sync 1 did not (-after 1 +after 5):\n%s", diff)
			}
			kept := byReason(all, lgcloud.EventKeptCloudIPMode)
			if stated {
				if len(all) != 0 {
					t.Errorf("with the controller's default stated, the decorator recorded %q", all)
				}
				return
			}
			if len(kept) != 1 {
				t.Fatalf("%d %s Events over five syncs, want 1: %q", len(kept), lgcloud.EventKeptCloudIPMode, all)
			}
			for _, want := range []string{"198.51.100.7, 2001:db8::7, 10.0.0.7", "HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL", "WithControllerSettings"} {
				if !strings.Contains(kept[0], want) {
					t.Errorf("the Event does not name %q: %s", want, kept[0])
				}
			}
			if strings.Contains(kept[0], "declare loopguard.io/backend-expects: none on the Service") {
				t.Errorf("the Event advises backend-expects: none, which a tentative decision blocks: %s", kept[0])
			}
			if b := byReason(all, lgcloud.EventBlocked); len(b) > 0 {
				t.Errorf("blocked: %q", b)
			}
		})
	}
}

// TestServiceControllerUserIPModeStands: for every cloud unit whose controller publishes an
// ipMode from an annotation the user writes, the decorator publishes what the annotation says,
// whatever the inner cloud returned and whatever loopguard would decide; where loopguard's
// decision differs a Warning Event (LoopguardKeptUserIPMode) says so, once over three syncs,
// with how to let it only where the cloud has an ip-mode annotation. Where they agree there is
// no such Event.
func TestServiceControllerUserIPModeStands(t *testing.T) {
	// Declared facts that make loopguard want one path or the other.
	wantsVIP := map[string]string{core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "false", core.AnnotationBackendExpects: "none"}
	wantsProxyPROXY := map[string]string{core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "true", core.AnnotationBackendExpects: "proxy-protocol"}
	wantsProxyTLS := map[string]string{core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "true", core.AnnotationBackendExpects: "tls"}
	plus := func(a map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for x, y := range a {
			out[x] = y
		}
		return out
	}
	cases := []struct {
		name  string
		ann   map[string]string
		inner corev1.LoadBalancerIPMode // what the inner cloud returns: the opposite of the user's where they differ
		want  corev1.LoadBalancerIPMode
		// advice: a substring of the Warning; "" when loopguard agrees (no Event).
		advice   string
		noLetIt  bool
		decision core.Remedy
	}{
		{name: "oracle-proxy", ann: plus(wantsVIP, "oci.oraclecloud.com/ingress-ip-mode", "proxy"), inner: corev1.LoadBalancerIPModeVIP,
			want: corev1.LoadBalancerIPModeProxy, advice: `set oci.oraclecloud.com/ingress-ip-mode: "VIP"`, decision: core.InterceptVIP},
		{name: "oracle-vip", ann: plus(wantsProxyPROXY, "oci.oraclecloud.com/ingress-ip-mode", "VIP"), inner: corev1.LoadBalancerIPModeProxy,
			want: corev1.LoadBalancerIPModeVIP, advice: `set oci.oraclecloud.com/ingress-ip-mode: "proxy"`, decision: core.ThroughLB},
		{name: "scaleway-proxy", ann: plus(wantsVIP, "service.beta.kubernetes.io/scw-loadbalancer-ip-mode", "Proxy"), inner: corev1.LoadBalancerIPModeVIP,
			want: corev1.LoadBalancerIPModeProxy, advice: `set service.beta.kubernetes.io/scw-loadbalancer-ip-mode: "VIP"`, decision: core.InterceptVIP},
		{name: "scaleway-vip", ann: plus(wantsProxyPROXY, "service.beta.kubernetes.io/scw-loadbalancer-ip-mode", "VIP"), inner: corev1.LoadBalancerIPModeProxy,
			want: corev1.LoadBalancerIPModeVIP, advice: `set service.beta.kubernetes.io/scw-loadbalancer-ip-mode: "Proxy"`, decision: core.ThroughLB},
		{name: "hetzner-off", ann: plus(wantsProxyTLS, "load-balancer.hetzner.cloud/uses-proxyprotocol", "False"), inner: corev1.LoadBalancerIPModeProxy,
			want: corev1.LoadBalancerIPModeVIP, advice: `kept ipMode VIP`, noLetIt: true, decision: core.ThroughLB},
		{name: "openstack-off", ann: plus(wantsProxyTLS, "loadbalancer.openstack.org/proxy-protocol", "false"), inner: corev1.LoadBalancerIPModeProxy,
			want: corev1.LoadBalancerIPModeVIP, advice: `kept ipMode VIP`, noLetIt: true, decision: core.ThroughLB},
		// Agreement: the PROXY protocol on, loopguard goes through the load balancer too.
		{name: "hetzner-on", ann: map[string]string{"load-balancer.hetzner.cloud/uses-proxyprotocol": "1"}, inner: corev1.LoadBalancerIPModeVIP,
			want: corev1.LoadBalancerIPModeProxy},
		{name: "openstack-on", ann: map[string]string{"loadbalancer.openstack.org/proxy-protocol": "v2"}, inner: corev1.LoadBalancerIPModeVIP,
			want: corev1.LoadBalancerIPModeProxy},
		// Scaleway publishes Proxy when every port sends the PROXY protocol (isPortInRange).
		{name: "scaleway-proxy-ports", ann: map[string]string{"service.beta.kubernetes.io/scw-loadbalancer-proxy-protocol-v2": "*"},
			inner: corev1.LoadBalancerIPModeVIP, want: corev1.LoadBalancerIPModeProxy},
	}
	// One API server and controller per inner ipMode; every case is one Service.
	for _, inner := range []corev1.LoadBalancerIPMode{corev1.LoadBalancerIPModeVIP, corev1.LoadBalancerIPModeProxy} {
		t.Run("inner="+string(inner), func(t *testing.T) {
			h := newHarness(t)
			fake := plainFake()
			fake.BalancerIPMode = &inner
			h.run(fake, kubernetes.NewProvider(nil), lgcloud.WithProfile(modern))
			tp := &tape{h: h}
			for _, tc := range cases {
				if tc.inner != inner {
					continue
				}
				h.create(lbService("", tc.name, tc.ann))
			}
			for _, tc := range cases {
				if tc.inner != inner {
					continue
				}
				t.Run(tc.name, func(t *testing.T) {
					h.waitStatus(tc.name, ipModeIs(tc.want))
					h.eventually("the first sync is recorded", func() bool { return len(h.spy.find("ensure", tc.name)) >= 1 })
					h.resync(tc.name, 2)
					h.waitStatus(tc.name, ipModeIs(tc.want)) // never overridden
					warnings := forService(tp.read(), lgcloud.EventKeptUserIPMode, tc.ann)
					switch {
					case tc.advice == "" && len(warnings) > 0:
						t.Errorf("loopguard agrees, yet: %q", warnings)
					case tc.advice != "" && len(warnings) != 1:
						t.Fatalf("%d %s Events over three syncs, want 1: %q", len(warnings), lgcloud.EventKeptUserIPMode, warnings)
					case tc.advice != "":
						w := warnings[0]
						if !strings.HasPrefix(w, corev1.EventTypeWarning+" ") || !strings.Contains(w, tc.advice) || !strings.Contains(w, string(tc.decision)) {
							t.Errorf("want a Warning naming %q and %s: %s", tc.advice, tc.decision, w)
						}
						if tc.noLetIt && strings.Contains(w, "to let it") {
							t.Errorf("advises flipping the PROXY protocol: %s", w)
						}
					}
				})
			}
		})
	}
}

// TestServiceControllerNSXLabelStands: on vSphere with nsx-operator, the user's
// nsx.vmware.com/ingress-ip-mode label ("vip", exactly) stands against an inner cloud answering
// Proxy and against loopguard's decision to go through the load balancer; the one Warning says
// so without advising a label value (the label is not an annotation the unit offers).
func TestServiceControllerNSXLabelStands(t *testing.T) {
	h := newHarness(t)
	h.addProviderNode("node-v", "vsphere://4211")
	fake := plainFake()
	proxy := corev1.LoadBalancerIPModeProxy
	fake.BalancerIPMode = &proxy
	h.run(fake, kubernetes.NewProvider(nil), lgcloud.WithProfile(modern))
	tp := &tape{h: h}
	svc := lbService("", "nsx", map[string]string{core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "true",
		core.AnnotationBackendExpects: "proxy-protocol"})
	svc.Labels = map[string]string{"nsx.vmware.com/ingress-ip-mode": "vip"}
	h.create(svc)
	h.waitStatus("nsx", ipModeIs(corev1.LoadBalancerIPModeVIP))
	h.eventually("the first sync is recorded", func() bool { return len(h.spy.find("ensure", "nsx")) >= 1 })
	h.resync("nsx", 2)
	h.waitStatus("nsx", ipModeIs(corev1.LoadBalancerIPModeVIP))
	warnings := byReason(tp.read(), lgcloud.EventKeptUserIPMode)
	if len(warnings) != 1 {
		t.Fatalf("%d %s Events over three syncs, want 1: %q", len(warnings), lgcloud.EventKeptUserIPMode, warnings)
	}
	if w := warnings[0]; !strings.HasPrefix(w, corev1.EventTypeWarning+" ") || !strings.Contains(w, "nsx.vmware.com/ingress-ip-mode") ||
		!strings.Contains(w, string(core.ThroughLB)) || strings.Contains(w, "to let it") {
		t.Errorf("want a Warning naming the label and %s, without advice: %s", core.ThroughLB, w)
	}
}

// forService picks the Events of one reason that quote one of the Service's annotations (the
// user's setting the Event is about).
func forService(evs []string, reason string, ann map[string]string) []string {
	var out []string
	for _, ev := range byReason(evs, reason) {
		for k, v := range ann {
			if strings.HasPrefix(k, "loopguard.io/") {
				continue
			}
			if strings.Contains(ev, k+": "+fmt.Sprintf("%q", v)) {
				out = append(out, ev)
				break
			}
		}
	}
	return out
}

// oracleVIP is an Oracle OKE Service whose user set ipMode VIP while its backends expect the
// PROXY protocol from a load balancer that replaces the client address: loopguard would go
// through the load balancer, so every sync would advise (LoopguardKeptUserIPMode, and the
// annotation it needs, LoopguardChangeNeeded).
func oracleVIP(expects string) map[string]string {
	return map[string]string{"oci.oraclecloud.com/ingress-ip-mode": "VIP", core.AnnotationLBScope: "private",
		core.AnnotationLBSourceNAT: "true", core.AnnotationBackendExpects: expects}
}

// TestServiceControllerEventsOncePerChange: five syncs that change nothing record the Events of
// one, as the upstream event correlator folds repeats; a change that clears the advice and one
// that brings it back record it once more.
func TestServiceControllerEventsOncePerChange(t *testing.T) {
	h := newHarness(t)
	h.run(newFake(), kubernetes.NewProvider(nil), lgcloud.WithProfile(modern))
	tp := &tape{h: h}
	h.create(lbService("", "web", oracleVIP("proxy-protocol")))
	h.waitStatus("web", ipModeIs(corev1.LoadBalancerIPModeVIP))
	h.eventually("the first sync is recorded", func() bool { return len(h.spy.find("ensure", "web")) == 1 })
	first := tp.read()
	for _, reason := range []string{lgcloud.EventKeptUserIPMode, lgcloud.EventChangeNeeded, lgcloud.EventIPMode} {
		if n := len(byReason(first, reason)); n != 1 {
			t.Errorf("the first sync recorded %d %s Events, want 1: %q", n, reason, first)
		}
	}
	h.resync("web", 4)
	if diff := cmp.Diff(first, tp.read()); diff != "" {
		t.Errorf("four syncs that changed nothing recorded more (-after 1 sync +after 5):\n%s", diff)
	}

	// The backends need nothing after all: no advice. Then they do again: the advice, once.
	for i, expects := range []string{"none", "proxy-protocol"} {
		before := len(h.spy.find("ensure", "web"))
		h.annotate("web", core.AnnotationBackendExpects, expects)
		h.eventually("the change is synced", func() bool { return len(h.spy.find("ensure", "web")) > before })
		h.resync("web", 2)
		want := i + 1
		if n := len(byReason(tp.read(), lgcloud.EventKeptUserIPMode)); n != want {
			t.Errorf("after backend-expects %s: %d %s Events in all, want %d: %q", expects, n, lgcloud.EventKeptUserIPMode, want, tp.read())
		}
	}
	h.waitStatus("web", ipModeIs(corev1.LoadBalancerIPModeVIP)) // the user's, throughout
}

// TestServiceControllerEmptyFirstSync: kube-vip's cloud provider returns the Service's own
// status, which kube-vip writes after the first sync: that sync returns an empty status, and
// the decorator judges nothing and records nothing for it (no LoopguardChangeNeeded for DNS
// steering of an address that does not exist yet). Once kube-vip wrote the address, the next
// sync publishes it with an explicit ipMode.
func TestServiceControllerEmptyFirstSync(t *testing.T) {
	h := newHarness(t)
	h.run(newKubeVIP(), kubernetes.NewProvider(nil), lgcloud.WithProfile(modern))
	tp := &tape{h: h}
	h.create(lbService("", "web", map[string]string{"kube-vip.io/loadbalancerIPs": "192.0.2.40"}))
	h.eventually("the first sync is recorded", func() bool { return len(h.spy.find("ensure", "web")) == 1 })
	if c := h.spy.find("ensure", "web")[0]; c.err != nil {
		t.Fatalf("the first sync failed: %v", c.err)
	}
	if evs := tp.read(); len(evs) != 0 {
		t.Errorf("a sync with an empty status recorded %q", evs)
	}
	if n := h.patches.count("web"); n != 0 {
		t.Errorf("%d status patches for an empty status", n)
	}

	// kube-vip announces the address and writes it (services.go updateStatus: UpdateStatus,
	// ip only).
	ctx := context.Background()
	svc, err := h.srv.Client().CoreV1().Services(h.ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.40"}}
	if _, err := h.srv.Client().CoreV1().Services(h.ns).UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.resync("web", 1)
	got := h.waitStatus("web", ipModeIs(corev1.LoadBalancerIPModeVIP))
	if ip := got.Status.LoadBalancer.Ingress[0].IP; ip != "192.0.2.40" {
		t.Errorf("status %+v", got.Status.LoadBalancer)
	}
}
