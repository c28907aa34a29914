package campaign_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/volcengine"
)

// mode says which provider and driver reconcile an item.
type mode string

const (
	modeTKE        mode = "tke service-config"
	modeTKEDirect  mode = "tke direct"
	modeVKE        mode = "vke"
	modeKubernetes mode = "kubernetes"
)

// item is one object of the fleet and how it is reconciled.
type item struct {
	name string
	mode mode
	key  core.ObjectKey
	// manifest, when set, is what is reconciled (the desired object: VKE creates it);
	// otherwise the live object is read for every reconcile.
	manifest runtime.Object
	profile  core.ClusterProfile
	policy   core.Policy
	// placement objects for the Cluster (nodes come from the campaign).
	extra []runtime.Object
	// configs are TkeServiceConfigs read live into the Cluster.
	configs []string
	// vkeLB is the reused CLB the CLB reader looks up.
	vkeLB string
	// safe: loopguard's change is the whole remedy, so once converged no connection loops.
	safe bool

	converged bool
	lastErr   error
}

var tkeNodes = []runtime.Object{
	&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "tke-node-1"}},
	&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "tke-node-2"}},
	&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "tke-node-3"}},
}

func tkeProfile(caps ...core.Capability) core.ClusterProfile {
	return core.ClusterProfile{Provider: tencent.Name, ProxyMode: core.ProxyModeIPVS, KubeProxyVersion: "v1.20.6-tke.12",
		IngressControllerVersion: "v2.9.0", Allowlists: caps}
}

var snatPolicy = core.Policy{Prefer: core.PreferLBFeatures, AllowTickets: true}

func tkeService(name string, ann map[string]string, ports ...corev1.ServicePort) *corev1.Service {
	a := map[string]string{tencent.AnnotationInternalSubnet: "subnet-1a2b3c4d", "team.example.com/owner": "payments"}
	for k, v := range ann {
		a[k] = v
	}
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: a, Labels: map[string]string{"app": name}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name}, Ports: ports},
	}
}

func port(proto corev1.Protocol, p int32) corev1.ServicePort {
	return corev1.ServicePort{Name: fmt.Sprintf("%s-%d", map[corev1.Protocol]string{"TCP": "tcp", "UDP": "udp"}[proto], p), Protocol: proto, Port: p,
		TargetPort: intstr.FromInt32(p)}
}

func tkeIngress(name, backend string, ann map[string]string) *networkingv1.Ingress {
	a := map[string]string{tencent.AnnotationIngressSubnet: "subnet-1a2b3c4d", "team.example.com/owner": "payments"}
	for k, v := range ann {
		a[k] = v
	}
	prefix := networkingv1.PathTypePrefix
	return &networkingv1.Ingress{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: a},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: name + ".example.com", IngressRuleValue: networkingv1.IngressRuleValue{
			HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: backend, Port: networkingv1.ServiceBackendPort{Number: 80}}}}}},
		}}}},
	}
}

func backendService(name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{port("TCP", 80)}}}
}

// l4Config is a TkeServiceConfig others wrote for a Service: listeners the Service does not
// have, and the Service's TCP/80 entry with settings of its own and snatEnable: false, which
// loopguard turns on.
func l4Config(name string) string {
	return fmt.Sprintf(`
apiVersion: cloud.tencent.com/v1alpha1
kind: TkeServiceConfig
metadata:
  name: %s
  labels: {team: a}
  annotations: {note: hand-written}
spec:
  futureField: {keep: me}
  loadBalancer:
    internetMaxBandwidthOut: 100
    l4Listeners:
    - protocol: TCP
      port: 443
      scheduler: WRR
      healthCheck: {enable: true, intervalTime: 10}
    - protocol: TCP
      port: 80
      session: {enable: true, sessionExpireTime: 3600}
      healthCheck: {enable: true, intervalTime: 10, sourceIpType: 1}
      snatEnable: false
    - protocol: UDP
      port: 5353
      snatEnable: true
    l7Listeners:
    - protocol: HTTP
      port: 8080
      domains: [{domain: other.example.com, rules: [{url: /, healthCheck: {enable: true}}]}]
`, name)
}

