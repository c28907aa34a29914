package volcengine_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/drivertest"
	"github.com/loopguard/loopguard/providers/volcengine"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/plans")

// newMem is an in-memory cluster holding objs (core/drivertest); the real API server is in
// apiserver_test.go.
func newMem(objs ...runtime.Object) *drivertest.Cluster {
	us := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		us[i] = toU(o)
	}
	return drivertest.NewCluster(us...)
}

func toU(o runtime.Object) *unstructured.Unstructured {
	u, err := drivertest.ToUnstructured(o)
	if err != nil {
		panic(err)
	}
	return u
}

// setStatus plays the cloud-controller-manager: it publishes the CLB address and ipMode.
func setStatus(m *drivertest.Cluster, ns, name, ip string, mode corev1.LoadBalancerIPMode) {
	k := core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: ns, Name: name}
	u, _ := m.Get(context.Background(), k)
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"ip": ip, "ipMode": string(mode)}}, "status", "loadBalancer", "ingress")
	m.Put(u)
}

// Objects of the driver tests: three nodes; the backends web-1 on node-a and web-2 on node-b
// (with their EndpointSlice); the client Pods of Deployment shop/client, client-1 on node-a
// (beside web-1) and client-2 on node-c.

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
}

func pod(ns, name, nodeName string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1"}}}}
}

// clientPod is a Pod of Deployment <ns>/client, made through ReplicaSet client-5d8f7c9b4.
func clientPod(ns, name, nodeName string) *corev1.Pod {
	p := pod(ns, name, nodeName, map[string]string{"app": "client", "pod-template-hash": "5d8f7c9b4"})
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "client-5d8f7c9b4", UID: "rs-uid", Controller: &yes}}
	return p
}

func slice(ns, svc string, eps map[string]string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svc + "-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4}
	names := make([]string, 0, len(eps))
	for n := range eps {
		names = append(names, n)
	}
	sort.Strings(names)
	yes := true
	for i, podName := range names {
		nodeName := eps[podName]
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("172.16.%d.1%d", i, i)}, NodeName: &nodeName,
			Conditions: discoveryv1.EndpointConditions{Ready: &yes}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: podName}})
	}
	return s
}

func placement(ns string) []runtime.Object {
	return []runtime.Object{
		node("node-a"), node("node-b"), node("node-c"),
		pod(ns, "web-1", "node-a", map[string]string{"app": "web"}),
		pod(ns, "web-2", "node-b", map[string]string{"app": "web"}),
		slice(ns, "web", map[string]string{"web-1": "node-a", "web-2": "node-b"}),
		clientPod(ns, "client-1", "node-a"),
		clientPod(ns, "client-2", "node-c"),
	}
}

// svcManifest is Service shop/web as a user writes it: not created yet.
func svcManifest(ann map[string]string, mut ...func(*corev1.Service)) *corev1.Service {
	all := map[string]string{
		volcengine.AnnotationAddressType: volcengine.AddressTypePrivate,
		volcengine.AnnotationSubnetID:    "subnet-2fe1a9p0s0w0g5oxruvdfpmm",
		"team.example.com/owner":         "payments",
	}
	for k, v := range ann {
		if v == "" {
			delete(all, k)
			continue
		}
		all[k] = v
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Labels: map[string]string{"app": "web"}, Annotations: all},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}},
	}
	for _, f := range mut {
		f(svc)
	}
	return svc
}

// live is the manifest as the API server and the CCM left it: uid, allocated fields, status.
func live(svc *corev1.Service, ipMode corev1.LoadBalancerIPMode) *corev1.Service {
	s := svc.DeepCopy()
	s.UID = "9b0c1d2e-0000-4000-8000-000000000001"
	s.CreationTimestamp = metav1.Date(2026, 3, 2, 8, 15, 0, 0, metav1.Now().Location())
	s.Spec.ClusterIP = "10.96.12.34"
	s.Spec.ClusterIPs = []string{"10.96.12.34"}
	if s.Spec.ExternalTrafficPolicy == "" {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	for i := range s.Spec.Ports {
		s.Spec.Ports[i].NodePort = 30080 + int32(i)
	}
	s.Finalizers = []string{"service.kubernetes.io/load-balancer-cleanup"}
	if ipMode != "" {
		m := ipMode
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "172.16.8.20", IPMode: &m}}
	}
	return s
}

func withAnn(svc *corev1.Service, kv ...string) *corev1.Service {
	s := svc.DeepCopy()
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(s.Annotations, kv[i])
			continue
		}
		s.Annotations[kv[i]] = kv[i+1]
	}
	return s
}

// renderPlan prints everything a plan says, for golden files a reviewer can read.
func renderPlan(p *core.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "plan %s: decision %s (path %s)\n", p.Object, p.Decision.Remedy, p.Decision.Path)
	if p.Blocked != nil {
		for _, line := range strings.Split(p.Blocked.Err().Error(), "\n") {
			fmt.Fprintf(&b, "blocked: %s\n", line)
		}
	}
	for _, ch := range p.Changes {
		var flags []string
		if ch.Create {
			flags = append(flags, "create")
		}
		if ch.CreateOnly {
			flags = append(flags, "create-only")
		}
		if ch.Disruptive {
			flags = append(flags, "DISRUPTIVE")
		}
		if ch.Strategy != "" {
			flags = append(flags, string(ch.Strategy))
		}
		fmt.Fprintf(&b, "change %s [%s]\n", ch.String(), strings.Join(flags, " "))
		for _, e := range ch.Edits {
			v, _ := json.Marshal(e.Value)
			fmt.Fprintf(&b, "  edit %s = %s\n", e, v)
		}
		if ch.Template != nil {
			t, _ := json.Marshal(ch.Template.Object)
			fmt.Fprintf(&b, "  template %s\n", t)
		}
		fmt.Fprintf(&b, "  reason %s: %s\n", ch.Reason.Code, ch.Reason.Message)
	}
	for _, c := range p.Checks {
		fmt.Fprintf(&b, "check %s %s = %v\n  pending: %s\n", c.Object, c.What(), c.Edit.Value, c.Pending)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "note %s: %s\n", n.Code, n.Message)
	}
	return b.String()
}

// golden compares got with testdata/plans/<name>.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "plans", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("plan differs from %s (-want +got; -update rewrites it):\n%s", path, diff)
	}
}

// errorKinds names the kinds an error matches, for table expectations.
func errorKinds(err error) []string {
	var out []string
	for _, k := range []struct {
		name string
		err  error
	}{{"invalid", core.ErrInvalid}, {"immutable", core.ErrImmutable}, {"precondition", core.ErrPrecondition},
		{"conflict", core.ErrConflict}, {"unsupported", core.ErrUnsupported}, {"retry", core.ErrRetryLater}} {
		if errors.Is(err, k.err) {
			out = append(out, k.name)
		}
	}
	return out
}
