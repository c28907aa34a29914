package probe

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// serve runs handle for every connection to a loopback listener until the test ends.
func serve(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
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
			go func() { defer c.Close(); handle(c) }()
		}
	}()
	return ln.Addr().String()
}

// proxyBackend requires a PROXY header the way a PROXY-protocol server does: a first line
// that is not one closes the connection without an answer.
func proxyBackend(reset bool) func(net.Conn) {
	return func(c net.Conn) {
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "PROXY TCP4 127.0.0.1 127.0.0.1 ") {
			if reset {
				c.(*net.TCPConn).SetLinger(0)
			}
			return
		}
		c.Write([]byte("HTTP/1.0 200 OK\r\n\r\nhello"))
	}
}

func TestRunOutcomes(t *testing.T) {
	answer := serve(t, func(c net.Conn) {
		bufio.NewReader(c).ReadString('\n')
		c.Write([]byte("HTTP/1.0 200 OK\r\n\r\n"))
	})
	silent := serve(t, func(c net.Conn) { c.Read(make([]byte, 100)); time.Sleep(2 * time.Second) })
	closer := serve(t, func(c net.Conn) { c.Read(make([]byte, 4096)) })
	resetter := serve(t, func(c net.Conn) { c.Read(make([]byte, 100)); c.(*net.TCPConn).SetLinger(0) })
	// A port nothing listens on: bind, note it, close.
	ln, _ := net.Listen("tcp4", "127.0.0.1:0")
	refused := ln.Addr().String()
	ln.Close()

	tests := map[string]struct {
		target     string
		proxyCheck bool
		want       Outcome
		wantCheck  Outcome
	}{
		"answered":                              {target: answer, want: OK},
		"silent server":                         {target: silent, want: NoAnswer},
		"closed without answer":                 {target: closer, proxyCheck: true, want: Closed, wantCheck: Closed},
		"reset without answer":                  {target: resetter, proxyCheck: true, want: Reset, wantCheck: Reset},
		"refused":                               {target: refused, want: Refused},
		"PROXY backend closes":                  {target: serve(t, proxyBackend(false)), proxyCheck: true, want: ProxyRejected, wantCheck: OK},
		"PROXY backend resets":                  {target: serve(t, proxyBackend(true)), proxyCheck: true, want: ProxyRejected, wantCheck: OK},
		"PROXY backend, check off: just closed": {target: serve(t, proxyBackend(false)), want: Closed},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rep, err := Run(t.Context(), Spec{Targets: []string{tc.target}, Connections: 3, ReadTimeout: 300 * time.Millisecond, ProxyCheck: tc.proxyCheck})
			if err != nil {
				t.Fatal(err)
			}
			tr := rep.Targets[0]
			if tr.Count(tc.want) != 3 {
				t.Fatalf("counts %v, want 3 × %s; attempts %+v", tr.Counts, tc.want, tr.Attempts)
			}
			if tc.wantCheck == "" {
				if tr.ProxyCheck != nil {
					t.Errorf("a PROXY check was made: %+v", tr.ProxyCheck)
				}
			} else if tr.ProxyCheck == nil || tr.ProxyCheck.Outcome != tc.wantCheck {
				t.Errorf("PROXY check %+v, want %s", tr.ProxyCheck, tc.wantCheck)
			}
			for _, a := range tr.Attempts {
				if a.Outcome == OK && a.FirstByteMillis <= 0 {
					t.Errorf("ok without a first-byte time: %+v", a)
				}
			}
			if rep.Source == "" && tc.want != Refused {
				t.Error("no source address recorded")
			}
		})
	}
}

// TestRunTimeout: a dial nothing answers (this package's only stand-in: the loop's real
// timeout is measured in internal/verifylab) is a timeout at ConnectTimeout.
func TestRunTimeout(t *testing.T) {
	blackhole := func(ctx context.Context, _, _ string) (net.Conn, error) {
		<-ctx.Done()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: ctx.Err()}
	}
	start := time.Now()
	rep, err := Run(t.Context(), Spec{Targets: []string{"192.0.2.1:80"}, Connections: 2, ConnectTimeout: 200 * time.Millisecond, Dial: blackhole})
	if err != nil {
		t.Fatal(err)
	}
	if n := rep.Targets[0].Count(Timeout); n != 2 {
		t.Fatalf("counts %v, want 2 timeouts", rep.Targets[0].Counts)
	}
	if el := time.Since(start); el < 400*time.Millisecond || el > 5*time.Second {
		t.Errorf("took %v, want about 2 × 200 ms", el)
	}
}

func TestValidate(t *testing.T) {
	tests := map[string]struct {
		spec Spec
		want string
	}{
		"no targets":     {Spec{}, "targets: at least one"},
		"no port":        {Spec{Targets: []string{"10.0.0.1"}}, `"10.0.0.1" is not host:port`},
		"too many conns": {Spec{Targets: []string{"a:1"}, Connections: 1000}, "connections: 1000"},
		"long timeout":   {Spec{Targets: []string{"a:1"}, ConnectTimeout: time.Hour}, "connectTimeout"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Run(t.Context(), tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestProxyV1Header(t *testing.T) {
	l := &net.TCPAddr{IP: net.ParseIP("10.0.0.5"), Port: 40000}
	r := &net.TCPAddr{IP: net.ParseIP("10.99.0.1"), Port: 80}
	if got, want := string(proxyV1Header(l, r)), "PROXY TCP4 10.0.0.5 10.99.0.1 40000 80\r\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
