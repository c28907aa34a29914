package test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/tencent"
)

// warnings collects the admission warnings the API server returns.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.msgs
	w.msgs = nil
	return m
}

// webhookRequests is controller-runtime's count of requests served on path.
func webhookRequests(t *testing.T, metrics, path string) int {
	t.Helper()
	n, err := webhookCount(metrics, path)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// webhookCount is webhookRequests for a condition polled while the metrics server may still be
// starting.
func webhookCount(metrics, path string) (int, error) {
	code, body := get("http://"+metrics+"/metrics", "")
	if code != http.StatusOK {
		return 0, fmt.Errorf("/metrics: %d %s", code, body)
	}
	n := 0
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "controller_runtime_webhook_requests_total{") && strings.Contains(l, `webhook="`+path+`"`) {
			f := strings.Fields(l)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			n += int(v)
		}
	}
	return n, nil
}

func lbService(ns, name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Annotations: map[string]string{tencent.AnnotationInternalSubnet: "subnet-1a2b3c4d"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
}

// TestRenderedWebhooksOverTLS registers deploy/enforce-webhooks' webhook configurations as
// rendered (only the client configuration points at the test's TLS listener instead of the
// in-cluster Service) on a real kube-apiserver, and checks what reaches loopguard: a
// LoadBalancer Service's create does and gets a warning; a ClusterIP Service's create, a
// kube-system Service's and an update that leaves the verdict as it was do not, or pass
// silently; with loopguard down, a create is not slowed beyond the webhooks' timeout.
func TestRenderedWebhooksOverTLS(t *testing.T) {
	r := render(t, "enforce-webhooks")
	srv := apiserver.Start(t, apiserver.WithCRDPaths("../../providers/tencent/crds"))
	admin, err := client.New(srv.Config(), client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	install(t, admin, r)
	ctx := context.Background()

	crt, key, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	logs, _, metrics, cmd := runController(t, srv, r, func(tmp string) {
		dir := filepath.Join(tmp, "k8s-webhook-server", "serving-certs")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for name, b := range map[string][]byte{"tls.crt": crt, "tls.key": key} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}, "--webhook-port="+strconv.Itoa(port), "--metrics-secure=false")

	url := func(path string) *string { u := fmt.Sprintf("https://127.0.0.1:%d%s", port, path); return &u }
	// A LoadBalancer Service's create calls the mutating webhook and the Service's
	// validating one: its worst case is the sum of their timeouts.
	var timeout int32
	for _, o := range r.objects {
		switch x := o.(type) {
		case *admissionregv1.ValidatingWebhookConfiguration:
			for i := range x.Webhooks {
				cc := &x.Webhooks[i].ClientConfig
				cc.URL, cc.Service, cc.CABundle = url(*cc.Service.Path), nil, crt
				if strings.HasPrefix(x.Webhooks[i].Name, "services.") {
					timeout += *x.Webhooks[i].TimeoutSeconds
				}
			}
			if err := admin.Create(ctx, x); err != nil {
				t.Fatal(err)
			}
		case *admissionregv1.MutatingWebhookConfiguration:
			for i := range x.Webhooks {
				cc := &x.Webhooks[i].ClientConfig
				cc.URL, cc.Service, cc.CABundle = url(*cc.Service.Path), nil, crt
				timeout += *x.Webhooks[i].TimeoutSeconds
			}
			if err := admin.Create(ctx, x); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, n := range []string{"node-1", "node-2"} {
		if err := admin.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	warn := &warnings{}
	cfg := srv.Config()
	cfg.WarningHandler = warn
	user, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}

	// The API server picks the configurations up shortly, the mutating and the validating
	// ones each through its own informer, so one can be in force while the other is not yet;
	// until loopguard answers, creates pass unjudged (failurePolicy Ignore). Each try creates a
	// new LoadBalancer Service until one was both mutated and validated, with a warning.
	i := 0
	var validated, mutated int
	eventually(t, "a LoadBalancer Service's create mutated, validated and warned about", 60*time.Second, func() (bool, string) {
		v0, err := webhookCount(metrics, "/loopguard/validate")
		if err != nil {
			return false, err.Error()
		}
		m0, err := webhookCount(metrics, "/loopguard/mutate")
		if err != nil {
			return false, err.Error()
		}
		i++
		if err := user.Create(ctx, lbService("shop", fmt.Sprintf("web-%d", i))); err != nil {
			return false, err.Error()
		}
		w := warn.take()
		validated, mutated = webhookRequests(t, metrics, "/loopguard/validate"), webhookRequests(t, metrics, "/loopguard/mutate")
		return validated > v0 && mutated > m0 && len(w) > 0 && strings.Contains(strings.Join(w, "\n"), "loopguard:"),
			fmt.Sprintf("requests served: validate %d→%d, mutate %d→%d; warnings %v", v0, validated, m0, mutated, w)
	})

	// A ClusterIP Service, a kube-system LoadBalancer Service: neither reaches loopguard.
	cip := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "internal"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "x"}, Ports: []corev1.ServicePort{{Port: 80}}}}
	if err := user.Create(ctx, cip); err != nil {
		t.Fatal(err)
	}
	if err := user.Create(ctx, lbService("kube-system", "dns-external")); err != nil {
		t.Fatal(err)
	}
	if v, m := webhookRequests(t, metrics, "/loopguard/validate"), webhookRequests(t, metrics, "/loopguard/mutate"); v != validated || m != mutated {
		t.Errorf("a ClusterIP or kube-system Service reached loopguard: validate %d→%d, mutate %d→%d", validated, v, mutated, m)
	}
	if w := warn.take(); len(w) > 0 {
		t.Errorf("warnings on objects loopguard does not judge: %v", w)
	}

	// An update that leaves the verdict as it was passes without a warning. A merge patch
	// without a resourceVersion, as kubectl label sends: the controller running beside writes
	// the same Service's status, so an Update of what was read a moment before can meet a
	// conflict (seen in CI with the cores busy). The API server retries a patch that meets a
	// concurrent write, admission included, so the update may be judged more than once.
	svc := &corev1.Service{}
	if err := user.Get(ctx, client.ObjectKey{Namespace: "shop", Name: fmt.Sprintf("web-%d", i)}, svc); err != nil {
		t.Fatal(err)
	}
	before := svc.DeepCopy()
	svc.Labels = map[string]string{"team": "storefront"}
	if err := user.Patch(ctx, svc, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	if v := webhookRequests(t, metrics, "/loopguard/validate"); v <= validated {
		t.Errorf("the update was not judged: validate %d→%d", validated, v)
	}
	if w := warn.take(); len(w) > 0 {
		t.Errorf("an update that leaves the verdict as it was warned: %v", w)
	}

	if out := logs.String(); strings.Contains(out, "forbidden") {
		t.Errorf("the controller was refused something as %s:\n%s", serviceAccount, out)
	}

	// loopguard down: the API server gets a refused connection and ignores the webhooks.
	_ = cmd.Process.Kill()
	_, _ = cmd.Process.Wait()
	start := time.Now()
	if err := user.Create(ctx, lbService("shop", "while-down")); err != nil {
		t.Fatal(err)
	}
	refused := time.Since(start)
	// loopguard hung: its port accepts connections and never answers.
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	start = time.Now()
	if err := user.Create(ctx, lbService("shop", "while-hung")); err != nil {
		t.Fatal(err)
	}
	hung := time.Since(start)
	t.Logf("a LoadBalancer Service's create with loopguard down took %s, with loopguard hung %s (the webhooks' timeouts sum to %d s)",
		refused.Round(time.Millisecond), hung.Round(time.Millisecond), timeout)
	// Half a second for the API server's own work on a loaded test machine.
	if limit := time.Duration(timeout)*time.Second + 500*time.Millisecond; refused > limit || hung > limit {
		t.Errorf("a create took %s (down) and %s (hung), beyond the %d s of the webhooks' timeouts", refused, hung, timeout)
	}
}
