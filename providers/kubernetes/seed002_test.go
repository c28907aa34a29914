package kubernetes_test

import (
	"testing"

	"github.com/loopguard/loopguard/adapters/manifest"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// TestSeed002 runs the conclusions of seed 002 (a Pod calling its own Service, measured on
// Kubernetes 1.34 + Cilium 1.20.1), section 7's table, through the dialect and core on real
// YAML: a Service with one endpoint and a cluster profile for each dataplane.
func TestSeed002(t *testing.T) {
	cases := []struct {
		conclusion string
		profile    string
		works      core.Fact
		source     core.SourceKind
		address    string
		codes      []core.Code
	}{
		{conclusion: "on Cilium, 169.254.42.1 in the access log is normal: it is the source of a request to the Pod's own Service",
			profile: "cilium.yaml", works: core.Yes, source: core.SourceServiceLoopback, address: "169.254.42.1",
			codes: []core.Code{"hairpin-cilium-loopback"}},
		{conclusion: "with Cilium's socket LB inside the Pod, connect() goes to the backend directly (speculative in the seed)",
			profile: "cilium-socket-lb.yaml", works: core.Yes, source: core.SourceClientPod, codes: []core.Code{"hairpin-cilium-socket-lb"}},
		{conclusion: "a bridge-based CNI needs hairpinMode: true, and kube-proxy's -s <self> -j KUBE-MARK-MASQ changes the source",
			profile: "flannel.yaml", works: core.Yes, source: core.SourceNode, codes: []core.Code{"hairpin-bridge-port-on"}},
		{conclusion: "if a Pod cannot reach its own Service, look at the CNI, not kubelet: its hairpinMode is read by nothing since 1.24",
			profile: "bridge-no-hairpin.yaml", works: core.No, source: core.SourceUnknown,
			codes: []core.Code{"hairpin-bridge-port-off", "kubelet-hairpin-mode-unused"}},
		{conclusion: "without a bridge, kube-proxy's self-masquerade rule alone is enough",
			profile: "calico.yaml", works: core.Yes, source: core.SourceNode, codes: []core.Code{"hairpin-masquerade"}},
	}
	d := kubernetes.NewDialect(nil)
	for _, tc := range cases {
		t.Run(tc.conclusion, func(t *testing.T) {
			var r manifest.Reader
			set, errs := r.Read("testdata/seed002/service.yaml", "testdata/seed002/"+tc.profile)
			if len(errs) > 0 || len(set.Profiles) != 1 || len(set.Objects) != 1 {
				t.Fatalf("inputs: %v", errs)
			}
			p := *set.Profiles[0].Profile
			c, err := core.NewCluster(p)
			if err != nil {
				t.Fatal(err)
			}
			res, err := core.Evaluate(d, set.Objects[0].Object, c, p.Policy)
			if err != nil {
				t.Fatal(err)
			}
			h := res.Assessment.Hairpin
			if h == nil {
				t.Fatal("no hairpin verdict for a described dataplane")
			}
			if h.Works != tc.works || h.Source.Kind != tc.source || h.Source.Address != tc.address {
				t.Errorf("hairpin = works %s, source %s %q; want %s, %s %q", h.Works, h.Source.Kind, h.Source.Address, tc.works, tc.source, tc.address)
			}
			if h.Works == core.Yes && h.Source.Kind != core.SourceClientPod && h.Source.ClientIP != core.ClientIPLost {
				t.Errorf("client IP = %s: the seed's last row says a hairpin request loses the real source", h.Source.ClientIP)
			}
			got := map[core.Code]bool{}
			for _, r := range h.Reasons {
				got[r.Code] = true
			}
			for _, c := range tc.codes {
				if !got[c] {
					t.Errorf("reason %s missing from %v", c, h.Reasons)
				}
			}
		})
	}
}
