package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/loopguard/loopguard/adapters/controller"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/internal/cluster/machinelb"
)

// deployOverlay is what an operator's overlay of deploy/webhooks says for this cluster: the
// image they built (deploy/Dockerfile's build, imported on the nodes) and their ClusterProfile.
func deployOverlay(t *testing.T, profile string) string {
	t.Helper()
	abs, err := filepath.Abs("../webhooks")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// kustomize takes a base by a relative path only.
	base, err := filepath.Rel(dir, abs)
	if err != nil {
		t.Fatal(err)
	}
	name, tag, _ := strings.Cut(controllerImage, ":")
	files := map[string]string{
		"kustomization.yaml": fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
images:
  - name: ghcr.io/loopguard/loopguard-controller
    newName: %s
    newTag: %s
configMapGenerator:
  - name: loopguard-config
    namespace: loopguard-system
    behavior: replace
    files: [profile.yaml]
`, base, name, tag),
		"profile.yaml": profile,
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// warningCollector keeps the admission warnings the API server returns.
type warningCollector struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningCollector) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warningCollector) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.msgs
	w.msgs = nil
	return m
}

// testDeploy: deploy/webhooks as an operator applies it, with the locally built image, runs as
// Pods with the rendered ServiceAccount and RBAC: both replicas become Ready, the validating
// webhook answers the API server's admission calls (a warning on an at-risk LoadBalancer
// Service), the leader writes conditions and Events on the real Services, and deleting the
// leader Pod while it reconciles a burst of Services leaves the other replica to converge:
// every Service gets its verdict, none is written twice, none gets a second Event.
func (e *clusterEnv) testDeploy(t *testing.T) {
	ctx := t.Context()
	profile, err := os.ReadFile(e.profile)
	if err != nil {
		t.Fatal(err)
	}
	r := renderPath(t, deployOverlay(t, string(profile)), "a cluster overlay of deploy/webhooks")
	if got := r.deployment(t).Spec.Template.Spec.Containers[0].Image; got != controllerImage {
		t.Fatalf("rendered image %q, want %q", got, controllerImage)
	}
	admin, err := client.New(e.c.RESTConfig(), client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	// cert-manager (which deploy/webhooks needs) is not part of this cluster: the test does its
	// two jobs, the serving certificate's Secret and the CA in the webhook configuration.
	const host = "loopguard-webhook.loopguard-system.svc"
	crt, key, err := certutil.GenerateSelfSignedCertKey(host, nil, []string{host})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range r.objects {
		if _, ok := o.(*corev1.Namespace); !ok {
			continue
		}
		if err := admin.Create(ctx, o.(client.Object)); err != nil {
			t.Fatal(err)
		}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "loopguard-webhook-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": crt, "tls.key": key, "ca.crt": crt}}
	if err := admin.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	for _, o := range r.objects {
		switch x := o.(type) {
		case *corev1.Namespace:
			continue
		case *admissionregv1.ValidatingWebhookConfiguration:
			for i := range x.Webhooks {
				x.Webhooks[i].ClientConfig.CABundle = crt
			}
		case *admissionregv1.MutatingWebhookConfiguration:
			for i := range x.Webhooks {
				x.Webhooks[i].ClientConfig.CABundle = crt
			}
		}
		if err := admin.Create(ctx, o.(client.Object)); err != nil {
			t.Fatalf("create %T %s: %v", o, o.(client.Object).GetName(), err)
		}
	}
	t.Logf("installed %d rendered objects (and %d of cert-manager's kinds played by the test)", len(r.objects), len(r.foreign))

	d := r.deployment(t)
	eventually(t, "both replicas Ready", 120*time.Second, func() (bool, string) {
		got := &appsv1.Deployment{}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(d), got); err != nil {
			return false, err.Error()
		}
		return got.Status.ReadyReplicas == 2, fmt.Sprintf("%+v", got.Status)
	})
	pods, err := e.kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=loopguard"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		t.Logf("controller Pod %s on %s (service account %s): %s", p.Name, p.Spec.NodeName, p.Spec.ServiceAccountName, p.Status.Phase)
	}

	// The validating webhook, through the API server, the webhook Service and the Pods.
	warnings := &warningCollector{}
	cfg := e.c.RESTConfig()
	cfg.WarningHandler = warnings
	hooked := kubernetes.NewForConfigOrDie(cfg)
	e.namespace(t, "hooks")
	n := 0
	eventually(t, "an admission warning from loopguard's webhook", 60*time.Second, func() (bool, string) {
		n++
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "hooks", Name: fmt.Sprintf("hooked-%d", n)},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
		if _, err := hooked.CoreV1().Services("hooks").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return false, err.Error()
		}
		got := warnings.take()
		for _, w := range got {
			if strings.HasPrefix(w, "loopguard: Service hooks/"+svc.Name+": ") {
				t.Logf("admission warning: %s", w)
				return true, ""
			}
		}
		return false, fmt.Sprint(got)
	})

	// Conditions and Events on the Services of the LoadBalancer subtest.
	for name, status := range map[string]metav1.ConditionStatus{"loop": metav1.ConditionFalse, "snat": metav1.ConditionTrue} {
		eventually(t, "shop/"+name+"'s "+controller.ConditionType+" condition", 60*time.Second, func() (bool, string) {
			svc, err := e.kube.CoreV1().Services(lbNamespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			c := condition(svc)
			return c != nil && c.Status == status, fmt.Sprintf("%+v", c)
		})
		if n := loopguardEvents(t, e.kube, lbNamespace)[name]; n != 1 {
			t.Errorf("shop/%s: %d loopguard Events, want 1", name, n)
		}
	}

	e.failover(t)
}

func condition(svc *corev1.Service) *metav1.Condition {
	for i := range svc.Status.Conditions {
		if svc.Status.Conditions[i].Type == controller.ConditionType {
			return &svc.Status.Conditions[i]
		}
	}
	return nil
}

// loopguardEvents counts the Events loopguard reported per Service of ns (a series counts its
// occurrences).
func loopguardEvents(t *testing.T, kube kubernetes.Interface, ns string) map[string]int {
	t.Helper()
	evs, err := kube.EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, ev := range evs.Items {
		if ev.ReportingController != "loopguard" || ev.Regarding.Kind != "Service" {
			continue
		}
		n[ev.Regarding.Name] += occurrences(&ev)
	}
	return n
}

// loopguardReporters counts loopguard's Events per Service of ns and per reporting instance.
func loopguardReporters(t *testing.T, kube kubernetes.Interface, ns string) map[string]map[string]int {
	t.Helper()
	evs, err := kube.EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]map[string]int{}
	for _, ev := range evs.Items {
		if ev.ReportingController != core.FieldManager || ev.Regarding.Kind != "Service" {
			continue
		}
		if n[ev.Regarding.Name] == nil {
			n[ev.Regarding.Name] = map[string]int{}
		}
		n[ev.Regarding.Name][ev.ReportingInstance] += occurrences(&ev)
	}
	return n
}

func occurrences(ev *eventsv1.Event) int {
	if ev.Series != nil && ev.Series.Count > 1 {
		return int(ev.Series.Count)
	}
	return 1
}

// failover: a burst of Services, the leader Pod deleted as soon as it has judged the first of
// them, a second burst while the Lease changes hands; the other replica takes the Lease and
// converges. A watch on the Services records every change of loopguard's condition: each
// Service ends with its verdict, no change repeats the verdict before it (a write the new
// leader made again), no verdict is announced twice, and a Service created after the failover
// is judged and announced by the new leader.
func (e *clusterEnv) failover(t *testing.T) {
	ctx := t.Context()
	const ns, count = "failover", 20
	e.namespace(t, ns)
	w, err := e.kube.CoreV1().Services(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// A verdict as loopguard wrote it; the transition time too, so a write that repeats a verdict
	// with a new time counts as a write of its own.
	type verdict struct{ status, reason, message, since string }
	var mu sync.Mutex
	history := map[string][]verdict{}
	repeats := map[string]int{}
	firstVerdict := make(chan struct{})
	var once sync.Once
	go func() {
		for ev := range w.ResultChan() {
			svc, ok := ev.Object.(*corev1.Service)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			c := condition(svc)
			if c == nil {
				continue
			}
			v := verdict{string(c.Status), c.Reason, c.Message, c.LastTransitionTime.UTC().Format(time.RFC3339)}
			mu.Lock()
			h := history[svc.Name]
			if len(h) == 0 || h[len(h)-1] != v {
				history[svc.Name] = append(h, v)
				once.Do(func() { close(firstVerdict) })
			} else if ev.Type == watch.Modified {
				// The object changed, and loopguard's condition says the same: only a write
				// that changed another field (the CCM's status) or the condition's
				// lastTransitionTime; the latter would be loopguard repeating itself.
				repeats[svc.Name]++
			}
			mu.Unlock()
		}
	}()

	leader := func() string {
		l, err := e.kube.CoordinationV1().Leases(namespace).Get(ctx, controller.LeaderElectionID, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		id, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
		return id
	}
	first := leader()
	if first == "" {
		t.Fatal("no leader holds the Lease")
	}
	var created atomic.Int32
	create := func(from, to int) {
		for i := from; i < to; i++ {
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("svc-%02d", i), Annotations: private(map[string]string{
					machinelb.AnnotationForwarding: string(machinelb.DNAT), machinelb.AnnotationIPMode: "Proxy", "loopguard.io/lb-source-nat": "false"})},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
					Selector: map[string]string{"app": "none"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
			}
			if _, err := e.kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			created.Add(1)
		}
	}
	// The leader Pod is deleted the moment the watch sees its first verdict, while the burst is
	// still being created: the rest is in its queue, in flight, or not yet created.
	type deletion struct {
		created, judged int
		err             error
	}
	deleted := make(chan deletion, 1)
	go func() {
		select {
		case <-firstVerdict:
		case <-ctx.Done():
			deleted <- deletion{err: ctx.Err()}
			return
		}
		err := e.kube.CoreV1().Pods(namespace).Delete(ctx, first, metav1.DeleteOptions{})
		mu.Lock()
		judged := len(history)
		mu.Unlock()
		deleted <- deletion{int(created.Load()), judged, err}
	}()
	create(0, count)
	var d deletion
	select {
	case d = <-deleted:
	case <-time.After(60 * time.Second):
		t.Fatalf("the leader %s judged none of %d Services within 60s", first, count)
	}
	if d.err != nil {
		t.Fatal(d.err)
	}
	t.Logf("deleted the leader %s mid-reconcile: %d of %d Services created, %d judged", first, d.created, count, d.judged)
	eventually(t, "another replica leads", 90*time.Second, func() (bool, string) {
		l := leader()
		return l != "" && l != first, "leader " + l
	})
	t.Logf("new leader %s", leader())
	eventually(t, "every Service judged", 120*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		for i := range count {
			if h := history[fmt.Sprintf("svc-%02d", i)]; len(h) == 0 || h[len(h)-1].status != string(metav1.ConditionFalse) {
				return false, fmt.Sprintf("svc-%02d: %v", i, h)
			}
		}
		return true, ""
	})
	// The new leader's first pass over what it found is over once it has judged a Service
	// created after it took over: its informers queued every existing one before this one.
	sentinel := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sentinel"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := e.kube.CoreV1().Services(ns).Create(ctx, sentinel, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new leader judges a Service created after it took over", 60*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(history["sentinel"]) > 0, ""
	})
	events := loopguardEvents(t, e.kube, ns)
	// Which replica announced what (client-go's reportingInstance: the controller's name and
	// the Pod's hostname, its name): the Service created after the failover is the new leader's.
	second := leader()
	byReplica := map[string]int{}
	for name, by := range loopguardReporters(t, e.kube, ns) {
		for inst, n := range by {
			if name == "sentinel" && inst != core.FieldManager+"-"+second {
				t.Errorf("sentinel: %d Events from %s, want every one from the new leader %s", n, inst, second)
			}
			byReplica[strings.TrimPrefix(inst, core.FieldManager+"-")] += n
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var names []string
	lost := 0
	for name := range history {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if name == "sentinel" {
			continue
		}
		h := history[name]
		switch {
		case events[name] > len(h):
			t.Errorf("%s: %d loopguard Events for %d verdicts %v: an Event was repeated", name, events[name], len(h), h)
		case events[name] < len(h):
			// Not loopguard's to prevent: an Event the old leader records while it shuts down
			// is sent in a goroutine of client-go's events.k8s.io broadcaster
			// (tools/events/event_broadcaster.go, recordToSink, v0.37.2) whose context
			// controller-runtime's shutdown cancels (pkg/internal/recorder, Provider.Stop,
			// v0.25.3). The verdict itself, the condition, is not lost.
			lost++
			t.Logf("%s: %d loopguard Events for %d verdicts: the dying leader's last Event was not delivered", name, events[name], len(h))
		}
		if len(h) > 2 {
			t.Errorf("%s: %d verdicts %v, want at most 2 (not provisioned, then at risk)", name, len(h), h)
		}
	}
	svcs, err := e.kube.CoreV1().Services(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs.Items {
		if s.Name == "sentinel" {
			continue
		}
		c := condition(&s)
		if c == nil || c.Status != metav1.ConditionFalse {
			t.Errorf("%s: condition %+v, want at risk", s.Name, c)
		}
	}
	t.Logf("failover: %d Services, verdict changes %v, condition-unchanged updates %v, Events %v (%d undelivered), Events by replica %v",
		count, lens(history), repeats, events, lost, byReplica)
}

func lens[T any](m map[string][]T) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[k] = len(v)
	}
	return out
}
