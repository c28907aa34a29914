package controller

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

// The convergence benchmark runs the real controller-runtime manager against a real
// kube-apiserver (envtest), not the reconciler with a fake client: the figures are about the
// controller's workqueue, its N workers, its informers and its writes of the verdict as much as
// about the driver, and a fake client would hide the API server's share of the time. The cloud
// is clbtest behind the official SDK client, with its default limit of 20 requests per second
// per action and tasks of 1–3 s, on a scaled clock: every cloud duration (the server's clock,
// the driver's rate limit, poll interval and backoff) runs Scale times faster than real time,
// so the ratios hold while the run takes seconds. Reported times are in cloud seconds.
const (
	convergeServices  = 1000
	convergeCLBs      = 200
	convergeListeners = convergeServices / convergeCLBs // 5 per CLB, one per Service
	convergeTaskMin   = time.Second
	convergeTaskMax   = 3 * time.Second
	// Per Service the direct mode reads the CLB's listeners to plan, reads the listener again
	// right before writing (already on is success, nothing written) and once more after the
	// task to verify; it writes once and polls the task at least once.
	convergeReadsPerService = 3
)

// convergeEnv names the environment variables that tune the benchmark.
const (
	envConvergeScale   = "LOOPGUARD_CONVERGE_SCALE"   // cloud seconds per real second; default 5
	envConvergeWorkers = "LOOPGUARD_CONVERGE_WORKERS" // the controller's N; default 200, one per CLB
	envConvergeSerial  = "LOOPGUARD_CONVERGE_SERIAL"  // Services of the one-at-a-time sample; default 40
)

func envInt(b *testing.B, name string, def int) int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// scaledClock is the cloud's clock: it runs scale times faster than real time from start.
type scaledClock struct {
	start time.Time
	scale float64
}

func (c scaledClock) Now() time.Time {
	return c.start.Add(time.Duration(float64(time.Since(c.start)) * c.scale))
}

// cloud converts a cloud duration to real time.
func (c scaledClock) real(d time.Duration) time.Duration { return time.Duration(float64(d) / c.scale) }

// cloudSeconds converts a real duration to cloud seconds.
func (c scaledClock) cloudSeconds(d time.Duration) float64 { return d.Seconds() * c.scale }

// convergeRun is one manager with the controller in enforcing, direct mode over n Services of
// one namespace on their own clbtest server.
type convergeRun struct {
	b     *testing.B
	srv   *apiserver.Server
	clock scaledClock
	cloud *clbtest.Server
	c     *Controller
	ns    string
	n     int

	reconciled atomic.Int64
	logs       *lineCounter
	reg        *prometheus.Registry
	stop       func()

	mu   sync.Mutex
	done map[objectID]time.Time // when each Service's reconcile first ended
}

