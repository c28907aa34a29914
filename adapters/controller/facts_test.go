package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/loopguard/loopguard/core"
)

// TestFactsReadThePodsAnEvaluationReads: for objects of one namespace, facts holds that
// namespace's Pods and, from every namespace, the Pods their client selector matches (the
// object's annotation, else the profile's), and no other Pod; with no namespace, every Pod.
func TestFactsReadThePodsAnEvaluationReads(t *testing.T) {
	pod := func(ns, name string, lbls map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}}
	}
	cache := fake.NewClientBuilder().WithObjects(
		pod("shop", "web-1", map[string]string{"app": "web"}),
		pod("shop", "checkout-1", map[string]string{"role": "client"}),
		pod("batch", "report-1", map[string]string{"role": "client"}),
		pod("batch", "worker-1", map[string]string{"team": "x"}),
		pod("other", "idle-1", map[string]string{"app": "idle"}),
	).Build()
	c := &Controller{cache: cache, profile: core.ClusterProfile{Clients: "role=client"}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	annotated := svc.DeepCopy()
	annotated.Annotations = map[string]string{core.AnnotationClients: "team=x"}
	for _, tc := range []struct {
		name string
		ns   string
		objs []client.Object
		want []string
	}{
		{"profile's clients", "shop", []client.Object{svc}, []string{"batch/report-1", "shop/checkout-1", "shop/web-1"}},
		{"the annotation's clients", "shop", []client.Object{annotated}, []string{"batch/worker-1", "shop/checkout-1", "shop/web-1"}},
		{"every namespace", "", nil, []string{"batch/report-1", "batch/worker-1", "other/idle-1", "shop/checkout-1", "shop/web-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, err := c.facts(context.Background(), tc.ns, tc.objs...)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range cl.Pods() {
				got = append(got, p.Namespace+"/"+p.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Pods %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCachedPodKeepsWhatPlacementReads: the Pod cache's transform keeps of a Pod what
// core.Cluster reads, and gives it back as the corev1.Pod the evaluation takes.
func TestCachedPodKeepsWhatPlacementReads(t *testing.T) {
	aff := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}
	full := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", UID: "u-1", ResourceVersion: "42", Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"big": "dropped"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.PodSpec{NodeName: "node-1", Affinity: aff, Containers: []corev1.Container{{Name: "app", Image: "dropped"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "dropped"}}},
	}
	pc := newPodCompactor()
	got, err := pc.compact(full)
	if err != nil {
		t.Fatal(err)
	}
	cp, ok := got.(*cachedPod)
	if !ok {
		t.Fatalf("transform gave a %T", got)
	}
	if again, _ := pc.compact(cp); again != cp {
		t.Error("a cachedPod is transformed again")
	}
	want := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", UID: "u-1", ResourceVersion: "42", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: "node-1", Affinity: aff},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}},
	}
	if diff := cmp.Diff(want, cp.pod()); diff != "" {
		t.Errorf("pod() (-want +got):\n%s", diff)
	}
	if stateOf(cp) != stateOf(full) {
		t.Errorf("state %+v, the full Pod's %+v", stateOf(cp), stateOf(full))
	}
	cpy := cp.DeepCopyObject().(*cachedPod)
	cpy.Labels["app"] = "changed"
	cpy.Affinity.PodAntiAffinity = nil
	if cp.Labels["app"] != "web" || cp.Affinity.PodAntiAffinity == nil {
		t.Error("DeepCopyObject shares labels or affinity")
	}
}

// TestCachedPodsShareEqualLabels: the replicas of a workload share one labels map in the
// cache; Pods with other labels do not get it.
func TestCachedPodsShareEqualLabels(t *testing.T) {
	pc := newPodCompactor()
	pod := func(name string, lbls map[string]string) *cachedPod {
		c, err := pc.compact(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: lbls}})
		if err != nil {
			t.Fatal(err)
		}
		return c.(*cachedPod)
	}
	a := pod("web-1", map[string]string{"app": "web", "pod-template-hash": "5d8f"})
	b := pod("web-2", map[string]string{"pod-template-hash": "5d8f", "app": "web"})
	c := pod("web-3", map[string]string{"app": "web", "pod-template-hash": "77aa"})
	if fmt.Sprintf("%p", a.Labels) != fmt.Sprintf("%p", b.Labels) {
		t.Error("equal labels are two maps")
	}
	if fmt.Sprintf("%p", a.Labels) == fmt.Sprintf("%p", c.Labels) || c.Labels["pod-template-hash"] != "77aa" {
		t.Errorf("other labels share the map: %v", c.Labels)
	}
	for i := range maxLabelSets + 1 {
		pod(fmt.Sprint("other-", i), map[string]string{"n": fmt.Sprint(i)})
	}
	if len(pc.sets) > maxLabelSets {
		t.Errorf("%d label sets kept, at most %d", len(pc.sets), maxLabelSets)
	}
	if a.Labels["app"] != "web" {
		t.Errorf("a Pod's labels changed when the sets were emptied: %v", a.Labels)
	}
}
