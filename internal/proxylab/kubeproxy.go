package proxylab

import (
	"context"
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

// Mode is the kube-proxy mode a lab runs.
type Mode string

const (
	ModeIPTables Mode = "iptables"
	ModeNFTables Mode = "nftables"
)

// kubeProxy is one real kube-proxy process in a node namespace.
type kubeProxy struct {
	node string
	ns   string
	mode Mode
	cmd  *exec.Cmd
	done <-chan error
	logs *apiserver.Tail
}

// kubeProxyConfig is a KubeProxyConfiguration that writes no host sysctl: conntrack limits
// and timeouts left alone (0), no OOM score, health and metrics on the namespace's own
// loopback. The minimum sync period stays at kube-proxy's default, 1 s: every kube-proxy of
// every lab watches the Services of all labs on the shared API server, so a shorter one makes
// each of them resync (tens of iptables and ip6tables runs) on every other lab's change; that
// was most of the dataplane tests' CPU time with 10 ms. A change after an idle second still
// syncs at once (pkg/proxy/runner/bounded_frequency_runner.go waits minSyncPeriod only after
// a run). The only sysctl kube-proxy then writes is the node namespace's own route_localnet. Only the section of the mode in use is written, so
// releases that predate the nftables mode accept the file.
func kubeProxyConfig(kubeconfig, node string, mode Mode) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
mode: %s
clusterCIDR: %s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
oomScoreAdj: 0
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
%s:
  minSyncPeriod: 1s
  syncPeriod: 30s
`, kubeconfig, node, mode, netlab.ClusterCIDR, mode)
}

// startKubeProxy runs binary as node's kube-proxy inside ns.
func startKubeProxy(dir, binary, kubeconfig, node, ns string, mode Mode) (*kubeProxy, error) {
	cfg := filepath.Join(dir, "kube-proxy-"+node+".yaml")
	if err := os.WriteFile(cfg, []byte(kubeProxyConfig(kubeconfig, node, mode)), 0o600); err != nil {
		return nil, err
	}
	logs := &apiserver.Tail{Max: 32 << 10}
	cmd := exec.Command(binary, "--config="+cfg, "--v=2")
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	done, err := netlab.StartIn(ns, cmd)
	if err != nil {
		return nil, fmt.Errorf("start kube-proxy on %s: %w", node, err)
	}
	return &kubeProxy{node: node, ns: ns, mode: mode, cmd: cmd, done: done, logs: logs}, nil
}

// stop kills kube-proxy. SIGTERM takes 1–4 s and leaves the rules behind anyway; the rules go
// with the node's namespace.
func (k *kubeProxy) stop() {
	_ = k.cmd.Process.Kill()
	<-k.done
}

// exited reports kube-proxy's exit, if it has exited.
func (k *kubeProxy) exited() (bool, error) {
	select {
	case err := <-k.done:
		// Put it back for stop.
		ch := make(chan error, 1)
		ch <- err
		k.done = ch
		return true, err
	default:
		return false, nil
	}
}

// ruleset is what kube-proxy has programmed in the node's namespace right now.
func (k *kubeProxy) ruleset(ctx context.Context) (string, error) {
	switch k.mode {
	case ModeNFTables:
		out, err := netlab.RunIn(ctx, k.ns, "", "nft", "list", "table", "ip", "kube-proxy")
		if err != nil && strings.Contains(out, "No such file or directory") {
			return "", nil // not created yet
		}
		return out, err
	default:
		return netlab.RunIn(ctx, k.ns, "", "iptables-save", "-t", "nat")
	}
}

// ServiceRules is what to wait for in a node's ruleset: the Service's endpoint, and the LB
// address present (ipMode VIP) or absent (ipMode Proxy, or no status yet).
type ServiceRules struct {
	Namespace, Name string
	Endpoint        netip.AddrPort
	LBAddr          netip.AddrPort
	WantLB          bool
	// AnyLB: do not wait for the LB address either way (a kube-proxy whose handling of
	// ipMode is what the caller wants to find out).
	AnyLB bool
}

// programmed says whether rules show the Service programmed as r says. Pod addresses repeat
// across labs (every lab uses netlab's address plan) and one kube-proxy programs the Services
// of all labs, so the endpoint is matched together with the Service's own name.
func (r ServiceRules) programmed(mode Mode, rules string) (bool, string) {
	var endpoint, lb bool
	svc := r.Namespace + "/" + r.Name
	chain := ""
	for line := range strings.SplitSeq(rules, "\n") {
		line = strings.TrimSpace(line)
		switch mode {
		case ModeNFTables:
			// A Service with one endpoint DNATs in its service chain, with more in endpoint
			// chains; both chains are named after the Service:
			//   chain service-XXXXXXXX-ns/name/tcp/ { ... dnat to 10.244.1.3:8080 }
			//   chain endpoint-XXXXXXXX-ns/name/tcp/__10.244.1.3/8080 { ... dnat to 10.244.1.3:8080 }
			if name, ok := strings.CutPrefix(line, "chain "); ok {
				chain = name
			}
			if strings.Contains(chain, "-"+svc+"/tcp/") && strings.Contains(line, "dnat to "+r.Endpoint.String()) {
				endpoint = true
			}
			// In the service-ips map: 10.99.0.5 . tcp . 80 : goto external-XXXXXXXX-ns/name/tcp/
			if strings.Contains(line, r.LBAddr.Addr().String()+" . tcp . "+fmt.Sprint(r.LBAddr.Port())+" ") {
				lb = true
			}
		default:
			// -A KUBE-SEP-XXXX -p tcp -m comment --comment "ns/name" -m tcp -j DNAT --to-destination 10.244.1.3:8080
			if strings.Contains(line, `"`+svc+`"`) && strings.Contains(line, "--to-destination "+r.Endpoint.String()) {
				endpoint = true
			}
			// -A KUBE-SERVICES -d 10.99.0.5/32 -p tcp -m comment --comment "ns/name loadbalancer IP" ...
			if strings.Contains(line, "-d "+r.LBAddr.Addr().String()+"/32 ") {
				lb = true
			}
		}
	}
	switch {
	case !endpoint:
		return false, "the endpoint " + r.Endpoint.String() + " of " + svc + " is not programmed yet"
	case !r.AnyLB && lb != r.WantLB:
		return false, fmt.Sprintf("LB address %v programmed: %v, want %v", r.LBAddr, lb, r.WantLB)
	}
	return true, ""
}

// waitRules polls the node's ruleset until r holds, kube-proxy exits, or the deadline.
func (k *kubeProxy) waitRules(ctx context.Context, r ServiceRules, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	why, rules := "no ruleset read yet", ""
	poll := 20 * time.Millisecond
	for {
		var err error
		rules, err = k.ruleset(ctx)
		if err == nil {
			var ok bool
			if ok, why = r.programmed(k.mode, rules); ok {
				return nil
			}
		} else if ctx.Err() == nil {
			why = err.Error()
		}
		if gone, err := k.exited(); gone {
			return fmt.Errorf("kube-proxy on %s exited (%v) before its rules were ready:\n%s", k.node, err, k.logs.String())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-proxy on %s: rules not ready after %v: %s\n--- kube-proxy log ---\n%s\n--- rules ---\n%s",
				k.node, timeout, why, k.logs.String(), rules)
		case <-time.After(poll):
		}
		// Back off: each read is an iptables-save or nft run in the node's namespace, and dozens
		// of labs wait at once on two cores; reading every 20 ms until the end starved the
		// kube-proxies being waited for.
		poll = min(2*poll, 320*time.Millisecond)
	}
}
