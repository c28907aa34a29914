package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/loopguard/loopguard/adapters/verify"
	"github.com/loopguard/loopguard/adapters/verify/kubeletsim"
	"github.com/loopguard/loopguard/adapters/verify/probe"
	"github.com/loopguard/loopguard/internal/apiserver"
)

// TestVerifyEndToEnd runs `loopguard verify` against a real kube-apiserver of its own (its
// Nodes would change what other tests' scans see) holding two Ready nodes, a LoadBalancer
// Service with an LB address and one backend on n1, with adapters/verify/kubeletsim playing the
// kubelet: the silent server stands for n1's view of the LB (the loop), the answering one for
// n2's. The CLI must pick n1 and n2 from the EndpointSlice, predict as scan does, print both
// placements side by side, exit as the comparison says and leave no Pod behind.
func TestVerifyEndToEnd(t *testing.T) {
	srv := apiserver.Start(t)
	c := srv.Client()
	ctx := t.Context()
	ns := srv.Namespace(t)
	for _, n := range []struct{ name, ip string }{{"n1", "10.0.0.1"}, {"n2", "10.0.0.2"}} {
		node, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.ip}}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	checkoutService(t, c, ns)
	k := kubeletsim.Start(t, c, ns, map[string]string{"n1": kubeletsim.Listen(t, false), "n2": kubeletsim.Listen(t, true)}, nil)
	kubeconfig := writeKubeconfig(t, srv.Config())

	stdout, stderr, code := runCLI(t, "", "verify", "--kubeconfig", kubeconfig, "-n", ns, "checkout", "--provider", "kubernetes", "--kubernetes-version", "v1.37.2", "--proxy-mode", "iptables", "--kube-proxy-version", "v1.37.2",
		"--image", "example.invalid/loopguard:test", "--connections", "2", "--connect-timeout", "500ms", "--read-timeout", "300ms", "-o", "json")
	t.Logf("stderr:\n%s", stderr)
	var rep VerifyReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("exit %d: %v: %s", code, err, stdout)
	}
	if len(rep.Exposures) != 1 || len(rep.Exposures[0].Placements) != 2 {
		t.Fatalf("report %s", stdout)
	}
	pl := rep.Exposures[0].Placements
	t.Logf("predicted %s and %s (risk %s), summary %+v", pl[0].Predicted.Behaviour, pl[1].Predicted.Behaviour, rep.Exposures[0].Assessment, rep.Summary)
	if pl[0].Node != "n1" || pl[1].Node != "n2" || pl[0].Observed == nil || pl[1].Observed == nil ||
		pl[0].Observed.Behaviour != verify.Loops || pl[1].Observed.Behaviour != verify.Works {
		t.Errorf("placements: %s", stdout)
	}
	// With those facts scan predicts the loop from n1 and none from n2, and so it was.
	if pl[0].Predicted.Behaviour != verify.Loops || pl[1].Predicted.Behaviour != verify.Works || rep.Summary.Agree != 2 || code != exitOK {
		t.Errorf("exit %d, summary %+v, predicted %s and %s", code, rep.Summary, pl[0].Predicted.Behaviour, pl[1].Predicted.Behaviour)
	}
	for _, want := range []string{"created", "running", "done", "deleted"} {
		if !strings.Contains(stderr, ": "+want+" loopguard-verify-checkout-") {
			t.Errorf("no %q progress line on stderr", want)
		}
	}
	probeCommandLine(t, k.Seen())
	interrupted(t, c, kubeconfig)
	// Told the fix holds, the loop from n1 is a fix that did not hold: exit 1.
	stdout, _, code = runCLI(t, "", "verify", "--kubeconfig", kubeconfig, "-n", ns, "checkout", "--provider", "kubernetes", "--kubernetes-version", "v1.37.2", "--proxy-mode", "iptables", "--kube-proxy-version", "v1.37.2", "-q", "--expect-fixed",
		"--image", "example.invalid/loopguard:test", "--connections", "2", "--connect-timeout", "500ms", "--read-timeout", "300ms")
	if code != exitAtRisk || !strings.Contains(stdout, "(fix did not hold)") || !strings.Contains(stdout, "1 where the fix did not hold") ||
		!strings.Contains(stdout, "the fix did not hold from backend-node (node n1): observed loops (2 no-answer); the verdict rested on ") {
		t.Errorf("--expect-fixed: exit %d\n%s", code, stdout)
	}
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: verify.LabelManagedBy + "=" + verify.ManagedBy})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("probe Pods left: %v %v", pods, err)
	}
}

