package apiserver

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// SkipMessage is why a test skips when no binaries are configured.
const SkipMessage = "KUBEBUILDER_ASSETS not set; run hack/envtest-assets.sh"

// ErrNoAssets is returned by [Launch] when neither KUBEBUILDER_ASSETS nor both
// TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD are set. [Start] and [Shared.Get] turn it into
// a skip.
var ErrNoAssets = errors.New("apiserver: " + SkipMessage)

// Environment variables read, the same ones controller-runtime's envtest reads.
const (
	envAssets        = "KUBEBUILDER_ASSETS"
	envAPIServerPath = "TEST_ASSET_KUBE_APISERVER"
	envEtcdPath      = "TEST_ASSET_ETCD"
	envStartTimeout  = "KUBEBUILDER_CONTROLPLANE_START_TIMEOUT"
	envAttachOutput  = "KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT"
)

// defaultStartTimeout replaces envtest's 20 s: `go test ./...` on two cores runs several
// packages at once, each perhaps starting a server, and a slow start must not read as a
// failure. A server that exits is still reported at once, not after the timeout. The timeout
// counts from when the start holds one of the machine's start slots (startGate).
const defaultStartTimeout = 60 * time.Second

// Server is a running kube-apiserver with its etcd. Its methods are safe for concurrent use
// by parallel tests.
type Server struct {
	env    *envtest.Environment
	config *rest.Config
	client kubernetes.Interface
	logs   *Tail

	stopOnce sync.Once
	stopErr  error
}

// Option changes how a server is started.
type Option func(*options)

type options struct {
	crdPaths []string
	crds     []*apiextensionsv1.CustomResourceDefinition
	flags    [][]string
	address  string
}

// WithCRDPaths installs the CustomResourceDefinitions found in these YAML files or folders
// before the server is handed out. A missing path is an error, not an empty install, so a
// renamed folder cannot silently turn tests into tests of nothing.
func WithCRDPaths(paths ...string) Option {
	return func(o *options) { o.crdPaths = append(o.crdPaths, paths...) }
}

// WithCRDs installs these CustomResourceDefinitions before the server is handed out.
func WithCRDs(crds ...*apiextensionsv1.CustomResourceDefinition) Option {
	return func(o *options) { o.crds = append(o.crds, crds...) }
}

// WithFlag sets a kube-apiserver command-line flag, replacing envtest's default for it, for
// example WithFlag("feature-gates", "SomeGate=true").
func WithFlag(name string, values ...string) Option {
	return func(o *options) { o.flags = append(o.flags, append([]string{name}, values...)) }
}

// WithSecureAddress makes kube-apiserver serve on this IP address (a free port is picked)
// instead of 127.0.0.1, and advertise it. The address goes into the serving certificate, so a
// client in another network namespace (a real kube-proxy in a lab node) can reach and verify
// the server there. The address must already be assigned to an interface of the caller's
// network namespace.
func WithSecureAddress(ip string) Option {
	return func(o *options) { o.address = ip }
}

// Start starts a server for this test alone and stops it when the test ends. It skips the
// test when no binaries are configured and fails it when the server does not come up.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := Launch(opts...)
	if errors.Is(err, ErrNoAssets) {
		t.Skip(SkipMessage)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("apiserver: stop: %v", err)
		}
	})
	return s
}

// Launch starts a server outside any test, for harnesses that manage its lifetime themselves;
// the caller must call [Server.Stop]. It returns an error wrapping [ErrNoAssets] when no
// binaries are configured.
func Launch(opts ...Option) (*Server, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}

	apiServerPath, etcdPath, err := binaries()
	if err != nil {
		return nil, err
	}

	logs := &Tail{Max: 16 << 10}
	var out io.Writer = logs
	if os.Getenv(envAttachOutput) == "true" {
		out = io.MultiWriter(logs, os.Stderr)
	}

	apiServer := &envtest.APIServer{Path: apiServerPath, Out: out, Err: out}
	if o.address != "" {
		port, err := freePort(o.address)
		if err != nil {
			return nil, fmt.Errorf("apiserver: a port on %s: %w", o.address, err)
		}
		apiServer.SecureServing.Address, apiServer.SecureServing.Port = o.address, strconv.Itoa(port)
	}
	args := apiServer.Configure()
	// Without a default route kube-apiserver finds no address to advertise and exits ("Unable
	// to find suitable network address"); turning the endpoint reconciler off is not enough on
	// its own. --advertise-address=127.0.0.1 is refused while the reconciler is on ("cannot use
	// public IP 127.0.0.1 with endpoint reconciler") but accepted with it off, so both are set,
	// on every host, so that servers behave the same with or without a route (measured in a
	// network namespace with only lo; docs/sources.md#api-server). The cost: nobody maintains the
	// default/kubernetes Endpoints object, which no loopguard test reads.
	args.Set("endpoint-reconciler-type", "none")
	args.Set("advertise-address", cmp.Or(o.address, "127.0.0.1"))
	reconciler, advertiseSet := "none", false
	for _, f := range o.flags {
		args.Set(f[0], f[1:]...)
		switch f[0] {
		case "endpoint-reconciler-type":
			reconciler = strings.Join(f[1:], ",")
		case "advertise-address":
			advertiseSet = true
		}
	}
	if reconciler != "none" && !advertiseSet {
		// A test that wants the reconciler back needs a routable host; let kube-apiserver
		// pick the address as it would in a cluster, instead of exiting on ours.
		args.Disable("advertise-address")
	}

	never := false
	env := &envtest.Environment{
		ControlPlane: envtest.ControlPlane{
			APIServer: apiServer,
			Etcd:      &envtest.Etcd{Path: etcdPath, Out: out, Err: out},
		},
		// USE_EXISTING_CLUSTER=true in someone's shell must never point tests that create
		// and rewrite objects at a real cluster.
		UseExistingCluster:    &never,
		CRDs:                  o.crds,
		CRDDirectoryPaths:     o.crdPaths,
		ErrorIfCRDPathMissing: true,
		// envtest waits 10 s for installed CRDs to be served, far less than a start can take on
		// a busy machine (one with Gateway API's and Envoy Gateway's CRDs took 111 s in a CI run
		// on two cores): the start's bound instead.
		CRDInstallOptions: envtest.CRDInstallOptions{MaxTime: defaultStartTimeout},
	}
	if os.Getenv(envStartTimeout) == "" {
		env.ControlPlaneStartTimeout = defaultStartTimeout
	}

	gate, waited := acquireStartSlot()
	start := time.Now()
	cfg, err := env.Start()
	gate.release()
	if err != nil {
		// envtest stops what it started when the control plane fails, but not when a later
		// step (CRD install) does.
		_ = env.Stop()
		return nil, fmt.Errorf("apiserver: start kube-apiserver %s with etcd %s: %w\n--- last control plane output ---\n%s",
			apiServerPath, etcdPath, err, logs.String())
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("apiserver: client for %s: %w", cfg.Host, err)
	}
	// flag.Parsed: Launch may run from TestMain before m.Run parses -test.v.
	if flag.Parsed() && testing.Verbose() {
		fmt.Fprintf(os.Stderr, "apiserver: %s ready in %s (after %s waiting for a start slot)\n", cfg.Host,
			time.Since(start).Round(10*time.Millisecond), waited.Round(10*time.Millisecond))
	}
	return &Server{env: env, config: cfg, client: client, logs: logs}, nil
}

