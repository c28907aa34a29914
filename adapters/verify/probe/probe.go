package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"syscall"
	"time"
)

// Outcome is what happened to one connection; the package documentation says how each is
// detected.
type Outcome string

const (
	OK            Outcome = "ok"
	Timeout       Outcome = "timeout"
	Refused       Outcome = "refused"
	Unreachable   Outcome = "unreachable"
	NoAnswer      Outcome = "no-answer"
	Reset         Outcome = "reset"
	Closed        Outcome = "closed"
	ProxyRejected Outcome = "proxy-rejected"
	DNSError      Outcome = "dns-error"
	Error         Outcome = "error"
)

// Outcomes lists every outcome, in the order reports print them.
var Outcomes = []Outcome{OK, Timeout, NoAnswer, ProxyRejected, Reset, Closed, Refused, Unreachable, DNSError, Error}

// Limits on a Spec, so that a probe stays light on a production cluster whatever it is asked.
const (
	MaxConnections    = 100
	MaxConnectTimeout = 30 * time.Second
	MaxReadTimeout    = 30 * time.Second
	MaxTargets        = 32
)

// Defaults used for zero Spec fields.
const (
	DefaultConnections    = 5
	DefaultConnectTimeout = 2500 * time.Millisecond
	DefaultReadTimeout    = 2500 * time.Millisecond
)

// Spec says what to probe and how hard.
type Spec struct {
	// Targets are host:port pairs; a host may be an IP address or a name.
	Targets []string
	// Connections per target, one after another; zero means DefaultConnections.
	Connections int
	// ConnectTimeout bounds each dial, ReadTimeout the wait for the first byte of an answer;
	// zero means the default. Keep them away from 1 s and 3 s: a SYN retransmission lands
	// there.
	ConnectTimeout, ReadTimeout time.Duration
	// Payload is sent once connected (a client that speaks first, so that a server waiting for
	// a PROXY header rejects at once); nil means an HTTP/1.0 request for / naming the target as
	// Host. An empty, non-nil Payload sends nothing and waits for the server to speak.
	Payload []byte
	// ProxyCheck tells a PROXY-protocol rejection from other closes (see the package
	// documentation).
	ProxyCheck bool
	// Dial opens a connection; nil means a net.Dialer. Tests pass one that dials from inside a
	// network namespace.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Progress, when set, is called after each attempt.
	Progress func(target string, a Attempt)
}

// Validate reports a Spec the probe refuses, naming the field.
func (s *Spec) Validate() error {
	var errs []error
	if len(s.Targets) == 0 {
		errs = append(errs, errors.New("targets: at least one host:port is needed"))
	}
	if len(s.Targets) > MaxTargets {
		errs = append(errs, fmt.Errorf("targets: %d given, at most %d", len(s.Targets), MaxTargets))
	}
	for _, t := range s.Targets {
		if _, port, err := net.SplitHostPort(t); err != nil || port == "" {
			errs = append(errs, fmt.Errorf("targets: %q is not host:port", t))
		}
	}
	if s.Connections < 0 || s.Connections > MaxConnections {
		errs = append(errs, fmt.Errorf("connections: %d, want 1..%d", s.Connections, MaxConnections))
	}
	if s.ConnectTimeout < 0 || s.ConnectTimeout > MaxConnectTimeout {
		errs = append(errs, fmt.Errorf("connectTimeout: %v, want up to %v", s.ConnectTimeout, MaxConnectTimeout))
	}
	if s.ReadTimeout < 0 || s.ReadTimeout > MaxReadTimeout {
		errs = append(errs, fmt.Errorf("readTimeout: %v, want up to %v", s.ReadTimeout, MaxReadTimeout))
	}
	return errors.Join(errs...)
}

// Attempt is one connection.
type Attempt struct {
	Outcome Outcome `json:"outcome"`
	// Remote is the address the dial reached or tried, when known.
	Remote string `json:"remote,omitempty"`
	// ConnectMillis is the time the dial took (to success or failure).
	ConnectMillis float64 `json:"connectMs"`
	// FirstByteMillis is the time from sending the request to the answer's first byte, when
	// one came.
	FirstByteMillis float64 `json:"firstByteMs,omitempty"`
	// Error is the error behind a failed outcome, for a person.
	Error string `json:"error,omitempty"`
}

// TargetReport is every attempt against one target and their tally.
type TargetReport struct {
	Target   string          `json:"target"`
	Attempts []Attempt       `json:"attempts,omitempty"`
	Counts   map[Outcome]int `json:"counts"`
	// ProxyCheck is the connection that carried a PROXY header, when one was made.
	ProxyCheck *Attempt `json:"proxyCheck,omitempty"`
	// Connect is the time the dials took, FirstByte the time to the first byte of the
	// answers that came.
	Connect   Latency `json:"connectMs"`
	FirstByte Latency `json:"firstByteMs"`
}

