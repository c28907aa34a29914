package kubeletsim

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loopguard/loopguard/adapters/verify"
	"github.com/loopguard/loopguard/adapters/verify/probe"
)

// Behaviour is what the simulated kubelet does with a Pod on one node.
type Behaviour int

const (
	// ProbeAgainst runs the probe against the node's server and reports.
	ProbeAgainst Behaviour = iota
	// ImagePullFails reports ErrImagePull.
	ImagePullFails
	// RunForever starts the container and never finishes it.
	RunForever
	// ExitWithoutReport terminates the container with exit code 1 and no report.
	ExitWithoutReport
)

// Kubelet plays the kubelet of every node for the probe Pods of one namespace.
type Kubelet struct {
	client kubernetes.Interface
	ns     string
	// servers maps a node to the loopback address its probes really dial.
	servers map[string]string
	do      map[string]Behaviour
	mu      sync.Mutex
	seen    []corev1.Pod
	// ready is closed once the watch is open: a Pod created before would go unseen.
	ready chan struct{}
}

// run plays the kubelet of every node until ctx ends.
func (k *Kubelet) run(ctx context.Context, t *testing.T) {
	w, err := k.client.CoreV1().Pods(k.ns).Watch(ctx, metav1.ListOptions{LabelSelector: verify.LabelManagedBy + "=" + verify.ManagedBy})
	if err != nil {
		t.Errorf("kubelet: watch: %v", err)
		close(k.ready)
		return
	}
	defer w.Stop()
	close(k.ready)
	handled := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.ResultChan():
			if !ok {
				return
			}
			p, ok := e.Object.(*corev1.Pod)
			if !ok || handled[p.Name] || p.DeletionTimestamp != nil {
				continue
			}
			handled[p.Name] = true
			k.mu.Lock()
			k.seen = append(k.seen, *p.DeepCopy())
			k.mu.Unlock()
			go k.handle(ctx, t, p.DeepCopy())
		}
	}
}

func (k *Kubelet) handle(ctx context.Context, t *testing.T, p *corev1.Pod) {
	node := p.Spec.NodeName
	c := p.Spec.Containers[0]
	status := func(s corev1.ContainerState, phase corev1.PodPhase) {
		p.Status.Phase = phase
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Name, Image: c.Image, State: s}}
		if u, err := k.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err == nil {
			p = u
		}
	}
	switch k.do[node] {
	case ImagePullFails:
		status(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: `failed to pull image "` + c.Image + `": not found`}}, corev1.PodPending)
		return
	case RunForever:
		status(corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}, corev1.PodRunning)
		return
	case ExitWithoutReport:
		status(corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "boom"}}, corev1.PodFailed)
		return
	}
	status(corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}, corev1.PodRunning)
	// The probe's own arguments, as the container would get them.
	var targets []string
	for _, a := range c.Args {
		if strings.Contains(a, ":") && !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "/") {
			targets = append(targets, a)
		}
	}
	addr := k.servers[node]
	rep, err := probe.Run(ctx, probe.Spec{Targets: targets, Connections: 2, ReadTimeout: 300 * time.Millisecond,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}})
	if err != nil {
		t.Errorf("kubelet: probe: %v", err)
		return
	}
	msg, _ := json.Marshal(rep.Compact())
	if len(msg) > 4096 {
		t.Errorf("the compact report is %d bytes, more than a termination message holds", len(msg))
	}
	status(corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", Message: string(msg)}}, corev1.PodSucceeded)
}

// Seen is every probe Pod the kubelet saw, as it first saw it.
func (k *Kubelet) Seen() []corev1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]corev1.Pod(nil), k.seen...)
}

// Listen is a loopback server that answers a request, or reads it and stays silent (as the
// loop looks to a client).
func Listen(t *testing.T, answer bool) string {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Read(make([]byte, 4096))
				if answer {
					c.Write([]byte("HTTP/1.0 200 OK\r\n\r\n"))
					return
				}
				time.Sleep(time.Second)
			}()
		}
	}()
	return ln.Addr().String()
}

// Start plays the kubelet until the test ends: servers maps a node to the loopback address its
// probes really dial, do says what to do on a node (ProbeAgainst when absent).
func Start(t *testing.T, c kubernetes.Interface, ns string, servers map[string]string, do map[string]Behaviour) *Kubelet {
	k := &Kubelet{client: c, ns: ns, servers: servers, do: do, ready: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go k.run(ctx, t)
	<-k.ready
	return k
}
