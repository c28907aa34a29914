package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/loopguard/loopguard/adapters/controller"
	"github.com/loopguard/loopguard/adapters/verify"
	"github.com/loopguard/loopguard/adapters/verify/kubeletsim"
	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/tencent"
)

// withVerify renders an operator's overlay: deploy/<dir> plus components/verify.
func withVerify(t *testing.T, dir string) rendered {
	t.Helper()
	deploy, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	// kustomize takes no absolute root: the paths are relative to the overlay.
	rel := func(p string) string {
		r, err := filepath.Rel(tmp, filepath.Join(deploy, p))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [%s]\ncomponents: [%s]\n",
		rel(dir), rel("components/verify"))
	if err := os.WriteFile(filepath.Join(tmp, "kustomization.yaml"), []byte(k), 0o600); err != nil {
		t.Fatal(err)
	}
	return renderPath(t, tmp, dir+"+components/verify")
}

// podWrites lists the rules of r that let the ServiceAccount create or delete Pods, as
// "<kind> <namespace>/<name>: verbs".
func podWrites(r rendered) []string {
	var out []string
	check := func(kind, ns, name string, rules []rbacv1.PolicyRule) {
		for _, rule := range rules {
			if !slices.Contains(rule.APIGroups, "") || !slices.ContainsFunc(rule.Resources, func(s string) bool { return s == "pods" || s == "*" }) {
				continue
			}
			for _, v := range rule.Verbs {
				if slices.Contains(writeVerbs, v) {
					out = append(out, fmt.Sprintf("%s %s/%s: %v", kind, ns, name, rule.Verbs))
					break
				}
			}
		}
	}
	for _, o := range r.objects {
		switch x := o.(type) {
		case *rbacv1.ClusterRole:
			check("ClusterRole", "", x.Name, x.Rules)
		case *rbacv1.Role:
			check("Role", x.Namespace, x.Name, x.Rules)
		}
	}
	return out
}

// TestVerifyComponentRenders: components/verify composes with every overlay and adds exactly
// --verify with a pinned probe image, the downward API the controller finds its own Pod by,
// and Pod create and delete in loopguard-system, nowhere else; without it no overlay lets
// the controller create a Pod or turns verification on.
func TestVerifyComponentRenders(t *testing.T) {
	for _, o := range overlays {
		t.Run(o.dir, func(t *testing.T) {
			plain := render(t, o.dir)
			if args := plain.deployment(t).Spec.Template.Spec.Containers[0].Args; slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--verify") }) {
				t.Errorf("deploy/%s verifies without components/verify: %v", o.dir, args)
			}
			if w := podWrites(plain); len(w) > 0 {
				t.Errorf("deploy/%s may write Pods without components/verify: %v", o.dir, w)
			}

			r := withVerify(t, o.dir)
			c := r.deployment(t).Spec.Template.Spec.Containers[0]
			if got := slices.Contains(c.Args, "--enforce"); got != o.enforce {
				t.Errorf("--enforce = %v with components/verify, want %v", got, o.enforce)
			}
			if !slices.Contains(c.Args, "--verify") {
				t.Errorf("no --verify in %v", c.Args)
			}
			image := ""
			for _, a := range c.Args {
				if v, ok := strings.CutPrefix(a, "--verify-image="); ok {
					image = v
				}
			}
			if _, tag, ok := strings.Cut(image, ":"); !ok || tag == "latest" || !strings.HasPrefix(tag, "v") || !strings.HasPrefix(image, "ghcr.io/loopguard/loopguard:") {
				t.Errorf("--verify-image %q is not the CLI image pinned to a release", image)
			}
			env := map[string]string{}
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
					env[e.Name] = e.ValueFrom.FieldRef.FieldPath
				}
			}
			if env["POD_NAME"] != "metadata.name" || env["POD_NAMESPACE"] != "metadata.namespace" || env["POD_UID"] != "metadata.uid" {
				t.Errorf("the downward API env %v", env)
			}
			if w := podWrites(r); len(w) != 1 || w[0] != "Role loopguard-system/loopguard-verify: [create delete]" {
				t.Errorf("Pod writes %v, want create and delete in loopguard-system only", w)
			}
		})
	}
}

