package machinelb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
)

// ProviderName is the name the cloud is registered under (--cloud-provider).
const ProviderName = "machine"

// The Service annotations this cloud reads, its own dialect.
const (
	AnnotationForwarding  = "lb.machine.invalid/forwarding"
	AnnotationAddressType = "lb.machine.invalid/address-type"
	AnnotationIPMode      = "lb.machine.invalid/ip-mode"
)

// Forwarding is how an LB forwards.
type Forwarding string

const (
	DNAT           Forwarding = "dnat"
	DNATMasquerade Forwarding = "dnat-masquerade"
	Proxy          Forwarding = "proxy"
	ProxyV1        Forwarding = "proxy-v1"
	ProxyV2        Forwarding = "proxy-v2"
)

// KubeProxyHealthPort is kube-proxy's healthz port on every node.
const KubeProxyHealthPort = 10256

// Options configure the cloud.
type Options struct {
	Pool      netip.Prefix
	HostsFile string // the cloud DNS's hosts file
	Domain    string // the hostnames' zone
	StateDir  string // HAProxy configurations and logs
}

// Cloud is the cloud: load balancers only.
type Cloud struct {
	opts Options

	mu   sync.Mutex
	lbs  map[types.UID]*lb
	used map[netip.Addr]bool
}

var (
	_ cloudprovider.Interface    = (*Cloud)(nil)
	_ cloudprovider.LoadBalancer = (*Cloud)(nil)
)

// New returns the cloud.
func New(opts Options) (*Cloud, error) {
	if !opts.Pool.IsValid() || !opts.Pool.Addr().Is4() {
		return nil, fmt.Errorf("machinelb: pool %v: want an IPv4 prefix", opts.Pool)
	}
	if err := os.MkdirAll(opts.StateDir, 0o755); err != nil {
		return nil, err
	}
	return &Cloud{opts: opts, lbs: map[types.UID]*lb{}, used: map[netip.Addr]bool{}}, nil
}

// lb is one Service's load balancer.
type lb struct {
	uid       types.UID
	ns, name  string
	vip       netip.Addr
	fwd       Forwarding
	ports     []port
	hcPort    int32 // the health check port on every node
	hcPath    string
	nodes     []netip.Addr
	chain     string
	healthy   []netip.Addr
	haproxy   *exec.Cmd
	hapDone   chan struct{}
	stopCheck context.CancelFunc
}

type port struct {
	port, nodePort int32
}

func (c *Cloud) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool)                  { return c, true }
func (c *Cloud) Instances() (cloudprovider.Instances, bool)                        { return nil, false }
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool)                    { return nil, false }
func (c *Cloud) Zones() (cloudprovider.Zones, bool)                                { return nil, false }
func (c *Cloud) Clusters() (cloudprovider.Clusters, bool)                          { return nil, false }
func (c *Cloud) Routes() (cloudprovider.Routes, bool)                              { return nil, false }
func (c *Cloud) ProviderName() string                                              { return ProviderName }
func (c *Cloud) HasClusterID() bool                                                { return true }

// GetLoadBalancerName is the LB's name: the Service's UID, shortened.
func (c *Cloud) GetLoadBalancerName(_ context.Context, _ string, svc *corev1.Service) string {
	return chainName(svc.UID)
}

func chainName(uid types.UID) string {
	h := sha256.Sum256([]byte(uid))
	return "LGLB-" + strings.ToUpper(hex.EncodeToString(h[:6]))
}

// GetLoadBalancer reports the Service's LB.
func (c *Cloud) GetLoadBalancer(_ context.Context, _ string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.lbs[svc.UID]
	if !ok {
		return nil, false, nil
	}
	st, err := c.status(l, svc)
	return st, err == nil, err
}

