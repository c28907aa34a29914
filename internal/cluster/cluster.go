package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// KubernetesVersion is the release every Kubernetes component of the cluster is.
const KubernetesVersion = "v1.37.2"

// Config says what cluster Up brings up.
type Config struct {
	// Name (lowercase letters and digits, at most 10) names the cluster's network namespaces
	// (lgc-<name>-router, lgc-<name>-node1, ...) and its cgroups (lgc-<name>).
	Name string
	// Dir is the state folder (certificates, configurations, logs, containerd's and kubelet's
	// data); it must not exist. Default /tmp/lgc-<name>. Down removes it.
	Dir    string
	Assets Assets
	// Nodes is the number of nodes, 1 or 2 (default 2).
	Nodes int
	// ProxyMode is kube-proxy's mode (default nftables).
	ProxyMode ProxyMode
	// CCM is a cloud-controller-manager binary built from hack/cluster/ccm; "" runs none, and
	// LoadBalancer Services stay pending.
	CCM string
	// Images are more image tarballs (hack/images) to import into every node.
	Images []string
	// Log receives one line per step; nil discards them.
	Log io.Writer
}

// State is what Up records in Dir/state.json, so another process (hack/cluster down) can take
// the cluster down.
type State struct {
	Name      string         `json:"name"`
	Dir       string         `json:"dir"`
	Assets    string         `json:"assets"`
	ProxyMode ProxyMode      `json:"proxyMode"`
	Nodes     []string       `json:"nodes"`
	Netns     []string       `json:"netns"`
	Cgroup    *cgroupTree    `json:"cgroup,omitempty"`
	Procs     []*Proc        `json:"procs"`
	Holders   map[string]int `json:"holders"`
}

// Cluster is a running cluster.
type Cluster struct {
	cfg   Config
	state State
	cg    *cgroupTree
	pki   *pki

	// nodeProcs are the nodes' containerd, kubelet and kube-proxy: waits fail early when one exits.
	nodeProcs []*Proc

	mu     sync.Mutex
	rest   *rest.Config
	client kubernetes.Interface
}

var nameRE = regexp.MustCompile(`^[a-z0-9]{1,10}$`)

func (c *Cluster) logf(format string, args ...any) {
	if c.cfg.Log != nil {
		fmt.Fprintf(c.cfg.Log, "cluster %s: %s\n", c.state.Name, fmt.Sprintf(format, args...))
	}
}

