package controller

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/tencent"
)

// The memory benchmark fills a real API server with a large cluster, starts the manager with
// the controller (report-only, the default) over all of it, and measures the process after
// the informers have synced and every LoadBalancer Service shows its verdict.
const (
	memNamespaces = 100
	memLBEvery    = 10 // every 10th Service is a LoadBalancer, the rest ClusterIP
	memPodsPer    = 5  // Pods per Service, selected by it
	memNodes      = 100
)

// memServices is 10,000 unless LOOPGUARD_MEMORY_SERVICES says otherwise (a quick look at a
// smaller cluster); there are memPodsPer Pods per Service.
var memServices = 10000

// envMemServices overrides memServices.
const envMemServices = "LOOPGUARD_MEMORY_SERVICES"

// BenchmarkInformerMemory reports the controller's resident memory with 10,000 Services and
// 50,000 Pods in its informers (goal: 150 MB), and the rate of no-op resyncs of its 1,000
// LoadBalancer Services with all of that in the cache. Filling the API server takes minutes,
// so it is skipped under -short; `make bench-scale` runs it.
//
// envtest runs no controllers: the Pods stay Pending on the nodes they name, and no
// EndpointSlices exist. The figures are of the whole test process (which also holds the
// client that created the objects), measured after a garbage collection that returns freed
// memory to the OS.
func BenchmarkInformerMemory(b *testing.B) {
	if testing.Short() {
		b.Skip("long: run with make bench-scale")
	}
	memServices = envInt(b, envMemServices, memServices)
	memPods := memServices * memPodsPer
	srv := apiserver.Start(b, apiserver.WithCRDPaths("../../providers/tencent/crds"),
		apiserver.WithFlag("service-cluster-ip-range", "10.0.0.0/16"))
	cfg := srv.Config()
	cfg.QPS, cfg.Burst = -1, 0 // the filling client: no client-side limit
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	began := time.Now()
	fillCluster(b, cs)
	fill := time.Since(began)
	before := measureMemory()

	for b.Loop() {
		mo := ManagerOptions(ManagerConfig{MetricsAddr: "0", ProbeAddr: "0", ConfigMaps: tkeConfigMaps})
		skip := true
		// Listing 50,000 Pods from envtest on a busy machine can pass controller-runtime's
		// default of 2 min for the controllers' caches to sync.
		mo.Controller = config.Controller{SkipNameValidation: &skip, CacheSyncTimeout: 15 * time.Minute}
		mgr, err := manager.New(srv.Config(), mo)
		if err != nil {
			b.Fatal(err)
		}
		p, err := tencent.NewProvider(nil)
		if err != nil {
			b.Fatal(err)
		}
		logs := &lineCounter{}
		c, err := Setup(mgr, p, &Options{Profile: ipvs, ConfigMaps: tkeConfigMaps, Registerer: prometheus.NewRegistry(),
			Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: logs})})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		started := time.Now()
		go func() { done <- mgr.Start(ctx) }()
		syncCtx, syncDone := context.WithTimeout(ctx, 15*time.Minute)
		// The controllers' informers start with the controllers, after the cache: ask for
		// each (which waits for its sync) before measuring, or "at sync" is before any Pod.
		for _, o := range []client.Object{&corev1.Service{}, &corev1.Pod{}, &corev1.Node{}, &discoveryv1.EndpointSlice{}, &networkingv1.Ingress{}} {
			if _, err := mgr.GetCache().GetInformer(syncCtx, o); err != nil {
				b.Fatalf("informer for %T: %v", o, err)
			}
		}
		if !mgr.GetCache().WaitForCacheSync(syncCtx) {
			b.Fatal("informers did not sync in 15 min")
		}
		syncDone()
		synced := time.Since(started)
		atSync := measureMemory()
		writeHeapProfile(b, "sync")
		lbs := memServices / memLBEvery
		verdicts := c.metrics.writes.WithLabelValues("verdict")
		deadline := time.Now().Add(20 * time.Minute)
		for counter(verdicts) < float64(lbs) {
			select {
			case err := <-done:
				b.Fatalf("the manager stopped: %v", err)
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) || counter(c.metrics.errors.WithLabelValues("Service")) > 0 {
				b.Fatalf("%v of %d verdicts after %s:\n%s", counter(verdicts), lbs, time.Since(started).Round(time.Second), logs.matching("reconcile failed"))
			}
		}
		converged := time.Since(started)
		steady := measureMemory()
		writeHeapProfile(b, "verdicts")

		// No-op resyncs: every LoadBalancer Service again, its verdict already shown.
		resync := time.Now()
		for i := range lbs {
			id := objectID{Kind: "Service", NamespacedName: types.NamespacedName{Namespace: memNamespace(i * memLBEvery), Name: memService(i * memLBEvery)}}
			if _, err := c.reconcile(context.Background(), id); err != nil {
				b.Fatal(err)
			}
		}
		rate := float64(lbs) / time.Since(resync).Seconds()
		if got := counter(verdicts); got != float64(lbs) {
			b.Errorf("no-op resyncs wrote %v verdicts", got-float64(lbs))
		}
		cancel()
		if err := <-done; err != nil {
			b.Errorf("manager: %v", err)
		}

		fmt.Printf("memory: %d services (%d LoadBalancer), %d pods, %d nodes in the informers: RSS %.0f MB at sync, %.0f MB after every verdict (goal 150 MB; %.0f MB before the manager started; anonymous %.0f MB, %.0f MB before), Go heap %.0f MB at sync, %.0f MB after every verdict; synced in %.1f s, every verdict in %.1f s; no-op resync %.0f reconciles/s\n",
			memServices, lbs, memPods, memNodes, atSync.rssMB, steady.rssMB, before.rssMB, steady.anonMB, before.anonMB, atSync.heapMB, steady.heapMB, synced.Seconds(), converged.Seconds(), rate)
		b.ReportMetric(steady.rssMB, "RSS-MB")
		b.ReportMetric(steady.heapMB, "heap-MB")
		b.ReportMetric(rate, "noop-reconciles/s")
		b.Logf("filled the API server in %s", fill.Round(time.Second))
	}
}

