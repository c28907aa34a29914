package netlab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Result is what the kernel did with one connection.
type Result struct {
	// Connected: the client completed a request/response exchange with the backend's
	// server (a handshake with something in between, such as a node proxy, is not enough).
	Connected bool
	// Elapsed from the start of the dial to the server's report, or to the failure.
	Elapsed time.Duration
	// SourceSeen is the peer address the backend's server saw (docs/sources.md#source-address); invalid when
	// not connected.
	SourceSeen netip.Addr
	// Source says who owns SourceSeen in this lab.
	Source Origin
	// StrayReplies are the addresses that answered the client's SYN in place of the address
	// it dialed (the short-circuited reply of docs/sources.md#loopback, answered by the client's kernel
	// with a RST). Empty when the packets were dropped instead (e.g. as martian, docs/sources.md
	// §6) or when nothing went wrong.
	StrayReplies []netip.AddrPort
	// InterceptedBy is the node whose userspace proxy (InterceptIPVSStandIn,
	// InterceptProxyWithoutLocalVIP) accepted the connection; empty when none did.
	InterceptedBy string
	// Err is the client's error when not connected: typically an i/o timeout (no valid
	// answer within the timeout, a dataplane verdict), or ErrStarved (the kernel connected but
	// the harness could not finish in time: no verdict; rerun on a less loaded machine).
	Err error
	// Detail says, for a person, what the client dialed and how many connections the backend
	// (and any node proxy) accepted meanwhile.
	Detail string
}

func (r Result) String() string {
	if r.Connected {
		return fmt.Sprintf("connected in %v, backend saw %v (%v)", r.Elapsed.Round(time.Millisecond), r.SourceSeen, r.Source)
	}
	return fmt.Sprintf("not connected after %v: %v (%s)", r.Elapsed.Round(time.Millisecond), r.Err, r.Detail)
}

// OriginKind is the role of an address in the lab.
type OriginKind int

const (
	OriginUnknown OriginKind = iota
	// OriginPod: a Pod's own address (for a client Pod: "client Pod" in docs/sources.md#kernel-lab).
	OriginPod
	// OriginLB: the VIP or the LB's address on a link toward a node ("LB address").
	OriginLB
	// OriginNode: a node's address on its link to the LB ("node address").
	OriginNode
	// OriginNodeBridge: a bridge node's cni0 address, the Pods' gateway ("node bridge
	// address").
	OriginNodeBridge
)

// Origin names the owner of an address: a kind, and the Pod or node name where there is one.
type Origin struct {
	Kind OriginKind
	Name string
}

func (o Origin) String() string {
	switch o.Kind {
	case OriginPod:
		return "pod/" + o.Name
	case OriginLB:
		return "lb"
	case OriginNode:
		return "node/" + o.Name
	case OriginNodeBridge:
		return "node-bridge/" + o.Name
	}
	return "unknown"
}

// reportPrefix starts the server's one-line report, so the client can tell the backend's
// answer from anything else.
const reportPrefix = "loopguard-netlab peer="

// Connect opens the Scenario's connection: from Scenario.Client to the VIP or the ClusterIP.
func (l *Lab) Connect(ctx context.Context) Result {
	dst := netip.AddrPortFrom(l.sc.LB.VIP, l.sc.Service.Port)
	if l.sc.Dial == DialClusterIP {
		dst = netip.AddrPortFrom(l.sc.Service.ClusterIP, l.sc.Service.Port)
	}
	return l.Dial(ctx, l.sc.Client, dst, l.sc.Timeout)
}

// ErrStarved means the client's kernel completed the handshake (a SYN-ACK came from the
// dialed address) but the Go side of the harness did not finish the exchange in time, on
// every attempt: the machine was too busy for the timeout, and the Result is no verdict on
// the dataplane.
var ErrStarved = errors.New("netlab: the kernel connected but the harness was too starved to finish the exchange")

