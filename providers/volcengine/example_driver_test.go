package volcengine_test

import (
	"context"
	"fmt"
	"log"

	"github.com/volcengine/volcengine-go-sdk/service/clb"
	sdk "github.com/volcengine/volcengine-go-sdk/volcengine"
	"github.com/volcengine/volcengine-go-sdk/volcengine/credentials"
	"github.com/volcengine/volcengine-go-sdk/volcengine/session"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/volcengine"
	"github.com/loopguard/loopguard/providers/volcengine/clbtest"
)

// Plan a new Service in Proxy mode whose client Pods are declared. The policy prefers keeping
// the CLB's features, so the decision is node separation: the plan creates the Service with the
// annotation and externalTrafficPolicy Local, gives the user the anti-affinity patch for the
// clients' Deployment, and waits for the status to show Proxy. Without a cluster writer the
// Reconciler only plans (a live host passes &core.ReconcilerOptions{ClusterWriter: kube.NewWriter(...)}).
func ExampleDriver() {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{
			volcengine.AnnotationIPMode:      volcengine.IPModeProxy,
			volcengine.AnnotationAddressType: volcengine.AddressTypePrivate,
			core.AnnotationClients:           "app=client",
		}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80}}},
	}
	profile := core.ClusterProfile{KubernetesVersion: "v1.32.2", CCMVersion: "v1.43.0", ProxyMode: core.ProxyModeEBPF,
		Dataplane: core.DataplaneProfile{CNI: "vpc-cni", PodInterface: "ipvlan"}}
	cluster, _ := core.NewCluster(profile, node("node-a"), node("node-b"),
		pod("shop", "web-1", "node-a", map[string]string{"app": "web"}),
		clientPod("shop", "client-1", "node-a"))

	drv, err := volcengine.NewDriver(nil)
	if err != nil {
		log.Fatal(err)
	}
	r := core.NewReconciler(core.NewProvider(drv.Dialect(), drv), &core.ReconcilerOptions{Policy: core.Policy{Prefer: core.PreferLBFeatures}})
	p, err := r.Plan(context.Background(), svc, cluster)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("decision:", p.Decision.Remedy)
	for _, ch := range p.Changes {
		fmt.Printf("%s %s %s → %s\n", ch.By, ch.Object, ch.Field, ch.To)
	}
	for _, c := range p.Checks {
		fmt.Printf("check %s %s = %v\n", c.Object, c.What(), c.Edit.Value)
	}
	for _, n := range p.Notes {
		fmt.Println("note", n.Code)
	}
	fmt.Println("blocked:", p.Blocked != nil)
	// Output:
	// decision: node-separation
	// cluster Service shop/web metadata.annotations[service.beta.kubernetes.io/volcengine-loadbalancer-ip-mode] → Proxy
	// user Deployment shop/client spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution → 1 required term(s)
	// check Service shop/web status.loadBalancer.ingress[*].ipMode = Proxy
	// note vke-same-node-present
	// note vke-proxy-loop-probability
	// blocked: false
}

// Find the client Pods that share a node with a backend, and what the loop probability is.
func ExampleSameNode() {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"}}}
	cluster, _ := core.NewCluster(core.ClusterProfile{},
		pod("shop", "web-1", "node-a", map[string]string{"app": "web"}),
		pod("shop", "web-2", "node-b", map[string]string{"app": "web"}),
		clientPod("shop", "client-1", "node-a"),
		clientPod("shop", "client-2", "node-c"))
	for _, c := range volcengine.SameNode(svc, cluster, labels.SelectorFromSet(labels.Set{"app": "client"})) {
		fmt.Println(c)
	}
	// Output:
	// client Pod shop/client-1 runs on node node-a with 1 of the 2 ready backends
}

// Read what the Volcengine API says about a Service's CLB with the official SDK, and give it to
// the dialect: the reused CLB's address type and its listener's PROXY protocol are then known.
func ExampleCLBReader() {
	srv, err := clbtest.NewServer(&clbtest.Options{Credentials: []clbtest.Credential{{AccessKeyID: "AKLTexample", SecretAccessKey: "example-secret"}}})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	_, _ = srv.AddLoadBalancer(clbtest.LoadBalancer{ID: "clb-2ab3c4d", Type: clbtest.TypePrivate, EniAddress: "192.168.0.10",
		Listeners: []clbtest.Listener{{Protocol: "TCP", Port: 80, ProxyProtocolType: clbtest.ProxyProtocolStandard}}})

	sess, err := session.NewSession(sdk.NewConfig().
		WithRegion(clbtest.DefaultRegion).
		WithCredentials(credentials.NewStaticCredentials("AKLTexample", "example-secret", "")).
		WithEndpoint(srv.Endpoint()).WithDisableSSL(true).WithMaxRetries(0).
		WithHTTPClient(srv.Client()))
	if err != nil {
		log.Fatal(err)
	}
	reader := volcengine.NewCLBReader(clb.New(sess), nil)

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{
			volcengine.AnnotationLoadBalancerID: "clb-2ab3c4d",
			volcengine.AnnotationIPMode:         volcengine.IPModeProxy,
		}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	snap, err := reader.Snapshot(context.Background(), svc)
	if err != nil {
		log.Fatal(err)
	}
	f := snap["clb-2ab3c4d"]
	fmt.Println(f.AddressType, "proxy protocol:", f.ProxyProtocol)

	d := volcengine.NewDialect(&volcengine.Options{CLBs: snap})
	t, err := d.Translate(svc, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("scope:", t.Exposure.Scope, "proxy protocol:", t.Exposure.ProxyProtocol)
	// Output:
	// PRIVATE proxy protocol: yes
	// scope: private proxy protocol: yes
}
