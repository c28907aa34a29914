package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/loopguard/loopguard/adapters/kube"
	"github.com/loopguard/loopguard/adapters/manifest"
	"github.com/loopguard/loopguard/providers/gateway"
	"github.com/loopguard/loopguard/providers/tencent"
)

// liveOptions are the flags of the commands that read a live cluster (scan, apply).
type liveOptions struct {
	kubeconfig string
	context    string
	namespace  string
	// objects (apply) limits the plans to these Kind/namespace/name.
	objects []string
	dryRun  bool
	// coredns (apply): who carries out dns-steering (corednsPrint, corednsEdit, corednsTakeBack).
	coredns string
}

func addLiveFlags(cmd *cobra.Command, l *liveOptions) {
	f := cmd.Flags()
	f.StringVar(&l.kubeconfig, "kubeconfig", "", "the kubeconfig file; default: $KUBECONFIG, else ~/.kube/config, else the in-cluster service account")
	f.StringVar(&l.context, "context", "", "the kubeconfig context to use; default: its current context")
	f.StringVarP(&l.namespace, "namespace", "n", "", "read Services, Ingresses, EndpointSlices, Pods and TkeServiceConfigs of this namespace only; default: every namespace (Nodes, IngressClasses and kube-system's ConfigMaps are always read)")
}

// requestTimeout bounds one API request when the kubeconfig sets no timeout, so an unreachable
// server fails the command instead of hanging it.
const requestTimeout = 30 * time.Second

// Client-side rate limits when the kubeconfig sets none.
const (
	clientQPS   = 50
	clientBurst = 100
)

// tkeServiceConfigs are read with the other objects: TKE plans merge into them. A cluster that
// does not serve them (any other cloud) is read without them.
var tkeServiceConfigs = schema.GroupVersionResource{Group: tencent.ServiceConfigGroup, Version: tencent.ServiceConfigVersion, Resource: "tkeserviceconfigs"}

// connect loads the client configuration with client-go's standard rules (--kubeconfig, else
// $KUBECONFIG, else ~/.kube/config, else in-cluster) and names where it points: the context,
// or "in-cluster". Nothing of the configuration's credentials is ever printed.
func (l *liveOptions) connect(stderr io.Writer) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if l.kubeconfig != "" {
		rules.ExplicitPath = l.kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: l.context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			// client-go's own message ("try setting KUBERNETES_MASTER") names a variable
			// loopguard does not read; say what was looked for instead.
			return nil, "", usagef("%s", noClusterMessage(l.kubeconfig))
		}
		return nil, "", usagef("kubeconfig: %v", err)
	}
	where := l.context
	if where == "" {
		if raw, err := cc.RawConfig(); err == nil {
			where = raw.CurrentContext
		}
	}
	if where == "" {
		where = "in-cluster"
	}
	cfg.UserAgent = "loopguard/" + strings.TrimPrefix(versionString(), "loopguard ")
	if cfg.Timeout == 0 {
		cfg.Timeout = requestTimeout
	}
	if cfg.QPS == 0 && cfg.Burst == 0 && cfg.RateLimiter == nil {
		// client-go's default of 5 requests per second would make apply on a large cluster
		// (a few reads and a write per object) take minutes; the API server's priority and
		// fairness protects it, as it does from kubectl, which sets similar limits.
		cfg.QPS, cfg.Burst = clientQPS, clientBurst
	}
	// The API server's warnings (a deprecated field in an object written) are the user's to
	// read, as kubectl prints them, and not klog's.
	cfg.WarningHandler = rest.NewWarningWriter(stderr, rest.WarningWriterOptions{Deduplicate: true})
	return cfg, where, nil
}

// noClusterMessage says where loopguard looked for a cluster, in client-go's order, and how
// to point it at one.
func noClusterMessage(explicit string) string {
	var looked []string
	if explicit != "" {
		looked = append(looked, "--kubeconfig "+explicit+" (no cluster in it)")
	} else {
		looked = append(looked, "--kubeconfig (not given)")
	}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		// client-go reads ~/.kube/config only when $KUBECONFIG is unset.
		looked = append(looked, "$KUBECONFIG="+env+" (no cluster in it or no such file; ~/.kube/config is not read when it is set)")
	} else {
		looked = append(looked, "$KUBECONFIG (not set)", clientcmd.RecommendedHomeFile+" (no cluster in it or no such file)")
	}
	looked = append(looked, "the in-cluster service account (not running in a Pod: KUBERNETES_SERVICE_HOST is not set)")
	return "no cluster to talk to: loopguard looked for " + strings.Join(looked, ", ") +
		".\nPoint it at a cluster with --kubeconfig PATH (and --context NAME), or KUBECONFIG=PATH; " +
		"without a cluster, 'loopguard assess -f FOLDER' and 'loopguard plan -f FOLDER' read manifests, and 'loopguard demo' shows the whole job."
}

