package controller

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/tencent"
)

// warnings collects the API server's warning headers, as kubectl prints them.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

// webhookEnv starts a kube-apiserver of its own that calls loopguard's webhooks over TLS
// (envtest's WebhookInstallOptions), configured as deploy/ configures them: failurePolicy
// Ignore and a short timeout.
func webhookEnv(t *testing.T) *envtest.Environment {
	t.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		t.Skip(apiserver.SkipMessage)
	}
	ignore, none, timeout := admissionregv1.Ignore, admissionregv1.SideEffectClassNone, int32(5)
	svcRule := admissionregv1.RuleWithOperations{Operations: []admissionregv1.OperationType{admissionregv1.Create},
		Rule: admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}}}
	validateRules := []admissionregv1.RuleWithOperations{
		{Operations: []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update},
			Rule: admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}}},
		{Operations: []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update},
			Rule: admissionregv1.Rule{APIGroups: []string{"networking.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"ingresses"}}},
	}
	path := func(p string) admissionregv1.WebhookClientConfig {
		return admissionregv1.WebhookClientConfig{Service: &admissionregv1.ServiceReference{Namespace: "loopguard-system", Name: "loopguard-webhook", Path: &p}}
	}
	api := &envtest.APIServer{Path: filepath.Join(dir, "kube-apiserver")}
	args := api.Configure()
	// As internal/apiserver starts it (TESTING.md §2): no endpoint reconciler on a host
	// without a default route.
	args.Set("endpoint-reconciler-type", "none")
	args.Set("advertise-address", "127.0.0.1")
	never := false
	env := &envtest.Environment{
		ControlPlane:       envtest.ControlPlane{APIServer: api, Etcd: &envtest.Etcd{Path: filepath.Join(dir, "etcd")}},
		UseExistingCluster: &never,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			MutatingWebhooks: []*admissionregv1.MutatingWebhookConfiguration{{
				ObjectMeta: metav1.ObjectMeta{Name: "loopguard"},
				Webhooks: []admissionregv1.MutatingWebhook{{Name: "services.mutate.loopguard.io", ClientConfig: path(MutatePath),
					Rules: []admissionregv1.RuleWithOperations{svcRule}, FailurePolicy: &ignore, SideEffects: &none,
					TimeoutSeconds: &timeout, AdmissionReviewVersions: []string{"v1"}}},
			}},
			ValidatingWebhooks: []*admissionregv1.ValidatingWebhookConfiguration{{
				ObjectMeta: metav1.ObjectMeta{Name: "loopguard"},
				Webhooks: []admissionregv1.ValidatingWebhook{{Name: "exposures.validate.loopguard.io", ClientConfig: path(ValidatePath),
					Rules: validateRules, FailurePolicy: &ignore, SideEffects: &none,
					TimeoutSeconds: &timeout, AdmissionReviewVersions: []string{"v1"}}},
			}},
		},
	}
	if _, err := env.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return env
}