func (c *Cloud) status(l *lb, svc *corev1.Service) (*corev1.LoadBalancerStatus, error) {
	switch t := svc.Annotations[AnnotationAddressType]; t {
	case "", "ip":
	case "hostname":
		return &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Hostname: c.hostname(l)}}}, nil
	default:
		return nil, fmt.Errorf("Service %s/%s: annotation %s: %q: want ip or hostname", svc.Namespace, svc.Name, AnnotationAddressType, t)
	}
	in := corev1.LoadBalancerIngress{IP: l.vip.String()}
	switch m := corev1.LoadBalancerIPMode(svc.Annotations[AnnotationIPMode]); m {
	case "":
	case corev1.LoadBalancerIPModeVIP, corev1.LoadBalancerIPModeProxy:
		in.IPMode = &m
	default:
		return nil, fmt.Errorf("Service %s/%s: annotation %s: %q: want VIP or Proxy", svc.Namespace, svc.Name, AnnotationIPMode, m)
	}
	return &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{in}}, nil
}

func (c *Cloud) hostname(l *lb) string { return l.name + "-" + l.ns + "." + c.opts.Domain }

// EnsureLoadBalancer makes or updates the Service's LB and returns its status.
func (c *Cloud) EnsureLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, err := c.ensure(svc, nodes)
	if err != nil {
		return nil, err
	}
	return c.status(l, svc)
}

// UpdateLoadBalancer follows a change of the nodes.
func (c *Cloud) UpdateLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.ensure(svc, nodes)
	return err
}

// EnsureLoadBalancerDeleted takes the LB away.
func (c *Cloud) EnsureLoadBalancerDeleted(ctx context.Context, cluster string, svc *corev1.Service) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.lbs[svc.UID]
	if !ok {
		return nil
	}
	err := c.teardown(l)
	delete(c.lbs, svc.UID)
	delete(c.used, l.vip)
	return errors.Join(err, c.writeHosts())
}

func (c *Cloud) ensure(svc *corev1.Service, nodes []*corev1.Node) (*lb, error) {
	fwd := Forwarding(svc.Annotations[AnnotationForwarding])
	if fwd == "" {
		fwd = DNAT
	}
	switch fwd {
	case DNAT, DNATMasquerade, Proxy, ProxyV1, ProxyV2:
	default:
		return nil, fmt.Errorf("Service %s/%s: annotation %s: %q: want dnat, dnat-masquerade, proxy, proxy-v1 or proxy-v2", svc.Namespace, svc.Name, AnnotationForwarding, fwd)
	}
	want := &lb{uid: svc.UID, ns: svc.Namespace, name: svc.Name, fwd: fwd, chain: chainName(svc.UID)}
	for _, p := range svc.Spec.Ports {
		if p.Protocol != corev1.ProtocolTCP && p.Protocol != "" {
			return nil, fmt.Errorf("Service %s/%s: port %d: only TCP is served", svc.Namespace, svc.Name, p.Port)
		}
		want.ports = append(want.ports, port{p.Port, p.NodePort})
	}
	want.hcPort, want.hcPath = KubeProxyHealthPort, "/healthz"
	if svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal && svc.Spec.HealthCheckNodePort != 0 {
		want.hcPort, want.hcPath = svc.Spec.HealthCheckNodePort, "/"
	}
	for _, n := range nodes {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				if ip, err := netip.ParseAddr(a.Address); err == nil {
					want.nodes = append(want.nodes, ip)
				}
			}
		}
	}
	slices.SortFunc(want.nodes, func(a, b netip.Addr) int { return a.Compare(b) })

	l, ok := c.lbs[svc.UID]
	if ok && l.fwd == want.fwd && slices.Equal(l.ports, want.ports) && l.hcPort == want.hcPort && slices.Equal(l.nodes, want.nodes) {
		return l, nil // nothing changed
	}
	if ok {
		want.vip = l.vip
		if err := c.teardown(l); err != nil {
			return nil, err
		}
	} else {
		vip, err := c.allocate(svc)
		if err != nil {
			return nil, err
		}
		want.vip = vip
	}
	c.lbs[svc.UID] = want
	c.used[want.vip] = true
	if err := c.writeHosts(); err != nil {
		return nil, err
	}
	var err error
	switch want.fwd {
	case DNAT, DNATMasquerade:
		err = c.startDNAT(want)
	default:
		err = c.startHAProxy(want)
	}
	if err != nil {
		return nil, err
	}
	klog.InfoS("machine LB ready", "service", klog.KObj(svc), "address", want.vip, "forwarding", want.fwd, "nodes", want.nodes, "healthCheckPort", want.hcPort)
	return want, nil
}