// freePort asks the kernel for a port that is free on ip right now.
func freePort(ip string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// binaries finds the two binaries the way envtest would, but tells "not configured" (skip)
// apart from "configured and missing" (fail): CI sets KUBEBUILDER_ASSETS, and a typo there
// must not turn every server test into a green skip.
func binaries() (apiServer, etcd string, err error) {
	dir := os.Getenv(envAssets)
	apiServer, etcd = os.Getenv(envAPIServerPath), os.Getenv(envEtcdPath)
	if dir == "" && (apiServer == "" || etcd == "") {
		return "", "", ErrNoAssets
	}
	if apiServer == "" {
		apiServer = filepath.Join(dir, "kube-apiserver")
	}
	if etcd == "" {
		etcd = filepath.Join(dir, "etcd")
	}
	for _, p := range []string{apiServer, etcd} {
		fi, err := os.Stat(p)
		if err != nil {
			return "", "", fmt.Errorf("apiserver: %s=%q: %w; run hack/envtest-assets.sh", envAssets, dir, err)
		}
		if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return "", "", fmt.Errorf("apiserver: %s is not an executable file; run hack/envtest-assets.sh", p)
		}
	}
	return apiServer, etcd, nil
}

// Config returns a new copy of an admin (system:masters) client configuration, so a test may
// change it (impersonation, rate limits) without affecting others sharing the server.
func (s *Server) Config() *rest.Config { return rest.CopyConfig(s.config) }

// Kubeconfig returns a kubeconfig file's content for a new user of the server with these
// groups (for example "system:kube-proxy" in "system:masters"), for a program that runs
// outside the test binary.
func (s *Server) Kubeconfig(user string, groups ...string) ([]byte, error) {
	u, err := s.env.ControlPlane.AddUser(envtest.User{Name: user, Groups: groups}, nil)
	if err != nil {
		return nil, fmt.Errorf("apiserver: add user %s: %w", user, err)
	}
	return u.KubeConfig()
}

// Client returns a client-go clientset authenticated as admin.
func (s *Server) Client() kubernetes.Interface { return s.client }

// CRDs returns the CustomResourceDefinitions installed at start.
func (s *Server) CRDs() []*apiextensionsv1.CustomResourceDefinition {
	return append([]*apiextensionsv1.CustomResourceDefinition(nil), s.env.CRDs...)
}

// Logs returns the last control plane output, for a test that wants to show why the server
// refused something.
func (s *Server) Logs() string { return s.logs.String() }

// Namespace creates a namespace named after the test, so that tests sharing a server neither
// see nor collide with each other's objects. The namespace is not deleted: envtest runs no
// namespace controller, so a deleted namespace would stay Terminating anyway, and everything
// goes away with the server.
func (s *Server) Namespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: namespacePrefix(t.Name())}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := s.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("apiserver: create namespace: %v", err)
	}
	return got.Name
}

var notDNSLabel = regexp.MustCompile(`[^a-z0-9]+`)

// namespacePrefix turns a test name into a GenerateName prefix: a DNS label of at most 57
// characters (63 minus the random suffix and the dash).
func namespacePrefix(testName string) string {
	p := strings.Trim(notDNSLabel.ReplaceAllString(strings.ToLower(testName), "-"), "-")
	if len(p) > 50 {
		p = strings.TrimRight(p[:50], "-")
	}
	if p == "" {
		p = "test"
	}
	return p + "-"
}

// Stop stops kube-apiserver and etcd and removes their data. It is safe to call more than
// once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.env.Stop() })
	return s.stopErr
}

// Tail keeps the last Max bytes written to it: enough of a component's output to say why it
// did not start, without holding a long test run's logs in memory. Safe for concurrent use.
type Tail struct {
	mu  sync.Mutex
	Max int
	buf []byte
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.Max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