// probeCommandLine runs a probe Pod's container command line, as created, through this
// binary, as deploy/loopguard.Dockerfile's image would (/loopguard is its binary): the
// kubelet above only simulates the probe, so this is what shows the binary accepts every flag
// verify passes and leaves in the termination message the report verify reads.
func probeCommandLine(t *testing.T, pods []corev1.Pod) {
	t.Helper()
	if len(pods) == 0 {
		t.Fatal("no probe Pod seen")
	}
	ctr := pods[0].Spec.Containers[0]
	if len(ctr.Command) != 1 || ctr.Command[0] != "/loopguard" || len(ctr.Args) == 0 || ctr.Args[0] != "probe" {
		t.Fatalf("probe container runs %v %v, want the image's /loopguard probe", ctr.Command, ctr.Args)
	}
	termLog := filepath.Join(t.TempDir(), "termination-log")
	args := slices.Clone(ctr.Args)
	for i, a := range args {
		if a == ctr.TerminationMessagePath {
			args[i] = termLog
		}
	}
	if slices.Equal(args, ctr.Args) {
		t.Fatalf("the probe does not write its report to the termination message path %s: %v", ctr.TerminationMessagePath, ctr.Args)
	}
	// The LB address (TEST-NET) does not answer here: every connection times out, which is
	// a report all the same.
	if _, stderr, code := runCLI(t, "", args...); code != exitOK {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	data, err := os.ReadFile(termLog)
	if err != nil {
		t.Fatal(err)
	}
	var rep probe.Report
	if err := json.Unmarshal(data, &rep); err != nil || len(rep.Targets) != 1 || len(data) > 4096 {
		t.Errorf("termination message (%d bytes, at most 4096): %v: %s", len(data), err, data)
	}
}

// checkoutService creates the Service TestVerifyEndToEnd verifies in ns: an LB address, one
// ready backend on n1.
func checkoutService(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	ctx := t.Context()
	svc, err := c.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		// The facts the plain Kubernetes dialect cannot read from a cloud: a private LB that
		// keeps the client's address (docs/annotations.md).
		ObjectMeta: metav1.ObjectMeta{Name: "checkout", Annotations: map[string]string{"loopguard.io/lb-scope": "private", "loopguard.io/lb-source-nat": "false"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "checkout"},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Ports:                 []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	proxy := corev1.LoadBalancerIPModeProxy
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10", IPMode: &proxy}}
	if _, err := c.CoreV1().Services(ns).UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ready, node, port := true, "n1", int32(8080)
	if _, err := c.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "checkout-1", Labels: map[string]string{discoveryv1.LabelServiceName: "checkout"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}, NodeName: &node}},
		Ports:       []discoveryv1.EndpointPort{{Port: &port}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// interrupted: verify gets SIGINT (Ctrl-C) while its probe Pods run (a kubelet that never
// finishes them): it removes them, prints what it has, says so and exits 3.
func interrupted(t *testing.T, c kubernetes.Interface, kubeconfig string) {
	t.Helper()
	ns := apiserverNamespace(t, c)
	checkoutService(t, c, ns)
	kubeletsim.Start(t, c, ns, nil, map[string]kubeletsim.Behaviour{"n1": kubeletsim.RunForever, "n2": kubeletsim.RunForever})
	type result struct {
		stdout, stderr string
		code           int
	}
	done := make(chan result, 1)
	go func() {
		stdout, stderr, code := runCLI(t, "", "verify", "--kubeconfig", kubeconfig, "-n", ns, "checkout", "--provider", "kubernetes", "--kubernetes-version", "v1.37.2", "--proxy-mode", "iptables", "--kube-proxy-version", "v1.37.2",
			"--image", "example.invalid/loopguard:test", "--connections", "2", "--connect-timeout", "500ms", "--read-timeout", "300ms")
		done <- result{stdout, stderr, code}
	}()
	// Both probe Pods running: verify is waiting for their reports, its signal handler in place.
	deadline := time.Now().Add(30 * time.Second)
	for running := 0; running < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("the probe Pods never ran: %d running", running)
		}
		pods, err := c.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: verify.LabelManagedBy + "=" + verify.ManagedBy})
		if err != nil {
			t.Fatal(err)
		}
		running = 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("verify did not return after SIGINT")
	}
	if r.code != exitBlocked || !strings.Contains(r.stderr, "interrupted") || !strings.Contains(r.stderr, "probe Pods removed") {
		t.Errorf("after SIGINT: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	pods, err := c.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: verify.LabelManagedBy + "=" + verify.ManagedBy})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("probe Pods left after SIGINT: %d (%v)", len(pods.Items), err)
	}
}

// apiserverNamespace creates a namespace of its own for a part of a test.
func apiserverNamespace(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	n, err := c.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "verify-interrupted-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n.Name
}
