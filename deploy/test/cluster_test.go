package test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/loopguard/loopguard/internal/cluster"
)

// Images the test builds from this tree and imports into every node, beside the assets' base
// images (internal/cluster): the controller (deploy/Dockerfile's build) and the CLI, whose
// probe subcommand verify's Pods run (deploy/loopguard.Dockerfile's build).
const (
	controllerImage = "loopguard.invalid/loopguard-controller:dev"
	cliImage        = "loopguard.invalid/loopguard:dev"
)

// clusterEnv is the real cluster the TestCluster subtests share, and what was built for it.
type clusterEnv struct {
	c       *cluster.Cluster
	kube    kubernetes.Interface
	cli     string // the loopguard CLI, as deploy/loopguard.Dockerfile builds it
	profile string // the cluster's ClusterProfile, a file
}

// TestCluster runs loopguard where its users run it: a real two-node cluster on this machine
// (internal/cluster: kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
// containerd, runc, the CNI bridge, kube-proxy in nftables mode and kubeadm's CoreDNS, every
// one built from source), with a cloud-controller-manager built as a fork builds one (the
// upstream app, loopguard's decorator around a cloud whose load balancers are real: the
// kernel's DNAT, or HAProxy with and without the PROXY protocol). Brought up once, it serves
// the subtests in order, then goes down and must leave nothing behind:
//
//   - LoadBalancer: ipMode travels from the real CCM through the real API server to the real
//     kube-proxy, and real Pods' packets take the path loopguard predicts (loop, no loop,
//     PROXY-protocol rejection), checked by the source address the backend saw and by a SYN
//     counter on the load balancer;
//   - Verify: `loopguard verify` starts real probe Pods on the backend's node and on the other,
//     and every observation agrees with the prediction (the table docs/verify.md shows);
//   - DNSSteering: `loopguard apply --coredns edit` writes the rewrite into CoreDNS's Corefile, a
//     real Pod resolving the load balancer's hostname then reaches the Service directly,
//     `--coredns take-back` restores the Corefile byte for byte, and a Corefile another tool
//     manages is reported and left alone;
//   - Deploy: deploy/webhooks as an operator applies it (rendered by kustomize, the image built
//     from deploy/Dockerfile's build) runs as Pods that become Ready, warn at admission, write
//     conditions and Events on real Services, and, when the leader Pod is deleted in the
//     middle of reconciling, the other replica converges with nothing lost and no write
//     repeated;
//   - Teardown: Down leaves no process, cgroup, network namespace, link, mount or file.
//
// It skips, naming what is missing, where the cluster cannot run (cluster.Require), and fails
// there instead when LOOPGUARD_CLUSTER_REQUIRED=1 (CI).
func TestCluster(t *testing.T) {
	assets := cluster.Require(t, cluster.ProxyNFTables)
	tmp := t.TempDir()
	ccm := filepath.Join(tmp, "loopguard-ccm")
	cli := filepath.Join(tmp, "loopguard")
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	wg.Add(3)
	go func() { defer wg.Done(); errs[0] = buildCCM(ccm) }()
	go func() { defer wg.Done(); errs[1] = dockerfileBuild("../loopguard.Dockerfile", "../..", cli) }()
	var ctrl string
	go func() {
		defer wg.Done()
		ctrl, errs[2] = buildController()
	}()
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	images := filepath.Join(tmp, "loopguard-images.tar")
	if err := writeImages(assets, filepath.Join(tmp, "images.json"), images, map[string]string{
		controllerImage: ctrl, cliImage: cli,
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("built the CCM, the CLI, the controller and their images in %s", time.Since(start).Round(time.Second))

	ctx := t.Context()
	name := fmt.Sprintf("t%d", os.Getpid()%10_000_000)
	start = time.Now()
	c, err := cluster.Up(ctx, cluster.Config{Name: name, Assets: assets, CCM: ccm, Images: []string{images}, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster %s up in %s", name, time.Since(start).Round(time.Second))
	procs, dir := c.Procs(), c.Dir()
	var downOnce sync.Once
	takeDown := func() (err error) {
		downOnce.Do(func() { err = c.Down() })
		return err
	}
	t.Cleanup(func() {
		if err := takeDown(); err != nil {
			t.Error(err)
		}
	})
	// The cluster's processes run in sessions of their own, so an interrupted run (Ctrl-C, CI's
	// timeout) would leave them running: take it down first.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if s, ok := <-sigs; ok {
			fmt.Fprintf(os.Stderr, "TestCluster: %v: taking cluster %s down\n", s, name)
			_ = takeDown()
			os.Exit(1)
		}
	}()
	profile := filepath.Join(tmp, "profile.yaml")
	if err := os.WriteFile(profile, []byte(c.Profile()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := c.RESTConfig()
	// Admission warnings are what the Deploy subtest reads; elsewhere they are noise.
	cfg.WarningHandler = rest.NoWarnings{}
	env := &clusterEnv{c: c, kube: kubernetes.NewForConfigOrDie(cfg), cli: cli, profile: profile}
	// controller-runtime's client (the Deploy subtest's) logs through its own logger.
	ctrllog.SetLogger(logr.Discard())

	t.Run("LoadBalancer", env.testLoadBalancer)
	t.Run("Verify", env.testVerify)
	t.Run("DNSSteering", env.testDNSSteering)
	t.Run("Deploy", env.testDeploy)
	t.Run("Teardown", func(t *testing.T) {
		if t.Failed() {
			t.Logf("logs are in %s", dir)
		}
		err := takeDown()
		if err != nil {
			t.Error(err)
		}
		if err := cluster.Leftovers(name, dir, procs); err != nil {
			t.Error(err)
		}
	})
}

// testLog writes the cluster's progress lines to the test's log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// buildCCM builds hack/cluster/ccm as make builds loopguard: on the newest Kubernetes release
// (hack/newest's workspace), static, without the checkout's paths.
func buildCCM(out string) error {
	root, err := filepath.Abs("../..")
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", out, "./hack/cluster/ccm")
	cmd.Dir = root
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOFLAGS=") && !strings.HasPrefix(kv, "GOWORK=") && !strings.HasPrefix(kv, "CGO_ENABLED=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GOWORK="+filepath.Join(root, "hack/newest/go.work"), "GOFLAGS=-trimpath", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build hack/cluster/ccm: %v\n%s", err, b)
	}
	return nil
}

// writeImages writes one image per binary (its only file, its entrypoint, the non-root user
// distroless's nonroot is, 65532) into a docker-archive tarball with hack/images.
func writeImages(a cluster.Assets, spec, out string, images map[string]string) error {
	type image struct {
		Ref        string            `json:"ref"`
		Entrypoint []string          `json:"entrypoint"`
		User       string            `json:"user"`
		Files      map[string]string `json:"files"`
	}
	var list []image
	for ref, bin := range images {
		dst := "/" + filepath.Base(bin)
		list = append(list, image{Ref: ref, Entrypoint: []string{dst}, User: "65532", Files: map[string]string{dst: bin}})
	}
	b, err := json.Marshal(list)
	if err != nil {
		return err
	}
	if err := os.WriteFile(spec, b, 0o644); err != nil {
		return err
	}
	if out, err := exec.Command(a.ImagesTool(), "-spec", spec, "-o", out).CombinedOutput(); err != nil {
		return fmt.Errorf("hack/images: %v: %s", err, out)
	}
	return nil
}

// --- helpers the subtests share --------------------------------------------------------------

const (
	backendNode = "node1" // where every backend runs: "the backend's node"
	otherNode   = "node2"
)

// namespace creates a namespace.
func (e *clusterEnv) namespace(t *testing.T, name string) {
	t.Helper()
	_, err := e.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// backend runs the test server (plain on 8080, PROXY protocol required on 8081) as a
// one-replica Deployment on backendNode, and waits until it is available.
func (e *clusterEnv) backend(t *testing.T, ns string) {
	t.Helper()
	labels := map[string]string{"app": "backend"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backend"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"kubernetes.io/hostname": backendNode},
					Containers: []corev1.Container{{
						Name: "backend", Image: cluster.BackendImage,
						Args:  []string{"-listen", ":8080", "-listen-proxy", ":8081"},
						Env:   []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
						Ports: []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 8081}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
							PeriodSeconds: 1},
					}},
				},
			},
		},
	}
	if _, err := e.kube.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, ns+"/backend available", 90*time.Second, func() (bool, string) {
		got, err := e.kube.AppsV1().Deployments(ns).Get(t.Context(), "backend", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.AvailableReplicas == 1, fmt.Sprintf("%+v", got.Status)
	})
}

