package proxylab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/internal/netlab"
)

// Environment variables the tests read for the kube-proxy binaries (hack/kube-proxy.sh prints
// the paths; .ci/run exports both).
const (
	// EnvKubeProxy is the current kube-proxy, v1.37.2.
	EnvKubeProxy = "LOOPGUARD_KUBE_PROXY"
	// EnvKubeProxySkew is a kube-proxy that predates ipMode (v1.28.x), for the version-skew
	// test.
	EnvKubeProxySkew = "LOOPGUARD_KUBE_PROXY_SKEW"
)

// apiAddr is where kube-apiserver listens in the sandbox's own namespace (on its lo). Nodes
// reach it through a veth each (VethToSandbox) with a /30 from 10.200.0.0/16, a range the
// netlab address plan does not use and that exists only inside the sandbox.
var apiAddr = netip.MustParseAddr("10.200.0.1")

// KubeProxyBinary returns the kube-proxy named by the environment variable env and the version
// it reports ("v1.37.2"). The error says why it cannot be used: ErrNoBinary when the variable
// is unset (a skip), anything else when it is set but wrong (a failure: CI asked for it).
func KubeProxyBinary(env string) (path, version string, err error) {
	path = os.Getenv(env)
	if path == "" {
		return "", "", fmt.Errorf("%w: %s not set; run `export %s=\"$(hack/kube-proxy.sh)\"`", ErrNoBinary, env, env)
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		return "", "", fmt.Errorf("proxylab: %s=%s: %v: %s", env, path, err, out)
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "Kubernetes ")
	if !ok {
		return "", "", fmt.Errorf("proxylab: %s=%s reports %q, not a kube-proxy version", env, path, out)
	}
	return path, v, nil
}

// ErrNoBinary marks a component that is not installed or not configured: tests skip on it.
var ErrNoBinary = errors.New("proxylab: not available")

// Available says why proxylab cannot run here (wrapping ErrNoBinary for what is simply not
// installed), or nil: the netlab sandbox, KUBEBUILDER_ASSETS and HAProxy. The kube-proxy
// binaries are checked by KubeProxyBinary, nft by the nftables mode itself.
func Available() error {
	if err := netlab.Available(); err != nil {
		return fmt.Errorf("%w: netlab sandbox: %v", ErrNoBinary, err)
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" && (os.Getenv("TEST_ASSET_KUBE_APISERVER") == "" || os.Getenv("TEST_ASSET_ETCD") == "") {
		return fmt.Errorf("%w: %s", ErrNoBinary, apiserver.SkipMessage)
	}
	if _, err := exec.LookPath("haproxy"); err != nil {
		return fmt.Errorf("%w: haproxy not installed (Debian: haproxy)", ErrNoBinary)
	}
	return nil
}

// Main runs a test binary's tests in netlab's sandbox and stops the shared control plane
// afterwards, inside the sandbox:
//
//	func TestMain(m *testing.M) { os.Exit(proxylab.Main(m)) }
func Main(m *testing.M) int { return netlab.Main(runner{m}) }

type runner struct{ m *testing.M }

func (r runner) Run() int {
	code := r.m.Run()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cp != nil {
		if err := shared.cp.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "proxylab: stop the control plane: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// ControlPlane is a real kube-apiserver (with etcd) in the sandbox's own namespace, listening
// on an address the labs' nodes reach through a veth each, with a kubeconfig for kube-proxy.
// One serves every lab of a test binary; each lab's Service lives in a namespace of its own.
type ControlPlane struct {
	srv        *apiserver.Server
	dir        string
	kubeconfig string // file

	mu    sync.Mutex
	nodes map[string]netip.Addr // Node objects created, name → InternalIP
}

var shared struct {
	mu      sync.Mutex
	started bool
	cp      *ControlPlane
	err     error
}

// Shared returns the test binary's control plane, starting it on first use (3–6 s). It needs
// Main in TestMain. The error wraps ErrNoBinary when something is not installed.
func Shared() (*ControlPlane, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.started {
		shared.started = true
		shared.cp, shared.err = startControlPlane()
	}
	return shared.cp, shared.err
}

func startControlPlane() (*ControlPlane, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The sandbox's own namespace starts with lo down; etcd needs 127.0.0.1, kube-apiserver
	// its own address.
	if _, err := netlab.RunIn(ctx, "", fmt.Sprintf("link set lo up\naddr add %s/32 dev lo\n", apiAddr), "ip", "-batch", "-"); err != nil {
		return nil, fmt.Errorf("proxylab: address the control plane: %w", err)
	}
	srv, err := apiserver.Launch(apiserver.WithSecureAddress(apiAddr.String()))
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{srv: srv, nodes: map[string]netip.Addr{}}
	if err := cp.writeKubeconfig(); err != nil {
		_ = srv.Stop()
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) writeKubeconfig() error {
	kc, err := cp.srv.Kubeconfig("system:kube-proxy", "system:masters")
	if err != nil {
		return err
	}
	cp.dir, err = os.MkdirTemp("", "proxylab-")
	if err != nil {
		return err
	}
	cp.kubeconfig = filepath.Join(cp.dir, "kube-proxy.kubeconfig")
	return os.WriteFile(cp.kubeconfig, kc, 0o600)
}

func (cp *ControlPlane) stop() error {
	err := cp.srv.Stop()
	if cp.dir != "" {
		err = errors.Join(err, os.RemoveAll(cp.dir))
	}
	return err
}

// Client is an admin client of the control plane.
func (cp *ControlPlane) Client() kubernetes.Interface { return cp.srv.Client() }

// ensureNode creates the Node object kube-proxy running as name looks up, with its
// InternalIP, once; every lab uses the same node names and addresses (netlab's plan).
func (cp *ControlPlane) ensureNode(ctx context.Context, name string, ip netip.Addr) error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if have, ok := cp.nodes[name]; ok {
		if have != ip {
			return fmt.Errorf("proxylab: node %s is %v in one lab and %v in another", name, have, ip)
		}
		return nil
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: ip.String()},
			{Type: corev1.NodeHostName, Address: name},
		}},
	}
	_, err := cp.Client().CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("proxylab: create node %s: %w", name, err)
	}
	cp.nodes[name] = ip
	return nil
}