// TestAdmissionOverTLS: the real API server calls the webhooks. In enforcing mode the mutating
// webhook sets TKE's prevent-loopback on a Service being created in an IPVS cluster whose
// kube-proxy supports it (so it is created loop-safe, no warning); in report-only mode the
// validating webhook admits an at-risk Service with a warning kubectl would print; with
// DenyAtRisk it refuses it; and with loopguard down, failurePolicy Ignore admits it.
func TestAdmissionOverTLS(t *testing.T) {
	env := webhookEnv(t)
	wo := env.WebhookInstallOptions
	run := func(enforce bool, opts *WebhookOptions) func() {
		mo := ManagerOptions(ManagerConfig{MetricsAddr: "0", ProbeAddr: "0", ConfigMaps: tkeConfigMaps})
		mo.WebhookServer = webhook.NewServer(webhook.Options{Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir})
		skip := true
		mo.Controller.SkipNameValidation = &skip
		mgr, err := manager.New(env.Config, mo)
		if err != nil {
			t.Fatal(err)
		}
		p, err := tencent.NewProvider(nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Setup(mgr, p, &Options{Profile: ipvs, Enforce: enforce, ConfigMaps: tkeConfigMaps, Registerer: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		c.SetupWebhooks(mgr, opts)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		}
	}

	w := &warnings{}
	cfg := *env.Config
	cfg.WarningHandler = w
	cs, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := func(name string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Annotations: map[string]string{tencent.AnnotationInternalSubnet: "subnet-1a2b3c4d"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
				Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
	}
	// create retries until the webhook server answers (it starts with the manager): until
	// then failurePolicy Ignore admits without calling it, which the check tells apart.
	create := func(name string, ready func(*corev1.Service, []string) bool) (*corev1.Service, []string, error) {
		deadline := time.Now().Add(wait)
		for i := 0; ; i++ {
			n := name
			if i > 0 {
				n = name + "-" + string(rune('a'+i%26)) + time.Now().Format("050000")
			}
			got, err := cs.CoreV1().Services("default").Create(ctx, svc(n), metav1.CreateOptions{})
			ws := w.take()
			if err != nil || ready(got, ws) || time.Now().After(deadline) {
				return got, ws, err
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// Enforcing: created with prevent-loopback, and so no warning.
	stop := run(true, nil)
	got, ws, err := create("mutated", func(s *corev1.Service, _ []string) bool {
		return s.Annotations[tencent.AnnotationPreventLoopback] == "true"
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations[tencent.AnnotationPreventLoopback] != "true" {
		t.Fatalf("the mutating webhook did not set prevent-loopback: %v", got.Annotations)
	}
	for _, x := range ws {
		if strings.Contains(x, "at-risk") {
			t.Errorf("a loop-safe Service got an at-risk warning: %q", x)
		}
	}
	stop()

	// Report-only: admitted unchanged, with the verdict as a warning.
	stop = run(false, nil)
	got, ws, err = create("warned", func(_ *corev1.Service, ws []string) bool { return len(ws) > 0 })
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Annotations[tencent.AnnotationPreventLoopback]; ok {
		t.Errorf("report-only mode mutated the Service: %v", got.Annotations)
	}
	if len(ws) != 1 || !strings.Contains(ws[0], "loopguard: Service default/") || !strings.Contains(ws[0], "risk at-risk") {
		t.Errorf("warnings = %q, want the at-risk verdict", ws)
	}
	stop()

	warned := got.Name

	// DenyAtRisk: refused.
	stop = run(false, &WebhookOptions{DenyAtRisk: true})
	_, _, err = create("denied", func(*corev1.Service, []string) bool { return false })
	if err == nil || !strings.Contains(err.Error(), "risk at-risk") {
		t.Errorf("DenyAtRisk admitted an at-risk Service: %v", err)
	}
	// An update of an at-risk Service that does not change its risk (a label) is neither
	// refused nor warned about: DenyAtRisk refuses only what introduces or worsens a risk.
	// The running controller writes this Service too (its verdict), so a read-then-update can
	// meet a conflict, which is optimistic concurrency, not the webhook: read again and retry,
	// as a client does.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		old, err := cs.CoreV1().Services("default").Get(ctx, warned, metav1.GetOptions{})
		if err != nil {
			return err
		}
		old.Labels = map[string]string{"team": "storefront"}
		_, err = cs.CoreV1().Services("default").Update(ctx, old, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Errorf("DenyAtRisk refused an update that leaves the risk as it was: %v", err)
	}
	if ws := w.take(); len(ws) > 0 {
		t.Errorf("an update that leaves the verdict as it was warned: %q", ws)
	}
	stop()

	// loopguard down: failurePolicy Ignore admits.
	start := time.Now()
	if _, err := cs.CoreV1().Services("default").Create(ctx, svc("unguarded"), metav1.CreateOptions{}); err != nil {
		t.Errorf("with loopguard down the Service was refused: %v", err)
	}
	t.Logf("create with the webhook down took %v", time.Since(start).Round(time.Millisecond))
}
