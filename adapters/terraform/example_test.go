package terraform_test

import (
	"context"
	"fmt"
	"log"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/adapters/terraform"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/drivertest"
	"github.com/loopguard/loopguard/providers/tencent"
)

// A resource's plan step: what apply will change, as a diff, and the state it will leave. Here
// the cluster is in memory; a provider passes adapters/kube's Writer and Gather instead.
func ExampleBackend_Plan() {
	svc := &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: "shop",
			Annotations: map[string]string{tencent.AnnotationInternalSubnet: "subnet-1a2b3c4d"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "checkout"},
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	u, err := drivertest.ToUnstructured(svc)
	if err != nil {
		log.Fatal(err)
	}
	b := &terraform.Backend{
		Provider: func(context.Context, runtime.Object) (core.Provider, error) { return tencent.NewProvider(nil) },
		Cluster:  drivertest.NewCluster(u),
		Facts: func(context.Context, string) ([]runtime.Object, error) {
			return []runtime.Object{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}}}, nil
		},
		Profile: core.ClusterProfile{Provider: tencent.Name, ProxyMode: core.ProxyModeIPVS, KubeProxyVersion: "v1.20.6-tke.12"},
	}
	pl, ds := b.Plan(context.Background(), terraform.Spec{Namespace: "shop", Name: "checkout"}, nil)
	if ds.HasError() {
		log.Fatal(ds)
	}
	fmt.Println("remedy:", pl.State.Remedy, "path:", pl.State.Path)
	for _, line := range pl.Diff {
		fmt.Println("change:", line)
	}
	for k, v := range pl.State.Managed {
		fmt.Printf("managed: %s = %s\n", k, v)
	}
	for _, d := range ds {
		fmt.Println(d.Severity, d.Code)
	}
	// Output:
	// remedy: intercept-vip path: VIP
	// change: cluster Service shop/checkout: metadata.annotations["service.cloud.tencent.com/prevent-loopback"] (unset) → true
	// managed: Service shop/checkout: metadata.annotations.service.cloud.tencent.com/prevent-loopback = true
	// warning tke-prevent-loopback-health-check-source
	// warning tke-prevent-loopback-long-connections
}
