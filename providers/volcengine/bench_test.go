package volcengine_test

import (
	"testing"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/volcengine"
)

// BenchmarkTranslateAssessDecide is the whole evaluation of one Service, as the CLI does it for
// each object: Translate + Assess + Decide. Run with -benchmem.
func BenchmarkTranslateAssessDecide(b *testing.B) {
	cases := map[string]struct {
		files   []string
		ns, svc string
	}{
		// The seed's Proxy Service on three nodes: at risk, three offers ranked.
		"proxy": {files: []string{"cluster/nodes.yaml", "modes/services.yaml"}, svc: "service-demo"},
		// No annotation: VIP, no loop.
		"vip-default": {files: []string{"cluster/nodes.yaml", "modes/services.yaml"}, svc: "service-default"},
		// Proxy with EndpointSlices and a declared client Pod on a backend's node.
		"proxy-placement": {files: []string{"cluster/nodes.yaml", "samenode/services.yaml", "samenode/client-on-backend-node.yaml"},
			ns: "shop", svc: "web"},
	}
	d := volcengine.NewDialect(nil)
	for name, tc := range cases {
		w := load(b, "profiles/ready.yaml", tc.files...)
		obj := w.object(b, "Service", tc.ns, tc.svc)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				t, err := d.Translate(obj, w.cluster)
				if err != nil {
					b.Fatal(err)
				}
				a := core.Assess(&t.Exposure)
				_ = core.Decide(&a, t.Offers, core.Policy{})
			}
		})
	}
}
