package verify

import (
	"strings"
	"testing"

	"github.com/loopguard/loopguard/adapters/verify/probe"
	"github.com/loopguard/loopguard/core"
)

func loopingExposure(binding core.Binding) *core.Exposure {
	return &core.Exposure{
		Object: core.ObjectRef{Kind: "Service", Namespace: "ns", Name: "svc"}, Provider: "test",
		Scope: core.Private, Layer: core.Layer4, Protocols: core.TCP, ProxyProtocol: core.No,
		Intercept: core.No, LBSourceNAT: core.No, Binding: binding,
		Placement: core.Placement{NodesBehindLB: 4, Backends: []core.NodeBackends{{Node: "n1", Count: 1}}, Separated: core.No},
	}
}

func TestPredict(t *testing.T) {
	fixed := loopingExposure(core.DirectToPod)
	fixed.LBSourceNAT = core.Yes
	header := loopingExposure(core.DirectToPod)
	header.Intercept, header.ProxyProtocol, header.Needs.ProxyHeader = core.Yes, core.Yes, core.Yes
	tests := map[string]struct {
		e    *core.Exposure
		node string
		want Behaviour
	}{
		"direct to Pod, client on the backend's node": {loopingExposure(core.DirectToPod), "n1", Loops},
		"direct to Pod, client elsewhere":             {loopingExposure(core.DirectToPod), "n2", Works},
		"NodePort Cluster: any node, 1 in 4":          {loopingExposure(core.NodePortCluster), "n2", Intermittent},
		"LB source NAT":                               {fixed, "n1", Works},
		"VIP path skips a needed PROXY header":        {header, "n2", ProtocolError},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Predict(tc.e, tc.node)
			if got.Behaviour != tc.want {
				t.Errorf("got %+v, want %s (assessment %+v)", got, tc.want, core.Assess(tc.e))
			}
			if tc.e.Placement.ClientNodes != nil {
				t.Error("Predict changed its input")
			}
		})
	}
}

func TestObserveAndAgree(t *testing.T) {
	counts := func(kv ...any) probe.TargetReport {
		tr := probe.TargetReport{Counts: map[probe.Outcome]int{}}
		for i := 0; i < len(kv); i += 2 {
			tr.Counts[kv[i].(probe.Outcome)] = kv[i+1].(int)
		}
		return tr
	}
	tests := map[string]struct {
		pred      Prediction
		obs       []probe.TargetReport
		behaviour Behaviour
		agree     bool
		why       string
	}{
		"loop seen":                 {Prediction{Behaviour: Loops}, []probe.TargetReport{counts(probe.Timeout, 3), counts(probe.NoAnswer, 2)}, Loops, true, ""},
		"loop predicted, works":     {Prediction{Behaviour: Loops}, []probe.TargetReport{counts(probe.OK, 5)}, Works, false, "predicted loops, observed works (5 ok)"},
		"protocol error seen":       {Prediction{Behaviour: ProtocolError}, []probe.TargetReport{counts(probe.ProxyRejected, 5)}, ProtocolError, true, ""},
		"refused is neither":        {Prediction{Behaviour: Works}, []probe.TargetReport{counts(probe.Refused, 5)}, Fails, false, "5 refused"},
		"intermittent, mixed":       {Prediction{Behaviour: Intermittent, LoopProbability: 0.25}, []probe.TargetReport{counts(probe.OK, 3, probe.Timeout, 2)}, Intermittent, true, ""},
		"intermittent, none looped": {Prediction{Behaviour: Intermittent, LoopProbability: 0.25}, []probe.TargetReport{counts(probe.OK, 5)}, Works, true, "no connection of 5 looped"},
		"intermittent, 50 all fine": {Prediction{Behaviour: Intermittent, LoopProbability: 0.25}, []probe.TargetReport{counts(probe.OK, 50)}, Works, false, "chance"},
		"intermittent, all looped":  {Prediction{Behaviour: Intermittent, LoopProbability: 0.25}, []probe.TargetReport{counts(probe.Timeout, 5)}, Loops, false, "every connection looped"},
		"unknown prediction":        {Prediction{Behaviour: Unpredicted}, []probe.TargetReport{counts(probe.OK, 5)}, Works, true, "no prediction"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := Observe(tc.obs...)
			if o.Behaviour != tc.behaviour {
				t.Errorf("observed %s, want %s", o.Behaviour, tc.behaviour)
			}
			ok, why := Agree(tc.pred, o)
			if ok != tc.agree || !strings.Contains(why, tc.why) {
				t.Errorf("agree %v %q, want %v containing %q", ok, why, tc.agree, tc.why)
			}
		})
	}
}

func TestPathFor(t *testing.T) {
	e := loopingExposure(core.DirectToPod)
	p := PathFor(e, "n1", "n1", "192.0.2.10:80", Predict(e, "n1"))
	if got := p.Text(); !strings.Contains(got, "client Pod on n1 ──► node n1 ──► LB 192.0.2.10:80 ──► node n1 ──► backend Pod ✗") || !strings.Contains(got, "not back through the LB") {
		t.Errorf("text:\n%s", got)
	}
	if m := p.Mermaid(); !strings.Contains(m, `h4 -. "✗ the backend's reply`) || !strings.Contains(m, "h0 --> h1") {
		t.Errorf("mermaid:\n%s", m)
	}
	header := loopingExposure(core.DirectToPod)
	header.Intercept, header.ProxyProtocol, header.Needs.ProxyHeader = core.Yes, core.Yes, core.Yes
	p = PathFor(header, "n2", "n1", "192.0.2.10:80", Predict(header, "n2"))
	if got := p.Text(); strings.Contains(got, "──► LB") || !strings.Contains(got, "kube-proxy answers for 192.0.2.10:80") || !strings.Contains(got, "PROXY header never came") {
		t.Errorf("text:\n%s", got)
	}
}