// l7Config is an Ingress's auto config with a domain and a rule others set.
func l7Config(name, host string) string {
	return fmt.Sprintf(`
apiVersion: cloud.tencent.com/v1alpha1
kind: TkeServiceConfig
metadata:
  name: %s
  labels: {team: a}
spec:
  loadBalancer:
    internetMaxBandwidthOut: 20
    l7Listeners:
    - protocol: HTTP
      port: 80
      domains: [{domain: %s, rules: [{url: /, healthCheck: {enable: true, intervalTime: 7}}]}]
`, name, host)
}

func fromYAML(doc string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		return nil, err
	}
	return u, nil
}

func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	return u, nil
}

// vkeProfile is a VKE cluster that meets Proxy mode's prerequisites.
func vkeProfile() core.ClusterProfile {
	return core.ClusterProfile{APIVersion: core.ProfileAPIVersion, Kind: core.ProfileKind, Provider: volcengine.Name,
		KubernetesVersion: "v1.32.2", CCMVersion: "v1.43.0", ProxyMode: core.ProxyModeEBPF,
		Dataplane: core.DataplaneProfile{CNI: "vpc-cni", PodInterface: "ipvlan"}}
}

func vkeService(name, lbID string, ann map[string]string) *corev1.Service {
	a := map[string]string{
		volcengine.AnnotationAddressType:    volcengine.AddressTypePrivate,
		volcengine.AnnotationSubnetID:       "subnet-2fe1a9p0s0w0g5oxruvdfpmm",
		volcengine.AnnotationLoadBalancerID: lbID,
		"team.example.com/owner":            "payments",
	}
	for k, v := range ann {
		a[k] = v
	}
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}, Annotations: a},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{port("TCP", 80)}},
	}
}

// vkePlacement: the Service's backends on nodes a and b, client Pods on a and c.
func vkePlacement(ns, svc string) []runtime.Object {
	yes := true
	var out []runtime.Object
	for _, n := range []string{"vke-a", "vke-b", "vke-c"} {
		out = append(out, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{corev1.LabelHostname: n}}})
	}
	pod := func(name, node string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1"}}}}
	}
	out = append(out, pod(svc+"-1", "vke-a", map[string]string{"app": svc}), pod(svc+"-2", "vke-b", map[string]string{"app": svc}))
	for i, node := range []string{"vke-a", "vke-c"} {
		p := pod(fmt.Sprintf("client-%s-%d", svc, i), node, map[string]string{"app": "client", "pod-template-hash": "5d8f7c9b4"})
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "client-5d8f7c9b4", UID: "rs-uid", Controller: &yes}}
		out = append(out, p)
	}
	es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svc + "-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4}
	for i, node := range []string{"vke-a", "vke-b"} {
		node := node
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("172.16.%d.1%d", i, i)}, NodeName: &node,
			Conditions: discoveryv1.EndpointConditions{Ready: &yes}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: fmt.Sprintf("%s-%d", svc, i+1)}})
	}
	return append(out, es)
}

// kubernetesService is a private Service that a non-SNAT LB publishes with ipMode Proxy, in a
// cluster whose kube-proxy honours ipMode: the remedy is ipMode VIP.
func kubernetesService(name string) *corev1.Service {
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}, Annotations: map[string]string{
			// backend-expects: none lets loopguard turn the CCM's Proxy into VIP (PlanStatus).
			core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "false", core.AnnotationBackendExpects: "none", "owner": "team-a"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{port("TCP", 80)}},
	}
}

func kubernetesProfile() core.ClusterProfile {
	return core.ClusterProfile{KubernetesVersion: "v1.37.2", ProxyMode: core.ProxyModeIPTables, KubeProxyVersion: "v1.37.2"}
}

var kubernetesNodes = []runtime.Object{
	&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}},
	&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}},
}
