package proxylab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/loopguard/loopguard/internal/netlab"
)

// Scenario is one connection through one lab: netlab's topology with the real components in
// it. Client, nodes and Pods follow netlab's conventions; this adds what kube-proxy and the LB
// are told.
type Scenario struct {
	// KubeProxy is the kube-proxy binary every node runs (KubeProxyBinary).
	KubeProxy string
	Mode      Mode
	// IPMode is status.loadBalancer.ingress[0].ipMode, written through the status subresource.
	IPMode corev1.LoadBalancerIPMode
	// Hostname, when set, is published instead of the IP (status.loadBalancer.ingress[0] has
	// only hostname, as AWS's controllers and the clouds' hostname annotations publish it) and
	// IPMode is ignored: no node programs the LB address, and the client dials the address the
	// name resolves to, the LB's.
	Hostname string
	// Net is the netlab topology. Every node's Intercept must be netlab.InterceptExternal, the
	// Service's ExternalServer true, and Service.NodePort zero (the API server allocates it);
	// LB.External is set by Build when the LB is HAProxy.
	Net netlab.Scenario
	// LBProxy is the header the LB sends. ProxyNone keeps netlab's kernel DNAT (with
	// LB.SourceNAT as given); v1 or v2 runs HAProxy in the LB namespace in TCP mode with
	// send-proxy or send-proxy-v2, which connects from the LB's own address (source NAT)
	// unless LBTransparent.
	LBProxy ProxyProtocol
	// LBTransparent makes the HAProxy LB keep the client's source address: it connects to the
	// backend from the client's address (source 0.0.0.0 usesrc clientip, an IP_TRANSPARENT
	// socket), and the LB namespace gets the policy routing a transparent proxy needs so
	// that replies routed back to it reach HAProxy (a mangle-table socket match marks them,
	// fwmark 1 looks up table 100, which delivers everything locally). An LB that sends a
	// PROXY header without source NAT. Needs LBProxy v1 or v2.
	LBTransparent bool
	// BackendExpects is the header the backend requires: HAProxy with accept-proxy when not
	// ProxyNone. (Any version: HAProxy's accept-proxy takes both.)
	BackendExpects ProxyProtocol
	// WantRulesTimeout bounds the wait for kube-proxy's rules; zero means 90 s. The wait
	// ends as soon as the rules are there (a few seconds on an idle machine); the bound is for
	// a machine whose cores a whole CI run shares: there a kube-proxy took 12 s to start and
	// its first iptables sync had not ended 18 s later (cold .ci/run of 2026-12-06).
	WantRulesTimeout time.Duration
	// EndpointOnly makes Build wait only until every node has programmed the Service's
	// endpoint, not for the LB address to be present or absent as IPMode implies: for a
	// kube-proxy whose handling of ipMode is what the test wants to find out (LBProgrammed
	// then says). The status is written before kube-proxy starts, so the first ruleset with
	// the endpoint already reflects it.
	EndpointOnly bool
}

// Result is what happened to the client's connection.
type Result struct {
	// Connected: the backend answered the client's request.
	Connected bool
	Elapsed   time.Duration
	// Peer is the TCP peer the backend saw, PeerOrigin its owner in the lab.
	Peer       netip.Addr
	PeerOrigin netlab.Origin
	// HeaderSource is the client a PROXY header named (the same as Peer without one).
	HeaderSource       netip.Addr
	HeaderSourceOrigin netlab.Origin
	// Failure says how a connection that did not get an answer failed.
	Failure Failure
	// Stray are SYN-ACKs from addresses the client did not dial (the loop's short-circuited
	// reply).
	Stray []netip.AddrPort
	// ReachedLB: the LB namespace saw the client's SYN (a raw-table counter there).
	ReachedLB bool
	// Err is the client's error, Detail a note for a person (the backend's log line, what
	// kube-proxy programmed).
	Err    error
	Detail string
}

// Failure is how a connection failed.
type Failure string

const (
	FailureNone Failure = ""
	// FailureLoop: a SYN-ACK came from an address the client did not dial.
	FailureLoop Failure = "reply-short-circuited"
	// FailureDropped: nothing answered.
	FailureDropped Failure = "dropped"
	// FailureProtocolError: the connection was accepted, and the backend closed it because
	// the PROXY header it requires was missing (its own log says so).
	FailureProtocolError Failure = "protocol-error"
	// FailureClosed: accepted and closed without an answer, for any other reason.
	FailureClosed Failure = "closed-without-answer"
)

