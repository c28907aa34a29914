package verify_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/loopguard/loopguard/adapters/verify"
	"github.com/loopguard/loopguard/adapters/verify/kubeletsim"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/internal/apiserver"
)

// The orchestration runs against a real kube-apiserver. envtest has no kubelet, so these tests
// play one (adapters/verify/kubeletsim): it watches the probe Pods bound to its nodes and writes their status
// through the status subresource as a kubelet would (Running, then the container terminated
// with the probe's report as its termination message, or an image pull failure). The report
// is the real probe engine's, run against loopback servers that stand for each node's view of
// the LB (answering, or silent as behind the loop).

var server = apiserver.NewShared()

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(server.Run(m))
}

// setup creates a LoadBalancer Service with an LB address in its status and returns a target
// whose exposure loops for a client on n1, the node of its only backend.
func setup(t *testing.T) (kubernetes.Interface, string, verify.Target) {
	s := server.Get(t)
	ns := s.Namespace(t)
	c := s.Client()
	svc, err := c.CoreV1().Services(ns).Create(t.Context(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "checkout"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}, {Hostname: "lb.example.com"}}
	if svc, err = c.CoreV1().Services(ns).UpdateStatus(t.Context(), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := &core.Exposure{
		Object: core.ObjectRef{Kind: "Service", Namespace: ns, Name: "checkout"}, Provider: "test",
		Scope: core.Private, Layer: core.Layer4, Protocols: core.TCP, ProxyProtocol: core.No,
		Intercept: core.No, LBSourceNAT: core.No, Binding: core.DirectToPod,
		Placement: core.Placement{NodesBehindLB: 3, Backends: []core.NodeBackends{{Node: "n1", Count: 1}}, Separated: core.No},
	}
	return c, ns, verify.Target{Service: svc, Exposure: e, Nodes: []string{"n2", "n1", "n3"}}
}

func probePods(t *testing.T, c kubernetes.Interface, ns string) []corev1.Pod {
	l, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: verify.LabelManagedBy + "=" + verify.ManagedBy})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

var opts = verify.Options{Image: "ghcr.io/loopguard/loopguard:test", Connections: 2, ConnectTimeout: 500 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, StartTimeout: 20 * time.Second}

