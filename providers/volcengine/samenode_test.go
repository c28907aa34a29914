package volcengine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/volcengine"
)

func TestSameNode(t *testing.T) {
	sel := labels.SelectorFromSet(labels.Set{"app": "client"})
	svc := svcManifest(nil)
	done := clientPod("shop", "client-done", "node-b")
	done.Status.Phase = corev1.PodSucceeded
	selfClient := pod("shop", "web-3", "node-b", map[string]string{"app": "web", "role": "client"})
	tests := map[string]struct {
		objs    []runtime.Object
		clients labels.Selector
		want    []volcengine.CoLocation
	}{
		"one client beside a backend": {objs: placement("shop"), clients: sel,
			want: []volcengine.CoLocation{{Client: "shop/client-1", Node: "node-a", Backends: 1, Total: 2}}},
		"clients in another namespace count": {objs: append(placement("shop"), clientPod("batch", "client-9", "node-b")), clients: sel,
			want: []volcengine.CoLocation{{Client: "shop/client-1", Node: "node-a", Backends: 1, Total: 2}, {Client: "batch/client-9", Node: "node-b", Backends: 1, Total: 2}}},
		"finished Pods open no connections": {objs: append(placement("shop"), done), clients: sel,
			want: []volcengine.CoLocation{{Client: "shop/client-1", Node: "node-a", Backends: 1, Total: 2}}},
		"a backend that is its own client": {objs: []runtime.Object{selfClient, slice("shop", "web", map[string]string{"web-3": "node-b"})},
			clients: labels.SelectorFromSet(labels.Set{"role": "client"}),
			want:    []volcengine.CoLocation{{Client: "shop/web-3", Node: "node-b", Backends: 1, Total: 1, Backend: true}}},
		"no clients declared":   {objs: placement("shop")},
		"no backends known yet": {objs: []runtime.Object{clientPod("shop", "client-1", "node-a")}, clients: sel},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, _ := core.NewCluster(core.ClusterProfile{}, tc.objs...)
			if diff := cmp.Diff(tc.want, volcengine.SameNode(svc, c, tc.clients)); diff != "" {
				t.Errorf("co-locations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSeparationPatches(t *testing.T) {
	sel := labels.SelectorFromSet(labels.Set{"app": "client"})
	svc := svcManifest(nil)
	existing := clientPod("shop", "client-1", "node-a")
	existing.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
		{TopologyKey: "topology.kubernetes.io/zone", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "client"}}}}}}
	yes := true
	sts := pod("batch", "loader-0", "node-b", map[string]string{"app": "client"})
	sts.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "loader", UID: "s", Controller: &yes}}
	job := pod("shop", "report-x1", "node-c", map[string]string{"app": "client"})
	job.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "report", UID: "j", Controller: &yes}}
	bare := pod("shop", "debug", "node-c", map[string]string{"app": "client"})
	c, _ := core.NewCluster(core.ClusterProfile{}, existing, clientPod("shop", "client-2", "node-c"), sts, job, bare,
		withAntiAffinity(clientPod("other", "kept-apart", "node-c")), // a term without namespaces covers its own namespace only
		pod("shop", "web-1", "node-a", map[string]string{"app": "web"}))

	got := volcengine.SeparationPatches(svc, c, sel)
	type summary struct {
		Workload  string
		Patchable bool
		Pods      []string
		Patch     string
	}
	var sums []summary
	for _, p := range got {
		sums = append(sums, summary{p.Workload.String(), p.Patchable, p.Pods, p.Patch})
	}
	want := []summary{
		{"Deployment shop/client", true, []string{"shop/client-1", "shop/client-2"},
			`{"spec":{"template":{"spec":{"affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"client"}},"topologyKey":"topology.kubernetes.io/zone"},{"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"kubernetes.io/hostname"}]}}}}}}`},
		{"StatefulSet batch/loader", true, []string{"batch/loader-0"},
			`{"spec":{"template":{"spec":{"affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"web"}},"namespaces":["shop"],"topologyKey":"kubernetes.io/hostname"}]}}}}}}`},
		{"Job shop/report", false, []string{"shop/report-x1"},
			`{"spec":{"template":{"spec":{"affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"kubernetes.io/hostname"}]}}}}}}`},
		{"Pod shop/debug", false, []string{"shop/debug"},
			`{"spec":{"affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"kubernetes.io/hostname"}]}}}}`},
		{"Deployment other/client", true, []string{"other/kept-apart"},
			`{"spec":{"template":{"spec":{"affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"kubernetes.io/hostname"},{"labelSelector":{"matchLabels":{"app":"web"}},"namespaces":["shop"],"topologyKey":"kubernetes.io/hostname"}]}}}}}}`},
	}
	if diff := cmp.Diff(want, sums); diff != "" {
		t.Errorf("patches (-want +got):\n%s", diff)
	}

	// Clients that already keep away need nothing; so does a Service without a selector.
	c, _ = core.NewCluster(core.ClusterProfile{}, withAntiAffinity(clientPod("shop", "client-1", "node-c")))
	if got := volcengine.SeparationPatches(svc, c, sel); len(got) != 0 {
		t.Errorf("patches for clients already kept apart: %+v", got)
	}
	noSel := svc.DeepCopy()
	noSel.Spec.Selector = nil
	if got := volcengine.SeparationPatches(noSel, c, sel); got != nil {
		t.Errorf("patches without backend labels: %+v", got)
	}
}

