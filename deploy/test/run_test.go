package test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/loopguard/loopguard/adapters/controller"
	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/tencent"
)

// The ServiceAccount deploy/ runs the controller as.
const (
	namespace      = "loopguard-system"
	serviceAccount = "system:serviceaccount:" + namespace + ":loopguard"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// TestMain removes the controller binary the tests built (63 MB in a temporary folder), so a
// run leaves nothing behind in $TMPDIR.
func TestMain(m *testing.M) {
	code := m.Run()
	if binary != "" {
		_ = os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

// buildController builds examples/controller once per test binary with deploy/Dockerfile's
// own build command, so the tests run what the image holds: the same packages, module versions
// (hack/newest's workspace) and flags. TestMain removes it.
func buildController() (string, error) {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "loopguard-deploy-test")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "loopguard-controller")
		buildErr = dockerfileBuild("../Dockerfile", "../..", binary)
	})
	return binary, buildErr
}

// controllerBinary is buildController for a test: a failed build fails it.
func controllerBinary(t *testing.T) string {
	bin, err := buildController()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// dockerfileBuild runs the RUN instruction of dockerfile that calls go build, in root as the
// image's WORKDIR and with its -o pointed at out. What the image build would use from the
// environment (GOFLAGS, GOWORK) is the instruction's own: it is run by sh with them unset.
func dockerfileBuild(dockerfile, root, out string) error {
	b, err := os.ReadFile(dockerfile)
	if err != nil {
		return err
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return err
	}
	workdir, run := "", ""
	// Instructions, with backslash-continued lines joined (Dockerfile syntax).
	for _, ins := range strings.Split(strings.ReplaceAll(string(b), "\\\n", " "), "\n") {
		f := strings.Fields(ins)
		switch {
		case len(f) == 2 && f[0] == "WORKDIR":
			workdir = f[1]
		case len(f) > 1 && f[0] == "RUN" && strings.Contains(ins, " go build "):
			for len(f) > 1 && strings.HasPrefix(f[1], "--") { // --mount=... and other RUN flags
				f = append(f[:1], f[2:]...)
			}
			run = strings.Join(f[1:], " ")
		}
	}
	o := regexp.MustCompile(`(^|\s)-o\s+(\S+)`).FindStringSubmatchIndex(run)
	if workdir == "" || run == "" || o == nil {
		return fmt.Errorf("%s: want a WORKDIR and a RUN instruction with go build -o, got WORKDIR %q, RUN %q", dockerfile, workdir, run)
	}
	run = run[:o[4]] + out + run[o[5]:]
	run = strings.ReplaceAll(run, workdir+"/", root+"/")
	cmd := exec.Command("sh", "-c", run)
	cmd.Dir = root
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOFLAGS=") && !strings.HasPrefix(kv, "GOWORK=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s's build (%s): %v\n%s", dockerfile, run, err, b)
	}
	return nil
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// syncBuffer is the controller's stderr, read while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// install creates what the overlay renders, except the Deployment (the test runs its
// container as a process), the webhook configurations and cert-manager's kinds.
func install(t *testing.T, c client.Client, r rendered) {
	t.Helper()
	for _, o := range r.objects {
		obj, ok := o.(client.Object)
		if !ok {
			t.Fatalf("%T is not an object", o)
		}
		switch o.(type) {
		case *appsv1.Deployment:
			continue
		}
		if strings.HasSuffix(fmt.Sprintf("%T", o), "WebhookConfiguration") {
			continue
		}
		if err := c.Create(context.Background(), obj); err != nil {
			t.Fatalf("create %T %s: %v", o, obj.GetName(), err)
		}
	}
}

// runController starts the rendered Deployment's container as a process authenticated as the
// rendered ServiceAccount: its args as rendered, the ConfigMap mounted where the args read it.
// It returns the process's stderr, the probe and metrics addresses.
func runController(t *testing.T, srv *apiserver.Server, r rendered, setup func(tmp string), extra ...string) (*syncBuffer, string, string, *exec.Cmd) {
	t.Helper()
	dir := t.TempDir()
	if setup != nil {
		setup(dir)
	}
	cm := r.configMap(t, "loopguard-config")
	for k, v := range cm.Data {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	kc, err := srv.Kubeconfig(serviceAccount, "system:serviceaccounts", "system:serviceaccounts:"+namespace, "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	kcFile := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kcFile, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	d := r.deployment(t)
	var args []string
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		args = append(args, strings.ReplaceAll(a, "/etc/loopguard", dir))
	}
	probes := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	metrics := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	// In a Pod, controller-runtime finds the Lease's namespace in the ServiceAccount mount.
	args = append(args, "--kubeconfig="+kcFile, "--leader-election-namespace="+namespace,
		"--health-probe-bind-address="+probes, "--metrics-bind-address="+metrics)
	args = append(args, extra...)
	cmd := exec.Command(controllerBinary(t), args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	stderr := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("controller output:\n%s", stderr.String())
		}
	})
	return stderr, probes, metrics, cmd
}

