package tencent_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

// exampleService is a private LoadBalancer Service with one TCP port.
func exampleService(ann map[string]string) *corev1.Service {
	ann[tencent.AnnotationInternalSubnet] = "subnet-1a2b3c4d"
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: ann},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
}

func exampleCluster(p core.ClusterProfile) *core.Cluster {
	c, err := core.NewCluster(p,
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-3"}})
	if err != nil {
		log.Fatal(err)
	}
	return c
}

// Plan the TKE changes for a private Service in an IPVS cluster. The default policy picks
// intra-cluster forwarding: one annotation, with FAQ Q3's caveats as notes. With a policy
// that keeps CLB features and the CLB L4 SNAT allowlist, it is listener SNAT through a
// TkeServiceConfig loopguard creates, then references.
func ExampleDriver() {
	drv, err := tencent.NewDriver(nil)
	if err != nil {
		log.Fatal(err)
	}
	svc := exampleService(map[string]string{})
	ipvs := core.ClusterProfile{Provider: tencent.Name, ProxyMode: core.ProxyModeIPVS, KubeProxyVersion: "v1.20.6-tke.12",
		Allowlists: []core.Capability{tencent.CapL4SNAT}}

	for _, pol := range []core.Policy{{}, {Prefer: core.PreferLBFeatures}} {
		// Without a ClusterWriter the Reconciler plans offline, from the objects given.
		r := core.NewReconciler(core.NewProvider(drv.Dialect(), drv), &core.ReconcilerOptions{Policy: pol})
		p, err := r.Plan(context.Background(), svc, exampleCluster(ipvs))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(p)
		for _, n := range p.Notes {
			fmt.Println("  note:", n.Code)
		}
	}
	// Output:
	// Service default/web: intercept-vip
	//   cluster Service default/web: metadata.annotations["service.cloud.tencent.com/prevent-loopback"] (unset) → true
	//   note: tke-prevent-loopback-health-check-source
	//   note: tke-prevent-loopback-long-connections
	// Service default/web: lb-snat
	//   cluster TkeServiceConfig default/web-loopguard: spec.loadBalancer.l4Listeners[TCP:80].snatEnable TCP:80 (unset) → true
	//   cluster Service default/web: metadata.annotations["service.cloud.tencent.com/tke-service-config"] (unset) → web-loopguard
	//   note: source-lb-tcp
}

// An old kube-proxy cannot carry prevent-loopback; asked for anyway, the plan is refused with
// the minimum revision, before anything is written.
func ExampleDriver_Plan_kubeProxyTooOld() {
	drv, _ := tencent.NewDriver(nil)
	svc := exampleService(map[string]string{})
	c := exampleCluster(core.ClusterProfile{Provider: tencent.Name, ProxyMode: core.ProxyModeIPVS, KubeProxyVersion: "v1.18.4-tke.19"})
	res, err := core.Evaluate(drv.Dialect(), svc, c, core.Policy{})
	if err != nil {
		log.Fatal(err)
	}
	res.Decision = core.Decision{Remedy: core.InterceptVIP} // the user's choice, not Decide's
	p, err := drv.Plan(context.Background(), &core.PlanRequest{Object: svc, Cluster: c, Result: res})
	if err != nil {
		log.Fatal(err)
	}
	var pe *core.PreconditionError
	if errors.As(p.Blocked.Err(), &pe) {
		fmt.Println(pe.Component, pe.Have, "→ need", pe.Need)
	}
	// Output:
	// kube-proxy v1.18.4-tke.19 → need v1.18.4-tke.20 or later
}

// A host that owns the CLB (a cloud-controller-manager fork, a Terraform backend) turns
// listener SNAT on through the CLB API with the official SDK client. Here the client talks to
// clbtest; against the cloud, only the endpoint and the credential differ. The second run
// reads the listener and writes nothing.
func ExampleDriver_direct() {
	srv, err := clbtest.Start(&clbtest.Options{Allowlist: []clbtest.Capability{clbtest.L4SNAT}, TaskDuration: 10 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	_, _ = srv.AddLoadBalancer(clbtest.LoadBalancer{ID: "lb-demo0001", Type: clbtest.LoadBalancerInternal})
	_, _ = srv.AddListener(clbtest.Listener{LoadBalancerID: "lb-demo0001", ID: "lbl-demo0080", Protocol: clbtest.ProtocolTCP, Port: 80})

	cpf := profile.NewClientProfile()
	cpf.HttpProfile.Endpoint = srv.Endpoint()
	cpf.HttpProfile.Scheme = "HTTP"
	client, err := clb.NewClient(common.NewCredential(clbtest.DefaultSecretID, clbtest.DefaultSecretKey), clbtest.DefaultRegion, cpf)
	if err != nil {
		log.Fatal(err)
	}
	drv, err := tencent.NewDriver(&tencent.DriverOptions{
		Mode:             tencent.ModeDirect,
		CLB:              client,
		Allowlists:       []core.Capability{tencent.CapL4SNAT},
		TaskPollInterval: 5 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	// TKE's controller records the CLB in service.kubernetes.io/loadbalance-id.
	svc := exampleService(map[string]string{tencent.AnnotationLoadBalancerID: "lb-demo0001"})
	c := exampleCluster(core.ClusterProfile{Provider: tencent.Name, ProxyMode: core.ProxyModeIPVS, KubeProxyVersion: "v1.20.6-tke.12"})
	r := core.NewReconciler(core.NewProvider(drv.Dialect(), drv), &core.ReconcilerOptions{Policy: core.Policy{Prefer: core.PreferLBFeatures}})

	for run := 1; run <= 2; run++ {
		out, err := r.Reconcile(context.Background(), svc, c)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("run %d: %d change(s) written\n", run, len(out.Written))
		for _, ch := range out.Written {
			fmt.Println(" ", ch.String())
		}
	}
	l, _ := srv.Listener("lbl-demo0080")
	fmt.Println("SNAT on:", l.SnatEnable, "cloud writes:", len(srv.Writes()))
	// Output:
	// run 1: 1 change(s) written
	//   cloud clb lb-demo0001 listener lbl-demo0080 (TCP:80): SnatEnable false → true
	// run 2: 0 change(s) written
	// SNAT on: true cloud writes: 1
}
