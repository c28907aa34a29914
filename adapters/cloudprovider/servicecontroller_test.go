package cloudprovider_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/record"
	servicecontroller "k8s.io/cloud-provider/controllers/service"
	fakecloud "k8s.io/cloud-provider/fake"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/component-base/featuregate"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"

	"github.com/loopguard/loopguard/adapters/cloudprovider"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// modern is a cluster whose kube-proxy honours ipMode and whose API server stores it.
var modern = core.ClusterProfile{KubernetesVersion: "v1.37.2", ProxyMode: core.ProxyModeIPTables, KubeProxyVersion: "v1.37.2"}

// eventLog records the decorator's Events.
type eventLog struct {
	mu      sync.Mutex
	reasons []string
}

func (e *eventLog) add(reason string) {
	e.mu.Lock()
	e.reasons = append(e.reasons, reason)
	e.mu.Unlock()
}

// startServiceController runs the upstream service controller, in-process, against a real
// kube-apiserver, with the fake cloud wrapped by loopguard.
func startServiceController(t *testing.T, inner *fakecloud.Cloud, opts ...cloudprovider.Option) (*apiserver.Server, string) {
	t.Helper()
	srv := apiserver.Start(t)
	client := srv.Client()
	rec := record.NewFakeRecorder(100)
	wrapped := cloudprovider.Wrap(inner, kubernetes.NewProvider(nil), append([]cloudprovider.Option{
		cloudprovider.WithProfile(modern), cloudprovider.WithEventRecorder(rec)}, opts...)...)
	factory := informers.NewSharedInformerFactory(client, 0)
	wrapped.(interface {
		SetInformers(informers.SharedInformerFactory)
	}).SetInformers(factory)
	ctrl, err := servicecontroller.New(wrapped, client, factory.Core().V1().Services(), factory.Core().V1().Nodes(), "test", featuregate.NewFeatureGate())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	// One worker: k8s.io/cloud-provider/fake writes its Balancers map without a lock.
	go ctrl.Run(ctx, 1, controllersmetrics.NewControllerManagerMetrics("loopguard-test"))
	for _, n := range []string{"node-a", "node-b"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
		if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return srv, srv.Namespace(t)
}

func lbService(ns, name string, ann map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
}

// waitStatus waits until the Service's status satisfies ok.
func waitStatus(t *testing.T, srv *apiserver.Server, ns, name string, ok func(*corev1.Service) bool) *corev1.Service {
	t.Helper()
	var got *corev1.Service
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		s, err := srv.Client().CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = s
		return ok(s), nil
	})
	if err != nil {
		t.Fatalf("Service %s/%s status never became as expected: %+v", ns, name, got.Status.LoadBalancer)
	}
	return got
}

func ipModeIs(mode corev1.LoadBalancerIPMode) func(*corev1.Service) bool {
	return func(s *corev1.Service) bool {
		in := s.Status.LoadBalancer.Ingress
		return len(in) == 1 && in[0].IPMode != nil && *in[0].IPMode == mode
	}
}

// TestServiceControllerPublishesDecidedIPMode: inside the real service controller, a private
// LB that keeps the client address (declared with loopguard.io annotations) gets ipMode VIP
// (intercept-vip), although the inner cloud said Proxy; a Service loopguard finds no risk for
// keeps the inner Proxy; the status the decorator returns equals the stored one, so the
// controller has nothing to patch on the next sync; deleting the Service runs
// EnsureLoadBalancerDeleted and the finalizer is removed.
func TestServiceControllerPublishesDecidedIPMode(t *testing.T) {
	proxy := corev1.LoadBalancerIPModeProxy
	inner := &fakecloud.Cloud{ExternalIP: net.ParseIP("192.0.2.10"), BalancerIPMode: &proxy, Provider: "fake", Exists: true}
	srv, ns := startServiceController(t, inner)
	ctx := context.Background()
	client := srv.Client()

	atRisk := lbService(ns, "web", map[string]string{core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "false"})
	safe := lbService(ns, "snat", map[string]string{core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "true"})
	for _, s := range []*corev1.Service{atRisk, safe} {
		if _, err := client.CoreV1().Services(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	web := waitStatus(t, srv, ns, "web", ipModeIs(corev1.LoadBalancerIPModeVIP))
	waitStatus(t, srv, ns, "snat", ipModeIs(corev1.LoadBalancerIPModeProxy))

	// What the decorator returns for the stored Service is what is stored: no patch next sync.
	// (A cloud of its own: the fake's maps are not safe for use beside the running controller.)
	other := &fakecloud.Cloud{ExternalIP: net.ParseIP("192.0.2.10"), BalancerIPMode: &proxy, Provider: "fake"}
	lb, _ := cloudprovider.Wrap(other, kubernetes.NewProvider(nil), cloudprovider.WithProfile(modern)).LoadBalancer()
	again, err := lb.EnsureLoadBalancer(ctx, "test", web, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !servicehelper.LoadBalancerStatusEqual(&web.Status.LoadBalancer, again) {
		t.Errorf("a second sync returns %+v, stored %+v: the controller would patch every sync", again, web.Status.LoadBalancer)
	}

	if !slices.Contains(web.Finalizers, servicehelper.LoadBalancerCleanupFinalizer) {
		t.Errorf("the service controller did not add its finalizer: %v", web.Finalizers)
	}
	if err := client.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatal("the Service was never deleted: its finalizer stayed")
	}
	inner.Lock.Lock()
	defer inner.Lock.Unlock()
	if !slices.Contains(inner.Calls, "delete") {
		t.Errorf("EnsureLoadBalancerDeleted never reached the inner cloud: calls %v", inner.Calls)
	}
}
