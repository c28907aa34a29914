package test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/loopguard/loopguard/adapters/controller"
	"github.com/loopguard/loopguard/core"
)

// overlay is one of deploy/'s kustomizations and what it must be.
type overlay struct {
	dir      string
	enforce  bool // --enforce and the enforce RBAC
	webhooks bool // the validating webhook and --webhooks
	mutating bool // the mutating webhook (only where it mutates: enforcing mode)
}

var overlays = []overlay{
	{dir: "base"},
	{dir: "enforce", enforce: true},
	{dir: "webhooks", webhooks: true},
	{dir: "enforce-webhooks", enforce: true, webhooks: true, mutating: true},
}

// rendered is an overlay as kustomize builds it: the typed objects client-go knows, and the
// others (cert-manager's) as raw documents.
type rendered struct {
	objects []runtime.Object
	foreign [][]byte
}

// render builds deploy/<dir> with the kustomize library, as `kubectl apply -k` does.
func render(t *testing.T, dir string) rendered {
	t.Helper()
	return renderPath(t, "../"+dir, dir)
}

// renderPath builds the kustomization in path; dir names it in messages.
func renderPath(t *testing.T, path, dir string) rendered {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), path)
	if err != nil {
		t.Fatalf("kustomize build deploy/%s: %v", dir, err)
	}
	var r rendered
	for _, res := range m.Resources() {
		data, err := res.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
		if err != nil {
			if strings.HasPrefix(res.GetApiVersion(), "cert-manager.io/") {
				r.foreign = append(r.foreign, data)
				continue
			}
			t.Fatalf("deploy/%s: %s %s: %v", dir, res.GetKind(), res.GetName(), err)
		}
		r.objects = append(r.objects, obj)
	}
	return r
}

func (r rendered) deployment(t *testing.T) *appsv1.Deployment {
	for _, o := range r.objects {
		if d, ok := o.(*appsv1.Deployment); ok {
			return d
		}
	}
	t.Fatal("no Deployment rendered")
	return nil
}

func (r rendered) configMap(t *testing.T, prefix string) *corev1.ConfigMap {
	for _, o := range r.objects {
		if c, ok := o.(*corev1.ConfigMap); ok && strings.HasPrefix(c.Name, prefix) {
			return c
		}
	}
	t.Fatalf("no ConfigMap %s* rendered", prefix)
	return nil
}

// writeVerbs are the verbs that change something.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection", "*"}

// TestOverlaysRender: every overlay builds with the kustomize library, and what it renders is
// what an operator was promised: the kube-system Role stays in kube-system, the modes compose
// (enforce with webhooks keeps --enforce), the mutating webhook only in enforcing mode, the
// webhooks scoped to LoadBalancer Services and Ingresses outside kube-system and loopguard's
// namespace, the provider and profile from a ConfigMap, a guarded Deployment, and report-only
// RBAC that writes nothing but its verdicts.
func TestOverlaysRender(t *testing.T) {
	for _, o := range overlays {
		t.Run(o.dir, func(t *testing.T) {
			r := render(t, o.dir)
			d := r.deployment(t)
			spec := d.Spec.Template.Spec
			c := spec.Containers[0]
			if got := slices.Contains(c.Args, "--enforce"); got != o.enforce {
				t.Errorf("--enforce in the args = %v, want %v: %v", got, o.enforce, c.Args)
			}
			if got := slices.Contains(c.Args, "--webhooks"); got != o.webhooks {
				t.Errorf("--webhooks in the args = %v, want %v: %v", got, o.webhooks, c.Args)
			}
			if spec.ServiceAccountName != "loopguard" || d.Namespace != "loopguard-system" {
				t.Errorf("the Deployment runs as %s/%s", d.Namespace, spec.ServiceAccountName)
			}
			if _, tag, ok := strings.Cut(c.Image, ":"); !ok || tag == "latest" || !strings.HasPrefix(tag, "v") {
				t.Errorf("image %q is not pinned to a release", c.Image)
			}
			sc, psc := c.SecurityContext, spec.SecurityContext
			if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || sc == nil || sc.ReadOnlyRootFilesystem == nil ||
				!*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("the controller may run as root, write its root filesystem or escalate: %+v %+v", psc, sc)
			}
			if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().Cmp(*c.Resources.Requests.Memory()) < 0 {
				t.Errorf("memory requests %v, limits %v", c.Resources.Requests.Memory(), c.Resources.Limits.Memory())
			}
			// The Go runtime knows the limit, so it collects harder near it rather than
			// being OOM-killed.
			if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
				return e.Name == "GOMEMLIMIT" && e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory"
			}) {
				t.Errorf("GOMEMLIMIT does not follow limits.memory: %+v", c.Env)
			}
			if len(spec.TopologySpreadConstraints) == 0 && (spec.Affinity == nil || spec.Affinity.PodAntiAffinity == nil) {
				t.Errorf("the replicas may share a node: no topology spread, no anti-affinity")
			}
			if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
				t.Errorf("liveness probe %+v", c.LivenessProbe)
			}
			if !slices.Contains(c.Args, "--metrics-secure") {
				t.Errorf("metrics served without authentication: %v", c.Args)
			}
			// The profile the Deployment reads is the rendered ConfigMap's, and it parses.
			cm := r.configMap(t, "loopguard-config")
			var mounted bool
			for _, v := range spec.Volumes {
				mounted = mounted || (v.ConfigMap != nil && v.ConfigMap.Name == cm.Name)
			}
			if !mounted || !slices.Contains(c.Args, "--profile=/etc/loopguard/profile.yaml") {
				t.Errorf("the Deployment does not read ConfigMap %s's profile.yaml: volumes %+v, args %v", cm.Name, spec.Volumes, c.Args)
			}
			if p, err := core.ParseProfile("profile.yaml", []byte(cm.Data["profile.yaml"])); err != nil || p.Provider == "" {
				t.Errorf("ConfigMap %s: profile.yaml: %v (provider %q)", cm.Name, err, p.Provider)
			}

			var pdb, mutating, validating, verdictOnly bool
			for _, obj := range r.objects {
				switch x := obj.(type) {
				case *admissionregv1.ValidatingAdmissionPolicy:
					verdictOnly = true
				case *policyv1.PodDisruptionBudget:
					pdb = x.Spec.Selector != nil && x.Spec.Selector.MatchLabels["app.kubernetes.io/name"] == d.Spec.Selector.MatchLabels["app.kubernetes.io/name"]
				case *rbacv1.Role:
					if strings.Contains(x.Name, "configmaps") && x.Namespace != "kube-system" {
						t.Errorf("Role %s rendered in %s: TKE's ConfigMaps are in kube-system", x.Name, x.Namespace)
					}
				case *rbacv1.RoleBinding:
					if strings.Contains(x.Name, "configmaps") && x.Namespace != "kube-system" {
						t.Errorf("RoleBinding %s rendered in %s", x.Name, x.Namespace)
					}
				case *rbacv1.ClusterRole:
					if x.Name == "loopguard" {
						checkReportOnlyRules(t, x.Rules)
					}
					if x.Name == "loopguard-enforce" && !o.enforce {
						t.Errorf("the enforce ClusterRole is rendered in report-only mode")
					}
				case *admissionregv1.MutatingWebhookConfiguration:
					mutating = true
					for _, w := range x.Webhooks {
						checkScope(t, w.Name, w.NamespaceSelector, w.MatchConditions, w.FailurePolicy, w.TimeoutSeconds, w.Rules)
					}
				case *admissionregv1.ValidatingWebhookConfiguration:
					validating = true
					for _, w := range x.Webhooks {
						checkScope(t, w.Name, w.NamespaceSelector, w.MatchConditions, w.FailurePolicy, w.TimeoutSeconds, w.Rules)
					}
				}
			}
			if verdictOnly == o.enforce {
				t.Errorf("the verdict-only admission policy rendered: %v, want %v (report-only mode only)", verdictOnly, !o.enforce)
			}
			if !pdb {
				t.Errorf("no PodDisruptionBudget selecting the controller")
			}
			if mutating != o.mutating || validating != o.webhooks {
				t.Errorf("mutating webhook %v (want %v), validating %v (want %v)", mutating, o.mutating, validating, o.webhooks)
			}
		})
	}
}

