package apiserver_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/loopguard/loopguard/internal/apiserver"
)

// server is shared by every test in this package that needs one (~3-5 s per start).
var server = apiserver.NewShared()

func TestMain(m *testing.M) {
	// envtest logs through controller-runtime's global logger; left unset, a run longer than
	// 30 s prints a "log.SetLogger(...) was never called" stack trace. These tests want none
	// of its logs. The first SetLogger wins, so a package that wants them sets its own here.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(server.Run(m))
}

func TestLaunchWithoutAssetsIsSkippable(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Setenv("TEST_ASSET_KUBE_APISERVER", "")
	t.Setenv("TEST_ASSET_ETCD", "")
	_, err := apiserver.Launch()
	if !errors.Is(err, apiserver.ErrNoAssets) {
		t.Fatalf("Launch() error = %v, want ErrNoAssets", err)
	}
	if !strings.Contains(err.Error(), "run hack/envtest-assets.sh") {
		t.Errorf("error %q does not tell how to get the binaries", err)
	}
}

// A CI job that sets KUBEBUILDER_ASSETS to a wrong folder must fail, not skip.
func TestLaunchWithMissingAssetsFails(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", t.TempDir())
	t.Setenv("TEST_ASSET_KUBE_APISERVER", "")
	t.Setenv("TEST_ASSET_ETCD", "")
	_, err := apiserver.Launch()
	if err == nil || errors.Is(err, apiserver.ErrNoAssets) {
		t.Fatalf("Launch() error = %v, want an error that is not ErrNoAssets", err)
	}
}

func TestSharedServerReportsARealVersion(t *testing.T) {
	s := server.Get(t)
	v, err := s.Client().Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	// The -X ldflags in hack/envtest-assets.sh; without them the server says v0.0.0-master
	// and version gates in loopguard would misjudge it.
	if v.Major != "1" || v.Minor == "" || strings.Contains(v.GitVersion, "master") {
		t.Errorf("server version = %+v, want a release version", v)
	}
}

func TestNamespacesAreDistinctPerTest(t *testing.T) {
	s := server.Get(t)
	a, b := s.Namespace(t), s.Namespace(t)
	if a == b {
		t.Fatalf("Namespace returned %q twice", a)
	}
	for _, ns := range []string{a, b} {
		if !strings.HasPrefix(ns, "testnamespacesaredistinctpertest-") {
			t.Errorf("namespace %q is not named after the test", ns)
		}
	}
}

// Config must hand out copies: one test impersonating someone must not change the identity
// of every other test on the shared server.
func TestConfigIsACopy(t *testing.T) {
	s := server.Get(t)
	c := s.Config()
	c.Impersonate.UserName = "someone"
	if got := s.Config().Impersonate.UserName; got != "" {
		t.Errorf("second Config() impersonates %q after the first was changed", got)
	}
}

func TestStartInstallsCRDs(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.test.loopguard.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "test.loopguard.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}},
					},
				}},
			}},
		},
	}
	// Its own server: a test's CRDs must not leak into the shared one.
	s := apiserver.Start(t, apiserver.WithCRDs(crd))
	if n := len(s.CRDs()); n != 1 {
		t.Fatalf("CRDs() has %d entries, want 1", n)
	}

	dyn, err := dynamic.NewForConfig(s.Config())
	if err != nil {
		t.Fatal(err)
	}
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.loopguard.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w"},
		"spec":     map[string]any{"size": int64(3)},
	}}
	gvr := schema.GroupVersionResource{Group: "test.loopguard.io", Version: "v1", Resource: "widgets"}
	if _, err := dyn.Resource(gvr).Namespace(s.Namespace(t)).Create(context.Background(), w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Widget through the installed CRD: %v", err)
	}
}
