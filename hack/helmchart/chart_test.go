package helmchart

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	release "helm.sh/helm/v4/pkg/release/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/loopguard/loopguard/internal/apiserver"
)

const chartDir = "../../deploy/helm/loopguard"

// combos are the chart's values and the kustomize composition each must equal.
var combos = []struct {
	overlay string
	values  map[string]any
}{
	{"base", map[string]any{"mode": "report"}},
	{"enforce", map[string]any{"mode": "enforce"}},
	{"webhooks", map[string]any{"mode": "report", "webhook": map[string]any{"enabled": true}}},
	{"enforce-webhooks", map[string]any{"mode": "enforce", "webhook": map[string]any{"enabled": true}}},
}

// key names an object the way the comparison indexes it.
func key(u *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", u.GetObjectKind().GroupVersionKind().GroupKind(), u.GetNamespace(), u.GetName())
}

// configHash is the content hash kustomize's configMapGenerator appends to loopguard-config.
var configHash = regexp.MustCompile(`^loopguard-config-[a-z0-9]{10}$`)

// normalise removes what legitimately differs between the two renderings: kustomize's hashed
// ConfigMap name (the chart rolls the Deployment with a checksum annotation instead) and that
// annotation.
//
// It also collapses whitespace in CEL expressions: verdict-only.yaml's folded (>-) scalars
// with more-indented lines are read with different line breaks by kustomize's YAML parser
// (kyaml) and by the one Helm sends manifests through (sigs.k8s.io/yaml); CEL ignores them.
func normalise(u *unstructured.Unstructured) {
	collapseCEL(u.Object)
	if u.GetKind() == "ConfigMap" && configHash.MatchString(u.GetName()) {
		u.SetName("loopguard-config")
	}
	if u.GetKind() != "Deployment" {
		return
	}
	ann, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "annotations")
	delete(ann, "checksum/config")
	if len(ann) == 0 {
		unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "annotations")
	} else {
		_ = unstructured.SetNestedStringMap(u.Object, ann, "spec", "template", "metadata", "annotations")
	}
	vols, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "volumes")
	for _, v := range vols {
		if name, _, _ := unstructured.NestedString(v.(map[string]any), "configMap", "name"); configHash.MatchString(name) {
			_ = unstructured.SetNestedField(v.(map[string]any), "loopguard-config", "configMap", "name")
		}
	}
	_ = unstructured.SetNestedSlice(u.Object, vols, "spec", "template", "spec", "volumes")
}

// parse splits a multi-document YAML stream into objects keyed by key.
func parse(t *testing.T, what, stream string) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, doc := range strings.Split(stream, "\n---") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, doc)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		normalise(u)
		if _, dup := out[key(u)]; dup {
			t.Fatalf("%s: %s twice", what, key(u))
		}
		out[key(u)] = u
	}
	return out
}

func kustomize(t *testing.T, overlay string) map[string]*unstructured.Unstructured {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "../../deploy/"+overlay)
	if err != nil {
		t.Fatalf("kustomize build deploy/%s: %v", overlay, err)
	}
	y, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	objs := parse(t, "deploy/"+overlay, string(y))
	// The chart leaves the namespace to `helm install --create-namespace`: Helm stores its
	// release record there before it applies any template.
	delete(objs, "Namespace /loopguard-system")
	return objs
}

// template renders the chart as `helm template` does: a client-side dry run of an install.
func template(t *testing.T, values map[string]any) (string, error) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	in := action.NewInstall(action.NewConfiguration())
	in.DryRunStrategy = action.DryRunClient
	in.ReleaseName = "loopguard"
	in.Namespace = "loopguard-system"
	rel, err := in.Run(ch, values)
	if err != nil {
		return "", err
	}
	return rel.(*release.Release).Manifest, nil
}

func TestChartMatchesKustomize(t *testing.T) {
	for _, c := range combos {
		t.Run(c.overlay, func(t *testing.T) {
			manifest, err := template(t, c.values)
			if err != nil {
				t.Fatalf("helm template with %v: %v", c.values, err)
			}
			got, want := parse(t, "chart", manifest), kustomize(t, c.overlay)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("chart with %v differs from deploy/%s (-kustomize +chart); run hack/helmchart/sync.sh if deploy/ changed:\n%s", c.values, c.overlay, diff)
			}
		})
	}
}

