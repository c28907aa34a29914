package main

import (
	"context"
	"flag"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/loopguard/loopguard/adapters/controller"
	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/tencent"
)

// TestMainAgainstARealAPIServer runs the program as a user would (flags, a kubeconfig, a
// profile file) against a real kube-apiserver: it becomes ready, puts its verdict on a
// LoadBalancer Service, and stops on SIGTERM.
func TestMainAgainstARealAPIServer(t *testing.T) {
	ctrllog.SetLogger(logr.Discard())
	srv := apiserver.Start(t)
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
	os.Args = []string{"controller", "--provider", "tencent", "--profile", profile, "--leader-elect",
		"--metrics-bind-address", "0", "--health-probe-bind-address", probe}
	flag.CommandLine = flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	done := make(chan error, 1)
	go func() { done <- run() }()

	ctx := context.Background()
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
	deadline := time.Now().Add(60 * time.Second)
	ready, verdict := false, false
	for time.Now().Before(deadline) && !(ready && verdict) {
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
		time.Sleep(100 * time.Millisecond)
	}
	if !ready || !verdict {
		t.Fatalf("ready %v, verdict on the Service %v", ready, verdict)
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
