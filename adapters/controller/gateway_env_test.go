package controller

import (
	"context"
	"os"
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/tencent"
)

var (
	gatewaysRes       = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	gatewayClassesRes = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}
)

// gatewayEnv is a real API server with Gateway API's CRDs, for the Gateway reconciler's tests.
type gatewayEnv struct {
	t   *testing.T
	ctx context.Context
	srv *apiserver.Server
	cs  kubernetes.Interface
	dyn dynamic.Interface
}

// newGatewayEnv starts a real API server with Gateway API's standard CRDs and crds, and
// creates the namespaces, the controller's own (loopguard-gw) and three Nodes (10.0.1.11-13).
func newGatewayEnv(t *testing.T, namespaces []string, crds ...string) *gatewayEnv {
	t.Helper()
	srv := apiserver.Start(t, apiserver.WithCRDPaths(append(apiserver.GatewayAPICRDs(t), crds...)...))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	e := &gatewayEnv{t: t, ctx: ctx, srv: srv, cs: srv.Client()}
	var err error
	if e.dyn, err = dynamic.NewForConfig(srv.Config()); err != nil {
		t.Fatal(err)
	}
	for _, ns := range append(namespaces, "loopguard-gw") {
		if _, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"10.0.1.11", "10.0.1.12", "10.0.1.13"} {
		if _, err := e.cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"kubernetes.io/hostname": n}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// envoyGatewayCRDs are Envoy Gateway's own CRDs of these resources (clienttrafficpolicies, ...),
// as the release hack/envoy-gateway.sh builds publishes them in its module (the plain copies
// in its Helm chart's crds subchart); the module is downloaded, not built.
func envoyGatewayCRDs(t *testing.T, resources ...string) []string {
	t.Helper()
	script, err := os.ReadFile("../../hack/envoy-gateway.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`ENVOY_GATEWAY_VERSION:-([0-9][0-9.]*)`).FindSubmatch(script)
	if m == nil {
		t.Fatal("hack/envoy-gateway.sh names no default ENVOY_GATEWAY_VERSION")
	}
	var out []string
	for _, r := range resources {
		out = append(out, apiserver.ModuleFiles(t, "github.com/envoyproxy/gateway", "v"+string(m[1]),
			"charts/gateway-helm/charts/crds/crds/generated/gateway.envoyproxy.io_"+r+".yaml")...)
	}
	return out
}

// create makes an object of resource gvr from YAML.
func (e *gatewayEnv) create(gvr schema.GroupVersionResource, ns, doc string) {
	e.t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.dyn.Resource(gvr).Namespace(ns).Create(e.ctx, u, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// startGateways runs the Gateway reconciler for TKE (the ipvs profile) as deploy/'s
// ServiceAccount with exactly the RBAC of the files, until the test ends.
func (e *gatewayEnv) startGateways(opts *Options, rbac ...string) *GatewayController {
	t := e.t
	t.Helper()
	cfg, leaseNS := installRBAC(rbac...)(&harness{t: t, srv: e.srv, ns: "loopguard-gw"})
	mo := ManagerOptions(ManagerConfig{MetricsAddr: "0", ProbeAddr: "0", LeaderElection: true, LeaderElectionNamespace: leaseNS})
	skip := true
	mo.Controller = config.Controller{SkipNameValidation: &skip}
	mgr, err := manager.New(cfg, mo)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tencent.NewProvider(nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := SetupGateways(mgr, p, opts)
	if err != nil || g == nil {
		t.Fatalf("SetupGateways: %v, %v", g, err)
	}
	mctx, mcancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		mcancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return g
}

// verdict is the verdict annotation of Gateway ns/name.
func (e *gatewayEnv) verdict(ns, name string) string {
	e.t.Helper()
	u, err := e.dyn.Resource(gatewaysRes).Namespace(ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return u.GetAnnotations()[AnnotationVerdict]
}
