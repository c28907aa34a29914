package tencent_test

import (
	"context"
	"testing"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

// BenchmarkEvaluateService is Translate + Assess + Decide for one private LoadBalancer Service
// in an IPVS cluster of three regular nodes (the guide's at-risk row), as `loopguard assess`
// runs it per object. Run with -benchmem.
func BenchmarkEvaluateService(b *testing.B) {
	w := load(b, "profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-service.yaml")
	obj := w.object(b, svcWeb)
	d := tencent.NewDialect(nil)
	b.ReportAllocs()
	for b.Loop() {
		tr, err := d.Translate(obj, w.cluster)
		if err != nil {
			b.Fatal(err)
		}
		a := core.Assess(&tr.Exposure)
		dec := core.Decide(&a, tr.Offers, w.cluster.Profile.Policy)
		if dec.Remedy != core.InterceptVIP {
			b.Fatalf("decision %s", dec.Remedy)
		}
	}
}

// BenchmarkEvaluateIngress is the same for a private CLB Ingress with an SNAT TkeServiceConfig.
func BenchmarkEvaluateIngress(b *testing.B) {
	w := load(b, "profiles/ipvs.yaml", "nodes/regular-3.yaml", "seed/private-ingress-snat.yaml")
	obj := w.object(b, ingWeb)
	d := tencent.NewDialect(nil)
	b.ReportAllocs()
	for b.Loop() {
		tr, err := d.Translate(obj, w.cluster)
		if err != nil {
			b.Fatal(err)
		}
		a := core.Assess(&tr.Exposure)
		core.Decide(&a, tr.Offers, w.cluster.Profile.Policy)
	}
}

// BenchmarkPlanServiceConfig is the driver's Plan for one Service whose referenced
// TkeServiceConfig lacks SNAT on one of two listeners (read through a ClusterReader, parsed,
// two edits planned), as a controller runs it per reconcile. The evaluation is done once.
func BenchmarkPlanServiceConfig(b *testing.B) {
	d := newDriver(b, nil)
	svc := privateService("web", map[string]string{tencent.AnnotationServiceConfig: "web-cfg"}, "TCP/80", "UDP/53")
	cfg := fromYAML(b, configYAML)
	reader := newMemCluster(toUnstructured(b, svc), cfg)
	c := cluster(b, ipvsProfile(tencent.CapL4SNAT), svc, cfg)
	res, err := core.Evaluate(d.Dialect(), svc, c, snatPolicy)
	if err != nil {
		b.Fatal(err)
	}
	req := &core.PlanRequest{Object: svc, Cluster: c, Result: res, Reader: reader}
	b.ReportAllocs()
	for b.Loop() {
		p, err := d.Plan(context.Background(), req)
		if err != nil || len(p.Changes) != 1 {
			b.Fatalf("plan %v, err %v", p, err)
		}
	}
}

// BenchmarkPlanInterceptVIP is the driver's Plan for prevent-loopback on one Service (a live
// read of the Service, one annotation edit).
func BenchmarkPlanInterceptVIP(b *testing.B) {
	d := newDriver(b, nil)
	svc := privateService("web", nil, "TCP/80")
	reader := newMemCluster(toUnstructured(b, svc))
	c := cluster(b, ipvsProfile(), svc)
	res, err := core.Evaluate(d.Dialect(), svc, c, core.Policy{})
	if err != nil {
		b.Fatal(err)
	}
	req := &core.PlanRequest{Object: svc, Cluster: c, Result: res, Reader: reader}
	b.ReportAllocs()
	for b.Loop() {
		if p, err := d.Plan(context.Background(), req); err != nil || len(p.Changes) != 1 {
			b.Fatalf("plan %v, err %v", p, err)
		}
	}
}

// BenchmarkPlanDirect is the direct-mode Plan for one Service: one DescribeListeners through
// the real SDK client to clbtest over loopback HTTP (signing, JSON, the server), with the
// client-side limiter raised out of the way.
func BenchmarkPlanDirect(b *testing.B) {
	cl := startCloud(b, &clbtest.Options{RateLimit: clbtest.Unlimited})
	cl.seedLB(b, lbID, "TCP/80", "UDP/53", "TCP/443")
	d := newDriver(b, &tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: cl.client, RateLimit: 1e9})
	svc := privateService("web", map[string]string{tencent.AnnotationLoadBalancerID: lbID}, "TCP/80", "UDP/53")
	c := cluster(b, ipvsProfile(tencent.CapL4SNAT), svc)
	res, err := core.Evaluate(d.Dialect(), svc, c, snatPolicy)
	if err != nil {
		b.Fatal(err)
	}
	req := &core.PlanRequest{Object: svc, Cluster: c, Result: res}
	b.ReportAllocs()
	for b.Loop() {
		if p, err := d.Plan(context.Background(), req); err != nil || len(p.Changes) != 2 {
			b.Fatalf("plan %v, err %v", p, err)
		}
	}
}
