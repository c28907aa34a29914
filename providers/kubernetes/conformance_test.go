package kubernetes_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
	"github.com/loopguard/loopguard/core/drivertest"
	"github.com/loopguard/loopguard/providers/kubernetes"
)

// TestConformance runs core/drivertest's shared scenarios on the status driver: a private
// Service published with ipMode Proxy by an LB that keeps the client address, in a cluster
// whose kube-proxy honours ipMode. The decision is intercept-vip; the driver hands the host
// (a cloud-controller-manager) an ipMode VIP for the entry, and the host's returning it is
// played by writing it to the status. The Service declares that its backends need nothing from
// the LB (backend-expects: none): without it the cloud's Proxy stands (PlanStatus).
func TestConformance(t *testing.T) {
	key := core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "shop", Name: "web"}
	drivertest.RunConformance(t, drivertest.Harness{New: func(t *testing.T, s drivertest.Setup) *drivertest.Env {
		if s.NotAllowlisted {
			return nil
		}
		proxy := corev1.LoadBalancerIPModeProxy
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{
				core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "false", core.AnnotationBackendExpects: "none", "owner": "team-a"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
				{IP: "10.0.0.9", IPMode: &proxy}, {Hostname: "web.lb.example"}}}},
		}
		u, err := drivertest.ToUnstructured(svc)
		if err != nil {
			t.Fatal(err)
		}
		live := drivertest.NewCluster(u)
		facts, err := core.NewCluster(core.ClusterProfile{KubernetesVersion: "v1.37.2", ProxyMode: core.ProxyModeIPTables, KubeProxyVersion: "v1.37.2"},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}})
		if err != nil {
			t.Fatal(err)
		}
		setStatus := func(t *testing.T, edits []core.Edit) {
			t.Helper()
			u, err := live.Get(t.Context(), key)
			if err != nil || u == nil {
				t.Fatalf("get %s: %v", key, err)
			}
			for _, e := range edits {
				if _, err := e.ApplyTo(u.Object); err != nil {
					t.Fatal(err)
				}
			}
			live.Put(u)
		}
		return &drivertest.Env{
			Provider: kubernetes.NewProvider(nil), Live: live, Object: svc,
			Facts: func() *core.Cluster { return facts },
			Host: func(t *testing.T, out *core.Outcome) {
				for _, ch := range out.ForStatus {
					setStatus(t, ch.Edits)
				}
			},
			Revert: func(t *testing.T) {
				setStatus(t, []core.Edit{{Path: []core.PathElem{dialect.F("status"), dialect.F("loadBalancer"), dialect.F("ingress"),
					dialect.K(map[string]any{"ip": "10.0.0.9"}), dialect.F("ipMode")}, Value: "Proxy"}})
			},
		}
	}})
}
