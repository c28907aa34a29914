package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/tencent/clbtest"
	"github.com/loopguard/loopguard/providers/volcengine"
	vclbtest "github.com/loopguard/loopguard/providers/volcengine/clbtest"
)

// serveEnv makes the test binary serve the provider: OpenTofu starts it through dev_overrides
// (a link named terraform-provider-loopguard), so the provider under test is this package's
// code without a separate go build.
const serveEnv = "LOOPGUARD_TF_SERVE_PROVIDER"

var server = apiserver.NewShared()

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		if err := serve(context.Background(), false); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	ctrllog.SetLogger(logr.Discard())
	os.Exit(server.Run(m))
}

// tofuBinary is the OpenTofu CLI the tests drive; hack/opentofu.sh builds it.
func tofuBinary(t *testing.T) string {
	t.Helper()
	p := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if p == "" {
		t.Skip("TF_ACC_TERRAFORM_PATH not set; export TF_ACC_TERRAFORM_PATH=$(hack/opentofu.sh)")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("TF_ACC_TERRAFORM_PATH=%s: %v", p, err)
	}
	return p
}

// workdir is one Terraform configuration with its own CLI configuration, state and log.
type workdir struct {
	t    *testing.T
	tofu string
	dir  string
	env  []string
	log  string
	// secrets must appear in no output, state or log.
	secrets []string
	outputs []string
}

func newWorkdir(t *testing.T, kubeconfig string) *workdir {
	t.Helper()
	tofu := tofuBinary(t)
	dir := t.TempDir()
	plugins := filepath.Join(dir, "plugins")
	if err := os.Mkdir(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(plugins, "terraform-provider-loopguard")); err != nil {
		t.Fatal(err)
	}
	// tofu init still looks the provider up even with dev_overrides ("Skip tofu init when
	// using provider development overrides"), and the registry is unreachable here: a local
	// filesystem mirror answers it, and dev_overrides decides what plan and apply run.
	mirror := filepath.Join(dir, "mirror", "registry.opentofu.org", "loopguard", "loopguard", "0.0.1", runtime.GOOS+"_"+runtime.GOARCH)
	if err := os.MkdirAll(mirror, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(mirror, "terraform-provider-loopguard_v0.0.1")); err != nil {
		t.Fatal(err)
	}
	rc := filepath.Join(dir, "dev.tfrc")
	cli := fmt.Sprintf(`provider_installation {
  dev_overrides {
    "loopguard/loopguard" = %q
  }
  filesystem_mirror {
    path    = %q
    include = ["loopguard/loopguard"]
  }
  direct {
    exclude = ["loopguard/loopguard"]
  }
}
`, plugins, filepath.Join(dir, "mirror"))
	if err := os.WriteFile(rc, []byte(cli), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &workdir{t: t, tofu: tofu, dir: dir, log: filepath.Join(dir, "tofu.log")}
	w.env = append(os.Environ(),
		"TF_CLI_CONFIG_FILE="+rc,
		serveEnv+"=1",
		"TF_IN_AUTOMATION=1",
		"TF_LOG=TRACE",
		"TF_LOG_PATH="+w.log,
		"CHECKPOINT_DISABLE=1",
		"TF_VAR_kubeconfig="+kubeconfig,
		"HOME="+dir, // no user CLI configuration or plugin cache leaks in
	)
	return w
}

// write replaces main.tf.
func (w *workdir) write(hcl string) {
	w.t.Helper()
	if err := os.WriteFile(filepath.Join(w.dir, "main.tf"), []byte(hcl), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// run runs one tofu command and returns its combined output and exit code.
func (w *workdir) run(args ...string) (string, int) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.tofu, append(args[:1:1], append([]string{"-no-color"}, args[1:]...)...)...)
	if args[0] == "state" || args[0] == "version" {
		cmd = exec.CommandContext(ctx, w.tofu, args...)
	}
	cmd.Dir, cmd.Env = w.dir, w.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		w.t.Fatalf("tofu %s: %v", strings.Join(args, " "), err)
	}
	w.t.Logf("tofu %s: exit %d in %s", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond))
	if os.Getenv("LOOPGUARD_TF_SHOW") != "" {
		w.t.Log(out.String()) // to read what a user would see
	}
	w.outputs = append(w.outputs, out.String())
	return out.String(), code
}