// BenchmarkConverge converges 1,000 LoadBalancer Services on 200 CLBs (5 listeners each) in
// the Tencent direct mode through the controller's workqueue, then runs one-at-a-time on a
// sample and a second pass, and prints the figures in one line. It takes about two minutes
// of real time at the default scale, so it is skipped under -short; `make bench-converge`
// runs it.
func BenchmarkConverge(b *testing.B) {
	if testing.Short() {
		b.Skip("long: run with make bench-converge")
	}
	scale := float64(envInt(b, envConvergeScale, 5))
	workers := envInt(b, envConvergeWorkers, convergeCLBs)
	sample := envInt(b, envConvergeSerial, 40)
	srv := apiserver.Start(b, apiserver.WithCRDPaths("../../providers/tencent/crds"),
		// 1,000 LoadBalancer Services need more cluster IPs than envtest's /24.
		apiserver.WithFlag("service-cluster-ip-range", "10.0.0.0/16"))
	for i := range 3 {
		if _, err := srv.Client().CoreV1().Nodes().Create(context.Background(),
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}

	for b.Loop() {
		// N workers, every Service.
		run := startConverge(b, srv, scale, convergeServices, workers)
		wall := run.waitConverged()
		run.stop()
		calls := run.cloud.Calls()

		// One at a time: one worker on a sample, the same per-Service work; the time from the
		// first Service done to the last, per Service, scaled up (the manager's start-up,
		// paid once, is left out).
		one := startConverge(b, srv, scale, sample, 1)
		one.waitConverged()
		one.stop()
		serial := one.perService() * convergeServices

		// Second pass: a new manager (empty workqueue, informers listing everything again)
		// over the converged cloud and cluster.
		run.cloud.ResetCalls()
		second := run.restart(workers)
		second.waitReconciled()
		secondWrites := len(second.cloud.Writes()) + int(second.writes())
		second.stop()
		if e := counter(second.c.metrics.errors.WithLabelValues("Service")); e != 0 {
			b.Errorf("%v reconciles of the second pass failed:\n%s", e, second.logs.matching("reconcile failed", "retry later"))
		}

		bound := convergeBound()
		fmt.Printf("converge: %d services, %d CLBs, wall %.1f s, bound %.1f s (%.2f× bound), serial %.0f s (%.1f× faster), second pass %d writes\n",
			convergeServices, convergeCLBs, wall, bound, wall/bound, serial, serial/wall, secondWrites)
		b.ReportMetric(float64(workers), "workers")
		b.ReportMetric(wall, "wall-s")
		b.ReportMetric(wall/bound, "×bound")
		b.ReportMetric(serial/wall, "×serial")
		b.ReportMetric(float64(secondWrites), "second-pass-writes")
		throttled := 0
		perAction := map[string]int{}
		perCode := map[string]int{}
		for _, c := range calls {
			perAction[c.Action]++
			if c.ErrorCode != "" {
				perCode[c.Action+" "+c.ErrorCode]++
			}
			if c.ErrorCode == clbtest.CodeRequestLimitExceeded {
				throttled++
			}
		}
		b.Logf("cloud calls by action %v; errors %v", perAction, perCode)
		// loopguard_cloud_api_calls_total and _errors_total agree with what clbtest answered.
		series := gathered(b, run.reg)
		for action, n := range perAction {
			if got := series[`loopguard_cloud_api_calls_total{action="`+action+`",provider="tencent"}`]; got != float64(n) {
				b.Errorf("loopguard_cloud_api_calls_total for %s = %v, clbtest answered %d", action, got, n)
			}
		}
		for key, n := range perCode {
			action, code, _ := strings.Cut(key, " ")
			if got := series[`loopguard_cloud_api_errors_total{action="`+action+`",code="`+code+`",provider="tencent"}`]; got != float64(n) {
				b.Errorf("loopguard_cloud_api_errors_total for %s = %v, clbtest answered %d", key, got, n)
			}
		}
		b.ReportMetric(float64(throttled), "throttled-answers")
		b.ReportMetric(float64(run.logs.count("retry later")), "retry-errors")
		if secondWrites != 0 {
			b.Errorf("the second pass wrote %d times", secondWrites)
		}
		// A throttled answer the driver waited out and retried is only a debug line of the
		// driver's; one that reached the controller is a RetryError ("retry later") or a
		// failed reconcile.
		if n := run.logs.count("retry later"); n != 0 {
			b.Errorf("%d reconciles ended in a RetryError", n)
		}
		if e := counter(run.c.metrics.errors.WithLabelValues("Service")); e != 0 {
			b.Errorf("%v reconciles failed:\n%s", e, run.logs.matching("[ERROR]", "[WARN]", "retry later", "reconcile failed"))
		}
	}
}

// convergeBound is the least time the rate limits and the task latency allow, in cloud
// seconds: the busiest action (the listener reads, convergeReadsPerService per Service) at
// clbtest's default limit, plus one task's mean latency for the last write.
func convergeBound() float64 {
	perAction := map[string]int{
		"DescribeListeners":  convergeReadsPerService * convergeServices,
		"ModifyListener":     convergeServices,
		"DescribeTaskStatus": convergeServices,
	}
	busiest := 0
	for _, n := range perAction {
		busiest = max(busiest, n)
	}
	return float64(busiest)/clbtest.DefaultRateLimit + ((convergeTaskMin + convergeTaskMax) / 2).Seconds()
}

// startConverge seeds a clbtest server and n Services in a new namespace, then starts the
// manager with the controller.
func startConverge(b *testing.B, srv *apiserver.Server, scale float64, n, workers int) *convergeRun {
	b.Helper()
	clock := scaledClock{start: time.Now(), scale: scale}
	cloud, err := clbtest.Start(&clbtest.Options{Now: clock.Now,
		// The SDK stamps requests with real time; the scaled clock runs ahead of it.
		MaxSkew:      24 * time.Hour,
		TaskDuration: convergeTaskMin, TaskDurationMax: convergeTaskMax,
		Allowlist: []clbtest.Capability{clbtest.L4SNAT}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cloud.Close() })
	clbs := max(n/convergeListeners, 1)
	for i := range clbs {
		id := fmt.Sprintf("lb-%08d", i)
		if _, err := cloud.AddLoadBalancer(clbtest.LoadBalancer{ID: id, Type: clbtest.LoadBalancerInternal, VIPs: []string{fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)}}); err != nil {
			b.Fatal(err)
		}
		for k := range convergeListeners {
			if _, err := cloud.AddListener(clbtest.Listener{LoadBalancerID: id, Protocol: clbtest.ProtocolTCP, Port: int64(8000 + k)}); err != nil {
				b.Fatal(err)
			}
		}
	}
	ns := srv.Namespace(b)
	createServices(b, srv.Client(), ns, n)
	run := &convergeRun{b: b, srv: srv, clock: clock, cloud: cloud, ns: ns, n: n}
	run.start(workers)
	return run
}