// Up brings a cluster up and returns when its nodes are Ready and CoreDNS answers (and the
// cloud-controller-manager runs, when configured). On any failure it takes down what it
// started and returns the error, with the failing component's log.
func Up(ctx context.Context, cfg Config) (c *Cluster, err error) {
	if !nameRE.MatchString(cfg.Name) {
		return nil, fmt.Errorf("cluster name %q: want 1-10 lowercase letters or digits", cfg.Name)
	}
	if cfg.Nodes == 0 {
		cfg.Nodes = 2
	}
	if cfg.Nodes < 1 || cfg.Nodes > 2 {
		return nil, fmt.Errorf("cluster %s: %d nodes: want 1 or 2", cfg.Name, cfg.Nodes)
	}
	if cfg.ProxyMode == "" {
		cfg.ProxyMode = ProxyNFTables
	}
	if cfg.ProxyMode != ProxyNFTables && cfg.ProxyMode != ProxyIPTables {
		return nil, fmt.Errorf("cluster %s: proxy mode %q: want nftables or iptables", cfg.Name, cfg.ProxyMode)
	}
	if cfg.Dir == "" {
		cfg.Dir = filepath.Join(os.TempDir(), "lgc-"+cfg.Name)
	}
	cfg.Dir, err = filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	if err := cfg.Assets.Check(); err != nil {
		return nil, err
	}
	if err := Supported(cfg.ProxyMode); err != nil {
		return nil, err
	}
	for _, ns := range namespaceNames(cfg.Name, cfg.Nodes) {
		if _, err := os.Stat(filepath.Join(netnsDir, ns)); err == nil {
			return nil, fmt.Errorf("cluster %s: network namespace %s exists: a cluster of that name runs (take it down first)", cfg.Name, ns)
		}
	}
	if left := leftoverCgroups("lgc-" + cfg.Name); len(left) > 0 {
		return nil, fmt.Errorf("cluster %s: cgroups %v exist: a cluster of that name runs (take it down first)", cfg.Name, left)
	}
	if err := os.Mkdir(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster %s: state folder: %w (a cluster of that name may run; take it down first)", cfg.Name, err)
	}
	c = &Cluster{cfg: cfg, state: State{Name: cfg.Name, Dir: cfg.Dir, Assets: cfg.Assets.Dir, ProxyMode: cfg.ProxyMode, Holders: map[string]int{}}}
	for i := range cfg.Nodes {
		c.state.Nodes = append(c.state.Nodes, nodeName(i))
	}
	defer func() {
		if err != nil {
			c.logf("bringing up failed; taking down what was started")
			err = errors.Join(err, c.Down())
		}
	}()
	start := time.Now()
	for _, d := range []string{"logs", "router"} {
		if err := os.MkdirAll(filepath.Join(cfg.Dir, d), 0o755); err != nil {
			return c, err
		}
	}
	if c.cg, err = newCgroupTree("lgc-" + cfg.Name); err != nil {
		return c, err
	}
	c.state.Cgroup = c.cg
	c.saveState()
	if err := c.cg.create("control"); err != nil {
		return c, err
	}
	for _, n := range c.nodes() {
		if err := c.cg.create(n.name + "/system"); err != nil {
			return c, err
		}
	}
	if err := c.makePKI(); err != nil {
		return c, err
	}
	if err := c.network(ctx); err != nil {
		return c, err
	}
	if err := c.controlPlane(ctx); err != nil {
		return c, err
	}
	for _, n := range c.nodes() {
		if err := c.startNode(ctx, n); err != nil {
			return c, err
		}
	}
	if err := c.waitNodesReady(ctx); err != nil {
		return c, err
	}
	if err := c.addons(ctx); err != nil {
		return c, err
	}
	c.logf("up in %s (state %s)", time.Since(start).Round(time.Second), cfg.Dir)
	return c, nil
}

func namespaceNames(name string, nodes int) []string {
	ns := []string{"lgc-" + name + "-router"}
	for i := range nodes {
		ns = append(ns, "lgc-"+name+"-"+nodeName(i))
	}
	return ns
}

func (c *Cluster) nodes() []node {
	var ns []node
	for i, name := range c.state.Nodes {
		ns = append(ns, node{i: i, name: name, dir: filepath.Join(c.state.Dir, name)})
	}
	return ns
}

// RouterNetns is the path of the router namespace's pin: the control plane's and the load
// balancers' namespace.
func (c *Cluster) RouterNetns() string { return filepath.Join(netnsDir, "lgc-"+c.state.Name+"-router") }

func (c *Cluster) nodeNetns(n string) string {
	return filepath.Join(netnsDir, "lgc-"+c.state.Name+"-"+n)
}

// Nodes are the nodes' names.
func (c *Cluster) Nodes() []string { return append([]string(nil), c.state.Nodes...) }

// Dir is the state folder.
func (c *Cluster) Dir() string { return c.state.Dir }

// Name is the cluster's name.
func (c *Cluster) Name() string { return c.state.Name }

// Kubeconfig is an admin kubeconfig for the API server at 10.240.0.1:6443, which only the
// router namespace reaches (`nsenter --net=<RouterNetns> kubectl --kubeconfig ...`).
func (c *Cluster) Kubeconfig() string { return filepath.Join(c.state.Dir, "admin.kubeconfig") }

func (c *Cluster) saveState() {
	b, err := json.MarshalIndent(c.state, "", "  ")
	if err == nil {
		_ = os.WriteFile(filepath.Join(c.state.Dir, "state.json"), b, 0o644)
	}
}

// Load reads a cluster Up left running in dir (hack/cluster down, exec).
func Load(dir string) (*Cluster, error) {
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	if err := json.Unmarshal(b, &c.state); err != nil {
		return nil, fmt.Errorf("%s/state.json: %w", dir, err)
	}
	c.cg = c.state.Cgroup
	c.cfg = Config{Name: c.state.Name, Dir: c.state.Dir, Assets: Assets{Dir: c.state.Assets}, ProxyMode: c.state.ProxyMode}
	return c, nil
}