// ok runs a command that must succeed.
func (w *workdir) ok(args ...string) string {
	w.t.Helper()
	out, code := w.run(args...)
	if code != 0 {
		w.t.Fatalf("tofu %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// fails runs a command that must fail, and returns its output.
func (w *workdir) fails(args ...string) string {
	w.t.Helper()
	out, code := w.run(args...)
	if code == 0 {
		w.t.Fatalf("tofu %s succeeded, want a failure\n%s", strings.Join(args, " "), out)
	}
	return out
}

// planExit runs plan -detailed-exitcode: 0 no changes, 2 changes.
func (w *workdir) planExit() (string, int) {
	w.t.Helper()
	out, code := w.run("plan", "-detailed-exitcode", "-input=false")
	if code == 1 {
		w.t.Fatalf("tofu plan failed\n%s", out)
	}
	return out, code
}

// resource is one resource instance of the state file.
type stateResource struct {
	Type      string `json:"type"`
	Name      string `json:"name"`
	Instances []struct {
		Attributes map[string]any `json:"attributes"`
		Status     string         `json:"status"`
	} `json:"instances"`
}

// state reads terraform.tfstate: the resource's attributes, nil when it holds none.
func (w *workdir) state() map[string]any {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(w.dir, "terraform.tfstate"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		w.t.Fatal(err)
	}
	var st struct {
		Resources []stateResource `json:"resources"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		w.t.Fatalf("state: %v", err)
	}
	for _, r := range st.Resources {
		if r.Type == "loopguard_loopback_protection" && len(r.Instances) > 0 {
			a := r.Instances[0].Attributes
			a["(status)"] = r.Instances[0].Status
			return a
		}
	}
	return nil
}

func managedOf(st map[string]any) map[string]any {
	if st == nil {
		return nil
	}
	m, _ := st["managed"].(map[string]any)
	return m
}

// noSecrets checks that no secret appears in any output, the state or the CLI's log (which,
// at TF_LOG=TRACE, holds the provider's logs too).
func (w *workdir) noSecrets() {
	w.t.Helper()
	files := map[string]string{}
	for _, f := range []string{"terraform.tfstate", "terraform.tfstate.backup", "tofu.log"} {
		if b, err := os.ReadFile(filepath.Join(w.dir, f)); err == nil {
			files[f] = string(b)
		}
	}
	if files["tofu.log"] == "" {
		w.t.Errorf("tofu wrote no log to %s: the check below would prove nothing", w.log)
	}
	if !strings.Contains(files["tofu.log"], `"planned"`) && !strings.Contains(files["tofu.log"], "planned:") {
		w.t.Errorf("tofu's log holds no line of the provider's (loopguard's hclog logs through tflog): the check below would prove little")
	}
	if keep := os.Getenv("LOOPGUARD_TF_KEEP_LOG"); keep != "" {
		_ = os.WriteFile(filepath.Join(keep, strings.ReplaceAll(w.t.Name(), "/", "_")+".log"), []byte(files["tofu.log"]), 0o644)
	}
	for i, o := range w.outputs {
		files[fmt.Sprintf("output %d", i)] = o
	}
	for _, s := range w.secrets {
		for name, text := range files {
			if strings.Contains(text, s) {
				w.t.Errorf("a credential appears in %s", name)
			}
		}
	}
}

// writeKubeconfig writes an admin kubeconfig for the test server.
func writeKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// eventually waits for cond with a deadline, polling; never a fixed sleep.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tkeEnv is a TKE cluster in IPVS mode with one private Service, its CLB in the in-process
// Tencent server, and the kubeconfig of a real kube-apiserver.
type tkeEnv struct {
	srv        *clbtest.Server
	kubeconfig string
	ns         string
	lb         string
	srvAPI     *apiserver.Server
}

const (
	tfSecretID  = "AKIDloopguardterraformtest000000000"
	tfSecretKey = "tf-secret-key-never-printed-0123456789"
)

func newTKE(t *testing.T, allow ...clbtest.Capability) *tkeEnv {
	t.Helper()
	tofuBinary(t) // skip before starting anything
	s := server.Get(t)
	srv, err := clbtest.Start(&clbtest.Options{Credentials: []clbtest.Credential{{SecretID: tfSecretID, SecretKey: tfSecretKey}},
		Allowlist: allow, TaskDuration: 20 * time.Millisecond, RateLimit: clbtest.Unlimited})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	e := &tkeEnv{srv: srv, kubeconfig: writeKubeconfig(t, s.Config()), ns: s.Namespace(t), srvAPI: s}
	e.lb = "lb-" + fmt.Sprintf("%08x", time.Now().UnixNano()&0xffffffff)
	if _, err := srv.AddLoadBalancer(clbtest.LoadBalancer{ID: e.lb, Type: clbtest.LoadBalancerInternal}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.AddListener(clbtest.Listener{LoadBalancerID: e.lb, ID: "lbl-web00080", Protocol: clbtest.ProtocolTCP, Port: 80}); err != nil {
		t.Fatal(err)
	}
	// Someone else turned SNAT on for port 81 before loopguard: destroy must leave it on.
	if _, err := srv.AddListener(clbtest.Listener{LoadBalancerID: e.lb, ID: "lbl-web00081", Protocol: clbtest.ProtocolTCP, Port: 81, SnatEnable: true}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, n := range []string{"tf-node-1", "tf-node-2", "tf-node-3"} {
		_, err := s.Client().CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		if err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatal(err)
		}
	}
	return e
}

// createService creates the private TKE Service web, as TKE's controller leaves it once its
// CLB exists, with an annotation of someone else's.
func (e *tkeEnv) createService(t *testing.T, name string) {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Annotations: map[string]string{
			tencent.AnnotationInternalSubnet: "subnet-1a2b3c4d",
			tencent.AnnotationLoadBalancerID: e.lb,
			"example.com/owner":              "payments",
		}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}, {Name: "alt", Port: 81, Protocol: corev1.ProtocolTCP}}},
	}
	if _, err := e.srvAPI.Client().CoreV1().Services(e.ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (e *tkeEnv) snat(t *testing.T, id string) bool {
	t.Helper()
	l, ok := e.srv.Listener(id)
	if !ok {
		t.Fatalf("listener %s is gone", id)
	}
	return l.SnatEnable
}

// tkeConfig is the configuration: the provider in direct mode against the in-process server,
// the resource preferring the CLB's features (listener SNAT, not prevent-loopback).
func (e *tkeEnv) tkeConfig(cloud, secret, name, resourceExtra string) string {
	return fmt.Sprintf(`
terraform {
  required_providers {
    loopguard = { source = "loopguard/loopguard" }
  }
}

variable "kubeconfig" { type = string }

variable "secret" {
  type      = string
  sensitive = true
  default   = %q
}

provider "loopguard" {
  cloud      = %q
  region     = "ap-guangzhou"
  endpoint   = "http://%s"
  kubeconfig = var.kubeconfig
  credentials = {
    id     = %q
    secret = var.secret
  }
  profile = <<-EOT
    apiVersion: loopguard.io/v1alpha1
    kind: ClusterProfile
    proxyMode: ipvs
    kubeProxyVersion: v1.20.6-tke.12
  EOT
}

resource "loopguard_loopback_protection" "web" {
  namespace = %q
  name      = %q
  prefer    = "lb-features"
%s
}
`, secret, cloud, e.srv.Endpoint(), tfSecretID, e.ns, name, resourceExtra)
}

// TestTofuTencentLifecycle drives the real OpenTofu CLI through the whole life of a
// protection: init, plan (the change shows), apply, plan (nothing), drift behind Terraform's
// back (shown, then fixed), import, destroy (only what loopguard set is taken back).
func TestTofuTencentLifecycle(t *testing.T) {
	e := newTKE(t, clbtest.L4SNAT)
	e.createService(t, "web")
	w := newWorkdir(t, e.kubeconfig)
	w.secrets = []string{tfSecretKey}
	w.write(e.tkeConfig("tencent", tfSecretKey, "web", `  allowlists = ["clb-l4-snat"]`))

	w.ok("init", "-input=false")

	out, code := w.planExit()
	if code != 2 || !strings.Contains(out, "clb "+e.lb+" listener lbl-web00080 (TCP:80): SnatEnable") || !strings.Contains(out, "1 to add") {
		t.Fatalf("first plan: want the listener's SNAT as a change\n%s", out)
	}
	if strings.Contains(out, "lbl-web00081") {
		t.Errorf("first plan touches listener 81, whose SNAT someone else turned on already\n%s", out)
	}
	if len(e.srv.Writes()) != 0 {
		t.Fatalf("plan wrote to the cloud: %v", e.srv.Writes())
	}

	w.ok("apply", "-auto-approve", "-input=false")
	if !e.snat(t, "lbl-web00080") {
		t.Fatal("after apply: listener 80 has SNAT off")
	}
	st := w.state()
	if st["remedy"] != "lb-snat" || st["load_balancer"] != e.lb || managedOf(st)["clb "+e.lb+" listener lbl-web00080 (TCP:80): SnatEnable"] != "true" {
		t.Fatalf("state after apply: %v", st)
	}

	if out, code := w.planExit(); code != 0 {
		t.Fatalf("second plan: want no changes\n%s", out)
	}

	// Behind Terraform's back: another tool turns listener 80's SNAT off.
	writes := len(e.srv.Writes())
	if err := e.srv.UpdateListener("lbl-web00080", func(l *clbtest.Listener) { l.SnatEnable = false }); err != nil {
		t.Fatal(err)
	}
	eventually(t, "listener 80's SNAT off", func() bool { return !e.snat(t, "lbl-web00080") })
	out, code = w.planExit()
	if code != 2 || !strings.Contains(out, "lbl-web00080 (TCP:80): SnatEnable") || !strings.Contains(out, "1 to change") {
		t.Fatalf("plan after drift: want the listener's SNAT back as a change\n%s", out)
	}
	if len(e.srv.Writes()) != writes {
		t.Fatal("plan after drift wrote to the cloud: drift must be shown, not silently fixed")
	}
	w.ok("apply", "-auto-approve", "-input=false")
	if !e.snat(t, "lbl-web00080") {
		t.Fatal("apply after drift: listener 80 has SNAT off")
	}
	if out, code := w.planExit(); code != 0 {
		t.Fatalf("plan after fixing drift: want no changes\n%s", out)
	}

	// Import: forget the resource, then import it by namespace/name.
	w.ok("state", "rm", "loopguard_loopback_protection.web")
	w.ok("import", "-input=false", "loopguard_loopback_protection.web", e.ns+"/web")
	st = w.state()
	if st["id"] != e.ns+"/web" || managedOf(st)["clb "+e.lb+" listener lbl-web00080 (TCP:80): SnatEnable"] != "true" {
		t.Fatalf("state after import: %v", st)
	}
	out, _ = w.planExit()
	if strings.Contains(out, "must be replaced") || strings.Contains(out, "1 to add") {
		t.Fatalf("plan after import wants a new protection\n%s", out)
	}
	// The configuration's policy (prefer, allowlists) is not part of an import ID: the
	// apply after it writes it into the state and nothing to the cloud.
	writes = len(e.srv.Writes())
	w.ok("apply", "-auto-approve", "-input=false")
	if len(e.srv.Writes()) != writes {
		t.Errorf("apply after import wrote to the cloud: %v", e.srv.Writes()[writes:])
	}
	if out, code := w.planExit(); code != 0 {
		t.Fatalf("plan after import and apply: want no changes\n%s", out)
	}

	w.ok("destroy", "-auto-approve", "-input=false")
	if e.snat(t, "lbl-web00080") {
		t.Error("after destroy: listener 80 still has the SNAT loopguard set")
	}
	svc, err := e.srvAPI.Client().CoreV1().Services(e.ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Annotations["example.com/owner"] != "payments" || svc.Annotations[tencent.AnnotationLoadBalancerID] != e.lb {
		t.Errorf("destroy changed annotations loopguard does not own: %v", svc.Annotations)
	}
	if w.state() != nil {
		t.Errorf("state after destroy still holds the resource")
	}
	w.noSecrets()
}

// TestTofuTencentDestroyLeavesForeign: what someone else set before loopguard stays after
// destroy (listener 81's SNAT), and so does every annotation loopguard does not own.
func TestTofuTencentDestroyLeavesForeign(t *testing.T) {
	e := newTKE(t, clbtest.L4SNAT)
	e.createService(t, "web")
	w := newWorkdir(t, e.kubeconfig)
	w.secrets = []string{tfSecretKey}
	w.write(e.tkeConfig("tencent", tfSecretKey, "web", `  allowlists = ["clb-l4-snat"]`))
	w.ok("init", "-input=false")
	w.ok("apply", "-auto-approve", "-input=false")
	if m := managedOf(w.state()); len(m) != 1 {
		t.Fatalf("managed: want listener 80 only, got %v", m)
	}
	w.ok("destroy", "-auto-approve", "-input=false")
	if e.snat(t, "lbl-web00080") {
		t.Error("after destroy: listener 80 still has the SNAT loopguard set")
	}
	if !e.snat(t, "lbl-web00081") {
		t.Error("destroy turned off listener 81's SNAT, which someone else had set before loopguard")
	}
	w.noSecrets()
}

// expectDiagnostic checks that a failed command's output has the summary and points at the
// attribute: OpenTofu prints the configuration line of the attribute at fault.
func expectDiagnostic(t *testing.T, out, summary, attributeLine string) {
	t.Helper()
	if !strings.Contains(out, "Error: ") || !strings.Contains(out, summary) {
		t.Errorf("want an error %q\n%s", summary, out)
	}
	if !strings.Contains(out, attributeLine) {
		t.Errorf("want the diagnostic on the attribute (line %q)\n%s", attributeLine, out)
	}
}

// TestTofuUnknownCloud: the provider's cloud attribute is checked before anything else runs.
func TestTofuUnknownCloud(t *testing.T) {
	e := newTKE(t, clbtest.L4SNAT)
	e.createService(t, "web")
	w := newWorkdir(t, e.kubeconfig)
	w.secrets = []string{tfSecretKey}
	w.write(e.tkeConfig("aws", tfSecretKey, "web", `  allowlists = ["clb-l4-snat"]`))
	w.ok("init", "-input=false")
	out := w.fails("plan", "-input=false")
	expectDiagnostic(t, out, `unknown cloud "aws"`, `cloud      = "aws"`)
	if len(e.srv.Calls()) != 0 {
		t.Errorf("an unknown cloud still called the cloud: %v", e.srv.Calls())
	}
	w.write(e.tkeConfig("tencent", tfSecretKey, "web", `  allowlists = ["clb-l4-snat"]`))
	w.ok("apply", "-auto-approve", "-input=false")
	if out, code := w.planExit(); code != 0 || !e.snat(t, "lbl-web00080") {
		t.Fatalf("after fixing the cloud: want converged\n%s", out)
	}
	w.noSecrets()
}

// TestTofuMissingService: a Service that does not exist is an error on name at plan time;
// once it exists, apply converges.
func TestTofuMissingService(t *testing.T) {
	e := newTKE(t, clbtest.L4SNAT)
	w := newWorkdir(t, e.kubeconfig)
	w.secrets = []string{tfSecretKey}
	w.write(e.tkeConfig("tencent", tfSecretKey, "web", `  allowlists = ["clb-l4-snat"]`))
	w.ok("init", "-input=false")
	out := w.fails("plan", "-input=false")
	expectDiagnostic(t, out, "Service "+e.ns+"/web does not exist", `name      = "web"`)
	out = w.fails("apply", "-auto-approve", "-input=false")
	expectDiagnostic(t, out, "does not exist", `name      = "web"`)
	if len(e.srv.Writes()) != 0 || w.state() != nil {
		t.Fatalf("half-applied: writes %v, state %v", e.srv.Writes(), w.state())
	}
	e.createService(t, "web")
	w.ok("apply", "-auto-approve", "-input=false")
	if out, code := w.planExit(); code != 0 || !e.snat(t, "lbl-web00080") {
		t.Fatalf("after creating the Service: want converged\n%s", out)
	}
	w.noSecrets()
}

// TestTofuAllowlistMissing: the user declares an allowlist the account does not have; the
// cloud refuses the write, the error is on allowlists, nothing is written or kept in the
// state; once support grants it, a second apply converges.
func TestTofuAllowlistMissing(t *testing.T) {
	e := newTKE(t) // the account has no allowlist
	e.createService(t, "web")
	w := newWorkdir(t, e.kubeconfig)
	w.secrets = []string{tfSecretKey}
	w.write(e.tkeConfig("tencent", tfSecretKey, "web", `  allowlists = ["clb-l4-snat"]`))
	w.ok("init", "-input=false")
	out := w.fails("apply", "-auto-approve", "-input=false")
	expectDiagnostic(t, out, "not allowlisted", `allowlists = ["clb-l4-snat"]`)
	if !strings.Contains(out, "Nothing was written.") {
		t.Errorf("the diagnostic does not say whether anything was written\n%s", out)
	}
	if e.snat(t, "lbl-web00080") || w.state() != nil {
		t.Fatalf("half-applied: SNAT %v, state %v", e.snat(t, "lbl-web00080"), w.state())
	}
	e.srv.Allow(clbtest.L4SNAT)
	w.ok("apply", "-auto-approve", "-input=false")
	if out, code := w.planExit(); code != 0 || !e.snat(t, "lbl-web00080") {
		t.Fatalf("after the allowlist was granted: want converged\n%s", out)
	}
	w.noSecrets()
}

// TestTofuWrongCredentials: the cloud rejects the signature; the error is on credentials at
// plan time, before any write; with the right key a second apply converges. Neither key
// appears anywhere.
func TestTofuWrongCredentials(t *testing.T) {
	e := newTKE(t, clbtest.L4SNAT)
	e.createService(t, "web")
	w := newWorkdir(t, e.kubeconfig)
	const wrong = "tf-wrong-secret-key-also-never-printed-42"
	w.secrets = []string{tfSecretKey, wrong}
	w.write(e.tkeConfig("tencent", wrong, "web", `  allowlists = ["clb-l4-snat"]`))
	w.ok("init", "-input=false")
	out := w.fails("apply", "-auto-approve", "-input=false")
	expectDiagnostic(t, out, "refused the credentials (AuthFailure.SignatureFailure)", `credentials = {`)
	if len(e.srv.Writes()) != 0 || w.state() != nil {
		t.Fatalf("half-applied: writes %v, state %v", e.srv.Writes(), w.state())
	}
	w.write(e.tkeConfig("tencent", tfSecretKey, "web", `  allowlists = ["clb-l4-snat"]`))
	w.ok("apply", "-auto-approve", "-input=false")
	if out, code := w.planExit(); code != 0 || !e.snat(t, "lbl-web00080") {
		t.Fatalf("after fixing the credentials: want converged\n%s", out)
	}
	w.noSecrets()
}

const (
	vkeKeyID  = "AKLTloopguardterraformtest"
	vkeSecret = "vke-secret-never-printed-9876543210"
)

func vkeConfig(endpoint, secret, ns string) string {
	return fmt.Sprintf(`
terraform {
  required_providers {
    loopguard = { source = "loopguard/loopguard" }
  }
}

variable "kubeconfig" { type = string }

variable "secret" {
  type      = string
  sensitive = true
  default   = %q
}

provider "loopguard" {
  cloud      = "volcengine"
  region     = "cn-beijing"
  endpoint   = "http://%s"
  kubeconfig = var.kubeconfig
  credentials = {
    id     = %q
    secret = var.secret
  }
  profile = <<-EOT
    apiVersion: loopguard.io/v1alpha1
    kind: ClusterProfile
    kubernetesVersion: v1.32.2
    ccmVersion: v1.43.0
    proxyMode: ebpf
    dataplane:
      cni: vpc-cni
      podInterface: ipvlan
  EOT
}

resource "loopguard_loopback_protection" "api" {
  namespace = %q
  name      = "api"
}
`, secret, endpoint, vkeKeyID, ns)
}

// TestTofuVolcengine: a VKE Service in VIP mode (nodes intercept the CLB address) needs
// nothing; the provider reads its CLB's facts through the official SDK from the in-process
// Volcengine server, plans nothing, and a wrong key is an error on credentials.
func TestTofuVolcengine(t *testing.T) {
	tofuBinary(t)
	s := server.Get(t)
	ns := s.Namespace(t)
	srv, err := vclbtest.NewServer(&vclbtest.Options{Credentials: []vclbtest.Credential{{AccessKeyID: vkeKeyID, SecretAccessKey: vkeSecret}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	if _, err := srv.AddLoadBalancer(vclbtest.LoadBalancer{ID: "clb-tf-api", Type: vclbtest.TypePrivate, EniAddress: "192.168.20.10",
		Listeners: []vclbtest.Listener{{Protocol: "TCP", Port: 80, ProxyProtocolType: vclbtest.ProxyProtocolOff}}}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: ns, Annotations: map[string]string{
			volcengine.AnnotationAddressType:    "PRIVATE",
			volcengine.AnnotationLoadBalancerID: "clb-tf-api",
		}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "api"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	if _, err := s.Client().CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := newWorkdir(t, writeKubeconfig(t, s.Config()))
	const wrong = "vke-wrong-secret-never-printed-1111"
	w.secrets = []string{vkeSecret, wrong}

	w.write(vkeConfig(srv.Endpoint(), wrong, ns))
	w.ok("init", "-input=false")
	out := w.fails("plan", "-input=false")
	expectDiagnostic(t, out, "Volcengine refused the credentials (SignatureDoesNotMatch)", `credentials = {`)

	w.write(vkeConfig(srv.Endpoint(), vkeSecret, ns))
	out, code := w.planExit()
	if code != 2 || !strings.Contains(out, "1 to add") {
		t.Fatalf("plan: want the protection to add\n%s", out)
	}
	w.ok("apply", "-auto-approve", "-input=false")
	st := w.state()
	if st["remedy"] != "none" || len(managedOf(st)) != 0 {
		t.Fatalf("state: a VIP-mode Service needs nothing, got %v", st)
	}
	if len(srv.CallsTo("DescribeLoadBalancers")) == 0 {
		t.Error("the provider never read the CLB through the Volcengine API")
	}
	if out, code := w.planExit(); code != 0 {
		t.Fatalf("second plan: want no changes\n%s", out)
	}
	w.ok("destroy", "-auto-approve", "-input=false")
	got, err := s.Client().CoreV1().Services(ns).Get(context.Background(), "api", metav1.GetOptions{})
	if err != nil || got.Annotations[volcengine.AnnotationLoadBalancerID] != "clb-tf-api" {
		t.Fatalf("after destroy: %v %v", got, err)
	}
	w.noSecrets()
}

// TestTofuVolcengineReplacement: a VKE Service in Proxy mode with a declared client Pod on a
// backend's node loops (seed 003). The default policy keeps Proxy and asks the user, in a
// warning, to keep the clients off the backends' nodes; allowing disruption switches to VIP,
// which only a new Service can carry, so the plan shows path forcing replacement, and apply
// creates the new Service once a stand-in for the cloud-controller-manager publishes its
// ip-mode. The old Service is left as it was.
func TestTofuVolcengineReplacement(t *testing.T) {
	tofuBinary(t)
	s := server.Get(t)
	ns := s.Namespace(t)
	ctx := context.Background()
	c := s.Client()
	for _, n := range []string{"tf-node-1", "tf-node-2"} {
		if _, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatal(err)
		}
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: ns, Annotations: map[string]string{
			volcengine.AnnotationIPMode: "Proxy", volcengine.AnnotationAddressType: "PRIVATE", "loopguard.io/clients": "app=billing"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "ledger"},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Ports:                 []corev1.ServicePort{{Name: "grpc", Port: 9000, Protocol: corev1.ProtocolTCP}}},
	}
	created, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	proxy := corev1.LoadBalancerIPModeProxy
	created.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.168.10.11", IPMode: &proxy}}
	if _, err := c.CoreV1().Services(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, p := range []struct{ name, app string }{{"ledger-1", "ledger"}, {"billing-1", "billing"}} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: ns, Labels: map[string]string{"app": p.app}},
			Spec: corev1.PodSpec{NodeName: "tf-node-1", Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app"}}}}
		got, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.0.1.%d", 10+i),
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := vclbtest.NewServer(&vclbtest.Options{Credentials: []vclbtest.Credential{{AccessKeyID: vkeKeyID, SecretAccessKey: vkeSecret}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	if _, err := srv.AddLoadBalancer(vclbtest.LoadBalancer{ID: "clb-tf-ledger", Type: vclbtest.TypePrivate, EniAddress: "192.168.10.11",
		Listeners: []vclbtest.Listener{{Protocol: "TCP", Port: 9000, ProxyProtocolType: vclbtest.ProxyProtocolOff}}}); err != nil {
		t.Fatal(err)
	}

	w := newWorkdir(t, writeKubeconfig(t, s.Config()))
	w.secrets = []string{vkeSecret}
	config := func(extra string) string {
		hcl := vkeConfig(srv.Endpoint(), vkeSecret, ns)
		hcl = strings.Replace(hcl, `resource "loopguard_loopback_protection" "api" {`, `resource "loopguard_loopback_protection" "ledger" {`, 1)
		return strings.Replace(hcl, `  name      = "api"`, `  name      = "ledger"`+"\n"+extra, 1)
	}
	w.write(config(""))
	w.ok("init", "-input=false")
	out := w.ok("apply", "-auto-approve", "-input=false")
	if st := w.state(); st["remedy"] != "node-separation" || st["path"] != "Proxy" {
		t.Fatalf("default policy: want node-separation on Proxy, got %v\n%s", st, out)
	}
	if out, code := w.planExit(); code != 0 || !strings.Contains(out, "podAntiAffinity") {
		t.Fatalf("plan after apply: want no changes and the anti-affinity as a warning\n%s", out)
	}

	w.write(config("  allow_disruptive = true"))
	out, code := w.planExit()
	if code != 2 || !strings.Contains(out, "# forces replacement") || !strings.Contains(out, `"Proxy" -> "VIP"`) || !strings.Contains(out, "must be replaced") {
		t.Fatalf("plan with disruption allowed: want path Proxy -> VIP forcing replacement\n%s", out)
	}

	// The stand-in for VKE's cloud-controller-manager: once the new Service exists, give it an
	// address and publish the ip-mode its annotation asks for.
	ccmCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for ccmCtx.Err() == nil {
			got, err := c.CoreV1().Services(ns).Get(ccmCtx, "ledger-vip", metav1.GetOptions{})
			if err == nil {
				mode := corev1.LoadBalancerIPMode(got.Annotations[volcengine.AnnotationIPMode])
				got.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.168.10.12", IPMode: &mode}}
				if _, err := c.CoreV1().Services(ns).UpdateStatus(ccmCtx, got, metav1.UpdateOptions{}); err == nil {
					return
				}
			}
			select {
			case <-ccmCtx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	w.ok("apply", "-auto-approve", "-input=false")
	vip, err := c.CoreV1().Services(ns).Get(ctx, "ledger-vip", metav1.GetOptions{})
	if err != nil || vip.Annotations[volcengine.AnnotationIPMode] != "VIP" {
		t.Fatalf("after the replacement: ledger-vip %v, %v", vip, err)
	}
	old, err := c.CoreV1().Services(ns).Get(ctx, "ledger", metav1.GetOptions{})
	if err != nil || old.Annotations[volcengine.AnnotationIPMode] != "Proxy" {
		t.Fatalf("the old Service changed: %v, %v", old, err)
	}
	if st := w.state(); st["path"] != "VIP" || st["remedy"] != "intercept-vip" {
		t.Fatalf("state after the replacement: %v", st)
	}
	if out, code := w.planExit(); code != 0 {
		t.Fatalf("plan after the replacement: want no changes\n%s", out)
	}
	w.noSecrets()
}

// TestTofuKubernetes: on a cloud without a dialect of its own, the one change is the
// Service's status.loadBalancer.ingress[].ipMode, which belongs to the
// cloud-controller-manager: the resource records the decision, sets nothing, and says in a
// warning what the cloud-controller-manager must publish. No cloud API, no credentials.
func TestTofuKubernetes(t *testing.T) {
	tofuBinary(t)
	s := server.Get(t)
	ns := s.Namespace(t)
	ctx := context.Background()
	c := s.Client()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "transcoder", Namespace: ns, Annotations: map[string]string{
			// backend-expects: none, or the cloud's Proxy stands (providers/kubernetes PlanStatus).
			"networking.gke.io/load-balancer-type": "Internal", "loopguard.io/lb-source-nat": "false", "loopguard.io/backend-expects": "none"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "transcoder"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	created, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	proxy := corev1.LoadBalancerIPModeProxy
	created.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.128.0.40", IPMode: &proxy}}
	if _, err := c.CoreV1().Services(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := newWorkdir(t, writeKubeconfig(t, s.Config()))
	w.write(fmt.Sprintf(`
terraform {
  required_providers {
    loopguard = { source = "loopguard/loopguard" }
  }
}

variable "kubeconfig" { type = string }

provider "loopguard" {
  cloud      = "kubernetes"
  kubeconfig = var.kubeconfig
  profile = <<-EOT
    apiVersion: loopguard.io/v1alpha1
    kind: ClusterProfile
    kubernetesVersion: v1.32.4
    proxyMode: iptables
    kubeProxyVersion: v1.32.4
  EOT
}

resource "loopguard_loopback_protection" "transcoder" {
  namespace = %q
  name      = "transcoder"
}
`, ns))
	w.ok("init", "-input=false")
	out := w.ok("apply", "-auto-approve", "-input=false")
	st := w.state()
	if st["remedy"] != "intercept-vip" || st["path"] != "VIP" || len(managedOf(st)) != 0 {
		t.Fatalf("state: %v\n%s", st, out)
	}
	out, code := w.planExit()
	if code != 0 || !strings.Contains(out, "for the cloud-controller-manager to publish") || !strings.Contains(out, "ipMode") {
		t.Fatalf("plan: want no changes and the ipMode for the cloud-controller-manager as a warning\n%s", out)
	}
	got, err := c.CoreV1().Services(ns).Get(ctx, "transcoder", metav1.GetOptions{})
	if err != nil || *got.Status.LoadBalancer.Ingress[0].IPMode != proxy || len(got.Annotations) != 3 {
		t.Fatalf("the provider wrote to a Service it does not own the status of: %v %v", got, err)
	}
	w.ok("destroy", "-auto-approve", "-input=false")
}
