package dataplane

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
	"github.com/loopguard/loopguard/internal/netlab"
	"github.com/loopguard/loopguard/internal/proxylab"
)

// The real-component cases: both failure directions, with the interception rules programmed
// by the real kube-proxy (internal/proxylab) from a real Service whose ipMode is written
// through the status subresource, the real HAProxy as the PROXY-protocol LB and backend, and
// the model's verdict for each.
//
//   - the VIP direction: ipMode VIP, the node intercepts, the packet never reaches the LB; a
//     backend that requires a PROXY header gets none and rejects the connection.
//   - the Proxy direction: ipMode Proxy, traffic goes through the LB; without source NAT and
//     with the backend on the client's node, the reply short-circuits (the loop).
//
// Dimensions: ipMode × LB source NAT × binding × where the LB lands (the client's node or
// another) × the header the backend requires (none, v1, v2): 72 cases per mode, all run, in 36
// labs (the two ipModes of a case share one: testRealKubeProxy says how). A
// backend that requires a header sits behind HAProxy sending that header, which connects from
// its own address with LB source NAT and from the client's without (a transparent proxy:
// proxylab.Scenario.LBTransparent); a backend without that need sits behind the kernel's DNAT,
// with or without MASQUERADE. Pods hang off a bridge with br_netfilter on (flannel's shape):
// the kernel test covers the attachments. Disagreements the lab found in the model are listed
// in knownRealGaps (gaps_test.go), with the evidence and the proposed core change.

// rcase is one real-component case.
type rcase struct {
	name     string
	ipMode   corev1.LoadBalancerIPMode
	lbSNAT   bool
	binding  binding
	place    placement
	expects  proxylab.ProxyProtocol
	exposure *core.Exposure
}

func realProxyCases(mode core.ProxyMode) []rcase {
	var out []rcase
	for _, ipMode := range []corev1.LoadBalancerIPMode{corev1.LoadBalancerIPModeVIP, corev1.LoadBalancerIPModeProxy} {
		for _, snat := range []bool{false, true} {
			for _, b := range bindings {
				for _, p := range placements {
					for _, pp := range []proxylab.ProxyProtocol{proxylab.ProxyNone, proxylab.ProxyV1, proxylab.ProxyV2} {
						c := rcase{ipMode: ipMode, lbSNAT: snat, binding: b, place: p, expects: pp}
						c.name = fmt.Sprintf("ipmode=%s/lb-snat=%s/%v/lb-picks=%v/backend-expects-proxy=%v", ipMode, onOff(snat), b, p, pp)
						c.exposure = realProxyExposure(mode, c)
						out = append(out, c)
					}
				}
			}
		}
	}
	return out
}

// realProxyExposure is what a dialect fills for the case: kube-proxy (a version that honours
// ipMode) intercepts the LB address exactly when ipMode is VIP, masquerading as
// dialect.KubeProxyMasquerades says; the LB replaces the source when it SNATs or is a TCP proxy;
// it passes the client address in a PROXY header when it sends one.
func realProxyExposure(mode core.ProxyMode, c rcase) *core.Exposure {
	d := dims{lbSNAT: c.lbSNAT, binding: c.binding, placement: c.place, attachment: attachBridgeNF}
	e := baseExposure(d)
	e.Intercept = dialect.FactOf(c.ipMode == corev1.LoadBalancerIPModeVIP)
	e.InterceptMasquerades = dialect.KubeProxyMasquerades(mode, d.binding.policy())
	e.LBSourceNAT = dialect.FactOf(d.lbSNAT)
	e.ProxyProtocol = dialect.FactOf(c.expects != proxylab.ProxyNone)
	e.Binding = d.binding.core()
	e.Placement = placementFor(d)
	describeBackend(&e, c.expects)
	return &e
}

// describeBackend tells the model what the backend depends on from the LB: a backend behind
// HAProxy's accept-proxy requires the PROXY header of the version the LB sends.
func describeBackend(e *core.Exposure, expects proxylab.ProxyProtocol) {
	switch expects {
	case proxylab.ProxyV1:
		e.Needs.ProxyHeader, e.Needs.ProxyVersion = core.Yes, "v1"
	case proxylab.ProxyV2:
		e.Needs.ProxyHeader, e.Needs.ProxyVersion = core.Yes, "v2"
	default:
		e.Needs.ProxyHeader = core.No
	}
}

// expectFor is where each case's expected verdict comes from: the model alone (core.Assess
// judges the VIP direction from Exposure.Needs).
var expectFor = modelVerdict

// rverdict is a verdict plus what the PROXY header named as the client.
type rverdict struct {
	verdict
	// header is the kind of address the backend's PROXY header named as the client, only when
	// connected to a backend that requires one.
	header core.SourceKind
}

func (v rverdict) String() string {
	if v.header != "" {
		return v.verdict.String() + ", header names " + string(v.header)
	}
	return v.verdict.String()
}

// failureProtocolError: the backend rejected the connection for what it lacked from the LB
// (here: a PROXY header); the symptom core calls protocol-error.
const failureProtocolError failure = failure(core.SymptomProtocolError)