// SetLog sets where Down and Exec log their steps.
func (c *Cluster) SetLog(w io.Writer) { c.cfg.Log = w }

func (c *Cluster) makePKI() error {
	var err error
	if c.pki, err = newPKI(filepath.Join(c.state.Dir, "pki")); err != nil {
		return err
	}
	p := c.pki
	ips := []net.IP{net.IP(RouterAddr.AsSlice()), net.IP(KubernetesServiceIP.AsSlice()), net.IPv4(127, 0, 0, 1)}
	dns := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc." + ClusterDomain, "localhost"}
	steps := []struct {
		name, cn string
		org      []string
		ips      []net.IP
		dns      []string
	}{
		{"apiserver", "kube-apiserver", nil, ips, dns},
		{"admin", "loopguard-cluster-admin", []string{"system:masters"}, nil, nil},
		{"apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}, nil, nil},
		{"kube-controller-manager", "system:kube-controller-manager", nil, nil, nil},
		{"kube-scheduler", "system:kube-scheduler", nil, nil, nil},
		// The default ClusterRoleBinding system:node-proxier grants this user what kube-proxy needs.
		{"kube-proxy", "system:kube-proxy", nil, nil, nil},
		{"ccm", "loopguard-cloud-controller-manager", []string{"system:masters"}, nil, nil},
	}
	for _, n := range c.nodes() {
		steps = append(steps,
			struct {
				name, cn string
				org      []string
				ips      []net.IP
				dns      []string
			}{n.name, "system:node:" + n.name, []string{"system:nodes"}, nil, nil},
			struct {
				name, cn string
				org      []string
				ips      []net.IP
				dns      []string
			}{n.name + "-serving", "system:node:" + n.name, []string{"system:nodes"}, []net.IP{net.IP(nodeAddr(n.i).AsSlice())}, []string{n.name}})
	}
	for _, s := range steps {
		if err := p.issue(s.name, s.cn, s.org, s.ips, s.dns); err != nil {
			return err
		}
	}
	if err := p.serviceAccountKey(); err != nil {
		return err
	}
	server := fmt.Sprintf("https://%s:%d", RouterAddr, APIServerPort)
	for _, k := range []string{"admin", "kube-controller-manager", "kube-scheduler", "kube-proxy", "ccm"} {
		if err := p.kubeconfig(filepath.Join(c.state.Dir, k+".kubeconfig"), k, server); err != nil {
			return err
		}
	}
	for _, n := range c.nodes() {
		if err := p.kubeconfig(filepath.Join(c.state.Dir, n.name+".kubeconfig"), n.name, server); err != nil {
			return err
		}
	}
	return nil
}

// network makes the namespaces, the nodes' subnet (a bridge in the router namespace, a veth
// per node), the routes to each node's Pod range and the sysctls. Every link is created
// straight into its namespace and carries the alias lgc-<name>, which Leftovers looks for.
func (c *Cluster) network(ctx context.Context) error {
	c.logf("network namespaces and links")
	alias := "lgc-" + c.state.Name
	r := "lgc-" + c.state.Name + "-router"
	names := namespaceNames(c.state.Name, len(c.state.Nodes))
	for _, ns := range names {
		if _, err := run(ctx, "", "ip", "netns", "add", ns); err != nil {
			return err
		}
		c.state.Netns = append(c.state.Netns, ns)
		c.saveState()
	}
	// One `ip -batch` per namespace, in an order where every step finds what it needs.
	batches := []struct {
		ns    string // "" for this machine's namespace, which only creates the veth pairs
		lines []string
	}{
		{r, []string{"link set lo up", "link add nodes type bridge", "link set nodes alias " + alias,
			fmt.Sprintf("addr add %s/%d dev nodes", RouterAddr, NodeSubnet.Bits()), "link set nodes up",
			// A connection the router itself opens to a kernel LB's address needs a route
			// before nat OUTPUT's DNAT picks the node: onto the nodes' subnet.
			fmt.Sprintf("route add %s dev nodes", LBPool)}},
		{"", nil},
		{r, nil},
	}
	for _, n := range c.nodes() {
		ns := "lgc-" + c.state.Name + "-" + n.name
		batches[1].lines = append(batches[1].lines, fmt.Sprintf("link add eth0 netns %s type veth peer name %s netns %s", ns, n.name, r))
		batches[2].lines = append(batches[2].lines,
			fmt.Sprintf("link set %s alias %s", n.name, alias),
			fmt.Sprintf("link set %s master nodes up", n.name),
			fmt.Sprintf("route add %s via %s", nodePodCIDR(n.i), nodeAddr(n.i)))
		batches = append(batches, struct {
			ns    string
			lines []string
		}{ns, []string{"link set eth0 alias " + alias, "link set lo up",
			fmt.Sprintf("addr add %s/%d dev eth0", nodeAddr(n.i), NodeSubnet.Bits()), "link set eth0 up",
			fmt.Sprintf("route add default via %s", RouterAddr)}})
	}
	for _, b := range batches {
		args := []string{"-batch", "-"}
		if b.ns != "" {
			args = append([]string{"-n", b.ns}, args...)
		}
		if _, err := run(ctx, strings.Join(b.lines, "\n")+"\n", "ip", args...); err != nil {
			return err
		}
	}
	common := map[string]string{"net.ipv4.ip_forward": "1", "net.ipv4.conf.all.rp_filter": "0", "net.ipv4.conf.default.rp_filter": "0"}
	set := func(ns string, kv map[string]string) error {
		return inNetns(filepath.Join(netnsDir, ns), func() error {
			for k, v := range kv {
				p := "/proc/sys/" + strings.ReplaceAll(k, ".", "/")
				if err := os.WriteFile(p, []byte(v), 0); err != nil {
					return fmt.Errorf("sysctl %s=%s in %s: %w", k, v, ns, err)
				}
			}
			return nil
		})
	}
	if err := set(r, common); err != nil {
		return err
	}
	// The router's bridge is the nodes' subnet, not a node: its frames are not filtered.
	if err := set(r, map[string]string{"net.bridge.bridge-nf-call-iptables": "0"}); err != nil {
		return err
	}
	for _, n := range c.nodes() {
		ns := "lgc-" + c.state.Name + "-" + n.name
		if err := set(ns, common); err != nil {
			return err
		}
		// As on a real node with br_netfilter: a Pod's packet to a Service, bridged to another
		// Pod of the same node, passes kube-proxy's rules. IPv4 only: with IPv6 on,
		// kube-proxy runs a second proxier for rules nothing reads.
		if err := set(ns, map[string]string{"net.bridge.bridge-nf-call-iptables": "1", "net.ipv6.conf.all.disable_ipv6": "1"}); err != nil {
			return err
		}
	}
	return nil
}

// controlPlane starts etcd and kube-apiserver in the router namespace, waits until the API
// server is ready, then starts kube-controller-manager and kube-scheduler.
func (c *Cluster) controlPlane(ctx context.Context) error {
	a, p, d := c.cfg.Assets, c.pki, c.state.Dir
	rw := where{netns: c.RouterNetns()}
	c.logf("etcd and kube-apiserver")
	etcd, err := c.start("etcd", "control", rw, nil, a.Bin("etcd"),
		"--name=default", "--data-dir="+filepath.Join(d, "etcd"),
		"--listen-client-urls=http://127.0.0.1:2379", "--advertise-client-urls=http://127.0.0.1:2379",
		"--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
		"--initial-cluster=default=http://127.0.0.1:2380",
		// A throwaway cluster on a disk shared with other work: no fsync.
		"--unsafe-no-fsync=true", "--log-level=warn")
	if err != nil {
		return err
	}
	api, err := c.start("kube-apiserver", "control", rw, nil, a.Bin("kube-apiserver"),
		"--etcd-servers=http://127.0.0.1:2379",
		"--bind-address="+RouterAddr.String(), "--advertise-address="+RouterAddr.String(),
		"--secure-port="+strconv.Itoa(APIServerPort),
		"--tls-cert-file="+p.path("apiserver.crt"), "--tls-private-key-file="+p.path("apiserver.key"),
		"--client-ca-file="+p.path("ca.crt"),
		"--kubelet-client-certificate="+p.path("apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+p.path("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority="+p.path("ca.crt"),
		"--service-cluster-ip-range="+ServiceCIDR.String(),
		"--service-account-issuer=https://kubernetes.default.svc."+ClusterDomain,
		"--service-account-key-file="+p.path("sa.pub"), "--service-account-signing-key-file="+p.path("sa.key"),
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true",
		// Admission webhooks and aggregated APIs are called at their endpoints' Pod addresses,
		// which the router routes; it runs no kube-proxy for ClusterIPs.
		"--enable-aggregator-routing=true",
		"--profiling=false", "--v=1")
	if err != nil {
		return err
	}
	if err := c.waitAPI(ctx, etcd, api); err != nil {
		return err
	}
	c.logf("kube-controller-manager and kube-scheduler")
	if _, err := c.start("kube-controller-manager", "control", rw, nil, a.Bin("kube-controller-manager"),
		"--kubeconfig="+filepath.Join(d, "kube-controller-manager.kubeconfig"),
		"--authentication-kubeconfig="+filepath.Join(d, "kube-controller-manager.kubeconfig"),
		"--authorization-kubeconfig="+filepath.Join(d, "kube-controller-manager.kubeconfig"),
		"--bind-address=127.0.0.1", "--leader-elect=false",
		"--service-account-private-key-file="+p.path("sa.key"), "--root-ca-file="+p.path("ca.crt"),
		"--use-service-account-credentials=true",
		"--cluster-cidr="+PodCIDR.String(), "--service-cluster-ip-range="+ServiceCIDR.String(),
		"--profiling=false", "--v=1"); err != nil {
		return err
	}
	if _, err := c.start("kube-scheduler", "control", rw, nil, a.Bin("kube-scheduler"),
		"--kubeconfig="+filepath.Join(d, "kube-scheduler.kubeconfig"),
		"--authentication-kubeconfig="+filepath.Join(d, "kube-scheduler.kubeconfig"),
		"--authorization-kubeconfig="+filepath.Join(d, "kube-scheduler.kubeconfig"),
		"--bind-address=127.0.0.1", "--leader-elect=false", "--profiling=false", "--v=1"); err != nil {
		return err
	}
	return nil
}

// RESTConfig is an admin client configuration whose connections are opened inside the router
// namespace.
func (c *Cluster) RESTConfig() *rest.Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rest == nil {
		pk := filepath.Join(c.state.Dir, "pki")
		c.rest = &rest.Config{
			Host: fmt.Sprintf("https://%s:%d", RouterAddr, APIServerPort),
			TLSClientConfig: rest.TLSClientConfig{
				CAFile: filepath.Join(pk, "ca.crt"), CertFile: filepath.Join(pk, "admin.crt"), KeyFile: filepath.Join(pk, "admin.key"),
			},
			Dial:  dialIn(c.RouterNetns()),
			QPS:   50,
			Burst: 100,
		}
	}
	return rest.CopyConfig(c.rest)
}

// Client is an admin client.
func (c *Cluster) Client() kubernetes.Interface {
	cfg := c.RESTConfig()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client == nil {
		c.client = kubernetes.NewForConfigOrDie(cfg)
	}
	return c.client
}

// DialRouter opens a TCP connection from the router namespace (the API server, a node's port,
// a load balancer's address).
func (c *Cluster) DialRouter(ctx context.Context, addr string) (net.Conn, error) {
	return dialIn(c.RouterNetns())(ctx, "tcp", addr)
}

func (c *Cluster) waitAPI(ctx context.Context, procs ...*Proc) error {
	client := c.Client()
	return c.poll(ctx, "kube-apiserver ready", 90*time.Second, procs, func(ctx context.Context) (bool, error) {
		b, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && strings.TrimSpace(string(b)) == "ok", nil
	})
}

// poll calls cond every 200 ms until it says done, fails, ctx ends, timeout passes or one of
// procs exits (then with its log).
func (c *Cluster) poll(ctx context.Context, what string, timeout time.Duration, procs []*Proc, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		for _, p := range procs {
			if err := p.exited(); err != nil {
				return fmt.Errorf("waiting for %s: %w", what, err)
			}
		}
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := cond(cctx)
		ccancel()
		if err != nil {
			last = err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("waiting for %s: %v", what, ctx.Err())
			if last != nil {
				msg += " (last: " + last.Error() + ")"
			}
			for _, p := range procs {
				msg += fmt.Sprintf("\n--- end of %s ---\n%s", p.Log, tailFile(p.Log, 15))
			}
			return errors.New(msg)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// startNode starts one node: the holder of its mount namespace, containerd (and imports the
// images), kubelet and kube-proxy.
func (c *Cluster) startNode(ctx context.Context, n node) error {
	a, d := c.cfg.Assets, c.state.Dir
	c.logf("%s: containerd, kubelet, kube-proxy", n.name)
	for _, sub := range []string{"cni", "kubelet", "containerd"} {
		if err := os.MkdirAll(filepath.Join(n.dir, sub), 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{
		filepath.Join(n.dir, "containerd.toml"):              containerdConfig(a, n),
		filepath.Join(n.dir, "cni", "10-loopguard.conflist"): cniConfig(n),
		filepath.Join(n.dir, "kubelet.yaml"):                 kubeletConfig(c.pki, n, c.cg.path(n.name), filepath.Join(d, "resolv.conf")),
		filepath.Join(n.dir, "kube-proxy.yaml"):              kubeProxyConfig(c.cfg.ProxyMode, n, filepath.Join(d, "kube-proxy.kubeconfig")),
		filepath.Join(d, "resolv.conf"):                      "nameserver " + RouterAddr.String() + "\n",
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	// The holder: the node's mount namespace, with private tmpfs mounts on the host paths
	// kubelet, containerd and the CNI plugins write to no matter their configuration. It
	// signals it is ready by creating a file, then sleeps until Down.
	ready := filepath.Join(n.dir, "holder.ready")
	src := "lgc-" + c.state.Name
	script := fmt.Sprintf(`set -e
for d in /run /var/log /var/lib; do mount -t tmpfs -o mode=0755 %s "$d"; done
mkdir -p /run/netns
touch %q
exec sleep infinity`, src, ready)
	holder, err := c.start(n.name+"-holder", n.name+"/system", where{netns: c.nodeNetns(n.name)}, nil,
		"unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script)
	if err != nil {
		return err
	}
	if err := c.poll(ctx, n.name+" mount namespace", 10*time.Second, []*Proc{holder}, func(context.Context) (bool, error) {
		_, err := os.Stat(ready)
		return err == nil, nil
	}); err != nil {
		return err
	}
	c.state.Holders[n.name] = holder.PID
	c.saveState()
	hw := where{holder: holder.PID}
	ctrd, err := c.start(n.name+"-containerd", n.name+"/system", hw, nil, a.Bin("containerd"), "--config", filepath.Join(n.dir, "containerd.toml"))
	if err != nil {
		return err
	}
	if err := c.poll(ctx, n.name+" containerd", 60*time.Second, []*Proc{ctrd}, func(ctx context.Context) (bool, error) {
		_, err := run(ctx, "", a.Bin("ctr"), "--address", n.sock(), "version")
		return err == nil, err
	}); err != nil {
		return err
	}
	for _, tar := range append([]string{a.Images()}, c.cfg.Images...) {
		if err := c.importImages(ctx, n, tar); err != nil {
			return err
		}
	}
	kubelet, err := c.start(n.name+"-kubelet", n.name+"/system", hw, nil, a.Bin("kubelet"),
		"--config="+filepath.Join(n.dir, "kubelet.yaml"),
		"--kubeconfig="+filepath.Join(d, n.name+".kubeconfig"),
		"--root-dir="+n.kubeletDir(),
		"--node-ip="+nodeAddr(n.i).String(), "--hostname-override="+n.name, "--v=1")
	if err != nil {
		return err
	}
	proxy, err := c.start(n.name+"-kube-proxy", n.name+"/system", hw, nil, a.Bin("kube-proxy"),
		"--config="+filepath.Join(n.dir, "kube-proxy.yaml"), "--v=1")
	if err != nil {
		return err
	}
	c.nodeProcs = append(c.nodeProcs, ctrd, kubelet, proxy)
	return nil
}

// importImages loads a docker-archive tarball into a node's containerd, for the CRI (namespace
// k8s.io), unpacked for the overlayfs snapshotter.
func (c *Cluster) importImages(ctx context.Context, n node, tar string) error {
	_, err := run(ctx, "", c.cfg.Assets.Bin("ctr"), "--address", n.sock(), "-n", "k8s.io", "images", "import", "--snapshotter", "overlayfs", tar)
	if err != nil {
		return fmt.Errorf("%s: import %s: %w", n.name, tar, err)
	}
	return nil
}

// ImportImages loads a docker-archive tarball (hack/images) into every node's containerd.
func (c *Cluster) ImportImages(ctx context.Context, tar string) error {
	for _, n := range c.nodes() {
		if err := c.importImages(ctx, n, tar); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) waitNodesReady(ctx context.Context) error {
	client := c.Client()
	return c.poll(ctx, "nodes Ready", 3*time.Minute, c.nodeProcs, func(ctx context.Context) (bool, error) {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == len(c.state.Nodes), nil
	})
}

// Resources maps a kind to its resource, through discovery.
func (c *Cluster) resources() func(schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	dc := discovery.NewDiscoveryClientForConfigOrDie(c.RESTConfig())
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	return func(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return schema.GroupVersionResource{}, false, err
		}
		return m.Resource, m.Scope.Name() == "namespace", nil
	}
}

// Apply creates every object of a YAML stream, leaving those that exist alone.
func (c *Cluster) Apply(ctx context.Context, doc string) error {
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	return ApplyYAML(ctx, dyn, c.resources(), doc)
}

// addons: CoreDNS (kubeadm's) until both replicas are ready; the cloud's DNS and, when
// configured, the cloud-controller-manager in the router namespace.
func (c *Cluster) addons(ctx context.Context) error {
	c.logf("CoreDNS")
	if err := c.Apply(ctx, corednsManifests); err != nil {
		return err
	}
	hosts := filepath.Join(c.state.Dir, "router", "lb-hosts")
	if err := os.WriteFile(hosts, nil, 0o644); err != nil {
		return err
	}
	corefile := filepath.Join(c.state.Dir, "router", "Corefile")
	if err := os.WriteFile(corefile, []byte(cloudDNSCorefile(hosts)), 0o644); err != nil {
		return err
	}
	rw := where{netns: c.RouterNetns()}
	dns, err := c.start("cloud-dns", "control", rw, nil, c.cfg.Assets.Bin("coredns"), "-conf", corefile)
	if err != nil {
		return err
	}
	procs := append([]*Proc{dns}, c.nodeProcs...)
	if c.cfg.CCM != "" {
		c.logf("cloud-controller-manager")
		profile := filepath.Join(c.state.Dir, "router", "profile.yaml")
		if err := os.WriteFile(profile, []byte(c.Profile()), 0o644); err != nil {
			return err
		}
		ccm, err := c.start("cloud-controller-manager", "control", rw, nil, c.cfg.CCM,
			"--kubeconfig="+filepath.Join(c.state.Dir, "ccm.kubeconfig"),
			"--authentication-skip-lookup=true",
			"--cloud-provider=machine", "--controllers=service", "--leader-elect=false", "--secure-port=0",
			"--cluster-name=lgc-"+c.state.Name,
			"--machine-lb-pool="+LBPool.String(), "--machine-lb-hosts-file="+hosts, "--machine-lb-domain="+LBDomain,
			"--machine-lb-state-dir="+filepath.Join(c.state.Dir, "router", "lb"),
			"--loopguard-profile="+profile, "--v=1")
		if err != nil {
			return err
		}
		procs = append(procs, ccm)
	}
	client := c.Client()
	return c.poll(ctx, "CoreDNS ready", 3*time.Minute, procs, func(ctx context.Context) (bool, error) {
		d, err := client.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return d.Status.ReadyReplicas == *d.Spec.Replicas, nil
	})
}

// Profile is the ClusterProfile of this cluster: what loopguard cannot read from its objects.
func (c *Cluster) Profile() string {
	return fmt.Sprintf(`apiVersion: loopguard.io/v1alpha1
kind: ClusterProfile
metadata:
  name: lgc-%s
provider: kubernetes
kubernetesVersion: %s
proxyMode: %s
kubeProxyVersion: %s
`, c.state.Name, KubernetesVersion, c.cfg.ProxyMode, KubernetesVersion)
}