// createServices creates n LoadBalancer Services; Service i uses listener i%5 of CLB i/5, so
// the five Services of a CLB are next to each other in the workqueue, as a team's Services
// sharing one CLB would be, and contend for its one-task-at-a-time.
func createServices(b *testing.B, cs kubernetes.Interface, ns string, n int) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	next := atomic.Int64{}
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%04d", i), Annotations: map[string]string{
					tencent.AnnotationInternalSubnet: "subnet-1a2b3c4d",
					tencent.AnnotationLoadBalancerID: fmt.Sprintf("lb-%08d", i/convergeListeners),
				}}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": fmt.Sprintf("svc-%04d", i)},
					Ports: []corev1.ServicePort{{Port: int32(8000 + i%convergeListeners), Protocol: corev1.ProtocolTCP}}}}
				if _, err := cs.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// start builds the SDK client, the direct-mode provider and the manager, and starts it.
func (r *convergeRun) start(workers int) {
	b := r.b
	cpf := profile.NewClientProfile()
	cpf.HttpProfile.Endpoint = r.cloud.Endpoint()
	cpf.HttpProfile.Scheme = "HTTP"
	api, err := clb.NewClient(common.NewCredential(clbtest.DefaultSecretID, clbtest.DefaultSecretKey), clbtest.DefaultRegion, cpf)
	if err != nil {
		b.Fatal(err)
	}
	// Keep a connection per worker: the default transport keeps two idle connections per
	// host, and N workers would open and close connections on every call.
	api.WithHttpTransport(&http.Transport{MaxIdleConnsPerHost: workers + 8, IdleConnTimeout: time.Minute})
	r.logs = &lineCounter{}
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: r.logs})
	c := r.clock
	r.reg = prometheus.NewRegistry()
	onCall, err := CloudAPIMetrics(tencent.Name, r.reg)
	if err != nil {
		b.Fatal(err)
	}
	p, err := tencent.NewProvider(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: api, Logger: log, OnCall: onCall,
		Allowlists:       []core.Capability{tencent.CapL4SNAT},
		RateLimit:        tencent.DefaultRateLimit * c.scale,
		TaskPollInterval: c.real(tencent.DefaultTaskPollInterval),
		TaskTimeout:      c.real(tencent.DefaultTaskTimeout),
		Backoff:          tencent.Backoff{Initial: c.real(250 * time.Millisecond), Max: c.real(8 * time.Second), Budget: c.real(time.Minute)}})
	if err != nil {
		b.Fatal(err)
	}
	mo := ManagerOptions(ManagerConfig{MetricsAddr: "0", ProbeAddr: "0", ConfigMaps: tkeConfigMaps, Namespaces: []string{r.ns}})
	mo.Cache.ByObject[&corev1.ConfigMap{}] = cache.ByObject{Namespaces: map[string]cache.Config{"kube-system": {}}}
	skip := true
	mo.Controller = config.Controller{SkipNameValidation: &skip}
	mgr, err := manager.New(r.srv.Config(), mo)
	if err != nil {
		b.Fatal(err)
	}
	profile := core.ClusterProfile{Provider: tencent.Name, KubernetesVersion: "v1.37.2", ProxyMode: core.ProxyModeIPVS, KubeProxyVersion: "v1.20.6-tke.12",
		Allowlists: []core.Capability{tencent.CapL4SNAT}, Policy: core.Policy{Prefer: core.PreferLBFeatures, AllowTickets: true}}
	ctl, err := Setup(mgr, p, &Options{Profile: profile, Enforce: true, ConfigMaps: tkeConfigMaps, Workers: workers,
		Registerer: r.reg, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	r.done = map[objectID]time.Time{}
	ctl.evaluated = func(id objectID) {
		r.reconciled.Add(1)
		r.mu.Lock()
		if _, ok := r.done[id]; !ok {
			r.done[id] = time.Now()
		}
		r.mu.Unlock()
	}
	r.c = ctl
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				b.Errorf("manager: %v", err)
			}
		})
	}
	b.Cleanup(r.stop)
}

