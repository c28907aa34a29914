package verify_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/loopguard/loopguard/adapters/verify"
	"github.com/loopguard/loopguard/adapters/verify/kubeletsim"
)

// TestRBACRole runs verify as a user holding only deploy/verify/role.yaml in the namespace:
// it must be enough, and every verb in it needed.
func TestRBACRole(t *testing.T) {
	admin, ns, target := setup(t)
	raw, err := os.ReadFile("../../deploy/verify/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.Role
	if err := yaml.UnmarshalStrict(raw, &role); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, role rbacv1.Role, user string) (verify.Report, error) {
		role.Namespace, role.Name = ns, user
		if _, err := admin.RbacV1().Roles(ns).Create(t.Context(), &role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The API server's RBAC authorizer sees new bindings through an informer: wait until
		// it grants the role's first verb, so a refusal below is the role's, not the lag's.
		verb := role.Rules[0].Verbs[0]
		if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			r, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "pods"}}}, metav1.CreateOptions{})
			return err == nil && r.Status.Allowed, nil
		}); err != nil {
			t.Fatalf("the role's %s on pods never took effect for %s: %v", verb, user, err)
		}
		cfg := server.Get(t).Config()
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return verify.Run(t.Context(), c, []verify.Target{target}, &opts)
	}
	kubeletsim.Start(t, admin, ns, map[string]string{"n1": kubeletsim.Listen(t, false), "n2": kubeletsim.Listen(t, true)}, nil)
	t.Run("the role", func(t *testing.T) {
		rep, err := run(t, role, "verify-all")
		if err != nil || rep.Agree != 2 {
			t.Fatalf("err %v, report %+v", err, rep)
		}
		assertGone(t, admin, ns)
	})
	for _, verb := range role.Rules[0].Verbs {
		t.Run("without "+verb, func(t *testing.T) {
			r := *role.DeepCopy()
			r.Rules[0].Verbs = slicesWithout(r.Rules[0].Verbs, verb)
			rep, _ := run(t, r, "verify-no-"+verb)
			msgs := ""
			for _, p := range rep.Exposures[0].Placements {
				msgs += p.Error + "\n"
			}
			if !strings.Contains(msgs, "forbidden") || !strings.Contains(msgs, "cannot "+verb) {
				t.Errorf("without %s: report %+v\nerrors:\n%s", verb, rep, msgs)
			}
			// What the limited user could not delete, the admin does.
			for _, p := range probePods(t, admin, ns) {
				admin.CoreV1().Pods(ns).Delete(t.Context(), p.Name, *metav1.NewDeleteOptions(0))
			}
		})
	}
}

func slicesWithout(s []string, v string) []string {
	var out []string
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}