// starvedAttempts bounds how often Dial repeats an exchange whose packets and Go-level outcome
// disagree.
const starvedAttempts = 3

// Dial connects from a Pod to dst, reads the backend server's report and returns the result.
// timeout bounds each exchange (zero: DefaultTimeout). Dials on one Lab run one at a time, so
// what the backend and the proxies accepted can be attributed to this one.
//
// The verdict rests on packets, not on goroutine scheduling: when the exchange fails, the
// client's eth0 capture decides. No SYN-ACK from dst means the dataplane did not connect
// (packet processing in the kernel is not starved the way a goroutine is). A SYN-ACK from dst
// means it did, and only the harness was slow: the exchange is repeated on a new connection
// (the lab is deterministic), and if that keeps happening, Err is ErrStarved.
func (l *Lab) Dial(ctx context.Context, pod string, dst netip.AddrPort, timeout time.Duration) Result {
	l.dialMu.Lock()
	defer l.dialMu.Unlock()
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ns, ok := l.podNS[pod]
	if !ok {
		return Result{Err: fmt.Errorf("no Pod %q in this lab", pod)}
	}
	if l.server == nil {
		return Result{Err: errors.New("netlab: Service.ExternalServer: netlab runs no server to report to Dial; dial with the caller's own client")}
	}
	var notes []string
	for attempt := 1; ; attempt++ {
		res, ev, err := l.attempt(ctx, ns, pod, dst, timeout)
		if err != nil {
			return Result{Err: err}
		}
		res.Detail = strings.Join(append(notes, res.Detail), "; ")
		if res.Connected || !ev.answered {
			return res
		}
		if attempt == starvedAttempts || ctx.Err() != nil {
			res.Err = fmt.Errorf("%w (last client error: %v)", ErrStarved, res.Err)
			return res
		}
		notes = append(notes, fmt.Sprintf("attempt %d: %s answered but the client gave up (%v) after %v; retried",
			attempt, dst, res.Err, res.Elapsed.Round(time.Millisecond)))
	}
}

// attempt is one exchange with its packet evidence.
func (l *Lab) attempt(ctx context.Context, ns, pod string, dst netip.AddrPort, timeout time.Duration) (Result, packetEvidence, error) {
	acceptedBefore := l.server.accepted.Load()
	proxiedBefore, proxyFailedBefore := map[string]int64{}, map[string]int64{}
	for name, p := range l.proxies {
		proxiedBefore[name] = p.accepted.Load()
		proxyFailedBefore[name] = p.failed.Load()
	}
	watch, err := watchSynAcks(ns, l.podIP[pod], dst)
	if err != nil {
		return Result{}, packetEvidence{}, fmt.Errorf("watch the client's SYN-ACKs: %w", err)
	}

	// The deadline starts with the dial, not before the watch: setting that up can take a
	// while on a loaded machine and must not eat into the client's timeout.
	xctx, cancel := context.WithTimeout(ctx, timeout)
	start := time.Now()
	res := l.exchange(xctx, ns, dst)
	res.Elapsed = time.Since(start)
	cancel()

	ev, err := watch.drain()
	if err != nil {
		return Result{}, ev, fmt.Errorf("read the client's packet capture: %w", err)
	}
	res.StrayReplies = ev.stray
	var b strings.Builder
	fmt.Fprintf(&b, "Pod %s dialed %s; backend %s accepted %d", pod, dst, l.sc.Service.Endpoint, l.server.accepted.Load()-acceptedBefore)
	for _, n := range l.sc.Nodes {
		if p, ok := l.proxies[n.Name]; ok {
			got := p.accepted.Load() - proxiedBefore[n.Name]
			fmt.Fprintf(&b, "; node %s proxy accepted %d", n.Name, got)
			if got > 0 && res.InterceptedBy == "" {
				res.InterceptedBy = n.Name
			}
			if f := p.failed.Load() - proxyFailedBefore[n.Name]; f > 0 {
				fmt.Fprintf(&b, " and failed to reach the backend %d times", f)
				// The client's handshake was with the proxy; the proxy's own failure is the
				// dataplane's answer, not a sign of a starved harness.
				ev.answered = false
			}
		}
	}
	for _, s := range res.StrayReplies {
		fmt.Fprintf(&b, "; SYN-ACK from %s (%v) instead of %s", s, l.Whose(s.Addr()), dst)
	}
	if ev.syns > 1 {
		// Diagnostic only (never asserted): a lost first SYN shows up as a ~1 s connect.
		fmt.Fprintf(&b, "; client sent %d SYNs", ev.syns)
	}
	res.Detail = b.String()
	if res.Connected {
		res.Source = l.Whose(res.SourceSeen)
	}
	return res, ev, nil
}

