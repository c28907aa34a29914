package core

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/internal/ingress"
)

func node(name string, lbls map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
}

func pod(ns, name, nodeName string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}, Spec: corev1.PodSpec{NodeName: nodeName}}
}

func lbService(ns, name string, sel map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: sel,
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
}

func slice(ns, svc, name string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{labelServiceName: svc}},
		Endpoints:  eps,
	}
}

func ep(nodeName, addr string, ready bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{addr}, NodeName: &nodeName, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}
}

func antiAffinity(target map[string]string) *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey:   labelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: target},
		}},
	}}
}

func mustCluster(t testing.TB, p ClusterProfile, objs ...runtime.Object) *Cluster {
	t.Helper()
	c, err := NewCluster(p, objs...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPlacementFromEndpointSlices(t *testing.T) {
	web := lbService("shop", "web", map[string]string{"app": "web"})
	c := mustCluster(t, ClusterProfile{Clients: "role=client"},
		node("n1", nil), node("n2", nil), node("n3", map[string]string{labelExcludeFromLB: ""}),
		slice("shop", "web", "web-a", ep("n1", "10.0.0.1", true), ep("n1", "10.0.0.2", true), ep("n2", "10.0.0.3", false)),
		slice("shop", "web", "web-b", ep("n2", "10.0.0.4", true)),
		slice("other", "web", "web-x", ep("n3", "10.9.0.1", true)), // another namespace's web
		pod("shop", "client-1", "n1", map[string]string{"role": "client"}),
		pod("shop", "client-2", "n2", map[string]string{"role": "client"}),
	)
	got := c.Placement(web, nil, NodeFilter{})
	want := Placement{
		NodesBehindLB: 2,
		LBNodes:       []string{"n1", "n2"},
		Backends:      []NodeBackends{{"n1", 2}, {"n2", 1}},
		ClientNodes:   []string{"n1", "n2"},
		Separated:     No,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("placement (-want +got):\n%s", diff)
	}
}

func TestPlacementDualStackCountsPodsOnce(t *testing.T) {
	web := lbService("default", "web", nil)
	n := "n1"
	v4 := discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}, NodeName: &n, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", UID: "u1"}}
	v6 := discoveryv1.Endpoint{Addresses: []string{"fd00::1"}, NodeName: &n, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", UID: "u1"}}
	c := mustCluster(t, ClusterProfile{}, slice("default", "web", "v4", v4), slice("default", "web", "v6", v6))
	if got := c.Placement(web, nil, NodeFilter{}).Backends; !cmp.Equal(got, []NodeBackends{{"n1", 1}}) {
		t.Errorf("backends = %v, want one Pod on n1", got)
	}
}

func TestPlacementFallsBackToPods(t *testing.T) {
	web := lbService("default", "web", map[string]string{"app": "web"})
	notReady := pod("default", "web-2", "n2", map[string]string{"app": "web"})
	notReady.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}}
	c := mustCluster(t, ClusterProfile{},
		pod("default", "web-0", "n1", map[string]string{"app": "web"}),
		pod("default", "web-1", "n1", map[string]string{"app": "web", "extra": "x"}),
		notReady,
		pod("default", "db-0", "n2", map[string]string{"app": "db"}),
		pod("default", "unscheduled", "", map[string]string{"app": "web"}),
	)
	got := c.Placement(web, nil, NodeFilter{})
	if !cmp.Equal(got.Backends, []NodeBackends{{"n1", 2}}) || got.NodesBehindLB != 0 || got.ClientNodes != nil {
		t.Errorf("placement = %+v", got)
	}
}

func TestPlacementUnknownWithoutInputs(t *testing.T) {
	c := mustCluster(t, ClusterProfile{})
	if got := c.Placement(lbService("default", "web", map[string]string{"app": "web"}), nil, NodeFilter{}); !cmp.Equal(got, Placement{}) {
		t.Errorf("placement = %+v, want all unknown", got)
	}
}

