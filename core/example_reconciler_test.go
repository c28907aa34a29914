package core_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/drivertest"
)

// exampleSetup is a LoadBalancer Service, the in-memory provider (a cloud with one source-NAT
// switch per listener) and an in-memory cluster: what a host holds, with fakes for the cloud
// and the API server.
func exampleSetup() (core.Provider, *drivertest.MemoryCloud, *drivertest.Cluster, *corev1.Service, *core.Cluster) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	u, _ := drivertest.ToUnstructured(svc)
	facts, _ := core.NewCluster(core.ClusterProfile{Allowlists: []core.Capability{drivertest.MemorySNAT}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}})
	cloud := drivertest.NewMemoryCloud()
	return drivertest.NewMemoryProvider(cloud), cloud, drivertest.NewCluster(u), svc, facts
}

// Evaluate is the read-only path: translate, assess, decide. A host that only reports needs
// nothing but a dialect.
func ExampleEvaluate() {
	prov, _, _, svc, facts := exampleSetup()
	res, err := core.Evaluate(prov.Dialect(), svc, facts, core.Policy{Prefer: core.PreferLBFeatures})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Assessment.Risk, res.Assessment.Symptom, res.Decision.Remedy, res.Decision.Path)
	// Output: at-risk intermittent lb-snat Proxy
}

// A Reconciler plans (reading only), applies what nothing blocks, and says what it wrote; a
// second reconcile writes nothing.
func ExampleNewReconciler() {
	prov, cloud, live, svc, facts := exampleSetup()
	r := core.NewReconciler(prov, &core.ReconcilerOptions{ClusterWriter: live, Policy: core.Policy{Prefer: core.PreferLBFeatures}})
	ctx := context.Background()

	plan, err := r.Plan(ctx, svc, facts)
	if err != nil || plan.Blocked != nil {
		fmt.Println(err, plan.Blocked)
		return
	}
	fmt.Println(plan)
	out, err := r.Apply(ctx, plan)
	fmt.Println("written:", len(out.Written), "error:", err, "cloud:", cloud.State())

	out, _ = r.Reconcile(ctx, svc, facts)
	fmt.Println("second run written:", len(out.Written))
	// Output:
	// Service shop/web: lb-snat
	//   cloud listener shop/web:TCP/80: snat false → true
	// written: 1 error: <nil> cloud: shop/web:TCP/80
	// second run written: 0
}

// A blocked plan says why as data (Blocked) and as an error to branch on (Blocked.Err()).
func ExampleReconciler_Plan() {
	prov, _, live, svc, _ := exampleSetup()
	noTicket, _ := core.NewCluster(core.ClusterProfile{}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}})
	r := core.NewReconciler(prov, &core.ReconcilerOptions{ClusterWriter: live, Policy: core.Policy{Prefer: core.PreferLBFeatures, AllowTickets: true}})
	plan, _ := r.Plan(context.Background(), svc, noTicket)
	fmt.Println(plan.Blocked.Kind, plan.Blocked.Capability, "—", plan.Blocked.Ask)
	fmt.Println(errors.Is(plan.Blocked.Err(), core.ErrNotAllowlisted))
	// Output:
	// not-allowlisted memory-snat — source NAT on the in-memory load balancer's listeners
	// true
}

// Remove takes back what loopguard set, and only that; a second Remove writes nothing.
func ExampleReconciler_Remove() {
	prov, cloud, live, svc, facts := exampleSetup()
	r := core.NewReconciler(prov, &core.ReconcilerOptions{ClusterWriter: live, Policy: core.Policy{Prefer: core.PreferLBFeatures}})
	ctx := context.Background()
	_, _ = r.Reconcile(ctx, svc, facts)
	fmt.Println("after apply:", cloud.State())
	out, err := r.Remove(ctx, svc, facts)
	fmt.Println("removed:", len(out.Written), err, "cloud:", cloud.State() == "")
	out, _ = r.Remove(ctx, svc, facts)
	fmt.Println("second remove:", len(out.Written))
	// Output:
	// after apply: shop/web:TCP/80
	// removed: 1 <nil> cloud: true
	// second remove: 0
}

// Apply returns a RetryError, with its delay, while the cloud is busy.
func ExampleReconciler_Apply() {
	prov, cloud, live, svc, facts := exampleSetup()
	r := core.NewReconciler(prov, &core.ReconcilerOptions{ClusterWriter: live, Policy: core.Policy{Prefer: core.PreferLBFeatures}})
	cloud.SetBusy(true)
	plan, _ := r.Plan(context.Background(), svc, facts)
	_, err := r.Apply(context.Background(), plan)
	var retry *core.RetryError
	fmt.Println(errors.As(err, &retry), retry.After)
	// Output: true 1s
}