func eventually(t *testing.T, what string, timeout time.Duration, f func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, last := f()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; last: %s", what, timeout, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

var insecure = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}

func get(url, token string) (int, string) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := insecure.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// TestRenderedDeploymentRuns: for each mode, what kustomize renders is installed on a real
// kube-apiserver and the controller runs as the rendered ServiceAccount with the rendered
// args and ConfigMap: it becomes ready, writes its verdict on a LoadBalancer Service, never
// hits a forbidden request, and serves /metrics only to an authorized caller.
func TestRenderedDeploymentRuns(t *testing.T) {
	for _, o := range []overlay{overlays[0], overlays[1]} {
		t.Run(o.dir, func(t *testing.T) {
			r := render(t, o.dir)
			srv := apiserver.Start(t, apiserver.WithCRDPaths("../../providers/tencent/crds"))
			c, err := client.New(srv.Config(), client.Options{Scheme: scheme.Scheme})
			if err != nil {
				t.Fatal(err)
			}
			install(t, c, r)
			logs, probes, metrics, _ := runController(t, srv, r, nil)
			eventually(t, "/readyz", 90*time.Second, func() (bool, string) {
				code, body := get("http://"+probes+"/readyz", "")
				return code == http.StatusOK, fmt.Sprint(code, body)
			})
			ctx := context.Background()
			for _, n := range []string{"node-1", "node-2"} {
				if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
				t.Fatal(err)
			}
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web",
				Annotations: map[string]string{tencent.AnnotationInternalSubnet: "subnet-1a2b3c4d"}},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
					Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
			if err := c.Create(ctx, svc); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the verdict on shop/web", 60*time.Second, func() (bool, string) {
				got := &corev1.Service{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(svc), got); err != nil {
					return false, err.Error()
				}
				cond := apimeta.FindStatusCondition(got.Status.Conditions, controller.ConditionType)
				return cond != nil, fmt.Sprint(got.Status.Conditions)
			})
			if out := logs.String(); strings.Contains(out, "forbidden") {
				t.Errorf("the controller was refused something as %s:\n%s", serviceAccount, out)
			}

			// /metrics: refused without a token, served to a ServiceAccount bound to
			// loopguard-metrics-reader.
			if code, _ := get("https://"+metrics+"/metrics", ""); code != http.StatusUnauthorized && code != http.StatusForbidden {
				t.Errorf("/metrics without a token: %d, want 401 or 403", code)
			}
			if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "prometheus"}}); err != nil {
				t.Fatal(err)
			}
			if err := c.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-loopguard"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "loopguard-metrics-reader"},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: namespace, Name: "prometheus"}}}); err != nil {
				t.Fatal(err)
			}
			tr, err := srv.Client().CoreV1().ServiceAccounts(namespace).CreateToken(ctx, "prometheus", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			eventually(t, "/metrics for an authorized ServiceAccount", 30*time.Second, func() (bool, string) {
				code, body := get("https://"+metrics+"/metrics", tr.Status.Token)
				return code == http.StatusOK && strings.Contains(body, "loopguard_"), fmt.Sprint(code, " ", len(body))
			})
			verdictOnly(t, srv, c, !o.enforce)
		})
	}
}

// verdictOnly: in report-only mode the ServiceAccount's patch on Ingresses reaches only its
// verdict annotation (deploy/base/verdict-only.yaml); in enforcing mode the policy is gone.
func verdictOnly(t *testing.T, srv *apiserver.Server, admin client.Client, reportOnly bool) {
	t.Helper()
	ctx := context.Background()
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "front"},
		Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
			Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
	if err := admin.Create(ctx, ing); err != nil {
		t.Fatal(err)
	}
	cfg := srv.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceAccount,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}}
	sa, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	patch := func(p string) error {
		// The policy's informer may lag its creation by a moment; a denial once it is in
		// force is what is tested, so the label patch is retried until refused.
		return sa.Patch(ctx, ing.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(p)))
	}
	if err := patch(`{"metadata":{"annotations":{"loopguard.io/verdict":"NoLoop: test"}}}`); err != nil {
		t.Errorf("the ServiceAccount could not write its verdict annotation: %v", err)
	}
	if !reportOnly {
		return
	}
	eventually(t, "a label patch by loopguard refused", 20*time.Second, func() (bool, string) {
		err := patch(`{"metadata":{"labels":{"team":"loopguard-was-here"}}}`)
		if err == nil {
			// Not yet in force: undo, try again.
			_ = admin.Patch(ctx, ing.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":null}}`)))
			return false, "admitted"
		}
		return strings.Contains(err.Error(), "only its verdict"), err.Error()
	})
}