// modelVerdict is core.Assess's verdict for the case.
func modelVerdict(c *rcase) rverdict {
	a := core.Assess(c.exposure)
	if a.Symptom == core.SymptomProtocolError {
		return rverdict{verdict: verdict{connected: core.No, failure: failureProtocolError}}
	}
	v := rverdict{verdict: predict(&kcase{exposure: c.exposure})}
	if v.connected == core.Yes && c.expects != proxylab.ProxyNone {
		v.header = headerFor(a.Source.ClientIP)
	}
	return v
}

// headerFor is the client a PROXY header names, as the model's ClientIP says: the client Pod
// when the header is how the backend learns it (behind LB source NAT), and when the client's
// address is kept (an LB without source NAT received the connection from the client, and its
// header names the address it received it from). Any other ClientIP says the backend cannot
// learn the client's address, which a header naming the client Pod contradicts.
func headerFor(ip core.ClientIP) core.SourceKind {
	switch ip {
	case core.ClientIPProxyProtocol, core.ClientIPKept:
		return core.SourceClientPod
	}
	if ip == core.ClientIPUnknown {
		return core.SourceUnknown
	}
	return core.SourceKind("none (client IP " + string(ip) + ")")
}

// observeReal is the lab's verdict.
func observeReal(r proxylab.Result, c *rcase) rverdict {
	if !r.Connected {
		f := failure(r.Failure)
		if r.Failure == proxylab.FailureProtocolError {
			f = failureProtocolError
		}
		return rverdict{verdict: verdict{connected: core.No, failure: f}}
	}
	v := rverdict{verdict: verdict{connected: core.Yes, source: sourceKind(r.PeerOrigin, clientPod)}}
	if c.expects != proxylab.ProxyNone {
		v.header = sourceKind(r.HeaderSourceOrigin, clientPod)
	}
	return v
}

func compareReal(model, lab rverdict) *disagreement {
	if d := compare(model.verdict, lab.verdict, false); d != nil {
		return d
	}
	if model.header != lab.header {
		return &disagreement{"header", string(model.header), string(lab.header)}
	}
	return nil
}

// realScenario is the lab for the case: a client Pod on n1, the backend where the LB lands.
func realScenario(kp string, mode proxylab.Mode, c *rcase) proxylab.Scenario {
	d := dims{binding: c.binding, placement: c.place, attachment: attachBridgeNF}
	net := twoNodeScenario(d)
	for i := range net.Nodes {
		net.Nodes[i].Intercept = netlab.InterceptExternal
	}
	net.Service.ExternalServer = true
	// A header comes from HAProxy, which replaces the source unless transparent; without a
	// header the LB is the kernel's DNAT, with or without MASQUERADE.
	net.LB = netlab.LoadBalancer{SourceNAT: c.lbSNAT && c.expects == proxylab.ProxyNone}
	transparent := !c.lbSNAT && c.expects != proxylab.ProxyNone
	switch c.binding {
	case bindNodePortCluster, bindNodePortLocal:
		net.LB.Backend, net.LB.TargetNode = netlab.BackendNodePort, c.place.backendNode()
	case bindDirectToPod:
		net.LB.Backend = netlab.BackendDirectToPod
	}
	return proxylab.Scenario{KubeProxy: kp, Mode: mode, IPMode: c.ipMode, Net: net, LBProxy: c.expects, LBTransparent: transparent, BackendExpects: c.expects}
}

// ipModePairs pairs each ipMode=VIP case with the Proxy case that differs from it in nothing
// else, in the order of cases.
func ipModePairs(cases []rcase) [][2]*rcase {
	type pairKey struct {
		lbSNAT  bool
		binding binding
		place   placement
		expects proxylab.ProxyProtocol
	}
	proxies := map[pairKey]*rcase{}
	for i := range cases {
		if c := &cases[i]; c.ipMode == corev1.LoadBalancerIPModeProxy {
			proxies[pairKey{c.lbSNAT, c.binding, c.place, c.expects}] = c
		}
	}
	var out [][2]*rcase
	for i := range cases {
		if c := &cases[i]; c.ipMode == corev1.LoadBalancerIPModeVIP {
			p := proxies[pairKey{c.lbSNAT, c.binding, c.place, c.expects}]
			if p == nil {
				panic("dataplane: no ipMode=Proxy case for " + c.name)
			}
			out = append(out, [2]*rcase{c, p})
		}
	}
	if 2*len(out) != len(cases) {
		panic(fmt.Sprintf("dataplane: %d cases make %d ipMode pairs", len(cases), len(out)))
	}
	return out
}

// TestRealKubeProxyIPTables and TestRealKubeProxyNFTables run every case with the real
// kube-proxy in that mode and print
//
//	dataplane (kube-proxy v1.37.2 iptables): N scenarios, N agree, N known model gaps, ...
func TestRealKubeProxyIPTables(t *testing.T) { testRealKubeProxy(t, proxylab.ModeIPTables) }
func TestRealKubeProxyNFTables(t *testing.T) { testRealKubeProxy(t, proxylab.ModeNFTables) }

