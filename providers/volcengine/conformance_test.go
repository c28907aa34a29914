package volcengine_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/drivertest"
	"github.com/loopguard/loopguard/providers/volcengine"
)

// TestDriverConformance runs core/drivertest's contract on the VKE driver: plans only read and
// are stable, creating a Service with its ip-mode converges once the CCM publishes the mode, a
// second run writes nothing, and a mode change of an existing Service is a replacement beside
// it only when the policy allows it.
func TestDriverCases(t *testing.T) {
	drv, err := volcengine.NewDriver(&volcengine.DriverOptions{NoClusterReads: true})
	if err != nil {
		t.Fatal(err)
	}
	profile := core.ClusterProfile{KubernetesVersion: "v1.32.2", CCMVersion: "v1.43.0", ProxyMode: core.ProxyModeEBPF,
		Dataplane: core.DataplaneProfile{CNI: "vpc-cni", PodInterface: "ipvlan"}}
	cluster, err := core.NewCluster(profile, node("node-a"), node("node-b"),
		pod("shop", "web-1", "node-a", map[string]string{"app": "web"}))
	if err != nil {
		t.Fatal(err)
	}
	service := func(mode string, existing bool) *corev1.Service {
		s := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{
				volcengine.AnnotationAddressType: volcengine.AddressTypePrivate, "owner": "team-a"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{{Port: 80}}},
		}
		if mode != "" {
			s.Annotations[volcengine.AnnotationIPMode] = mode
		}
		if existing {
			s.UID = "uid-web"
			m := corev1.LoadBalancerIPMode(mode)
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.9", IPMode: &m}}
		}
		return s
	}
	// publish plays the CCM: the new Service gets an address with the mode it asked for.
	publish := func(c *drivertest.Cluster) {
		for _, name := range []string{"web", "web-vip"} {
			u, _ := c.Get(t.Context(), core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "shop", Name: name})
			if u == nil {
				continue
			}
			mode := u.GetAnnotations()[volcengine.AnnotationIPMode]
			if mode == "" {
				mode = volcengine.IPModeVIP
			}
			_ = setIngress(u, "10.0.0.9", mode)
			c.Put(u)
		}
	}
	drivertest.RunCases(t, drivertest.CaseHarness{Provider: core.NewProvider(drv.Dialect(), drv), Cases: []drivertest.Case{
		{Name: "new Service, VIP by default", Object: service("", false), Cluster: cluster, NotCreated: true, Settle: publish},
		// Without AllowDisruptive, Decide passes over the replacement: DNS steering, for the user.
		{Name: "existing Proxy Service, default policy", Object: service(volcengine.IPModeProxy, true), Cluster: cluster},
		{Name: "existing Proxy Service, replacement allowed", Object: service(volcengine.IPModeProxy, true), Cluster: cluster,
			Policy: core.Policy{AllowDisruptive: true}, Settle: publish},
	}})
}

// setIngress writes status.loadBalancer.ingress with one address and its ipMode.
func setIngress(u *unstructured.Unstructured, ip, mode string) error {
	return unstructured.SetNestedSlice(u.Object, []any{map[string]any{"ip": ip, "ipMode": mode}}, "status", "loadBalancer", "ingress")
}

// TestConformance runs core/drivertest's shared scenarios on the VKE driver: an existing
// Proxy-mode Service with a client on a backend's node, which the driver separates with
// externalTrafficPolicy Local (and anti-affinity for the user). VKE's remedies are all
// Kubernetes objects: the cloud scenarios skip.
func TestConformance(t *testing.T) {
	drivertest.RunConformance(t, drivertest.Harness{New: func(t *testing.T, s drivertest.Setup) *drivertest.Env {
		if s.NotAllowlisted {
			return nil
		}
		prov, err := volcengine.NewProvider(nil)
		if err != nil {
			t.Fatal(err)
		}
		svc := live(svcManifest(proxyWithClients), corev1.LoadBalancerIPModeProxy)
		svc.Spec.ExternalTrafficPolicy = "" // as written: the API server's default is Cluster
		u, err := drivertest.ToUnstructured(svc)
		if err != nil {
			t.Fatal(err)
		}
		liveCluster := drivertest.NewCluster(u)
		facts, err := core.NewCluster(readyProfile(), placement("shop")...)
		if err != nil {
			t.Fatal(err)
		}
		return &drivertest.Env{
			Provider: prov, Live: liveCluster, Object: svc, Policy: preferLB,
			Facts: func() *core.Cluster { return facts },
			Revert: func(t *testing.T) {
				u, _ := liveCluster.Get(t.Context(), core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "shop", Name: "web"})
				_ = unstructured.SetNestedField(u.Object, "Cluster", "spec", "externalTrafficPolicy")
				liveCluster.Put(u)
			},
		}
	}})
}