func ptr[T any](v T) *T { return &v }

// attempt is one connection of a client Pod (hack/images/backend -dial).
type attempt struct {
	Outcome string `json:"outcome"`
	Answer  string `json:"answer"`
	Error   string `json:"error"`
	Millis  int64  `json:"ms"`
}

// answerField reads peer= or src= from the backend's answer line.
func (a attempt) answerField(key string) string {
	for _, f := range strings.Fields(a.Answer) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			if h, _, err := net.SplitHostPort(v); err == nil {
				return h
			}
			return v
		}
	}
	return ""
}

// dialFrom runs a client Pod on node that opens n connections to addr (an address or a name
// the Pod's resolver resolves) and returns what each did, and the Pod's IP.
func (e *clusterEnv) dialFrom(t *testing.T, ns, node, addr string, n int) ([]attempt, string) {
	t.Helper()
	ctx := t.Context()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "client-" + node + "-"},
		Spec: corev1.PodSpec{
			NodeName:      node,
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "client", Image: cluster.BackendImage,
				Args: []string{"-dial", addr, "-n", fmt.Sprint(n), "-timeout", "2500ms"},
			}},
			TerminationGracePeriodSeconds: ptr(int64(0)),
		},
	}
	created, err := e.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = e.kube.CoreV1().Pods(ns).Delete(context.Background(), created.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))})
	}()
	var done *corev1.Pod
	eventually(t, "client Pod "+created.Name+" done", 90*time.Second, func() (bool, string) {
		p, err := e.kube.CoreV1().Pods(ns).Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		done = p
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, string(p.Status.Phase)
	})
	if done.Status.Phase != corev1.PodSucceeded || len(done.Status.ContainerStatuses) == 0 || done.Status.ContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("client Pod %s: %s: %+v", created.Name, done.Status.Phase, done.Status)
	}
	var out []attempt
	s := bufio.NewScanner(strings.NewReader(done.Status.ContainerStatuses[0].State.Terminated.Message))
	for s.Scan() {
		var a attempt
		if err := json.Unmarshal(s.Bytes(), &a); err != nil {
			t.Fatalf("client Pod %s: %q: %v", created.Name, s.Text(), err)
		}
		out = append(out, a)
	}
	if len(out) != n {
		t.Fatalf("client Pod %s reported %d connections, want %d: %q", created.Name, len(out), n, done.Status.ContainerStatuses[0].State.Terminated.Message)
	}
	return out, done.Status.PodIP
}

