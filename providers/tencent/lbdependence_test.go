package tencent_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
	"github.com/loopguard/loopguard/providers/tencent"
)

// TestBackendsThatNeedTheCLB: the other direction on TKE. prevent-loopback makes IPVS intercept
// the CLB VIP; a listener that ends TLS at the CLB (specify-protocol TCP_SSL) then breaks for
// in-cluster clients, so loopguard takes them back through the CLB — with the listener's SNAT,
// which makes that path loop-safe — by setting prevent-loopback to "false", never by
// intercepting.
func TestBackendsThatNeedTheCLB(t *testing.T) {
	tlsPort := map[string]string{
		tencent.AnnotationPreventLoopback: "true",
		tencent.AnnotationSpecifyProtocol: `{"443":{"protocol":["TCP_SSL"],"tls":"cert-secret"}}`,
	}
	d := newDriver(t, nil)

	t.Run("SNAT granted: SNAT plus prevent-loopback off", func(t *testing.T) {
		svc := privateService("shop", tlsPort, "TCP/443")
		p, res := planFor(t, d, svc, cluster(t, ipvsProfile(tencent.CapL4SNAT)), core.Policy{}, nil)
		a := &res.Assessment
		if a.Risk != core.RiskAtRisk || a.Symptom != core.SymptomProtocolError || a.Path != core.PathVIP {
			t.Fatalf("assessment %s %s %s, want at-risk protocol-error on VIP (%v)", a.Risk, a.Symptom, a.Path, codes(a.Reasons))
		}
		if !slices.Contains(codes(a.Reasons), "tke-specify-protocol-tls") || !slices.Contains(codes(a.Reasons), core.CodeVIPSkipsTLS) {
			t.Errorf("reasons %v", codes(a.Reasons))
		}
		dec := res.Decision
		if dec.Remedy != core.LBSourceNAT || dec.Path != core.PathProxy {
			t.Fatalf("decision %s (%s), want lb-snat on Proxy; rejected %+v", dec.Remedy, dec.Path, dec.Rejected)
		}
		rejected := map[core.Remedy]core.Code{}
		for _, r := range dec.Rejected {
			rejected[r.Remedy] = r.Reason.Code
		}
		if rejected[core.InterceptVIP] != core.CodeDecideKeepsOffLB || rejected[core.ThroughLB] != dialect.CodeThroughLBLoops {
			t.Errorf("rejected %v: intercept-vip must be refused for the backends, through-lb for the loop", rejected)
		}
		var fields []string
		for _, c := range p.Changes {
			fields = append(fields, c.Field+"="+c.To)
		}
		want := map[string]bool{`metadata.annotations["service.cloud.tencent.com/prevent-loopback"]=false`: false}
		for _, f := range fields {
			if _, ok := want[f]; ok {
				want[f] = true
			}
		}
		if !want[`metadata.annotations["service.cloud.tencent.com/prevent-loopback"]=false`] || len(p.Changes) < 2 {
			t.Errorf("changes %v, want the listener's SNAT and prevent-loopback false", fields)
		}
	})

	t.Run("SNAT on already: through-lb, only prevent-loopback off", func(t *testing.T) {
		ann := map[string]string{tencent.AnnotationServiceConfig: "shop-cfg"}
		for k, v := range tlsPort {
			ann[k] = v
		}
		svc := privateService("shop", ann, "TCP/443")
		cfg := fromYAML(t, `
apiVersion: cloud.tencent.com/v1alpha1
kind: TkeServiceConfig
metadata: {name: shop-cfg, namespace: default}
spec: {loadBalancer: {l4Listeners: [{protocol: TCP, port: 443, snatEnable: true}]}}`)
		p, res := planFor(t, d, svc, cluster(t, ipvsProfile(), cfg), core.Policy{}, nil)
		if res.Decision.Remedy != core.ThroughLB || res.Decision.Path != core.PathProxy {
			t.Fatalf("decision %s (%s), want through-lb on Proxy; rejected %+v", res.Decision.Remedy, res.Decision.Path, res.Decision.Rejected)
		}
		if len(p.Changes) != 1 || p.Changes[0].To != "false" || p.Blocked != nil {
			t.Fatalf("changes %+v blocked %v, want prevent-loopback false alone", p.Changes, p.Blocked)
		}
	})

	t.Run("a TCP_SSL listener in the TkeServiceConfig ends TLS at the CLB too", func(t *testing.T) {
		svc := privateService("shop", map[string]string{tencent.AnnotationPreventLoopback: "true", tencent.AnnotationServiceConfig: "shop-cfg"}, "TCP/443")
		cfg := fromYAML(t, `
apiVersion: cloud.tencent.com/v1alpha1
kind: TkeServiceConfig
metadata: {name: shop-cfg, namespace: default}
spec: {loadBalancer: {l4Listeners: [{protocol: TCP_SSL, port: 443, healthCheck: {enable: true}}]}}`)
		_, res := planFor(t, d, svc, cluster(t, ipvsProfile(tencent.CapL4SNAT), cfg), core.Policy{}, nil)
		if res.Assessment.Symptom != core.SymptomProtocolError || res.Decision.Path != core.PathProxy {
			t.Fatalf("%s %s, decision %s (%s): want protocol-error and a remedy on Proxy", res.Assessment.Risk, res.Assessment.Symptom, res.Decision.Remedy, res.Decision.Path)
		}
	})

	t.Run("a malformed specify-protocol is an error naming it", func(t *testing.T) {
		svc := privateService("shop", map[string]string{tencent.AnnotationSpecifyProtocol: `{"443": TCP_SSL}`}, "TCP/443")
		_, err := core.Evaluate(d.Dialect(), svc, cluster(t, ipvsProfile()), core.Policy{})
		var ie *core.InvalidError
		if !errors.As(err, &ie) || len(ie.Errs) != 1 || ie.Errs[0].Field != `metadata.annotations[service.cloud.tencent.com/specify-protocol]` {
			t.Fatalf("error %v, want one naming the annotation", err)
		}
	})

	t.Run("plain backend: prevent-loopback stays", func(t *testing.T) {
		svc := privateService("shop", map[string]string{tencent.AnnotationPreventLoopback: "true"}, "TCP/443")
		_, res := planFor(t, d, svc, cluster(t, ipvsProfile(tencent.CapL4SNAT)), core.Policy{}, nil)
		if res.Assessment.Risk != core.RiskNone || res.Decision.Remedy != core.RemedyNone {
			t.Errorf("%s, decision %s: want no risk and nothing to do", res.Assessment.Risk, res.Decision.Remedy)
		}
	})
}