func memNamespace(i int) string { return fmt.Sprintf("team-%03d", i%memNamespaces) }
func memService(i int) string   { return fmt.Sprintf("svc-%05d", i) }

// fillCluster creates the nodes, namespaces, Services and Pods with 16 clients at once.
func fillCluster(b *testing.B, cs kubernetes.Interface) {
	b.Helper()
	ctx := context.Background()
	for i := range memNodes {
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%03d", i),
			Labels: map[string]string{"topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", i%3)}}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range memNamespaces {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: memNamespace(i)}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	parallel(b, memServices, func(i int) error {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: memService(i), Namespace: memNamespace(i),
			Labels: map[string]string{"app": memService(i), "team": memNamespace(i)}},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": memService(i)},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}, {Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP}}}}
		if i%memLBEvery == 0 {
			svc.Annotations = map[string]string{tencent.AnnotationInternalSubnet: "subnet-1a2b3c4d"}
			svc.Spec.Type = corev1.ServiceTypeLoadBalancer
		}
		_, err := cs.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{})
		return err
	})
	parallel(b, memServices*memPodsPer, func(i int) error {
		s := i / memPodsPer
		_, err := cs.CoreV1().Pods(memNamespace(s)).Create(ctx, memPod(s, i), metav1.CreateOptions{})
		return err
	})
}

// memPod is a Pod as a Deployment makes it: labels, one container with ports, environment,
// resources, probes and mounts, on a node.
func memPod(svc, i int) *corev1.Pod {
	env := make([]corev1.EnvVar, 12)
	for k := range env {
		env[k] = corev1.EnvVar{Name: fmt.Sprintf("SETTING_%02d", k), Value: fmt.Sprintf("value-%d-of-service-%d", k, svc)}
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 10}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", memService(svc), i), Namespace: memNamespace(svc),
			Labels:      map[string]string{"app": memService(svc), "team": memNamespace(svc), "pod-template-hash": "5d8f7c9b6d", "version": "v1.2.3"},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090", "kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}},
		Spec: corev1.PodSpec{
			NodeName: fmt.Sprintf("node-%03d", i%memNodes),
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.example.com/team/app:v1.2.3",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
				Env:   env,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")}},
				ReadinessProbe: probe, LivenessProbe: probe,
				VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}},
			}},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}},
		},
	}
}

// parallel runs create(0..n-1) on 16 goroutines and fails b on the first error.
func parallel(b *testing.B, n int, create func(i int) error) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := create(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}

// envHeapProfile names a folder where the benchmark writes the Go heap profile at sync
// (heap-sync.pprof) and after every verdict (heap-verdicts.pprof), for go tool pprof.
const envHeapProfile = "LOOPGUARD_MEMORY_PROFILE"

func writeHeapProfile(b *testing.B, when string) {
	dir := os.Getenv(envHeapProfile)
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, "heap-"+when+".pprof"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// memory: the resident set (rssMB), its anonymous part (anonMB: the heap, stacks and the
// runtime's own, without the binary's mapped pages) and the Go heap in use.
type memory struct{ rssMB, anonMB, heapMB float64 }

// measureMemory collects garbage, returns freed memory to the OS, and reads the process's
// resident set (VmRSS) and the Go heap in use.
func measureMemory() memory {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memory{rssMB: float64(procStatus("VmRSS:")) / (1 << 20), anonMB: float64(procStatus("RssAnon:")) / (1 << 20), heapMB: float64(ms.HeapInuse) / (1 << 20)}
}

// procStatus is a size in bytes from /proc/self/status (field "VmRSS:", "RssAnon:"; 0
// elsewhere).
func procStatus(field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte(field)); ok {
			f := bytes.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(string(f[0]), 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}