func (r Result) String() string {
	if r.Connected {
		return fmt.Sprintf("connected in %v, backend saw peer %v (%v), client %v (%v), reached LB %v",
			r.Elapsed.Round(time.Millisecond), r.Peer, r.PeerOrigin, r.HeaderSource, r.HeaderSourceOrigin, r.ReachedLB)
	}
	return fmt.Sprintf("failed after %v: %s (%v), reached LB %v; %s", r.Elapsed.Round(time.Millisecond), r.Failure, r.Err, r.ReachedLB, r.Detail)
}

// Lab is a built scenario with kube-proxy running on every node.
type Lab struct {
	sc      Scenario
	cp      *ControlPlane
	net     *netlab.Lab
	dir     string
	ns, svc string
	vip     netip.AddrPort
	proxies []*kubeProxy
	lb      *haproxy
	backend *haproxy
}

var labSeq atomic.Int64

// slots bounds labs alive at once: each runs a kube-proxy per node and HAProxy, and the
// machine this runs on has two cores.
var slots = make(chan struct{}, max(4, 3*runtime.GOMAXPROCS(0)))

// Run builds sc, connects once, and tears down.
func Run(ctx context.Context, sc Scenario) (Result, error) {
	l, err := Build(ctx, sc)
	if err != nil {
		return Result{}, err
	}
	res := l.Connect(ctx)
	return res, l.Close()
}

// Build creates the Service, its EndpointSlice and its status in the API server, builds the
// namespaces, starts the backend (and the LB) HAProxy and a kube-proxy on every node, and
// waits until every node's rules show the Service as sc says.
func Build(ctx context.Context, sc Scenario) (*Lab, error) {
	if err := sc.validate(); err != nil {
		return nil, fmt.Errorf("proxylab: invalid scenario: %w", err)
	}
	cp, err := Shared()
	if err != nil {
		return nil, err
	}
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	seq := labSeq.Add(1)
	l := &Lab{sc: sc, cp: cp, ns: fmt.Sprintf("proxylab-%d", seq), svc: "svc"}
	// Each lab's LB has an address of its own, so the Services of labs that run at once (all
	// programmed by every lab's kube-proxies) never match each other's traffic.
	l.vip = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 99, byte(seq >> 8), byte(seq)}), 80)
	if err := l.build(ctx, seq); err != nil {
		err = errors.Join(err, l.Close())
		return nil, fmt.Errorf("proxylab: build: %w", err)
	}
	return l, nil
}

func (sc *Scenario) validate() error {
	var errs []error
	for _, n := range sc.Net.Nodes {
		if n.Intercept != netlab.InterceptExternal {
			errs = append(errs, fmt.Errorf("node %s: Intercept %v, want external (kube-proxy programs it)", n.Name, n.Intercept))
		}
	}
	if !sc.Net.Service.ExternalServer {
		errs = append(errs, errors.New("Service.ExternalServer must be set: the backend is HAProxy"))
	}
	if sc.Net.Service.NodePort != 0 {
		errs = append(errs, errors.New("Service.NodePort is allocated by the API server"))
	}
	if sc.LBProxy != ProxyNone && sc.Net.LB.SourceNAT {
		errs = append(errs, errors.New("an HAProxy LB connects from its own address, or the client's with LBTransparent: leave LB.SourceNAT false"))
	}
	if sc.LBTransparent && sc.LBProxy == ProxyNone {
		errs = append(errs, errors.New("LBTransparent is HAProxy's: it needs LBProxy v1 or v2"))
	}
	if sc.Hostname == "" && sc.IPMode != corev1.LoadBalancerIPModeVIP && sc.IPMode != corev1.LoadBalancerIPModeProxy {
		errs = append(errs, fmt.Errorf("ipMode %q", sc.IPMode))
	}
	if sc.Mode != ModeIPTables && sc.Mode != ModeNFTables {
		errs = append(errs, fmt.Errorf("mode %q", sc.Mode))
	}
	if sc.KubeProxy == "" {
		errs = append(errs, errors.New("no kube-proxy binary"))
	}
	return errors.Join(errs...)
}