// exchange dials dst from namespace ns and reads the backend's report.
func (l *Lab) exchange(ctx context.Context, ns string, dst netip.AddrPort) Result {
	var conn net.Conn
	err := inNetns(ns, func() error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp4", dst.String())
		conn = c
		return err
	})
	if err != nil {
		return Result{Err: err}
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		return Result{Err: err}
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return Result{Err: fmt.Errorf("read the backend's report: %w", err)}
	}
	peer, ok := strings.CutPrefix(strings.TrimSpace(line), reportPrefix)
	if !ok {
		return Result{Err: fmt.Errorf("unexpected answer %q", line)}
	}
	ap, err := netip.ParseAddrPort(peer)
	if err != nil {
		return Result{Err: fmt.Errorf("backend's report: %w", err)}
	}
	return Result{Connected: true, SourceSeen: ap.Addr().Unmap()}
}

// server is the backend Pod's TCP server: it answers each connection with one line naming
// the peer address it saw, then closes.
type server struct {
	ln       net.Listener
	accepted atomic.Int64
	wg       sync.WaitGroup
}

func startServer(ns string, addr netip.AddrPort) (*server, error) {
	var ln net.Listener
	err := inNetns(ns, func() (err error) {
		ln, err = net.Listen("tcp4", addr.String())
		return err
	})
	if err != nil {
		return nil, err
	}
	s := &server{ln: ln}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

func (s *server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.accepted.Add(1)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintf(c, "%s%s\n", reportPrefix, c.RemoteAddr())
		}()
	}
}

func (s *server) close() {
	s.ln.Close()
	s.wg.Wait()
}

// proxy is the userspace TCP proxy a node runs for the IPVS stand-in: it accepts on listen
// and relays each connection to backend, dialing from the node's namespace (so the backend
// sees a node address, as with any full proxy).
type proxy struct {
	ns       string
	ln       net.Listener
	backend  netip.AddrPort
	accepted atomic.Int64
	failed   atomic.Int64 // upstream dials that failed: a dataplane outcome, not starvation

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

func startProxy(ns string, listen, backend netip.AddrPort) (*proxy, error) {
	var ln net.Listener
	err := inNetns(ns, func() (err error) {
		ln, err = net.Listen("tcp4", listen.String())
		return err
	})
	if err != nil {
		return nil, err
	}
	p := &proxy{ns: ns, ln: ln, backend: backend, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.relay(c)
		}()
	}
}

func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

func (p *proxy) relay(client net.Conn) {
	defer client.Close()
	if !p.track(client) {
		return
	}
	defer p.untrack(client)
	var upstream net.Conn
	// The upstream socket must be created in the node's namespace.
	err := inNetns(p.ns, func() (err error) {
		d := net.Dialer{Timeout: 5 * time.Second}
		upstream, err = d.Dial("tcp4", p.backend.String())
		return err
	})
	if err != nil {
		p.failed.Add(1)
		return
	}
	defer upstream.Close()
	if !p.track(upstream) {
		return
	}
	defer p.untrack(upstream)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(upstream, client)
	go pipe(client, upstream)
	<-done
	<-done
}

func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}