func TestClientSelector(t *testing.T) {
	p := &core.ClusterProfile{Clients: "tier=frontend"}
	sel, err := volcengine.ClientSelector(svcManifest(map[string]string{core.AnnotationClients: "app=client"}), p)
	if err != nil || sel.String() != "app=client" {
		t.Errorf("annotation: %v, %v", sel, err)
	}
	sel, err = volcengine.ClientSelector(svcManifest(nil), p)
	if err != nil || sel.String() != "tier=frontend" {
		t.Errorf("profile: %v, %v", sel, err)
	}
	if sel, err := volcengine.ClientSelector(svcManifest(nil), &core.ClusterProfile{}); sel != nil || err != nil {
		t.Errorf("none: %v, %v", sel, err)
	}
	if _, err := volcengine.ClientSelector(svcManifest(map[string]string{core.AnnotationClients: "app in (("}), p); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("bad annotation: %v", err)
	}
}

func configMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name}, Data: data}
}

func ccmDeployment(image string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "cloud-controller-manager", "image": image}}}}}}}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetNamespace("kube-system")
	u.SetName("cloud-controller-manager")
	return u
}

func TestReadClusterFacts(t *testing.T) {
	v132 := volcengine.ServerVersionFunc(func() (*version.Info, error) { return &version.Info{GitVersion: "v1.32.2-vke.4"}, nil })
	shared := configMap("cello-config", map[string]string{"conf": `{"subnets":["subnet-1"],"networkMode":"eni_shared","ipFamily":"ipv4"}`})
	tests := map[string]struct {
		objs []runtime.Object
		v    volcengine.ServerVersioner
		want volcengine.ClusterFacts
	}{
		"VPC-CNI shared ENI with Cilium and the open CCM": {
			objs: []runtime.Object{shared, configMap("cilium-config", map[string]string{"debug": "false"}),
				ccmDeployment("open-registry-cn-beijing.cr.volces.com/vke/cloud-controller-manager:v1.43.2-public")},
			v:    v132,
			want: volcengine.ClusterFacts{KubernetesVersion: "v1.32.2-vke.4", CNI: "vpc-cni", PodInterface: "ipvlan", ProxyMode: core.ProxyModeEBPF, CCMVersion: "v1.43.2-public"},
		},
		"networkMode absent means shared": {
			objs: []runtime.Object{configMap("cello-config", map[string]string{"conf": `{"subnets":[]}`})},
			want: volcengine.ClusterFacts{CNI: "vpc-cni", PodInterface: "ipvlan"},
		},
		"exclusive ENI": {
			objs: []runtime.Object{configMap("cello-config", map[string]string{"conf": `{"networkMode":"eni_exclusive"}`})},
			want: volcengine.ClusterFacts{CNI: "vpc-cni", ExclusiveENI: true},
		},
		"Flannel": {
			objs: []runtime.Object{configMap("kube-flannel-cfg", nil), configMap("cilium-config", nil)},
			want: volcengine.ClusterFacts{CNI: "flannel"},
		},
		"a CCM image pinned by digest": {
			objs: []runtime.Object{ccmDeployment("registry.example/vke/cloud-controller-manager:v1.44.0@sha256:0123")},
			want: volcengine.ClusterFacts{CCMVersion: "v1.44.0"},
		},
		"nothing to read": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := volcengine.ReadClusterFacts(context.Background(), newMem(tc.objs...), tc.v, core.ObjectKey{})
			if err != nil {
				t.Fatal(err)
			}
			got.Reasons = nil
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("facts (-want +got):\n%s", diff)
			}
		})
	}

	boom := errors.New("discovery: connection refused")
	_, err := volcengine.ReadClusterFacts(context.Background(), nil, volcengine.ServerVersionFunc(func() (*version.Info, error) { return nil, boom }), core.ObjectKey{})
	if !errors.Is(err, boom) {
		t.Errorf("server version failure: %v", err)
	}
}

