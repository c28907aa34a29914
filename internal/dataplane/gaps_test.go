package dataplane

import (
	"github.com/loopguard/loopguard/core"
)

// modelGap is a place where the kernel shows the core model wrong. The cases it covers are
// expected to disagree in exactly the recorded way; when core is fixed they agree and the
// test says to remove the entry.
type modelGap struct {
	name string
	// covers selects the cases of this gap.
	covers func(c *kcase) bool
	// disagrees is the disagreement every covered case shows.
	disagrees disagreement
	// evidence is what the kernel did, in netlab's words.
	evidence string
	// proposal is the core change that would close the gap.
	proposal string
}

// knownModelGaps lists the model's known disagreements with the kernel, each with the kernel's
// evidence and the proposed core change, until core is fixed.
var knownModelGaps = []modelGap{
	// Empty: the three gaps this test found (LB nodes under externalTrafficPolicy Cluster,
	// kube-proxy's NodePort masquerade, bridges without br_netfilter) were fixed in core.
}

// throughLB: the declared client dials the LB address and the nodes route it to the LB.
func throughLB(c *kcase) bool {
	return c.exposure != nil && c.exposure.Access == core.AccessLBAddress && c.exposure.Intercept == core.No
}

func gapFor(c *kcase) *modelGap {
	for i := range knownModelGaps {
		if knownModelGaps[i].covers(c) {
			return &knownModelGaps[i]
		}
	}
	return nil
}

// realGap is a known model gap found by the real-component tests (realproxy_test.go): like
// modelGap, for the cases of realProxyCases.
type realGap struct {
	name      string
	covers    func(c *rcase) bool
	disagrees disagreement
	evidence  string
	proposal  string
}

// knownRealGaps lists the model's known disagreements with the real kube-proxy and HAProxy.
var knownRealGaps = []realGap{
	// nodeport-masquerade-loses-proxy-header, found by this lab: the NodePort masquerade was
	// modelled as losing the client's address even when a PROXY header carries it. Fixed in
	// core's nodePortSource; the cases now agree.
}

func realGapFor(c *rcase) *realGap {
	for i := range knownRealGaps {
		if knownRealGaps[i].covers(c) {
			return &knownRealGaps[i]
		}
	}
	return nil
}
