package proxylab

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/internal/netlab"
)

// ProxyProtocol is the PROXY protocol version an LB sends and a backend requires.
type ProxyProtocol int

const (
	// ProxyNone: no header; the backend is a plain server.
	ProxyNone ProxyProtocol = iota
	// ProxyV1: the text header (HAProxy send-proxy).
	ProxyV1
	// ProxyV2: the binary header (HAProxy send-proxy-v2).
	ProxyV2
)

func (p ProxyProtocol) String() string {
	return [...]string{"none", "v1", "v2"}[p]
}

// haproxy is one HAProxy process in a namespace: Debian's package, run in the foreground with
// a configuration that needs no chroot, user, daemon mode, stats socket or syslog (none of
// which a lab namespace has), logging to stdout.
type haproxy struct {
	cmd  *exec.Cmd
	done <-chan error
	logs *apiserver.Tail
}

const haproxyGlobal = `global
  log stdout format raw local0
  nbthread 1
  maxconn 256
defaults
  log global
  timeout connect 2s
  timeout client 3s
  timeout server 3s
`

// Marker of the backend's answer, so the client can tell it from anything else.
const answerPrefix = "loopguard-proxylab peer="

// backendConfig is the backend Pod's server: HAProxy answering every HTTP request with one
// line naming the TCP peer it saw and, after a PROXY header, the client the header names.
// With expect != ProxyNone it binds with accept-proxy, so a connection without a header is
// rejected the way a real PROXY-protocol backend rejects it. The TCP peer is captured by a
// tcp-request connection rule, which runs before the header is parsed; after it, src is the
// header's source.
func backendConfig(listen netip.AddrPort, expect ProxyProtocol) string {
	accept := ""
	if expect != ProxyNone {
		accept = " accept-proxy"
	}
	return haproxyGlobal + fmt.Sprintf(`frontend backend
  mode http
  option httplog
  bind %s%s
  tcp-request connection set-var(sess.peer) src
  http-request return status 200 content-type text/plain lf-string "%s%%[var(sess.peer)] src=%%[src] dst=%%[dst]\n"
`, listen, accept, answerPrefix)
}

// lbConfig is the LB: HAProxy in TCP mode on the VIP, forwarding to target with the header
// version send asks for. A TCP proxy connects from its own address (source NAT) unless
// transparent: then from the client's address, on an IP_TRANSPARENT socket ("usesrc
// clientip": the client's address, a port of the kernel's choosing), which needs
// transparentRouting in the LB namespace for the replies.
func lbConfig(listen, target netip.AddrPort, send ProxyProtocol, transparent bool) string {
	opt := map[ProxyProtocol]string{ProxyNone: "", ProxyV1: " send-proxy", ProxyV2: " send-proxy-v2"}[send]
	source := ""
	if transparent {
		source = "  source 0.0.0.0 usesrc clientip\n"
	}
	return haproxyGlobal + fmt.Sprintf(`frontend lb
  mode tcp
  option tcplog
  bind %s
  default_backend pods
backend pods
  mode tcp
%s  server target %s%s
`, listen, source, target, opt)
}

// transparentRouting is what a transparent proxy needs in its namespace so that the replies
// to its connections, addressed to the client and routed back to this namespace, are
// delivered to its socket instead of forwarded to the client: a mangle PREROUTING rule marks
// every TCP packet that belongs to a local socket (the socket match), and marked packets look
// up a table whose one route makes every address local. Only sysctls of the namespace are
// involved, and none beyond netlab's (rp_filter off, forwarding on).
func transparentRouting(ctx context.Context, ns string) error {
	const rules = `*mangle
:PROXYLAB-DIVERT - [0:0]
-A PREROUTING -p tcp -m socket -j PROXYLAB-DIVERT
-A PROXYLAB-DIVERT -j MARK --set-mark 1
-A PROXYLAB-DIVERT -j ACCEPT
COMMIT
`
	if _, err := netlab.RunIn(ctx, ns, rules, "iptables-restore", "-w", "--noflush"); err != nil {
		return err
	}
	_, err := netlab.RunIn(ctx, ns, "rule add fwmark 1 lookup 100\nroute add local 0.0.0.0/0 dev lo table 100\n", "ip", "-batch", "-")
	return err
}