func TestClusterFactsApply(t *testing.T) {
	f := volcengine.ClusterFacts{KubernetesVersion: "v1.33.1", CNI: "vpc-cni", PodInterface: "ipvlan", ProxyMode: core.ProxyModeEBPF, CCMVersion: "v1.43.0",
		Reasons: []core.Reason{ruleReason(volcengine.CodeClusterNetwork)}}
	p := core.ClusterProfile{KubernetesVersion: "v1.32.0", CCMVersion: "v1.44.1", Dataplane: core.DataplaneProfile{CNI: "cello"}}
	notes := f.Apply(&p)
	want := core.ClusterProfile{KubernetesVersion: "v1.33.1", CCMVersion: "v1.44.1", ProxyMode: core.ProxyModeEBPF,
		Dataplane: core.DataplaneProfile{CNI: "cello", PodInterface: "ipvlan"}}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("profile (-want +got): the server's version wins, declared values stay\n%s", diff)
	}
	wantCodes(t, notes, volcengine.CodeServerVersion, volcengine.CodeClusterNetwork)
}

// forbidden is a reader that may not read kube-system, as a namespaced controller's RBAC allows.
type forbidden struct{ core.ClusterReader }

func (f forbidden) Get(ctx context.Context, k core.ObjectKey) (*unstructured.Unstructured, error) {
	if k.Namespace == "kube-system" {
		return nil, errors.New(`configmaps "` + k.Name + `" is forbidden: User "system:serviceaccount:loopguard:loopguard" cannot get resource in the namespace "kube-system"`)
	}
	return f.ClusterReader.Get(ctx, k)
}

// Reads the reader is not allowed to make say nothing and stop nothing: the profile decides,
// and the plan says what could not be read.
func TestClusterReadsThatAreForbidden(t *testing.T) {
	f, err := volcengine.ReadClusterFacts(context.Background(), forbidden{newMem()}, nil, core.ObjectKey{})
	if err != nil || f.CNI != "" || len(f.Unreadable) != 3 {
		t.Fatalf("facts %+v, err %v; want nothing read and three unreadable objects", f, err)
	}

	profile := readyProfile()
	profile.Dataplane, profile.ProxyMode = core.DataplaneProfile{}, ""
	c, _ := core.NewCluster(profile, placement("shop")...)
	drv, _ := volcengine.NewDriver(nil)
	req := &core.PlanRequest{Object: svcManifest(proxyWithClients), Cluster: c, Reader: forbidden{newMem()},
		Result: &core.Result{Exposure: core.Exposure{Object: core.ObjectRef{Kind: "Service", Namespace: "shop", Name: "web"}}}}
	p, err := drv.Plan(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var pe *core.PreconditionError
	if !errors.As(p.Blocked.Err(), &pe) || pe.Component != "network model" {
		t.Errorf("blocked = %v, want the network prerequisite unknown", p.Blocked)
	}
	wantCodes(t, p.Notes, volcengine.CodeClusterNetwork, volcengine.CodeClusterCCM)
}