// Latency summarizes durations in milliseconds.
type Latency struct {
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

func latencyOf(ms []float64) Latency {
	if len(ms) == 0 {
		return Latency{}
	}
	slices.Sort(ms)
	return Latency{Median: ms[len(ms)/2], Max: ms[len(ms)-1]}
}

// Compact is the report without its per-attempt lines: what fits a Pod's termination
// message (4096 bytes).
func (r Report) Compact() Report {
	c := r
	c.Targets = slices.Clone(r.Targets)
	for i := range c.Targets {
		c.Targets[i].Attempts = nil
		if pc := c.Targets[i].ProxyCheck; pc != nil {
			x := *pc
			x.Error = ""
			c.Targets[i].ProxyCheck = &x
		}
	}
	return c
}

// Count is the number of attempts with outcome o.
func (t *TargetReport) Count(o Outcome) int { return t.Counts[o] }

// Report is a whole probe run.
type Report struct {
	// Source is the local address of the first connection that had one: where the probe ran.
	Source  string         `json:"source,omitempty"`
	Targets []TargetReport `json:"targets"`
	// Millis is the run's wall time.
	Millis float64 `json:"ms"`
}

// Run probes every target as s says. It returns an error only for an invalid Spec or a
// cancelled context; what happened to connections is in the Report.
func Run(ctx context.Context, s Spec) (Report, error) {
	if err := s.Validate(); err != nil {
		return Report{}, fmt.Errorf("probe: invalid spec: %w", err)
	}
	s.Connections = cmpOr(s.Connections, DefaultConnections)
	s.ConnectTimeout = cmpOr(s.ConnectTimeout, DefaultConnectTimeout)
	s.ReadTimeout = cmpOr(s.ReadTimeout, DefaultReadTimeout)
	if s.Dial == nil {
		var d net.Dialer
		s.Dial = d.DialContext
	}
	start := time.Now()
	var rep Report
	for _, target := range s.Targets {
		tr := TargetReport{Target: target, Counts: map[Outcome]int{}}
		payload := s.Payload
		if payload == nil {
			payload = []byte("GET / HTTP/1.0\r\nHost: " + target + "\r\nUser-Agent: loopguard-probe\r\nConnection: close\r\n\r\n")
		}
		for range s.Connections {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			a, local := attempt(ctx, &s, target, payload, false)
			if rep.Source == "" && local != "" {
				rep.Source = local
			}
			tr.Attempts = append(tr.Attempts, a)
			if s.Progress != nil {
				s.Progress(target, a)
			}
		}
		if s.ProxyCheck && slices.ContainsFunc(tr.Attempts, func(a Attempt) bool { return a.Outcome == Reset || a.Outcome == Closed }) {
			check, _ := attempt(ctx, &s, target, payload, true)
			tr.ProxyCheck = &check
			if check.Outcome == OK {
				for i := range tr.Attempts {
					if o := tr.Attempts[i].Outcome; o == Reset || o == Closed {
						tr.Attempts[i].Error = fmt.Sprintf("%s (%s without a PROXY header; answered with one)", tr.Attempts[i].Error, o)
						tr.Attempts[i].Outcome = ProxyRejected
					}
				}
			}
		}
		var connect, first []float64
		for _, a := range tr.Attempts {
			tr.Counts[a.Outcome]++
			connect = append(connect, a.ConnectMillis)
			if a.Outcome == OK {
				first = append(first, a.FirstByteMillis)
			}
		}
		tr.Connect, tr.FirstByte = latencyOf(connect), latencyOf(first)
		rep.Targets = append(rep.Targets, tr)
	}
	rep.Millis = millis(time.Since(start))
	return rep, nil
}

// attempt makes one connection; withHeader sends a PROXY v1 header first. It returns the
// connection's local address too.
func attempt(ctx context.Context, s *Spec, target string, payload []byte, withHeader bool) (Attempt, string) {
	dctx, cancel := context.WithTimeout(ctx, s.ConnectTimeout)
	defer cancel()
	t0 := time.Now()
	conn, err := s.Dial(dctx, "tcp", target)
	a := Attempt{ConnectMillis: millis(time.Since(t0))}
	if err != nil {
		a.Outcome, a.Error = dialOutcome(err), err.Error()
		return a, ""
	}
	defer conn.Close()
	a.Remote = conn.RemoteAddr().String()
	local := conn.LocalAddr().String()
	var out []byte
	if withHeader {
		out = append(out, proxyV1Header(conn.LocalAddr(), conn.RemoteAddr())...)
	}
	out = append(out, payload...)
	_ = conn.SetDeadline(time.Now().Add(s.ReadTimeout))
	t1 := time.Now()
	if len(out) > 0 {
		if _, err := conn.Write(out); err != nil {
			a.Outcome, a.Error = readOutcome(err), err.Error()
			return a, local
		}
	}
	var buf [1]byte
	n, err := conn.Read(buf[:])
	switch {
	case n > 0:
		a.Outcome, a.FirstByteMillis = OK, millis(time.Since(t1))
	case err != nil:
		a.Outcome, a.Error = readOutcome(err), err.Error()
	default:
		a.Outcome, a.Error = Error, "read returned nothing"
	}
	return a, local
}

func dialOutcome(err error) Outcome {
	var dnsErr *net.DNSError
	var ne net.Error
	switch {
	case errors.As(err, &dnsErr):
		return DNSError
	case errors.Is(err, syscall.ECONNREFUSED):
		return Refused
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return Unreachable
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return Timeout
	}
	return Error
}

func readOutcome(err error) Outcome {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF):
		return Closed
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return Reset
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return NoAnswer
	}
	return Error
}

// proxyV1Header is the human-readable PROXY protocol header naming a connection's own
// addresses, as the specification defines it: "PROXY TCP4|TCP6 src dst sport dport\r\n"
// (https://www.haproxy.org/download/2.6/doc/proxy-protocol.txt, section 2.1). Servers that
// require the header accept version 1 and 2 alike (HAProxy's accept-proxy, nginx's
// proxy_protocol).
func proxyV1Header(local, remote net.Addr) []byte {
	l, okL := local.(*net.TCPAddr)
	r, okR := remote.(*net.TCPAddr)
	if !okL || !okR {
		return []byte("PROXY UNKNOWN\r\n")
	}
	fam := "TCP4"
	if l.IP.To4() == nil {
		fam = "TCP6"
	}
	return fmt.Appendf(nil, "PROXY %s %s %s %d %d\r\n", fam, l.IP, r.IP, l.Port, r.Port)
}

func millis(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