// checkReportOnlyRules: report-only mode writes its verdicts (the Service status condition,
// the Ingress annotation), its Events and the reviews the metrics filter asks for; nothing
// else.
func checkReportOnlyRules(t *testing.T, rules []rbacv1.PolicyRule) {
	t.Helper()
	// The verdict's own writes: a condition on services/status, an annotation on Ingresses
	// and Gateways (narrowed to the verdict by the loopguard-verdict-only policy).
	allowed := map[string]bool{"/services/status": true, "networking.k8s.io/ingresses": true, "gateway.networking.k8s.io/gateways": true,
		"events.k8s.io/events": true, "authentication.k8s.io/tokenreviews": true, "authorization.k8s.io/subjectaccessreviews": true}
	for _, r := range rules {
		for _, v := range r.Verbs {
			if !slices.Contains(writeVerbs, v) {
				continue
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					if !allowed[g+"/"+res] {
						t.Errorf("report-only ClusterRole may %s %s/%s", v, g, res)
					}
				}
			}
		}
	}
}

// checkScope: a webhook leaves kube-system and loopguard's namespace out, is sent only
// LoadBalancer Services (a CEL match condition) or Ingresses, and never blocks a deploy.
func checkScope(t *testing.T, name string, nsSel interface{ String() string }, conds []admissionregv1.MatchCondition,
	fp *admissionregv1.FailurePolicyType, timeout *int32, rules []admissionregv1.RuleWithOperations) {
	t.Helper()
	sel := nsSel.String()
	for _, ns := range []string{"kube-system", "loopguard-system"} {
		if !strings.Contains(sel, ns) || !strings.Contains(sel, "NotIn") {
			t.Errorf("webhook %s: namespaceSelector %s does not leave out %s", name, sel, ns)
		}
	}
	services := false
	for _, r := range rules {
		services = services || slices.Contains(r.Resources, "services")
	}
	if services && !slices.ContainsFunc(conds, func(c admissionregv1.MatchCondition) bool {
		return strings.Contains(c.Expression, "'LoadBalancer'")
	}) {
		t.Errorf("webhook %s: every Service is sent, not only LoadBalancers: %+v", name, conds)
	}
	if fp == nil || *fp != admissionregv1.Ignore || timeout == nil || *timeout > 5 {
		t.Errorf("webhook %s: failurePolicy %v, timeout %v: loopguard down would block deploys", name, fp, timeout)
	}
}

var _ = bytes.Equal
var _ = yaml.Marshal
var _ = controller.MutatePath
