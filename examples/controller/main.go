// Command controller runs loopguard in a cluster: it keeps every LoadBalancer Service and
// Ingress loop-safe with adapters/controller, reporting only unless --enforce is given.
//
//	go run ./examples/controller --provider tencent --profile profile.yaml --leader-elect
//
// It reads the kubeconfig the way kubectl does (--kubeconfig, $KUBECONFIG, ~/.kube/config, or
// the in-cluster service account); deploy/ runs it as a Deployment. docs/controller.md has the
// details.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/hashicorp/go-hclog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/loopguard/loopguard/adapters/controller"
	"github.com/loopguard/loopguard/adapters/verify"
	"github.com/loopguard/loopguard/adapters/verify/probe"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/gateway"
	"github.com/loopguard/loopguard/providers/kubernetes"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/volcengine"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "loopguard controller:", err)
		os.Exit(1)
	}
}

func run() error {
	provider := flag.String("provider", "", "the cloud: tencent, volcengine or kubernetes (plain KEP-1860 ipMode); default: the profile's provider, else kubernetes")
	profileFile := flag.String("profile", "", "a ClusterProfile YAML file (proxy mode, kube-proxy version, allowlists, declared clients, policy)")
	enforce := flag.Bool("enforce", false, "apply plans; without it loopguard only reports (Events, metrics, a condition)")
	leaderElect := flag.Bool("leader-elect", false, "elect one active replica through a Lease")
	leaseNS := flag.String("leader-election-namespace", "", "the Lease's namespace; default: the Pod's namespace in a cluster, kube-system outside")
	metricsAddr := flag.String("metrics-bind-address", ":8080", `where /metrics is served ("0" turns it off)`)
	metricsSecure := flag.Bool("metrics-secure", false, "serve /metrics over HTTPS, only to callers the API server authenticates and authorizes (get on the /metrics non-resource URL)")
	webhooks := flag.Bool("webhooks", false, "serve the admission webhooks on :9443 (certificates in /tmp/k8s-webhook-server/serving-certs; deploy/webhooks)")
	webhookPort := flag.Int("webhook-port", 9443, "with --webhooks: the port the webhooks are served on")
	denyAtRisk := flag.Bool("deny-at-risk", false, "with --webhooks: refuse at-risk Services and Ingresses instead of warning")
	probeAddr := flag.String("health-probe-bind-address", ":8081", "where /healthz and /readyz are served")
	doVerify := flag.Bool("verify", false, "verify LoadBalancer Services with probe Pods when their verdict turns at-risk and after a fix, and record what was observed as their loopguard.io/Verified condition (docs/controller.md, \"Verifying\"; deploy/components/verify)")
	verifyImage := flag.String("verify-image", "", "with --verify: the loopguard image the probe Pods run (its binary has the probe subcommand); required")
	verifyNS := flag.String("verify-namespace", "", "with --verify: the one namespace the probe Pods run in; default: $POD_NAMESPACE, else the Pod's own namespace")
	verifyInterval := flag.Duration("verify-interval", time.Hour, "with --verify: verify a Service at most once per interval")
	verifyGap := flag.Duration("verify-gap", 30*time.Second, "with --verify: at least this long between two verifications, one at a time")
	verifyAfterFix := flag.Duration("verify-after-fix", time.Minute, "with --verify and --enforce: how long after writing a fix the Service is verified (the cloud's controller carries it to the LB first)")
	verifyConns := flag.Int("verify-connections", probe.DefaultConnections, "with --verify: connections per LB address and probe Pod")
	verifyStart := flag.Duration("verify-start-timeout", 60*time.Second, "with --verify: how long a probe Pod may take to start")
	istioNS := flag.String("istio-namespace", gateway.DefaultIstioNamespace, "istiod's namespace, where Istio's GatewayClass defaults ConfigMaps (labelled gateway.istio.io/defaults-for-class) are read and watched for Istio Gateways")
	flag.Parse()
	gwOpts, err := gatewayOptions(*istioNS)
	if err != nil {
		return err
	}
	// controller-runtime's own logs (leader election, informers) go to stderr like loopguard's.
	ctrl.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{}))

	log := hclog.New(&hclog.LoggerOptions{Name: "loopguard", Level: hclog.Info})
	profile := core.ClusterProfile{}
	if *profileFile != "" {
		data, err := os.ReadFile(*profileFile)
		if err != nil {
			return err
		}
		p, err := core.ParseProfile(*profileFile, data)
		if err != nil {
			return err
		}
		profile = *p
	}
	switch {
	case *provider != "":
		profile.Provider = *provider
	case profile.Provider == "":
		profile.Provider = kubernetes.Name
	}
	*provider = profile.Provider

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	opts := &controller.Options{Profile: profile, Enforce: *enforce, Logger: log, Gateway: gwOpts}
	if *doVerify {
		if opts.Verify, err = verifyOptions(*verifyImage, *verifyNS, *verifyConns, *verifyStart); err != nil {
			return err
		}
		opts.Verify.Interval, opts.Verify.Gap, opts.Verify.AfterFix = *verifyInterval, *verifyGap, *verifyAfterFix
	}
	var p core.Provider
	switch *provider {
	case tencent.Name:
		// TKE's controllers' versions and its TkeServiceConfig CRD decide which remedies apply.
		opts.ConfigMaps = []types.NamespacedName{
			{Namespace: tencent.ControllerNamespace, Name: tencent.ServiceControllerConfigMap},
			{Namespace: tencent.ControllerNamespace, Name: tencent.IngressControllerConfigMap},
		}
		opts.Custom = []schema.GroupVersionKind{{Group: tencent.ServiceConfigGroup, Version: tencent.ServiceConfigVersion, Kind: tencent.ServiceConfigKind}}
		p, err = tencent.NewProvider(&tencent.DriverOptions{Allowlists: profile.Allowlists})
	case volcengine.Name:
		var dc *discovery.DiscoveryClient
		if dc, err = discovery.NewDiscoveryClientForConfig(cfg); err == nil {
			p, err = volcengine.NewProvider(&volcengine.DriverOptions{ServerVersion: dc, Logger: log})
		}
	case kubernetes.Name:
		p = kubernetes.NewProvider(nil)
	default:
		return fmt.Errorf("--provider %q: want tencent, volcengine or kubernetes", *provider)
	}
	if err != nil {
		return err
	}

	mgr, err := ctrl.NewManager(cfg, controller.ManagerOptions(controller.ManagerConfig{
		LeaderElection: *leaderElect, LeaderElectionNamespace: *leaseNS, MetricsAddr: *metricsAddr, MetricsSecure: *metricsSecure, WebhookPort: *webhookPort, ProbeAddr: *probeAddr, ConfigMaps: opts.ConfigMaps}))
	if err != nil {
		return err
	}
	c, err := controller.Setup(mgr, p, opts)
	if err != nil {
		return err
	}
	if *webhooks {
		c.SetupWebhooks(mgr, &controller.WebhookOptions{DenyAtRisk: *denyAtRisk})
	}
	// Gateways, where the cluster serves Gateway API: judged through the Service their
	// implementation generates, fixed on the Gateway (docs/gateway.md).
	gc, err := controller.SetupGateways(mgr, p, opts)
	if err != nil {
		return err
	}
	if *webhooks && gc != nil {
		gc.SetupWebhook(mgr, &controller.WebhookOptions{DenyAtRisk: *denyAtRisk})
	}
	log.Info("starting", "provider", *provider, "enforce", *enforce, "leader-elect", *leaderElect, "verify", *doVerify)
	return mgr.Start(ctrl.SetupSignalHandler())
}