// allocate returns the address the Service's status already names, when it is the pool's and
// free (a restarted cloud-controller-manager keeps the addresses), or the next free one.
func (c *Cloud) allocate(svc *corev1.Service) (netip.Addr, error) {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil && c.opts.Pool.Contains(a) && !c.used[a] {
			return a, nil
		}
	}
	for a := c.opts.Pool.Masked().Addr().Next(); c.opts.Pool.Contains(a); a = a.Next() {
		if !c.used[a] && c.opts.Pool.Contains(a.Next()) {
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("machinelb: no free address left in %s", c.opts.Pool)
}

// writeHosts rewrites the cloud DNS's hosts file, in one rename.
func (c *Cloud) writeHosts() error {
	var lines []string
	for _, l := range c.lbs {
		lines = append(lines, l.vip.String()+" "+c.hostname(l))
	}
	sort.Strings(lines)
	tmp := c.opts.HostsFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, c.opts.HostsFile)
}

func (c *Cloud) teardown(l *lb) error {
	if l.stopCheck != nil {
		l.stopCheck()
	}
	var errs []error
	if l.haproxy != nil {
		_ = l.haproxy.Process.Signal(syscall.SIGTERM)
		select {
		case <-l.hapDone:
		case <-time.After(5 * time.Second):
			_ = l.haproxy.Process.Kill()
			<-l.hapDone
		}
		if _, err := ip("addr", "del", l.vip.String()+"/32", "dev", "lo"); err != nil {
			errs = append(errs, err)
		}
	}
	if l.fwd == DNAT || l.fwd == DNATMasquerade {
		errs = append(errs, c.removeDNAT(l))
	}
	return errors.Join(errs...)
}

func ip(args ...string) (string, error) {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// --- the kernel LB -------------------------------------------------------------------------

// startDNAT creates the LB's chain and its jumps, then keeps the chain's DNAT rules pointed at
// the healthy nodes.
func (c *Cloud) startDNAT(l *lb) error {
	rules := []string{
		"*nat",
		":" + l.chain + " - [0:0]",
		"-A PREROUTING -d " + l.vip.String() + "/32 -p tcp -j " + l.chain,
		"-A OUTPUT -d " + l.vip.String() + "/32 -p tcp -j " + l.chain,
	}
	if l.fwd == DNATMasquerade {
		rules = append(rules, "-A POSTROUTING -m conntrack --ctstate DNAT --ctorigdst "+l.vip.String()+"/32 -j MASQUERADE")
	}
	rules = append(rules, "COMMIT")
	if err := iptablesRestore(rules); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.stopCheck = cancel
	go c.checkLoop(ctx, l)
	return nil
}

func (c *Cloud) removeDNAT(l *lb) error {
	var errs []error
	del := func(args ...string) {
		if out, err := exec.Command("iptables", append([]string{"-w", "-t", "nat", "-D"}, args...)...).CombinedOutput(); err != nil && !strings.Contains(string(out), "does a matching rule exist") && !strings.Contains(string(out), "No chain") {
			errs = append(errs, fmt.Errorf("iptables -D %s: %v: %s", strings.Join(args, " "), err, out))
		}
	}
	del("PREROUTING", "-d", l.vip.String()+"/32", "-p", "tcp", "-j", l.chain)
	del("OUTPUT", "-d", l.vip.String()+"/32", "-p", "tcp", "-j", l.chain)
	if l.fwd == DNATMasquerade {
		del("POSTROUTING", "-m", "conntrack", "--ctstate", "DNAT", "--ctorigdst", l.vip.String()+"/32", "-j", "MASQUERADE")
	}
	for _, a := range [][]string{{"-F", l.chain}, {"-X", l.chain}} {
		if out, err := exec.Command("iptables", append([]string{"-w", "-t", "nat"}, a...)...).CombinedOutput(); err != nil && !strings.Contains(string(out), "No chain") {
			errs = append(errs, fmt.Errorf("iptables %v: %v: %s", a, err, out))
		}
	}
	return errors.Join(errs...)
}

func iptablesRestore(lines []string) error {
	cmd := exec.Command("iptables-restore", "-w", "--noflush")
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("iptables-restore: %v: %s\ninput:\n%s", err, out, cmd.Stdin)
	}
	return nil
}

