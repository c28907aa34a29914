package controller

import (
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// ManagerConfig is what ManagerOptions turns into controller-runtime manager options.
type ManagerConfig struct {
	// LeaderElection makes one replica at a time reconcile (a Lease named LeaderElectionID).
	LeaderElection bool
	// LeaderElectionNamespace defaults to the Pod's namespace (in-cluster) or kube-system.
	LeaderElectionNamespace string
	// MetricsAddr serves /metrics ("0" turns it off); default ":8080".
	MetricsAddr string
	// MetricsSecure serves /metrics over HTTPS (a self-signed certificate) only to callers the
	// API server authenticates and authorizes for the /metrics non-resource URL
	// (controller-runtime's filters.WithAuthenticationAndAuthorization; the ServiceAccount
	// needs create on tokenreviews and subjectaccessreviews, deploy/base/rbac.yaml).
	MetricsSecure bool
	// ProbeAddr serves /healthz and /readyz; default ":8081".
	ProbeAddr string
	// WebhookPort is where the admission webhooks are served (SetupWebhooks); default 9443,
	// with the serving certificate in $TMPDIR/k8s-webhook-server/serving-certs.
	WebhookPort int
	// ConfigMaps are Options.ConfigMaps: only their namespaces' ConfigMaps are cached.
	ConfigMaps []types.NamespacedName
	// Namespaces, when set, restricts the cache to these namespaces (cluster-scoped kinds stay
	// cluster-wide). Set it here rather than in the returned options' Cache.DefaultNamespaces:
	// only a cluster-wide Pod informer's store can be read directly, which the compact Pod
	// cache needs (cachedPod); a restricted cache keeps slimmed corev1.Pods instead.
	Namespaces []string
}

// serviceAccountNamespace is where a Pod finds its namespace; controller-runtime reads it
// when no leader election namespace is given.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// LeaderElectionID names the Lease the replicas elect a leader with.
const LeaderElectionID = "loopguard.loopguard.io"

// ManagerOptions returns manager options for the controller: leader election, the metrics and
// probe endpoints, and a cache that holds only what an evaluation reads (ConfigMaps of the
// named namespaces; Pods kept as cachedPods, which hold only their labels, node, affinity and
// readiness, all that placement reads, so 50,000 Pods cost little memory). The cache then
// answers no Get or List of corev1.Pods (cachedPod).
func ManagerOptions(cfg ManagerConfig) manager.Options {
	metricsAddr, probeAddr := cfg.MetricsAddr, cfg.ProbeAddr
	if metricsAddr == "" {
		metricsAddr = ":8080"
	}
	if probeAddr == "" {
		probeAddr = ":8081"
	}
	leaseNS := cfg.LeaderElectionNamespace
	if leaseNS == "" {
		if _, err := os.Stat(serviceAccountNamespace); err != nil {
			// Run from a laptop: controller-runtime finds no Pod namespace and refuses to
			// start; kube-system exists everywhere.
			leaseNS = metav1.NamespaceSystem
		}
	}
	cmNS := map[string]cache.Config{}
	for _, k := range cfg.ConfigMaps {
		cmNS[k.Namespace] = cache.Config{}
	}
	if len(cmNS) == 0 {
		// Nothing reads ConfigMaps; keep the informer (if one is ever asked for) small.
		cmNS[metav1.NamespaceSystem] = cache.Config{}
	}
	podTransform := newPodCompactor().compact
	var namespaces map[string]cache.Config
	if len(cfg.Namespaces) > 0 {
		podTransform = slimPod
		namespaces = map[string]cache.Config{}
		for _, ns := range cfg.Namespaces {
			namespaces[ns] = cache.Config{}
		}
	}
	metrics := metricsserver.Options{BindAddress: metricsAddr}
	if cfg.MetricsSecure {
		metrics.SecureServing = true
		metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return manager.Options{
		LeaderElection:                cfg.LeaderElection,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       leaseNS,
		LeaderElectionReleaseOnCancel: true,
		Metrics:                       metrics,
		HealthProbeBindAddress:        probeAddr,
		GracefulShutdownTimeout:       ptr(10 * time.Second),
		WebhookServer:                 webhook.NewServer(webhook.Options{Port: cfg.WebhookPort}),
		Cache: cache.Options{
			// managedFields are read from the live object at write time (core's ownership
			// checks), never from the cache; Services keep theirs, which VKE's dialect reads.
			DefaultNamespaces: namespaces,
			DefaultTransform:  stripManagedFields,
			ByObject: map[client.Object]cache.ByObject{
				&corev1.ConfigMap{}: {Namespaces: cmNS, Transform: stripManagedFields},
				&corev1.Pod{}:       {Transform: podTransform},
				&corev1.Node{}:      {Transform: slimNode},
			}},
	}
}

// stripManagedFields drops managedFields before an object enters the cache, except a
// LoadBalancer Service's: VKE's dialect asks who set its ip-mode annotation. The ClusterIP
// Services (most of a cluster's) are read for their spec only.
func stripManagedFields(obj any) (any, error) {
	if s, ok := obj.(*corev1.Service); ok {
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
			s.ManagedFields = nil
		}
		return obj, nil
	}
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// slimNode drops of a Node what no dialect reads: its managedFields and its list of
// container images (often the larger half of a Node object).
func slimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	n.ManagedFields = nil
	n.Status.Images = nil
	return n, nil
}

// slimPod keeps of a Pod what core.Cluster reads (labels, node, anti-affinity, phase and
// readiness) and drops the rest before it enters a namespace-restricted cache
// (ManagerConfig.Namespaces), which cannot hold cachedPods.
func slimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	c, _ := (&podCompactor{}).compact(p)
	return c.(*cachedPod).pod(), nil
}

func ptr[T any](v T) *T { return &v }