// gatewayOptions are the Gateway layer's options from the flags: --istio-namespace must be a
// namespace's name, so that a typo fails at start rather than watching nothing.
func gatewayOptions(istioNS string) (*gateway.Options, error) {
	if errs := validation.IsDNS1123Label(istioNS); len(errs) > 0 {
		return nil, fmt.Errorf("--istio-namespace %q: not a namespace name: %s", istioNS, strings.Join(errs, "; "))
	}
	return &gateway.Options{IstioNamespace: istioNS}, nil
}

// verifyOptions are --verify's: the probe namespace defaults to the controller's own, and
// there the probe Pods are owned by the controller's Pod (POD_NAME and POD_UID, from the
// downward API deploy/components/verify sets), so that removing the controller removes any
// it left.
func verifyOptions(image, ns string, conns int, start time.Duration) (*controller.VerifyOptions, error) {
	if image == "" {
		return nil, errors.New("--verify needs --verify-image, the loopguard image with the probe subcommand")
	}
	own := os.Getenv("POD_NAMESPACE")
	if own == "" {
		if b, err := os.ReadFile(serviceAccountNamespace); err == nil {
			own = strings.TrimSpace(string(b))
		}
	}
	if ns == "" {
		ns = own
	}
	if ns == "" {
		return nil, errors.New("--verify needs --verify-namespace outside a Pod")
	}
	o := &controller.VerifyOptions{Probe: verify.Options{Image: image, Namespace: ns, Connections: conns, StartTimeout: start}}
	if name, uid := os.Getenv("POD_NAME"), os.Getenv("POD_UID"); name != "" && uid != "" && ns == own {
		o.Probe.Owner = &metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: name, UID: types.UID(uid)}
	}
	return o, nil
}

// serviceAccountNamespace is where a Pod finds its own namespace (a variable for tests, which
// may themselves run in a Pod).
var serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
