package corednsedit

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loopguard/loopguard/internal/apiserver"
)

func corednsConfigMap(labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns", Labels: labels,
			Annotations: map[string]string{"example.com/owner": "platform"}},
		Data: map[string]string{"Corefile": kubeadm, "custom.server": "example.org:53 {\n    forward . 10.0.0.1\n}\n"},
	}
}

// TestSteerAgainstAPIServer: against a real kube-apiserver, Steer writes only the Corefile's
// text (every other key, label and annotation as it was), a second Steer writes nothing,
// Unsteer restores the ConfigMap's Corefile byte for byte, and a ConfigMap another tool
// reconciles is refused unwritten.
func TestSteerAgainstAPIServer(t *testing.T) {
	srv := apiserver.Start(t)
	kube := srv.Client()
	ctx := context.Background()
	if _, err := kube.CoreV1().ConfigMaps("kube-system").Create(ctx, corednsConfigMap(nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	read := func(t *testing.T, c kubernetes.Interface) *corev1.ConfigMap {
		t.Helper()
		cm, err := c.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	before := read(t, kube)

	wrote, err := Steer(ctx, kube, web, webRules, nil)
	if err != nil || !wrote {
		t.Fatalf("Steer = %v, %v; want a write", wrote, err)
	}
	after := read(t, kube)
	want, _ := Edit(kubeadm, web, webRules)
	if diff := cmp.Diff(want, after.Data["Corefile"]); diff != "" {
		t.Errorf("Corefile (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before.Data["custom.server"], after.Data["custom.server"]); diff != "" || !cmp.Equal(before.Annotations, after.Annotations) {
		t.Errorf("other keys or annotations changed: %s %v", diff, after.Annotations)
	}
	if wrote, err := Steer(ctx, kube, web, webRules, nil); err != nil || wrote {
		t.Errorf("second Steer = %v, %v; want nothing written", wrote, err)
	}
	if rv := read(t, kube).ResourceVersion; rv != after.ResourceVersion {
		t.Errorf("second Steer changed the resourceVersion %s → %s", after.ResourceVersion, rv)
	}
	if wrote, err := Unsteer(ctx, kube, web, nil); err != nil || !wrote {
		t.Fatalf("Unsteer = %v, %v", wrote, err)
	}
	if got := read(t, kube).Data["Corefile"]; got != kubeadm {
		t.Errorf("Unsteer did not restore the Corefile byte for byte:\n%s", cmp.Diff(kubeadm, got))
	}

	for _, labels := range []map[string]string{
		{"addonmanager.kubernetes.io/mode": "Reconcile"},
		{"app.kubernetes.io/managed-by": "Helm"},
	} {
		cm := read(t, kube)
		cm.Labels = labels
		if _, err := kube.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		rv := read(t, kube).ResourceVersion
		if _, err := Steer(ctx, kube, web, webRules, nil); !errors.Is(err, ErrManaged) {
			t.Errorf("labels %v: Steer error %v, want ErrManaged", labels, err)
		}
		if got := read(t, kube); got.ResourceVersion != rv || got.Data["Corefile"] != kubeadm {
			t.Errorf("labels %v: the refused Steer wrote", labels)
		}
	}
}
