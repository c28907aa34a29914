package main

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/internal/apiserver"
)

// lockedBuffer keeps the program's output for a failure message.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if len(s) > 8<<10 {
		s = "...\n" + s[len(s)-8<<10:]
	}
	return s
}

// TestBinaryAgainstARealAPIServer builds the program and runs it as a user would: the upstream
// cloud-controller-manager command with --cloud-provider loopguard-example, only the service
// controller, no leader election, no serving port, a kubeconfig and a profile file, against a
// real kube-apiserver. The fake cloud says Proxy for every load balancer; a private Service
// whose LB keeps the client address and whose backends need nothing from the LB gets VIP
// (loopguard intercepts the VIP in the cluster); the same Service without that declaration
// keeps the cloud's Proxy (the cloud may have its reasons); one whose LB applies source NAT
// keeps Proxy; all with an address from --fake-lb-cidr; the program stops on SIGTERM.
func TestBinaryAgainstARealAPIServer(t *testing.T) {
	srv := apiserver.Start(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the program with")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ccm")
	start := time.Now()
	build := exec.Command(goBin, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built in %s", time.Since(start).Round(time.Second))

	cfg := srv.Config()
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
	doc := "apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\nkubernetesVersion: v1.37.2\nproxyMode: iptables\nkubeProxyVersion: v1.37.2\n"
	if err := os.WriteFile(profile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}

	const cidr = "198.51.100.0/24"
	out := &lockedBuffer{}
	cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--cloud-provider", ProviderName,
		"--controllers", "service", "--leader-elect=false", "--secure-port", "0",
		"--fake-lb-cidr", cidr, "--fake-lb-ip-mode", "Proxy",
		"--loopguard-provider", "kubernetes", "--loopguard-profile", profile)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	ctx := context.Background()
	client := srv.Client()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]corev1.LoadBalancerIPMode{"web": corev1.LoadBalancerIPModeVIP, "kept": corev1.LoadBalancerIPModeProxy, "snat": corev1.LoadBalancerIPModeProxy}
	for name, ann := range map[string]map[string]string{
		"web":  {core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "false", core.AnnotationBackendExpects: "none"},
		"kept": {core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "false"},
		"snat": {core.AnnotationLBScope: "private", core.AnnotationLBSourceNAT: "true"},
	} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: ann},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
				Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
		if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	prefix := netip.MustParsePrefix(cidr)
	got := map[string]corev1.LoadBalancerIngress{}
	done := func() bool {
		for name, mode := range want {
			in, ok := got[name]
			a, err := netip.ParseAddr(in.IP)
			if !ok || err != nil || !prefix.Contains(a) || in.IPMode == nil || *in.IPMode != mode {
				return false
			}
		}
		return got["web"].IP != got["snat"].IP
	}
	deadline := time.Now().Add(90 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("statuses %+v, want ipMode %v with addresses of %s\n--- program output ---\n%s", got, want, cidr, out)
		}
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("the program exited: %v\n--- program output ---\n%s", err, out)
		case <-tick.C:
		}
		for name := range want {
			if s, err := client.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{}); err == nil && len(s.Status.LoadBalancer.Ingress) == 1 {
				got[name] = s.Status.LoadBalancer.Ingress[0]
			}
		}
	}
	t.Logf("statuses after %s: web %s %s, snat %s %s", time.Since(started).Round(100*time.Millisecond),
		got["web"].IP, *got["web"].IPMode, got["snat"].IP, *got["snat"].IPMode)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		stopped = true
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit 30 s after SIGTERM\n--- program output ---\n%s", out)
	}
}