func TestSeparationByAntiAffinity(t *testing.T) {
	web := lbService("default", "web", map[string]string{"app": "web"})
	clientLabels := map[string]string{"app": "frontend"}
	cases := map[string]struct {
		objs []runtime.Object
		want Fact
	}{
		"ClientAvoidsBackends": {
			objs: []runtime.Object{func() *corev1.Pod {
				p := pod("default", "fe", "n2", clientLabels)
				p.Spec.Affinity = antiAffinity(map[string]string{"app": "web"})
				return p
			}(), pod("default", "web-0", "n1", map[string]string{"app": "web"})},
			want: Yes,
		},
		"BackendsAvoidClient": {
			objs: []runtime.Object{pod("default", "fe", "n2", clientLabels), func() *corev1.Pod {
				p := pod("default", "web-0", "n1", map[string]string{"app": "web"})
				p.Spec.Affinity = antiAffinity(clientLabels)
				return p
			}()},
			want: Yes,
		},
		"OneBackendDoesNotAvoid": {
			objs: []runtime.Object{pod("default", "fe", "n2", clientLabels), func() *corev1.Pod {
				p := pod("default", "web-0", "n1", map[string]string{"app": "web"})
				p.Spec.Affinity = antiAffinity(clientLabels)
				return p
			}(), pod("default", "web-1", "n3", map[string]string{"app": "web"})},
			want: No,
		},
		"ZoneTopologyIsNotEnough": {
			objs: []runtime.Object{func() *corev1.Pod {
				p := pod("default", "fe", "n2", clientLabels)
				p.Spec.Affinity = antiAffinity(map[string]string{"app": "web"})
				p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey = corev1.LabelTopologyZone
				return p
			}()},
			want: No,
		},
		"ApartButNoRule": {
			objs: []runtime.Object{pod("default", "fe", "n2", clientLabels), pod("default", "web-0", "n1", map[string]string{"app": "web"})},
			want: No,
		},
		"NoClientsFound": {
			objs: []runtime.Object{pod("default", "web-0", "n1", map[string]string{"app": "web"})},
			want: Unknown,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := mustCluster(t, ClusterProfile{}, tc.objs...)
			got := c.Placement(web, labels.SelectorFromSet(clientLabels), NodeFilter{})
			if got.Separated != tc.want {
				t.Errorf("separated = %s, want %s (placement %+v)", got.Separated, tc.want, got)
			}
		})
	}
}

func TestNewClusterRejectsBadClientSelector(t *testing.T) {
	_, err := NewCluster(ClusterProfile{Clients: "app in (a"})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "clients") {
		t.Errorf("err = %v", err)
	}
}

func TestIngressBackendsAndBinding(t *testing.T) {
	local := lbService("default", "api", map[string]string{"app": "api"})
	local.Spec.Type = corev1.ServiceTypeNodePort
	local.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	cluster := lbService("default", "web", map[string]string{"app": "web"})
	cluster.Spec.Type = corev1.ServiceTypeNodePort
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "site"},
		Spec: networkingv1.IngressSpec{
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "api"}},
			Rules: []networkingv1.IngressRule{{Host: "shop.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{
					{Path: "/", Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web"}}},
					{Path: "/api", Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "api"}}},
					{Path: "/gone", Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "missing"}}},
				}}}}},
		}}
	c := mustCluster(t, ClusterProfile{}, local, cluster,
		slice("default", "api", "api-1", ep("n1", "10.0.0.1", true)),
		slice("default", "web", "web-1", ep("n1", "10.0.0.2", true), ep("n2", "10.0.0.3", true)))
	if got := ingress.BackendNames(ing); !cmp.Equal(got, []string{"api", "web", "missing"}) {
		t.Errorf("names = %v", got)
	}
	backends := c.IngressBackends(ing)
	if len(backends) != 2 {
		t.Fatalf("backends = %d, want the 2 known Services", len(backends))
	}
	p := c.IngressPlacement(backends, nil, NodeFilter{})
	if !cmp.Equal(p.Backends, []NodeBackends{{"n1", 2}, {"n2", 1}}) {
		t.Errorf("backends = %v", p.Backends)
	}
}

func TestWithProfileSharesObjects(t *testing.T) {
	web := lbService("default", "web", map[string]string{"app": "web"})
	c := mustCluster(t, ClusterProfile{Clients: "role=a"}, node("n1", nil), web,
		pod("default", "a", "n1", map[string]string{"role": "a"}), pod("default", "b", "n1", map[string]string{"role": "b"}))
	cc, err := c.WithProfile(ClusterProfile{Clients: "role=b", Allowlists: []Capability{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if cc.Service("default", "web") != web || len(cc.Nodes()) != 1 || !cc.Profile.HasAllowlist("x") || c.Profile.HasAllowlist("x") {
		t.Errorf("copy = %+v", cc.Profile)
	}
	if got := cc.Placement(web, nil, NodeFilter{}).ClientNodes; len(got) != 1 {
		t.Errorf("clients = %v, want b's node from the new selector", got)
	}
	if _, err := c.WithProfile(ClusterProfile{Clients: "role in ("}); !errors.Is(err, ErrInvalid) {
		t.Errorf("err = %v", err)
	}
}
