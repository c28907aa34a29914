package volcengine_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/volcengine"
	"github.com/loopguard/loopguard/providers/volcengine/clbtest"
)

// BenchmarkReconcilerPlan is one whole plan as a controller makes it per Service: Translate,
// Assess, Decide, and the driver's observation (a live read through the writer, the cluster's
// prerequisite reads) and planning. Run with -benchmem.
func BenchmarkReconcilerPlan(b *testing.B) {
	for _, name := range []string{"create default VIP", "create Proxy with node separation",
		"existing VIP, manifest asks for Proxy, replacement allowed", "existing Proxy, default policy"} {
		tc := planCases()[name]
		c, _ := core.NewCluster(readyProfile(), placement("shop")...)
		drv, _ := volcengine.NewDriver(nil)
		r := core.NewReconciler(core.NewProvider(drv.Dialect(), drv), &core.ReconcilerOptions{ClusterWriter: newMem(tc.inCluster...), Policy: tc.policy})
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Plan(context.Background(), tc.input, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSameNode is the same-node report and the anti-affinity patches over a large cluster:
// 100 nodes, 500 backends, 2000 client Pods in 50 Deployments.
func BenchmarkSameNode(b *testing.B) {
	var objs []runtime.Object
	eps := map[string]string{}
	for n := range 100 {
		objs = append(objs, node(fmt.Sprintf("node-%03d", n)))
	}
	for i := range 500 {
		name := fmt.Sprintf("web-%03d", i)
		nodeName := fmt.Sprintf("node-%03d", i%100)
		objs = append(objs, pod("shop", name, nodeName, map[string]string{"app": "web"}))
		eps[name] = nodeName
	}
	objs = append(objs, slice("shop", "web", eps))
	for i := range 2000 {
		p := clientPod("shop", fmt.Sprintf("client-%04d", i), fmt.Sprintf("node-%03d", (i*7)%100))
		p.OwnerReferences[0].Name = fmt.Sprintf("client%02d-5d8f7c9b4", i%50)
		objs = append(objs, p)
	}
	c, _ := core.NewCluster(core.ClusterProfile{}, objs...)
	svc := svcManifest(nil)
	sel := labels.SelectorFromSet(labels.Set{"app": "client"})
	b.Run("co-locations", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(volcengine.SameNode(svc, c, sel)) == 0 {
				b.Fatal("no co-location found")
			}
		}
	})
	b.Run("patches", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(volcengine.SeparationPatches(svc, c, sel)) != 50 {
				b.Fatal("want one patch per Deployment")
			}
		}
	})
}

// BenchmarkCLBReaderSnapshot reads 20 Services' CLBs (one batched DescribeLoadBalancers and one
// DescribeListeners each) through the official SDK against the in-process API, signatures
// checked: the cost of the cloud read a host makes before translating.
func BenchmarkCLBReaderSnapshot(b *testing.B) {
	var lbs []clbtest.LoadBalancer
	var svcs []*corev1.Service
	for i := range 20 {
		id := fmt.Sprintf("clb-bench-%02d", i)
		lbs = append(lbs, clbtest.LoadBalancer{ID: id, Type: clbtest.TypePrivate, EniAddress: fmt.Sprintf("192.168.2.%d", i+1),
			Listeners: []clbtest.Listener{{Protocol: "TCP", Port: 80, ProxyProtocolType: clbtest.ProxyProtocolStandard}}})
		svcs = append(svcs, lbService(fmt.Sprintf("s%02d", i), map[string]string{volcengine.AnnotationLoadBalancerID: id}))
	}
	_, client := cloud(b, lbs...)
	r := volcengine.NewCLBReader(client, nil)
	b.ReportAllocs()
	for b.Loop() {
		snap, err := r.Snapshot(context.Background(), svcs...)
		if err != nil || len(snap) != 40 {
			b.Fatalf("%d keys, %v", len(snap), err)
		}
	}
}