// TestRenderedVerifyRuns: deploy/base with components/verify, installed on a real
// kube-apiserver, the controller run as the rendered ServiceAccount with the rendered args
// (report-only: the verdict-only admission policy in force) and adapters/verify/kubeletsim playing
// the kubelet of both nodes: an at-risk Service is verified with probe Pods in
// loopguard-system, the observation is recorded as its Verified condition, the Pods are gone
// afterwards, and nothing was refused.
func TestRenderedVerifyRuns(t *testing.T) {
	r := withVerify(t, "base")
	// A profile whose verdict is certain (the rendered one names only the provider).
	r.configMap(t, "loopguard-config").Data["profile.yaml"] = "apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\nprovider: tencent\nproxyMode: ipvs\nkubeProxyVersion: v1.20.6-tke.12\n"
	srv := apiserver.Start(t, apiserver.WithCRDPaths("../../providers/tencent/crds"))
	c, err := client.New(srv.Config(), client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	install(t, c, r)
	ctx := context.Background()
	for _, n := range []string{"node-1", "node-2"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}
		if err := c.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		if err := c.Status().Update(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	k := kubeletsim.Start(t, srv.Client(), namespace, map[string]string{"node-1": kubeletsim.Listen(t, false), "node-2": kubeletsim.Listen(t, true)}, nil)
	// In a Pod the downward API says where the controller runs (components/verify's env).
	t.Setenv("POD_NAMESPACE", namespace)
	logs, probes, _, _ := runController(t, srv, r, nil, "--verify-gap=10ms", "--verify-start-timeout=20s")
	eventually(t, "/readyz", 90*time.Second, func() (bool, string) {
		code, body := get("http://"+probes+"/readyz", "")
		return code == 200, fmt.Sprint(code, body)
	})

	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	node, ready := "node-1", true
	if err := c.Create(ctx, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-a",
		Labels: map[string]string{discoveryv1.LabelServiceName: "web"}}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"172.16.0.21"}, NodeName: &node, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}}}); err != nil {
		t.Fatal(err)
	}
	// TKE's direct access: the CLB sends to the Pod, so a client on its node always loops.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web",
		Annotations: map[string]string{tencent.AnnotationInternalSubnet: "subnet-1a2b3c4d", tencent.AnnotationDirectAccess: "true"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	// The address, as the cloud's controller writes it. The controller under test may write the
	// Service's status (its verdict) meanwhile: on a conflict, read again and retry, as a
	// client does.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
			return err
		}
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.10"}}
		return c.Status().Update(ctx, svc)
	})
	if err != nil {
		t.Fatal(err)
	}

	var cond *metav1.Condition
	eventually(t, "the Verified condition on shop/web", 60*time.Second, func() (bool, string) {
		got := &corev1.Service{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(svc), got); err != nil {
			return false, err.Error()
		}
		cond = apimeta.FindStatusCondition(got.Status.Conditions, controller.VerifiedConditionType)
		return cond != nil, fmt.Sprint(got.Status.Conditions)
	})
	if cond.Status != metav1.ConditionTrue || cond.Reason != controller.ReasonVerifyAgrees {
		t.Errorf("Verified = %s %s: %s", cond.Status, cond.Reason, cond.Message)
	}
	if n := len(k.Seen()); n != 2 {
		t.Errorf("%d probe Pods, want 2", n)
	}
	eventually(t, "the probe Pods removed", 30*time.Second, func() (bool, string) {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{verify.LabelManagedBy: verify.ManagedBy}); err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprint(len(pods.Items), " left")
	})
	if out := logs.String(); strings.Contains(out, "forbidden") || strings.Contains(out, "denied") {
		t.Errorf("the controller was refused something as %s:\n%s", serviceAccount, out)
	}
}
