package main

import (
	"context"
	"flag"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/loopguard/loopguard/adapters/controller"
	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/tencent"
)

// TestMainAgainstARealAPIServer runs the program as a user would (flags, a kubeconfig, a
// profile file) against a real kube-apiserver: it becomes ready, puts its verdict on a
// LoadBalancer Service and on an Istio Gateway, and stops on SIGTERM. The Gateway's verdict is
// NoLoop only through its class defaults ConfigMap, which is in the namespace
// --istio-namespace names, not in istio-system: without the flag reaching the Gateway
// reconciler it stays AtRisk. (One test: the program's signal handler can be set up once per
// process.)
func TestMainAgainstARealAPIServer(t *testing.T) {
	ctrllog.SetLogger(logr.Discard())
	srv := apiserver.Start(t, apiserver.WithCRDPaths(apiserver.GatewayAPICRDs(t)...))
	cfg := srv.Config()
	dir := t.TempDir()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(dir, "profile.yaml")
	if err := os.WriteFile(profile, []byte("apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\nproxyMode: ipvs\nkubeProxyVersion: v1.20.6-tke.12\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	probe := "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	t.Setenv("KUBECONFIG", kubeconfig)
	ctx := context.Background()
	istioGateway(t, ctx, srv, "istio-gw")
	os.Args = []string{"controller", "--provider", "tencent", "--profile", profile, "--leader-elect",
		"--metrics-bind-address", "0", "--health-probe-bind-address", probe, "--istio-namespace", "istio-gw"}
	flag.CommandLine = flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	done := make(chan error, 1)
	go func() { done <- run() }()

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	if _, err := srv.Client().CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default",
		Annotations: map[string]string{tencent.AnnotationInternalSubnet: "subnet-1a2b3c4d"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := srv.Client().CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	ready, verdict, gwVerdict := false, false, ""
	for time.Now().Before(deadline) && !(ready && verdict && strings.HasPrefix(gwVerdict, controller.ReasonNoLoop+":")) {
		select {
		case err := <-done:
			t.Fatalf("the program exited: %v", err)
		default:
		}
		if resp, err := http.Get("http://" + probe + "/readyz"); err == nil {
			ready = resp.StatusCode == http.StatusOK
			resp.Body.Close()
		}
		if s, err := srv.Client().CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{}); err == nil {
			for _, c := range s.Status.Conditions {
				verdict = verdict || c.Type == controller.ConditionType
			}
		}
		if gw, err := dyn.Resource(gatewaysRes).Namespace("shop").Get(ctx, "edge", metav1.GetOptions{}); err == nil {
			gwVerdict = gw.GetAnnotations()[controller.AnnotationVerdict]
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !ready || !verdict || !strings.HasPrefix(gwVerdict, controller.ReasonNoLoop+":") {
		t.Fatalf("ready %v, verdict on the Service %v, verdict on the Gateway %q (want %s, from the class defaults in istio-gw)", ready, verdict, gwVerdict, controller.ReasonNoLoop)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
}

var gatewaysRes = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}

// istioGateway creates an Istio GatewayClass, a Gateway shop/edge of it at risk on TKE in IPVS
// mode (a private CLB), and, in istiodNS, the class's defaults ConfigMap, whose service overlay
// sets the remedy (prevent-loopback); istio-system gets none.
func istioGateway(t *testing.T, ctx context.Context, srv *apiserver.Server, istiodNS string) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"shop", istiodNS} {
		if _, err := srv.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []struct {
		gvr schema.GroupVersionResource
		ns  string
		doc string
	}{
		{schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}, "",
			`{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: istio}, spec: {controllerName: istio.io/gateway-controller}}`},
		{gatewaysRes, "shop", `{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: edge, namespace: shop},
  spec: {gatewayClassName: istio, infrastructure: {annotations: {` + tencent.AnnotationInternalSubnet + `: subnet-1a2b3c4d}}, listeners: [{name: http, port: 80, protocol: HTTP}]}}`},
		{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, istiodNS, `{apiVersion: v1, kind: ConfigMap,
  metadata: {name: istio-default-gatewayclass-istio, namespace: ` + istiodNS + `, labels: {gateway.istio.io/defaults-for-class: istio}},
  data: {service: "metadata: {annotations: {service.cloud.tencent.com/prevent-loopback: \"true\"}}"}}`},
	} {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(o.doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(o.gvr).Namespace(o.ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGatewayOptions: --istio-namespace must name a namespace.
func TestGatewayOptions(t *testing.T) {
	if o, err := gatewayOptions("istio-gw"); err != nil || o.IstioNamespace != "istio-gw" {
		t.Errorf("istio-gw: %+v, %v", o, err)
	}
	for _, bad := range []string{"", "Istio_System", "istio-system/"} {
		if _, err := gatewayOptions(bad); err == nil || !strings.Contains(err.Error(), "--istio-namespace") {
			t.Errorf("%q: %v, want an error naming --istio-namespace", bad, err)
		}
	}
}