func (l *Lab) build(ctx context.Context, seq int64) error {
	sc := &l.sc
	if sc.Mode == ModeNFTables {
		if _, err := lookPath("nft"); err != nil {
			return fmt.Errorf("%w: nft not installed (Debian: nftables)", ErrNoBinary)
		}
	}
	var err error
	if l.dir, err = os.MkdirTemp("", "proxylab-lab-"); err != nil {
		return err
	}
	client := l.cp.Client()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}

	// 1. The Service, for the API server to allocate its NodePort.
	svc := l.sc.Net.Service
	port := cmpOr(svc.Port, 80)
	target := cmpOr(svc.TargetPort, 8080)
	policy := corev1.ServiceExternalTrafficPolicyCluster
	if svc.ExternalTrafficPolicy == netlab.TrafficPolicyLocal {
		policy = corev1.ServiceExternalTrafficPolicyLocal
	}
	created, err := client.CoreV1().Services(l.ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: l.svc},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeLoadBalancer,
			ExternalTrafficPolicy: policy,
			Ports:                 []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: int32(port), TargetPort: intstr.FromInt32(int32(target))}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create Service: %w", err)
	}

	// 2. The namespaces, with the allocated NodePort and this lab's VIP.
	net := l.sc.Net
	net.Nodes, net.Pods = append([]netlab.Node(nil), net.Nodes...), append([]netlab.Pod(nil), net.Pods...)
	net.Service.NodePort = uint16(created.Spec.Ports[0].NodePort)
	net.Service.ClusterIP = netip.MustParseAddr("10.96.0.10") // unused: netlab programs no ClusterIP here
	net.LB.VIP = l.vip.Addr()
	net.LB.External = sc.LBProxy != ProxyNone
	if l.net, err = netlab.Build(ctx, net); err != nil {
		return err
	}
	l.sc.Net = l.net.Scenario()

	// 3. The endpoint, where netlab put the backend Pod.
	ep := l.net.PodAddr(net.Service.Endpoint)
	epNode := ""
	for _, p := range net.Pods {
		if p.Name == net.Service.Endpoint {
			epNode = p.Node
		}
	}
	ready := true
	if _, err := client.DiscoveryV1().EndpointSlices(l.ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: l.svc + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: l.svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{ep.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			NodeName:   &epNode,
		}},
		Ports: []discoveryv1.EndpointPort{{Port: ptr(int32(target)), Protocol: ptr(corev1.ProtocolTCP)}},
	}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create EndpointSlice: %w", err)
	}

	// 4. The LB's address and ipMode, through the status subresource.
	created.Status.LoadBalancer.Ingress = l.ingress(sc.IPMode)
	if sc.Hostname != "" {
		created.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: sc.Hostname}}
	}
	if _, err := client.CoreV1().Services(l.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("write the Service's status: %w", err)
	}

	// 5. The backend, and the LB when it is HAProxy.
	backend := netip.AddrPortFrom(ep, target)
	if l.backend, err = startHAProxy(ctx, l.dir, "backend", l.net.PodNetns(net.Service.Endpoint), backendConfig(backend, sc.BackendExpects), backend); err != nil {
		return err
	}
	if sc.LBProxy != ProxyNone {
		to := backend
		if net.LB.Backend == netlab.BackendNodePort {
			to = netip.AddrPortFrom(l.net.NodeAddr(net.LB.TargetNode), net.Service.NodePort)
		}
		if sc.LBTransparent {
			if err := transparentRouting(ctx, l.net.LBNetns()); err != nil {
				return err
			}
		}
		if l.lb, err = startHAProxy(ctx, l.dir, "lb", l.net.LBNetns(), lbConfig(l.vip, to, sc.LBProxy, sc.LBTransparent), l.vip); err != nil {
			return err
		}
	}
	// A raw-table counter of SYNs to the VIP in the LB namespace: did the client's connection
	// reach the LB at all, or did the node intercept it?
	if _, err := netlab.RunIn(ctx, l.net.LBNetns(), fmt.Sprintf("*raw\n-A PREROUTING -d %s/32 -p tcp --syn -m comment --comment proxylab-syn\nCOMMIT\n", l.vip.Addr()),
		"iptables-restore", "-w"); err != nil {
		return err
	}

	// 6. kube-proxy on every node, reaching the API server over a veth of its own.
	for i, n := range net.Nodes {
		nodeNS := l.net.NodeNetns(n.Name)
		if err := l.cp.ensureNode(ctx, n.Name, l.net.NodeAddr(n.Name)); err != nil {
			return err
		}
		host, peer := apiLink(seq, i)
		if err := netlab.VethToSandbox(ctx, nodeNS, fmt.Sprintf("kapi%dn%d", seq, i), "kapi", host, peer); err != nil {
			return err
		}
		if _, err := netlab.RunIn(ctx, nodeNS, "", "ip", "route", "add", apiAddr.String()+"/32", "via", host.Addr().String(), "dev", "kapi"); err != nil {
			return err
		}
		// The lab's nodes are IPv4-only. With IPv6 left on, kube-proxy runs a second, IPv6
		// proxier beside the IPv4 one (cmd/kube-proxy/app/server_linux.go,
		// platformCheckSupported, reads this namespace's disable_ipv6), and every sync runs its
		// ip6tables too: about a quarter of the dataplane tests' CPU time, for rules no case
		// reads.
		if _, err := netlab.RunIn(ctx, nodeNS, "", "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"); err != nil {
			return err
		}
		kp, err := startKubeProxy(l.dir, sc.KubeProxy, l.cp.kubeconfig, n.Name, nodeNS, sc.Mode)
		if err != nil {
			return err
		}
		l.proxies = append(l.proxies, kp)
	}
	want := l.serviceRules(sc.Hostname == "" && sc.IPMode == corev1.LoadBalancerIPModeVIP)
	want.AnyLB = sc.EndpointOnly
	return l.waitRules(ctx, want)
}