// load connects to the cluster, gathers its objects and prepares them as assess prepares
// files: what scan, apply and verify start from. Every error is an input error.
func (l *liveOptions) load(ctx context.Context, o *assessOptions, stderr io.Writer) (*rest.Config, *inputs, *Report, error) {
	cfg, where, err := l.connect(stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	set, err := l.gather(ctx, cfg, where, o.gatewayOptions())
	if err != nil {
		return nil, nil, nil, err
	}
	rep := newReport()
	in, err := o.prepare(set, rep)
	if err != nil {
		return nil, nil, nil, err
	}
	return cfg, in, rep, nil
}

// gather reads the cluster into the same Set manifests are read into, each object located at
// "context NAME", so the rest of the pipeline (profile, dialect detection, evaluation, report)
// is assess's.
func (l *liveOptions) gather(ctx context.Context, cfg *rest.Config, where string, gwOpts *gateway.Options) (*manifest.Set, error) {
	src := manifest.Source{Name: "context " + where}
	if where == "in-cluster" {
		src.Name = where
	}
	gwNamespaced, gwCluster := gatewayResources()
	opts := func(ns string) *kube.GatherOptions {
		return &kube.GatherOptions{Namespace: ns, Custom: append([]schema.GroupVersionResource{tkeServiceConfigs}, gwNamespaced...), ClusterCustom: gwCluster}
	}
	first := opts(l.namespace)
	// The ConfigMaps the namespace's Gateways name (Istio's parameters beside each Gateway, its
	// class defaults in istiod's namespace, --istio-namespace), and no other.
	first.ConfigMaps = func(read []runtime.Object) []kube.ConfigMapRef { return gatewayConfigMaps(read, gwOpts) }
	objs, err := kube.Gather(ctx, cfg, first)
	if err != nil {
		return nil, fmt.Errorf("read the cluster (%s): %w", src.Name, err)
	}
	if l.namespace != "" {
		// A Gateway's implementation may keep its Service (Envoy Gateway) or its parameters
		// (a GatewayClass's parametersRef) elsewhere: read those, and only those, too.
		read := objs
		for _, other := range gatewayNamespaces(read, gwOpts) {
			more, err := kube.Gather(ctx, cfg, opts(other))
			if err != nil {
				return nil, fmt.Errorf("read the cluster (%s, namespace %s for its Gateways): %w", src.Name, other, err)
			}
			objs = append(objs, forGateways(more, other, l.namespace, read)...)
		}
	}
	set := &manifest.Set{Objects: make([]manifest.Object, len(objs))}
	for i, o := range objs {
		set.Objects[i] = manifest.Object{Object: o, Source: src}
	}
	return set, nil
}

// serverVersion is the discovery client, for drivers whose prerequisites depend on the API
// server's version.
func serverVersion(cfg *rest.Config) (*discovery.DiscoveryClient, error) {
	return discovery.NewDiscoveryClientForConfig(cfg)
}

// parseObjects parses the --object values (Kind/namespace/name).
func (l *liveOptions) parseObjects() ([]ObjectRef, error) {
	var out []ObjectRef
	for _, s := range l.objects {
		parts := strings.Split(s, "/")
		if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
			return nil, usagef("--object %q: want Kind/namespace/name, e.g. Service/shop/checkout", s)
		}
		var kind string
		switch strings.ToLower(parts[0]) {
		case "service", "services", "svc":
			kind = "Service"
		case "ingress", "ingresses", "ing":
			kind = "Ingress"
		case "gateway", "gateways", "gtw":
			kind = "Gateway"
		default:
			return nil, usagef("--object %q: the kind is Service, Ingress or Gateway", s)
		}
		if l.namespace != "" && parts[1] != l.namespace {
			return nil, usagef("--object %q is outside --namespace %q", s, l.namespace)
		}
		out = append(out, ObjectRef{Kind: kind, Namespace: parts[1], Name: parts[2]})
	}
	return out, nil
}