func TestRunAgreesAndCleansUp(t *testing.T) {
	c, ns, target := setup(t)
	k := kubeletsim.Start(t, c, ns, map[string]string{"n1": kubeletsim.Listen(t, false), "n2": kubeletsim.Listen(t, true)}, nil)
	rep, err := verify.Run(t.Context(), c, []verify.Target{target}, &opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Agree != 2 || rep.Disagree != 0 || rep.Errors != 0 {
		t.Fatalf("report %+v", rep)
	}
	pl := rep.Exposures[0].Placements
	if pl[0].Side != verify.BackendNode || pl[0].Node != "n1" || pl[0].Predicted.Behaviour != verify.Loops || pl[0].Observed.Behaviour != verify.Loops {
		t.Errorf("backend-node placement %+v", pl[0])
	}
	if pl[1].Side != verify.OtherNode || pl[1].Node != "n2" || pl[1].Predicted.Behaviour != verify.Works || pl[1].Observed.Behaviour != verify.Works {
		t.Errorf("other-node placement %+v", pl[1])
	}
	if got := rep.Exposures[0].Addresses; strings.Join(got, " ") != "192.0.2.10:80 lb.example.com:80" {
		t.Errorf("addresses %v", got)
	}
	// Both addresses, two connections each.
	if n := pl[1].Observed.Connections; n != 4 {
		t.Errorf("%d connections observed, want 4", n)
	}
	if !strings.Contains(pl[0].Path.Text(), "✗") || !strings.Contains(pl[0].Mermaid, "flowchart LR") || strings.Contains(pl[1].Path.Text(), "✗") {
		t.Errorf("paths:\n%s\n%s", pl[0].Path.Text(), pl[1].Path.Text())
	}
	assertGone(t, c, ns)

	seen := k.Seen()
	if len(seen) != 2 {
		t.Fatalf("%d probe Pods created, want 2", len(seen))
	}
	for _, p := range seen {
		sp := p.Spec
		ctr := sp.Containers[0]
		switch {
		case sp.NodeName != "n1" && sp.NodeName != "n2":
			t.Errorf("Pod %s pinned to %q", p.Name, sp.NodeName)
		case p.Labels[verify.LabelSide] == string(verify.BackendNode) && sp.NodeName != "n1",
			p.Labels[verify.LabelSide] == string(verify.OtherNode) && sp.NodeName != "n2":
			t.Errorf("Pod %s: side %s on node %s", p.Name, p.Labels[verify.LabelSide], sp.NodeName)
		case len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != target.Service.UID || p.OwnerReferences[0].Kind != "Service":
			t.Errorf("Pod %s owner references %+v", p.Name, p.OwnerReferences)
		case ctr.Resources.Limits.Cpu().String() != "100m" || ctr.Resources.Limits.Memory().String() != "64Mi" || ctr.Resources.Requests.Cpu().IsZero():
			t.Errorf("Pod %s resources %+v", p.Name, ctr.Resources)
		case sp.ActiveDeadlineSeconds == nil || *sp.ActiveDeadlineSeconds <= 0 || sp.RestartPolicy != corev1.RestartPolicyNever:
			t.Errorf("Pod %s unbounded: deadline %v restart %s", p.Name, sp.ActiveDeadlineSeconds, sp.RestartPolicy)
		case sp.AutomountServiceAccountToken == nil || *sp.AutomountServiceAccountToken:
			t.Errorf("Pod %s mounts a service account token", p.Name)
		case ctr.Image != opts.Image || strings.Join(ctr.Command, " ") != "/loopguard" || ctr.Args[0] != "probe":
			t.Errorf("Pod %s runs %s %v %v", p.Name, ctr.Image, ctr.Command, ctr.Args)
		}
	}
}

func TestRunReportsDisagreement(t *testing.T) {
	c, ns, target := setup(t)
	// The backend's node answers: the loop the model predicts is not there.
	kubeletsim.Start(t, c, ns, map[string]string{"n1": kubeletsim.Listen(t, true), "n2": kubeletsim.Listen(t, true)}, nil)
	rep, err := verify.Run(t.Context(), c, []verify.Target{target}, &opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Agree != 1 || rep.Disagree != 1 {
		t.Fatalf("report %+v", rep)
	}
	if why := rep.Exposures[0].Placements[0].Why; !strings.Contains(why, "predicted loops, observed works") {
		t.Errorf("why %q", why)
	}
	assertGone(t, c, ns)
}

func TestRunPodNeverStarts(t *testing.T) {
	c, ns, target := setup(t)
	// No kubelet at all: the Pods stay Pending.
	o := opts
	o.StartTimeout = 2 * time.Second
	start := time.Now()
	rep, err := verify.Run(t.Context(), c, []verify.Target{target}, &o)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("took %v with a 2 s start timeout", el)
	}
	if rep.Errors != 2 {
		t.Fatalf("report %+v", rep)
	}
	for _, p := range rep.Exposures[0].Placements {
		if !strings.Contains(p.Error, "did not start") || !strings.Contains(p.Error, "node "+p.Node) || !strings.Contains(p.Error, "kubelet") {
			t.Errorf("error %q", p.Error)
		}
	}
	assertGone(t, c, ns)
}

func TestRunImagePullFailure(t *testing.T) {
	c, ns, target := setup(t)
	kubeletsim.Start(t, c, ns, map[string]string{"n2": kubeletsim.Listen(t, true)}, map[string]kubeletsim.Behaviour{"n1": kubeletsim.ImagePullFails})
	start := time.Now()
	rep, err := verify.Run(t.Context(), c, []verify.Target{target}, &opts)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > opts.StartTimeout/2 {
		t.Errorf("an image pull failure took %v to report: it must not wait for the start timeout", el)
	}
	bad, good := rep.Exposures[0].Placements[0], rep.Exposures[0].Placements[1]
	if !strings.Contains(bad.Error, "ErrImagePull") || !strings.Contains(bad.Error, opts.Image) || bad.Observed != nil {
		t.Errorf("backend-node placement %+v", bad)
	}
	if good.Observed == nil || !good.Agree {
		t.Errorf("other-node placement %+v", good)
	}
	assertGone(t, c, ns)
}

func TestRunProbeExitsWithoutReport(t *testing.T) {
	c, ns, target := setup(t)
	kubeletsim.Start(t, c, ns, nil, map[string]kubeletsim.Behaviour{"n1": kubeletsim.ExitWithoutReport, "n2": kubeletsim.ExitWithoutReport})
	rep, err := verify.Run(t.Context(), c, []verify.Target{target}, &opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Exposures[0].Placements {
		if !strings.Contains(p.Error, "exited with code 1") || !strings.Contains(p.Error, "boom") {
			t.Errorf("error %q", p.Error)
		}
	}
	assertGone(t, c, ns)
}

func TestRunInterrupted(t *testing.T) {
	c, ns, target := setup(t)
	kubeletsim.Start(t, c, ns, nil, map[string]kubeletsim.Behaviour{"n1": kubeletsim.RunForever, "n2": kubeletsim.RunForever})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var mu sync.Mutex
	running := 0
	o := opts
	o.Progress = func(e verify.Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Phase == "running" {
			if running++; running == 2 {
				cancel() // what the CLI's signal handler does on Ctrl-C
			}
		}
	}
	rep, err := verify.Run(ctx, c, []verify.Target{target}, &o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if rep.Errors != 2 {
		t.Errorf("report %+v", rep)
	}
	assertGone(t, c, ns)
}

func TestRunRejectsBadOptions(t *testing.T) {
	_, err := verify.Run(t.Context(), nil, nil, &verify.Options{Connections: 1000})
	if err == nil || !strings.Contains(err.Error(), "image: ") || !strings.Contains(err.Error(), "connections: 1000") {
		t.Fatalf("err %v", err)
	}
}

func TestNodes(t *testing.T) {
	e := &core.Exposure{Placement: core.Placement{Backends: []core.NodeBackends{{Node: "b", Count: 2}, {Node: "a", Count: 1}, {Node: "z", Count: 1}}}}
	if b, o := verify.Nodes(e, []string{"c", "b", "a", "d"}); b != "a" || o != "c" {
		t.Errorf("got %q %q, want a c (z is not usable)", b, o)
	}
	if _, o := verify.Nodes(e, []string{"a", "b"}); o != "" {
		t.Errorf("got other %q with every node holding a backend", o)
	}
}

// assertGone: no probe Pod is left, whatever happened.
func assertGone(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	if left := probePods(t, c, ns); len(left) > 0 {
		t.Errorf("%d probe Pods left behind, e.g. %s (deletionTimestamp %v)", len(left), left[0].Name, left[0].DeletionTimestamp)
	}
}

// TestRunBoundsParallelism: with Parallel 1, one Service's probe Pods are gone before the
// next Service's are created.
func TestRunBoundsParallelism(t *testing.T) {
	var targets []verify.Target
	var c kubernetes.Interface
	for range 2 {
		cl, ns, target := setup(t)
		c = cl
		kubeletsim.Start(t, cl, ns, map[string]string{"n1": kubeletsim.Listen(t, false), "n2": kubeletsim.Listen(t, true)}, nil)
		targets = append(targets, target)
	}
	var mu sync.Mutex
	alive, most := 0, 0
	o := opts
	o.Parallel = 1
	o.Progress = func(e verify.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch e.Phase {
		case "created":
			alive++
			most = max(most, alive)
		case "deleted":
			alive--
		}
	}
	rep, err := verify.Run(t.Context(), c, targets, &o)
	if err != nil || rep.Agree != 4 {
		t.Fatalf("err %v, report %+v", err, rep)
	}
	if most != 2 {
		t.Errorf("at most %d probe Pods alive at once, want 2 (one Service at a time)", most)
	}
}

// TestRunInAnotherNamespace: a host confined to one namespace (the controller) runs the probe
// Pods there: the Service cannot own them across namespaces, so they carry no owner (none
// given) but the Service's namespace as a label, and the host's own labels.
func TestRunInAnotherNamespace(t *testing.T) {
	c, ns, target := setup(t)
	probeNS := server.Get(t).Namespace(t)
	k := kubeletsim.Start(t, c, probeNS, map[string]string{"n1": kubeletsim.Listen(t, false), "n2": kubeletsim.Listen(t, true)}, nil)
	o := opts
	o.Namespace, o.Labels = probeNS, map[string]string{"example.com/host": "test"}
	rep, err := verify.Run(t.Context(), c, []verify.Target{target}, &o)
	if err != nil || rep.Agree != 2 {
		t.Fatalf("err %v, report %+v", err, rep)
	}
	seen := k.Seen()
	if len(seen) != 2 {
		t.Fatalf("%d probe Pods in %s, want 2", len(seen), probeNS)
	}
	for _, p := range seen {
		if p.Namespace != probeNS || len(p.OwnerReferences) != 0 || p.Labels[verify.LabelServiceNamespace] != ns ||
			p.Labels["example.com/host"] != "test" || p.Labels[verify.LabelManagedBy] != verify.ManagedBy {
			t.Errorf("Pod %s/%s: owners %+v, labels %v", p.Namespace, p.Name, p.OwnerReferences, p.Labels)
		}
	}
	assertGone(t, c, probeNS)
	assertGone(t, c, ns)
}