// serviceRules is the lab's Service in a node's rules: its endpoint, and the LB address
// present or absent as wantLB says.
func (l *Lab) serviceRules(wantLB bool) ServiceRules {
	return ServiceRules{Namespace: l.ns, Name: l.svc, LBAddr: l.vip, WantLB: wantLB,
		Endpoint: netip.AddrPortFrom(l.net.PodAddr(l.sc.Net.Service.Endpoint), cmpOr(l.sc.Net.Service.TargetPort, 8080))}
}

// waitRules waits until every node's kube-proxy has programmed want.
func (l *Lab) waitRules(ctx context.Context, want ServiceRules) error {
	for _, kp := range l.proxies {
		if err := kp.waitRules(ctx, want, cmpOr(l.sc.WantRulesTimeout, 90*time.Second)); err != nil {
			return err
		}
	}
	return nil
}

// LBProgrammed reports whether node's kube-proxy has programmed the LB address right now.
func (l *Lab) LBProgrammed(ctx context.Context, node string) (bool, error) {
	rules, err := l.Rules(ctx, node)
	if err != nil {
		return false, err
	}
	ok, _ := l.serviceRules(true).programmed(l.sc.Mode, rules)
	return ok, nil
}

// SetIPMode rewrites the Service's status with ipMode, as a cloud-controller-manager (or
// loopguard's decorator) does on a live Service, and waits until every node's kube-proxy has
// programmed the LB address (VIP) or removed it (Proxy). The namespaces, HAProxy and the
// kube-proxies stay: the next Connect dials from a new source port, and Connect counts only
// what happens after it starts (the LB's SYN counter, the backend's log), so a lab serves both
// ipModes of a case at the cost of one rule sync instead of a new lab.
func (l *Lab) SetIPMode(ctx context.Context, ipMode corev1.LoadBalancerIPMode) error {
	if l.sc.Hostname != "" || l.sc.EndpointOnly {
		return errors.New("proxylab: SetIPMode: the lab publishes a hostname or does not wait for the LB address")
	}
	svc, err := l.Service(ctx)
	if err != nil {
		return fmt.Errorf("proxylab: SetIPMode: %w", err)
	}
	svc.Status.LoadBalancer.Ingress = l.ingress(ipMode)
	if _, err := l.cp.Client().CoreV1().Services(l.ns).UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("proxylab: SetIPMode: write the Service's status: %w", err)
	}
	l.sc.IPMode = ipMode
	if err := l.waitRules(ctx, l.serviceRules(ipMode == corev1.LoadBalancerIPModeVIP)); err != nil {
		return fmt.Errorf("proxylab: SetIPMode %s: %w", ipMode, err)
	}
	return nil
}