func TestChartValuesChangeTheDeployment(t *testing.T) {
	manifest, err := template(t, map[string]any{
		"replicas":  3,
		"resources": map[string]any{"limits": map[string]any{"memory": "1Gi"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	d := parse(t, "chart", manifest)["Deployment.apps loopguard-system/loopguard"]
	if d == nil {
		t.Fatal("no Deployment rendered")
	}
	if n, _, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "replicas"); n != float64(3) {
		t.Errorf("replicas = %v, want 3", n)
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	got, _, _ := unstructured.NestedMap(cs[0].(map[string]any), "resources")
	// Helm merges a map value into the default's: requests stay unless set to null.
	want := map[string]any{
		"limits":   map[string]any{"memory": "1Gi"},
		"requests": map[string]any{"cpu": "100m", "memory": "192Mi"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
}

func TestChartRejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		values map[string]any
		want   string // in the error
	}{
		{map[string]any{"mode": "bogus"}, "mode"},
		{map[string]any{"replicas": 0}, "replicas"},
		{map[string]any{"webhook": map[string]any{"enabled": "yes"}}, "enabled"},
		{map[string]any{"modes": "enforce"}, "modes"},
	} {
		_, err := template(t, tc.values)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("values %v: error %v, want one naming %q", tc.values, err, tc.want)
		}
	}
}

func TestChartLints(t *testing.T) {
	for _, c := range combos {
		l := action.NewLint()
		l.Strict = true
		l.Namespace = "loopguard-system"
		res := l.Run([]string{chartDir}, c.values)
		for _, m := range res.Messages {
			t.Logf("%v: %s", c.values, m)
		}
		if len(res.Errors) > 0 || res.TotalChartsLinted != 1 {
			t.Errorf("helm lint --strict with %v: %d charts, errors %v", c.values, res.TotalChartsLinted, res.Errors)
		}
	}
}

// TestChartInstalls installs the chart into a real kube-apiserver, as `helm install` does,
// and reads every object back. The webhook needs cert-manager's CRDs, which the test server
// does not serve, so it installs both modes without it.
func TestChartInstalls(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver; skipped in -short mode")
	}
	srv := apiserver.Start(t)
	kc, err := srv.Kubeconfig("admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(srv.Config())
	for i, mode := range []string{"report", "enforce"} {
		t.Run(mode, func(t *testing.T) {
			ns := "loopguard-system"
			cfg := action.NewConfiguration()
			flags := genericclioptions.NewConfigFlags(false)
			flags.KubeConfig, flags.Namespace = &path, &ns
			if err := cfg.Init(flags, ns, "secret"); err != nil {
				t.Fatal(err)
			}
			ch, err := loader.Load(chartDir)
			if err != nil {
				t.Fatal(err)
			}
			if i > 0 { // the first release made the namespace; the second upgrades into it
				up := action.NewUpgrade(cfg)
				up.Namespace = ns
				up.Timeout = time.Minute
				up.WaitStrategy = kube.HookOnlyStrategy // no kubelet runs the Pods
				if _, err := up.RunWithContext(context.Background(), "loopguard", ch, map[string]any{"mode": mode}); err != nil {
					t.Fatalf("helm upgrade --set mode=%s: %v", mode, err)
				}
			} else {
				in := action.NewInstall(cfg)
				in.ReleaseName = "loopguard"
				in.Namespace = ns
				in.CreateNamespace = true
				in.Timeout = time.Minute
				in.WaitStrategy = kube.HookOnlyStrategy // no kubelet runs the Pods
				if _, err := in.RunWithContext(context.Background(), ch, map[string]any{"mode": mode}); err != nil {
					t.Fatalf("helm install --set mode=%s: %v", mode, err)
				}
			}
			overlay := map[string]string{"report": "base", "enforce": "enforce"}[mode]
			want := kustomize(t, overlay)
			var keys []string
			for k := range want {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				u := want[k]
				gvk := u.GroupVersionKind()
				res := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: resource(gvk.Kind)}
				var ri dynamic.ResourceInterface = dyn.Resource(res)
				if u.GetNamespace() != "" {
					ri = dyn.Resource(res).Namespace(u.GetNamespace())
				}
				got, err := ri.Get(context.Background(), u.GetName(), metav1GetOptions)
				if err != nil {
					t.Errorf("%s after install: %v", k, err)
					continue
				}
				if got.GetLabels()["app.kubernetes.io/managed-by"] != "Helm" {
					t.Errorf("%s: not managed by Helm (labels %v)", k, got.GetLabels())
				}
			}
			// The other mode's objects are gone (upgrade) or absent (install).
			vap := dyn.Resource(schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"})
			_, err = vap.Get(context.Background(), "loopguard-verdict-only", metav1GetOptions)
			if present := err == nil; present != (mode == "report") {
				t.Errorf("mode %s: verdict-only policy present = %v (err %v)", mode, present, err)
			}
		})
	}
}

var metav1GetOptions = metav1.GetOptions{}

// resource is the plural resource name of the kinds deploy/ renders.
func resource(kind string) string {
	l := strings.ToLower(kind)
	if strings.HasSuffix(l, "y") {
		return strings.TrimSuffix(l, "y") + "ies"
	}
	return l + "s"
}

// collapseCEL replaces runs of whitespace with one space in every "expression" string.
func collapseCEL(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "expression" {
				v[k] = strings.Join(strings.Fields(s), " ")
				continue
			}
			collapseCEL(x)
		}
	case []any:
		for _, x := range v {
			collapseCEL(x)
		}
	}
}