// checkLoop checks every node every half second and reprograms the chain when the healthy set
// changes.
func (c *Cloud) checkLoop(ctx context.Context, l *lb) {
	client := &http.Client{Timeout: 400 * time.Millisecond}
	first := true
	for {
		var healthy []netip.Addr
		for _, n := range l.nodes {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s:%d%s", n, l.hcPort, l.hcPath), nil)
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					healthy = append(healthy, n)
				}
			}
		}
		if ctx.Err() != nil {
			return
		}
		c.mu.Lock()
		if ctx.Err() != nil {
			// Torn down while checking: the chain is gone and must stay so.
			c.mu.Unlock()
			return
		}
		changed := first || !slices.Equal(healthy, l.healthy)
		if changed {
			l.healthy = healthy
			if err := programDNAT(l); err != nil {
				klog.ErrorS(err, "machine LB: program DNAT", "chain", l.chain)
			} else {
				klog.InfoS("machine LB targets", "service", l.ns+"/"+l.name, "address", l.vip, "healthy", healthy)
			}
		}
		c.mu.Unlock()
		first = false
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// programDNAT rewrites the chain: per port, one DNAT per healthy node, chosen at random per
// connection (statistic), as a hashing LB spreads connections.
func programDNAT(l *lb) error {
	rules := []string{"*nat", ":" + l.chain + " - [0:0]", "-F " + l.chain}
	for _, p := range l.ports {
		for i, n := range l.healthy {
			left := len(l.healthy) - i
			m := ""
			if left > 1 {
				m = fmt.Sprintf(" -m statistic --mode random --probability %.5f", 1/float64(left))
			}
			rules = append(rules, fmt.Sprintf("-A %s -p tcp --dport %d%s -j DNAT --to-destination %s:%d", l.chain, p.port, m, n, p.nodePort))
		}
	}
	rules = append(rules, "COMMIT")
	return iptablesRestore(rules)
}

// --- HAProxy --------------------------------------------------------------------------------

func (c *Cloud) startHAProxy(l *lb) error {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		return fmt.Errorf("machinelb: forwarding %s needs haproxy (Debian: haproxy): %w", l.fwd, err)
	}
	if _, err := ip("addr", "add", l.vip.String()+"/32", "dev", "lo"); err != nil && !strings.Contains(err.Error(), "File exists") {
		return err
	}
	send := map[Forwarding]string{Proxy: "", ProxyV1: " send-proxy", ProxyV2: " send-proxy-v2"}[l.fwd]
	var b strings.Builder
	b.WriteString(`global
  log stdout format raw local0
  maxconn 512
defaults
  log global
  mode tcp
  option tcplog
  timeout connect 2s
  timeout client 30s
  timeout server 30s
`)
	for _, p := range l.ports {
		fmt.Fprintf(&b, "frontend f%d\n  bind %s:%d\n  default_backend b%d\n", p.port, l.vip, p.port, p.port)
		fmt.Fprintf(&b, "backend b%d\n  option httpchk GET %s\n  http-check expect status 200\n  default-server check port %d inter 500ms fall 1 rise 1\n", p.port, l.hcPath, l.hcPort)
		for _, n := range l.nodes {
			fmt.Fprintf(&b, "  server %s %s:%d%s\n", strings.ReplaceAll(n.String(), ".", "-"), n, p.nodePort, send)
		}
	}
	cfg := filepath.Join(c.opts.StateDir, l.chain+".cfg")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(c.opts.StateDir, l.chain+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "-db", "-f", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	// HAProxy ends with the cloud-controller-manager.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	logf.Close()
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	l.haproxy, l.hapDone = cmd, done
	return nil
}