// ingress is the Service's status entry for the LB's address with ipMode.
func (l *Lab) ingress(ipMode corev1.LoadBalancerIPMode) []corev1.LoadBalancerIngress {
	return []corev1.LoadBalancerIngress{{IP: l.vip.Addr().String(), IPMode: &ipMode}}
}

// Service is the lab's Service as the API server has it now.
func (l *Lab) Service(ctx context.Context) (*corev1.Service, error) {
	return l.cp.Client().CoreV1().Services(l.ns).Get(ctx, l.svc, metav1.GetOptions{})
}

// Rules returns a node's ruleset as kube-proxy programmed it (iptables-save -t nat, or the nft
// table ip kube-proxy).
func (l *Lab) Rules(ctx context.Context, node string) (string, error) {
	for _, kp := range l.proxies {
		if kp.node == node {
			return kp.ruleset(ctx)
		}
	}
	return "", fmt.Errorf("no node %q", node)
}

// VIP is this lab's LB address and port.
func (l *Lab) VIP() netip.AddrPort { return l.vip }

// Net is the netlab lab underneath.
func (l *Lab) Net() *netlab.Lab { return l.net }

// apiLink is the /30 of node i of lab seq: the sandbox's end and the node's.
func apiLink(seq int64, i int) (host, node netip.Prefix) {
	block := uint32(seq)*8 + uint32(i) + 1 // 10.200.0.0/30 holds the API server's address
	base := uint32(10)<<24 | uint32(200)<<16 | (block*4)&0xffff
	a := func(v uint32) netip.Addr {
		return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	return netip.PrefixFrom(a(base+1), 30), netip.PrefixFrom(a(base+2), 30)
}

// Close stops kube-proxy and HAProxy, deletes the namespaces and the lab's API objects.
func (l *Lab) Close() error {
	defer func() { <-slots }()
	for _, kp := range l.proxies {
		kp.stop()
	}
	for _, h := range []*haproxy{l.lb, l.backend} {
		if h != nil {
			h.stop()
		}
	}
	var errs []error
	if l.net != nil {
		errs = append(errs, l.net.Close())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// envtest runs no namespace controller: delete what kube-proxy watches, so later labs'
	// kube-proxies do not program this lab's Service.
	c := l.cp.Client()
	if err := c.CoreV1().Services(l.ns).Delete(ctx, l.svc, metav1.DeleteOptions{}); err != nil && !isNotFound(err) {
		errs = append(errs, err)
	}
	if err := c.DiscoveryV1().EndpointSlices(l.ns).Delete(ctx, l.svc+"-1", metav1.DeleteOptions{}); err != nil && !isNotFound(err) {
		errs = append(errs, err)
	}
	if l.dir != "" {
		errs = append(errs, os.RemoveAll(l.dir))
	}
	return errors.Join(errs...)
}

// Logs is every component's recent output, for a failing test.
func (l *Lab) Logs() string {
	var b strings.Builder
	for _, kp := range l.proxies {
		fmt.Fprintf(&b, "--- kube-proxy %s ---\n%s\n", kp.node, lastLines(kp.logs.String(), 30))
	}
	if l.lb != nil {
		fmt.Fprintf(&b, "--- haproxy lb ---\n%s\n", l.lb.logs.String())
	}
	if l.backend != nil {
		fmt.Fprintf(&b, "--- haproxy backend ---\n%s\n", l.backend.logs.String())
	}
	return b.String()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// DefaultTimeout bounds the client's exchange when the scenario sets none: longer than netlab's,
// because a lab here shares the machine with kube-proxies and HAProxies starting up, and away
// from the 1 s and 3 s SYN retransmissions. Only the loop cases wait it out.
const DefaultTimeout = 2500 * time.Millisecond

// Connect dials the LB address from the scenario's client Pod, sends one HTTP request (a
// client that speaks first, so a backend waiting for a PROXY header rejects at once instead of
// at its timeout) and reads the answer.
func (l *Lab) Connect(ctx context.Context) Result {
	timeout := cmpOr(l.sc.Net.Timeout, DefaultTimeout)
	pod := l.sc.Net.Client
	podNS := l.net.PodNetns(pod)
	syns0, _ := l.lbSYNs(ctx)
	watch, err := netlab.WatchSYNACKs(podNS, l.net.PodAddr(pod), l.vip)
	if err != nil {
		return Result{Err: err}
	}
	backendLog0 := len(l.backend.logs.String())

	xctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	res := l.exchange(xctx, podNS)
	res.Elapsed = time.Since(start)

	ev, werr := watch.Drain()
	if werr != nil {
		return Result{Err: werr}
	}
	res.Stray = ev.Stray
	if syns1, err := l.lbSYNs(ctx); err == nil {
		res.ReachedLB = syns1 > syns0
	}
	if res.Connected {
		res.PeerOrigin = l.net.Whose(res.Peer)
		res.HeaderSourceOrigin = l.net.Whose(res.HeaderSource)
		return res
	}
	switch {
	case len(ev.Stray) > 0 && res.Failure == FailureClosed:
		// The client's connection was accepted (by a proxy LB), then nothing came back: the
		// LB's own connection to the backend, made from the client's address, got its reply
		// short-circuited to the client, which the SYN-ACK to a port the client never used
		// shows.
		res.Failure = FailureLoop
		res.Detail = "the LB accepted the connection; its connection to the backend, from the client's address, was answered straight to the client"
	case res.Failure != "":
	case len(ev.Stray) > 0:
		res.Failure = FailureLoop
	default:
		res.Failure = FailureDropped
	}
	if res.Failure == FailureClosed {
		// HAProxy logs the rejection when it closes; give it a moment.
		deadline := time.Now().Add(time.Second)
		for {
			log := l.backend.logs.String()
			if len(log) >= backendLog0 {
				log = log[backendLog0:]
			}
			if ok, line := rejectedForHeader(log); ok {
				res.Failure, res.Detail = FailureProtocolError, "backend: "+line
				break
			}
			if time.Now().After(deadline) {
				res.Detail = "backend log: " + strings.TrimSpace(log)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, s := range ev.Stray {
		res.Detail += fmt.Sprintf("; SYN-ACK from %s (%v) instead of %s", s, l.net.Whose(s.Addr()), l.vip)
	}
	res.Detail = strings.TrimPrefix(res.Detail, "; ")
	return res
}

func (l *Lab) exchange(ctx context.Context, podNS string) Result {
	var conn net.Conn
	err := netlab.InNetns(podNS, func() error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp4", l.vip.String())
		conn = c
		return err
	})
	if err != nil {
		return Result{Err: err}
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	if _, err := io.WriteString(conn, "GET / HTTP/1.0\r\nHost: lb\r\n\r\n"); err != nil {
		return Result{Err: err, Failure: FailureClosed}
	}
	body, err := io.ReadAll(bufio.NewReader(conn))
	for line := range strings.SplitSeq(string(body), "\n") {
		if strings.HasPrefix(line, answerPrefix) {
			peer, src, _, perr := parseAnswer(line)
			if perr != nil {
				return Result{Err: perr, Failure: FailureClosed}
			}
			return Result{Connected: true, Peer: peer, HeaderSource: src}
		}
	}
	if err == nil {
		err = fmt.Errorf("closed without an answer (%d bytes: %q)", len(body), body)
	}
	// Accepted, then reset, closed or silent: Connect asks the backend's log why.
	return Result{Err: err, Failure: FailureClosed}
}

// lbSYNs reads the LB namespace's SYN counter.
func (l *Lab) lbSYNs(ctx context.Context) (int, error) {
	out, err := netlab.RunIn(ctx, l.net.LBNetns(), "", "iptables", "-w", "-t", "raw", "-L", "PREROUTING", "-v", "-x", "-n")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(out, "\n") {
		if strings.Contains(line, "proxylab-syn") {
			var pkts int
			if _, err := fmt.Sscan(strings.Fields(line)[0], &pkts); err == nil {
				return pkts, nil
			}
		}
	}
	return 0, errors.New("no SYN counter in the LB namespace")
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func ptr[T any](v T) *T { return &v }

func lookPath(name string) (string, error) { return exec.LookPath(name) }

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