// startHAProxy runs HAProxy with config in ns and waits until it listens on listen.
func startHAProxy(ctx context.Context, dir, name, ns, config string, listen netip.AddrPort) (*haproxy, error) {
	cfg := filepath.Join(dir, "haproxy-"+name+".cfg")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		return nil, err
	}
	logs := &apiserver.Tail{Max: 16 << 10}
	cmd := exec.Command("haproxy", "-db", "-f", cfg)
	cmd.Stdout, cmd.Stderr = logs, logs
	done, err := netlab.StartIn(ns, cmd)
	if err != nil {
		return nil, fmt.Errorf("start haproxy %s: %w", name, err)
	}
	h := &haproxy{cmd: cmd, done: done, logs: logs}
	if err := waitListening(ctx, ns, listen, done); err != nil {
		h.stop()
		return nil, fmt.Errorf("haproxy %s: %w\n--- haproxy log ---\n%s", name, err, logs.String())
	}
	return h, nil
}

func (h *haproxy) stop() {
	_ = h.cmd.Process.Kill()
	<-h.done
}

// waitListening polls the namespace's TCP socket table until something listens on addr.
func waitListening(ctx context.Context, ns string, addr netip.AddrPort, exited <-chan error) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	want := tcpTableAddr(addr)
	for {
		var listening bool
		err := netlab.InNetns(ns, func() error {
			// thread-self: this thread's network namespace, not the process's.
			f, err := os.Open("/proc/thread-self/net/tcp")
			if err != nil {
				return err
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				fields := strings.Fields(sc.Text())
				// sl local_address rem_address st ...; st 0A is LISTEN.
				if len(fields) > 3 && fields[1] == want && fields[3] == "0A" {
					listening = true
				}
			}
			return sc.Err()
		})
		switch {
		case err != nil:
			return err
		case listening:
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("exited before listening on %v: %v", addr, err)
		case <-ctx.Done():
			return fmt.Errorf("not listening on %v: %w", addr, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// tcpTableAddr is addr as /proc/net/tcp prints it: the IPv4 address as a little-endian hex
// word, a colon, the port in hex.
func tcpTableAddr(addr netip.AddrPort) string {
	b := addr.Addr().As4()
	return strings.ToUpper(hex.EncodeToString([]byte{b[3], b[2], b[1], b[0]})) + ":" + fmt.Sprintf("%04X", addr.Port())
}

// rejectedForHeader reports whether HAProxy's log shows it rejected a connection for its
// PROXY header (none, or a malformed one), with the line.
func rejectedForHeader(log string) (bool, string) {
	for line := range strings.SplitSeq(log, "\n") {
		if strings.Contains(line, "does not look like a PROXY protocol header") ||
			strings.Contains(line, "waiting for PROXY protocol header") ||
			strings.Contains(line, "PROXY protocol header") && strings.Contains(line, "ncomplete") {
			return true, strings.TrimSpace(line)
		}
	}
	return false, ""
}

// parseAnswer reads the backend's line: "loopguard-proxylab peer=A src=B dst=C".
func parseAnswer(line string) (peer, src, dst netip.Addr, err error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), answerPrefix)
	if !ok {
		return peer, src, dst, fmt.Errorf("unexpected answer %q", line)
	}
	fields := strings.Fields("peer=" + rest)
	vals := map[string]netip.Addr{}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		a, err := netip.ParseAddr(v)
		if err != nil {
			return peer, src, dst, fmt.Errorf("answer %q: %s: %w", line, k, err)
		}
		vals[k] = a
	}
	return vals["peer"], vals["src"], vals["dst"], nil
}
