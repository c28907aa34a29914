package controller

import (
	"bytes"
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
)

// deployNamespace is the namespace deploy/ installs into; the tests put the ServiceAccount and
// the Lease's Role into their own namespace instead.
const deployNamespace = "loopguard-system"

// installRBAC creates the ServiceAccount and exactly the RBAC objects of the deploy/ files
// (cluster-scoped names suffixed with the test's namespace, so tests sharing the server do
// not collide) and returns a configuration impersonating that ServiceAccount, and the
// namespace of its Lease.
func installRBAC(files ...string) func(h *harness) (*rest.Config, string) {
	return func(h *harness) (*rest.Config, string) {
		t, ctx, cs := h.t, context.Background(), h.srv.Client()
		if _, err := cs.CoreV1().ServiceAccounts(h.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "loopguard"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ns := func(n string) string {
			if n == deployNamespace {
				return h.ns
			}
			return n
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, doc := range bytes.Split(data, []byte("\n---")) {
				obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				switch o := obj.(type) {
				case *rbacv1.ClusterRole:
					o.Name += "-" + h.ns
					_, err = cs.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
				case *rbacv1.ClusterRoleBinding:
					o.Name += "-" + h.ns
					o.RoleRef.Name += "-" + h.ns
					for i := range o.Subjects {
						o.Subjects[i].Namespace = ns(o.Subjects[i].Namespace)
					}
					_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
				case *rbacv1.Role:
					o.Namespace = ns(o.Namespace)
					if o.Namespace != h.ns {
						o.Name += "-" + h.ns
					}
					_, err = cs.RbacV1().Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
				case *rbacv1.RoleBinding:
					o.Namespace = ns(o.Namespace)
					if o.Namespace != h.ns {
						o.Name += "-" + h.ns
						o.RoleRef.Name += "-" + h.ns
					}
					for i := range o.Subjects {
						o.Subjects[i].Namespace = ns(o.Subjects[i].Namespace)
					}
					_, err = cs.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
				default:
					t.Fatalf("%s: unexpected %T", f, obj)
				}
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
			}
		}
		cfg := h.srv.Config()
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + h.ns + ":loopguard",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + h.ns, "system:authenticated"}}
		// The server enforces RBAC: the ServiceAccount cannot do what the rules leave out.
		sa, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sa.CoreV1().Secrets(h.ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("listing Secrets as the ServiceAccount: %v, want Forbidden", err)
		}
		return cfg, h.ns
	}
}

func tke(t *testing.T) core.Provider {
	p, err := tencent.NewProvider(nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRBACReportOnly runs report-only mode as deploy/base's ServiceAccount, with leader
// election, with exactly its RBAC: a missing verb leaves an informer unsynced or a write
// forbidden, and the verdict never appears.
func TestRBACReportOnly(t *testing.T) {
	reportOnly(t, startWith(t, false, tke(t), installRBAC("../../deploy/base/rbac.yaml")))
}

// TestRBACEnforce runs enforcing mode as the ServiceAccount with deploy/enforce's RBAC.
func TestRBACEnforce(t *testing.T) {
	enforcing(t, startWith(t, true, tke(t), installRBAC("../../deploy/base/rbac.yaml", "../../deploy/components/enforce/rbac.yaml")))
}

// deploy/ as kustomize renders it (every overlay, run as the rendered ServiceAccount) is
// tested by the deploy/test module, which keeps kustomize out of this module's go.mod.