// restart runs a new manager and controller over the same namespace and cloud.
func (r *convergeRun) restart(workers int) *convergeRun {
	next := &convergeRun{b: r.b, srv: r.srv, clock: r.clock, cloud: r.cloud, ns: r.ns, n: r.n}
	next.start(workers)
	return next
}

// writes is everything the controller wrote: cloud and cluster changes and verdicts.
func (r *convergeRun) writes() float64 {
	var n float64
	for _, w := range []string{string(core.WriterCloud), string(core.WriterCluster), "verdict"} {
		n += counter(r.c.metrics.writes.WithLabelValues(w))
	}
	return n
}

// waitConverged waits until every Service's listener write has been applied and verified and
// its verdict published, and returns the cloud seconds from the first cloud call to then: the
// manager's start-up and informer sync, paid once and in real time whatever the scale, are
// left out.
func (r *convergeRun) waitConverged() float64 {
	r.b.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	cloud := r.c.metrics.writes.WithLabelValues(string(core.WriterCloud))
	verdicts := r.c.metrics.writes.WithLabelValues("verdict")
	for counter(cloud) < float64(r.n) || counter(verdicts) < float64(r.n) {
		if time.Now().After(deadline) {
			r.b.Fatalf("%v cloud writes and %v verdicts of %d after 10 min", counter(cloud), counter(verdicts), r.n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	end := r.clock.Now()
	calls := r.cloud.Calls()
	if len(calls) == 0 {
		r.b.Fatal("no cloud calls")
	}
	wall := end.Sub(calls[0].Time).Seconds()
	on := 0
	for _, l := range r.cloud.Snapshot().Listeners {
		if l.SnatEnable {
			on++
		}
	}
	if on != r.n {
		r.b.Fatalf("%d listeners have SNAT on, want %d", on, r.n)
	}
	return wall
}

// perService is the cloud seconds from the first Service's reconcile ending to the last's, per
// Service after the first.
func (r *convergeRun) perService() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var first, last time.Time
	for _, t := range r.done {
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	if len(r.done) < 2 {
		r.b.Fatalf("%d Services reconciled; need two to time one", len(r.done))
	}
	return r.clock.cloudSeconds(last.Sub(first)) / float64(len(r.done)-1)
}

// waitReconciled waits until the controller has reconciled every Service once.
func (r *convergeRun) waitReconciled() {
	r.b.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for r.reconciled.Load() < int64(r.n) {
		if time.Now().After(deadline) {
			r.b.Fatalf("%d of %d Services reconciled after 10 min", r.reconciled.Load(), r.n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lineCounter is a log sink that keeps only how many lines contained each word asked for.
type lineCounter struct {
	mu    sync.Mutex
	lines [][]byte
}

func (l *lineCounter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("[DEBUG]")) && !bytes.Contains(p, []byte("code=")) && !bytes.Contains(p, []byte("retry later")) && !bytes.Contains(p, []byte("reconcile failed")) {
		return len(p), nil // the driver's and controller's routine debug lines
	}
	l.mu.Lock()
	l.lines = append(l.lines, bytes.Clone(p))
	l.mu.Unlock()
	return len(p), nil
}

// matching returns the lines that contain any of words.
func (l *lineCounter) matching(words ...string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		for _, w := range words {
			if strings.Contains(string(line), w) {
				out = append(out, strings.TrimSpace(string(line)))
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

func (l *lineCounter) count(word string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(string(line), word) {
			n++
		}
	}
	return n
}