// countSYNs adds, in the router namespace (where the load balancers are), a raw-table rule
// that counts the SYNs to addr: whether a connection reached the load balancer at all.
func (e *clusterEnv) countSYNs(t *testing.T, addr string) {
	t.Helper()
	if out, err := e.c.Exec(t.Context(), "router", "iptables", "-w", "-t", "raw", "-A", "PREROUTING", "-d", addr+"/32", "-p", "tcp", "--syn",
		"-m", "comment", "--comment", "lgtest-"+addr); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

// syns reads countSYNs' counter.
func (e *clusterEnv) syns(t *testing.T, addr string) int {
	t.Helper()
	out, err := e.c.Exec(t.Context(), "router", "iptables", "-w", "-t", "raw", "-L", "PREROUTING", "-v", "-x", "-n")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "lgtest-"+addr+" ") || strings.HasSuffix(line, "lgtest-"+addr+" */") {
			var n int
			if _, err := fmt.Sscan(strings.Fields(line)[0], &n); err == nil {
				return n
			}
		}
	}
	t.Fatalf("no SYN counter for %s in the router:\n%s", addr, out)
	return 0
}

// kubeProxyHas says whether node's kube-proxy has programmed addr (nftables: the service-ips
// map and the chains name it).
func (e *clusterEnv) kubeProxyHas(t *testing.T, node, addr string) bool {
	t.Helper()
	out, err := e.c.Exec(t.Context(), node, "nft", "list", "table", "ip", "kube-proxy")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(out, addr+" ")
}

// cliRun runs the loopguard CLI in the router namespace (where the API server is reachable)
// with the cluster's admin kubeconfig, and returns its stdout, stderr and exit code.
func (e *clusterEnv) cliRun(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "nsenter", append(e.c.Enter("router"), append([]string{e.cli}, args...)...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.c.Kubeconfig())
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}