func testRealKubeProxy(t *testing.T, mode proxylab.Mode) {
	coreMode := map[proxylab.Mode]core.ProxyMode{proxylab.ModeIPTables: core.ProxyModeIPTables, proxylab.ModeNFTables: core.ProxyModeNFTables}[mode]
	cases := realProxyCases(coreMode)
	label := fmt.Sprintf("dataplane (kube-proxy %%s %s)", mode)
	kp, version, err := proxylab.KubeProxyBinary(proxylab.EnvKubeProxy)
	if err == nil {
		err = proxylab.Available()
	}
	if err != nil {
		fmt.Printf(label+": 0 scenarios, 0 agree; all %d cases skipped: %v\n", "v1.37.2", len(cases), err)
		if errors.Is(err, proxylab.ErrNoBinary) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	label = fmt.Sprintf(label, version)
	var (
		mu                        sync.Mutex
		ran, agree, bad, noResult int
		gaps                      = map[string]int{}
		failures                  = map[failure]int{}
	)
	start := time.Now()
	// record compares one case's model verdict with what the lab did, and counts it.
	record := func(t *testing.T, c *rcase, l *proxylab.Lab, res proxylab.Result) {
		model := expectFor(c)
		lab := observeReal(res, c)
		d := compareReal(model, lab)
		t.Logf("model: %v; lab: %v; %v", model, lab, res)
		mu.Lock()
		defer mu.Unlock()
		ran++
		if lab.connected != core.Yes {
			failures[lab.failure]++
		}
		gap := realGapFor(c)
		switch {
		case d == nil && gap == nil:
			agree++
		case gap == nil:
			bad++
			t.Errorf("model and lab disagree: %v\nfacts: %s\n%s", d, facts(&kcase{exposure: c.exposure}), l.Logs())
		case d == nil:
			agree++
			t.Errorf("known model gap %q no longer disagrees here (model and lab: %v): core was fixed; narrow or remove the entry in knownRealGaps", gap.name, lab)
		case *d != gap.disagrees:
			bad++
			t.Errorf("known model gap %q expected %v, got %v: the model or the lab changed; update knownRealGaps\nfacts: %s", gap.name, gap.disagrees, d, facts(&kcase{exposure: c.exposure}))
		default:
			gaps[gap.name]++
			t.Logf("known model gap %q: %v", gap.name, d)
		}
	}
	// The two cases that differ only in ipMode share a lab: it is built for VIP, connected,
	// then switched to Proxy (proxylab.Lab.SetIPMode) and connected again. That is the change a
	// cloud-controller-manager, or loopguard's decorator, makes on a live Service; kube-proxy's
	// rules follow it before the second connection, and Connect counts only what happens after
	// it starts. Half the labs: each lab starts a kube-proxy per node, most of this test's CPU.
	t.Run("case", func(t *testing.T) {
		for _, pair := range ipModePairs(cases) {
			vip, proxy := pair[0], pair[1]
			t.Run(strings.TrimPrefix(vip.name, "ipmode=VIP/"), func(t *testing.T) {
				t.Parallel()
				l, err := proxylab.Build(t.Context(), realScenario(kp, mode, vip))
				if err != nil {
					mu.Lock()
					noResult += 2
					mu.Unlock()
					t.Fatalf("harness: %v", err)
				}
				defer func() {
					if err := l.Close(); err != nil {
						t.Errorf("harness: %v", err)
					}
				}()
				t.Run("ipmode=VIP", func(t *testing.T) { record(t, vip, l, l.Connect(t.Context())) })
				if err := l.SetIPMode(t.Context(), proxy.ipMode); err != nil {
					mu.Lock()
					noResult++
					mu.Unlock()
					t.Fatalf("harness: %v", err)
				}
				t.Run("ipmode=Proxy", func(t *testing.T) { record(t, proxy, l, l.Connect(t.Context())) })
			})
		}
	})
	nGaps := 0
	for _, n := range gaps {
		nGaps += n
	}
	var kinds []string
	for _, f := range slices.Sorted(maps.Keys(failures)) {
		kinds = append(kinds, fmt.Sprintf("%d %s", failures[f], f))
	}
	fmt.Printf("%s: %d scenarios, %d agree, %d known model gaps, %d disagree, %d without a verdict; failures seen: %s; wall %v\n",
		label, ran, agree, nGaps, bad, noResult, strings.Join(kinds, ", "), time.Since(start).Round(10*time.Millisecond))
	for _, g := range slices.Sorted(maps.Keys(gaps)) {
		fmt.Printf("%s:   known model gap %s: %d scenarios\n", label, g, gaps[g])
	}
	// A gap entry that covers nothing any more is stale; judge it only when every case ran.
	if ran == len(cases) && !t.Failed() {
		for _, g := range knownRealGaps {
			if gaps[g.name] == 0 {
				t.Errorf("known model gap %q covers no case that ran: remove it from knownRealGaps", g.name)
			}
		}
	}
}
