package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	tcerr "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/errors"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"
	volcclb "github.com/volcengine/volcengine-go-sdk/service/clb"
	volcsdk "github.com/volcengine/volcengine-go-sdk/volcengine"
	"github.com/volcengine/volcengine-go-sdk/volcengine/credentials"
	"github.com/volcengine/volcengine-go-sdk/volcengine/session"
	"github.com/volcengine/volcengine-go-sdk/volcengine/volcengineerr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/loopguard/loopguard/adapters/kube"
	"github.com/loopguard/loopguard/adapters/terraform"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/gateway"
	"github.com/loopguard/loopguard/providers/kubernetes"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/volcengine"
)

// hostConfig is the provider block, read. id and secret live here only: never in a model the
// framework writes to the state, never in an error or a log line (the loggers mask them).
type hostConfig struct {
	cloud, region, endpoint string
	id, secret              string
	kubeconfig, context     string
	profile                 core.ClusterProfile
}

// host is what the provider hands its resources: how to reach the cluster and the cloud.
type host struct {
	cfg       hostConfig
	rest      *rest.Config
	discovery *discovery.DiscoveryClient
	tencent   *clb.Client  // with credentials on tencent
	volc      *volcclb.CLB // with credentials on volcengine
	secrets   []string     // masked in every log line
	newProv   func(context.Context, runtime.Object) (core.Provider, error)
}

// requestTimeout bounds one API request, so an unreachable server fails the plan instead of
// hanging it.
const requestTimeout = 30 * time.Second

func newHost(ctx context.Context, cfg hostConfig) (*host, terraform.Diagnostics) {
	h := &host{cfg: cfg}
	if cfg.secret != "" {
		h.secrets = []string{cfg.secret}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if cfg.kubeconfig != "" {
		rules.ExplicitPath = cfg.kubeconfig
	}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: cfg.context}).ClientConfig()
	if err != nil {
		return nil, terraform.Diagnostics{{Severity: terraform.Error, Attribute: "kubeconfig", Summary: "no cluster to talk to", Detail: err.Error()}}
	}
	rc.UserAgent = "terraform-provider-loopguard"
	if rc.Timeout == 0 {
		rc.Timeout = requestTimeout
	}
	h.rest = rc
	if h.discovery, err = discovery.NewDiscoveryClientForConfig(rc); err != nil {
		return nil, terraform.Diagnostics{{Severity: terraform.Error, Attribute: "kubeconfig", Summary: "no cluster to talk to", Detail: err.Error()}}
	}

	if (cfg.id == "") != (cfg.secret == "") {
		return nil, terraform.Diagnostics{{Severity: terraform.Error, Attribute: "credentials", Summary: "credentials need both id and secret"}}
	}
	withCreds := cfg.id != ""
	var warnings terraform.Diagnostics
	if withCreds && cfg.region == "" && cfg.cloud != cloudKubernetes {
		return nil, terraform.Diagnostics{{Severity: terraform.Error, Attribute: "region", Summary: "region is required with credentials", Detail: "The CLB API is regional: name the region of the cluster's load balancers."}}
	}
	if !withCreds && cfg.endpoint != "" && cfg.cloud != cloudKubernetes {
		return nil, terraform.Diagnostics{{Severity: terraform.Error, Attribute: "endpoint", Summary: "endpoint without credentials", Detail: "The endpoint is the cloud API's; loopguard calls it only with credentials."}}
	}
	switch cfg.cloud {
	case cloudTencent:
		var client *clb.Client
		if withCreds {
			if client, err = h.tencentClient(); err != nil {
				return nil, terraform.Diagnostics{{Severity: terraform.Error, Attribute: "endpoint", Summary: "cannot build the CLB client", Detail: err.Error()}}
			}
			if ds := h.probeTencent(ctx, client); ds.HasError() {
				return nil, ds
			}
			h.tencent = client
		}
		h.newProv = func(ctx context.Context, _ runtime.Object) (core.Provider, error) {
			opts := &tencent.DriverOptions{Allowlists: nil, Logger: terraform.Logger(ctx, &terraform.LoggerOptions{Mask: h.secrets})}
			if h.tencent != nil {
				// A host with CLB credentials owns the CLB: listener attributes are written
				// through the CLB API (docs/tke.md "direct mode" of the loopguard repository).
				opts.Mode, opts.CLB, opts.TaskPollInterval = tencent.ModeDirect, h.tencent, 200*time.Millisecond
			}
			return tencent.NewProvider(opts)
		}
	case cloudVolcengine:
		if withCreds {
			c, err := h.volcengineClient()
			if err != nil {
				return nil, terraform.Diagnostics{{Severity: terraform.Error, Attribute: "endpoint", Summary: "cannot build the CLB client", Detail: err.Error()}}
			}
			if ds := h.probeVolcengine(ctx, c); ds.HasError() {
				return nil, ds
			}
			h.volc = c
		}
		h.newProv = func(ctx context.Context, obj runtime.Object) (core.Provider, error) {
			var snap volcengine.CLBSnapshot
			if svc, ok := obj.(*corev1.Service); ok && h.volc != nil {
				// Facts the annotations do not carry (the address type of a reused CLB, PROXY
				// protocol), read first because the dialect's translation stays pure.
				var err error
				if snap, err = volcengine.NewCLBReader(h.volc, nil).Snapshot(ctx, svc); err != nil {
					return nil, err
				}
			}
			return volcengine.NewProvider(&volcengine.DriverOptions{Dialect: &volcengine.Options{CLBs: snap}, ServerVersion: h.discovery,
				Logger: terraform.Logger(ctx, &terraform.LoggerOptions{Mask: h.secrets})})
		}
	case cloudKubernetes:
		if withCreds {
			warnings = append(warnings, terraform.Diagnostic{Severity: terraform.Warning, Attribute: "credentials", Summary: "the kubernetes cloud makes no cloud API calls: credentials are not used"})
		}
		h.newProv = func(context.Context, runtime.Object) (core.Provider, error) { return kubernetes.NewProvider(nil), nil }
	default:
		return nil, terraform.Diagnostics{{Severity: terraform.Error, Attribute: "cloud", Summary: fmt.Sprintf("unknown cloud %q", cfg.cloud), Detail: "cloud must be " + strings.Join(clouds, ", ") + "."}}
	}
	// Every cloud's provider with the Gateway API layer: kind = "Gateway" is judged through the
	// Service its implementation generated and fixed where the implementation copies from
	// (providers/gateway); a Service or an Ingress is planned as without it.
	cloudProv := h.newProv
	h.newProv = func(ctx context.Context, obj runtime.Object) (core.Provider, error) {
		p, err := cloudProv(ctx, obj)
		if err != nil {
			return nil, err
		}
		return gateway.Wrap(p, nil), nil
	}
	return h, warnings
}

// endpoint splits the endpoint attribute into the host[:port][/path] the SDKs take and whether
// it is plain HTTP (a local test server).
func (h *host) endpointParts() (hostPath string, plain bool, err error) {
	e := h.cfg.endpoint
	switch {
	case strings.HasPrefix(e, "http://"):
		return strings.TrimPrefix(e, "http://"), true, nil
	case strings.HasPrefix(e, "https://"):
		return strings.TrimPrefix(e, "https://"), false, nil
	case strings.Contains(e, "://"):
		u, _ := url.Parse(e)
		scheme := e
		if u != nil {
			scheme = u.Scheme
		}
		return "", false, fmt.Errorf("endpoint %q: the scheme is http or https, not %q", e, scheme)
	}
	return e, false, nil
}

func (h *host) tencentClient() (*clb.Client, error) {
	cpf := profile.NewClientProfile()
	hp, plain, err := h.endpointParts()
	if err != nil {
		return nil, err
	}
	if hp != "" {
		cpf.HttpProfile.Endpoint = hp
	}
	if plain {
		cpf.HttpProfile.Scheme = "HTTP"
	}
	cpf.HttpProfile.ReqTimeout = int(requestTimeout / time.Second)
	return clb.NewClient(common.NewCredential(h.cfg.id, h.cfg.secret), h.cfg.region, cpf)
}

// probeTencent makes one read-only call, so wrong credentials fail at plan time on the
// credentials attribute, before anything is planned or written.
func (h *host) probeTencent(ctx context.Context, c *clb.Client) terraform.Diagnostics {
	req := clb.NewDescribeLoadBalancersRequest()
	req.Limit = common.Int64Ptr(1)
	_, err := c.DescribeLoadBalancersWithContext(ctx, req)
	var sdk *tcerr.TencentCloudSDKError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &sdk) && sdk.GetCode() == "UnsupportedRegion":
		return terraform.Diagnostics{{Severity: terraform.Error, Attribute: "region",
			Summary: "Tencent Cloud's CLB API does not serve region " + strconv.Quote(h.cfg.region),
			Detail:  "Check region (ap-guangzhou, ap-shanghai, ...). The cloud said: " + sdk.GetMessage() + "\nNothing was planned or written."}}
	case errors.As(err, &sdk) && sdk.GetCode() == "AuthFailure.UnauthorizedOperation":
		return terraform.Diagnostics{{Severity: terraform.Error, Attribute: "credentials",
			Summary: "the credentials lack the CAM permission for clb:DescribeLoadBalancers",
			Detail:  "Grant the sub-account or role the CAM actions listed in https://github.com/loopguard/loopguard/blob/main/docs/permissions.md. The cloud said: " + sdk.GetMessage() + "\nNothing was planned or written."}}
	case errors.As(err, &sdk) && strings.HasPrefix(sdk.GetCode(), "AuthFailure"):
		return terraform.Diagnostics{{Severity: terraform.Error, Attribute: "credentials",
			Summary: "Tencent Cloud refused the credentials (" + sdk.GetCode() + ")",
			Detail:  "Check credentials.id and credentials.secret, and the machine's clock. The cloud said: " + sdk.GetMessage() + "\nNothing was planned or written."}}
	}
	return terraform.Diagnostics{{Severity: terraform.Error, Attribute: "endpoint", Summary: "cannot reach the Tencent Cloud CLB API", Detail: err.Error()}}
}

func (h *host) volcengineClient() (*volcclb.CLB, error) {
	hp, plain, err := h.endpointParts()
	if err != nil {
		return nil, err
	}
	cfg := volcsdk.NewConfig().WithRegion(h.cfg.region).
		WithCredentials(credentials.NewStaticCredentials(h.cfg.id, h.cfg.secret, "")).
		WithMaxRetries(0).
		// The SDK's own transport takes HTTP(S)_PROXY and ignores NO_PROXY; this one honours both.
		WithHTTPClient(&http.Client{Timeout: requestTimeout, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}})
	if hp != "" {
		cfg = cfg.WithEndpoint(hp)
	}
	if plain {
		cfg = cfg.WithDisableSSL(true)
	}
	sess, err := session.NewSession(cfg)
	if err != nil {
		return nil, err
	}
	return volcclb.New(sess), nil
}

func (h *host) probeVolcengine(ctx context.Context, c *volcclb.CLB) terraform.Diagnostics {
	_, err := c.DescribeLoadBalancersWithContext(ctx, &volcclb.DescribeLoadBalancersInput{PageSize: volcsdk.Int64(1)})
	var rf volcengineerr.RequestFailure
	switch {
	case err == nil:
		return nil
	case errors.As(err, &rf) && rf.Code() == "InvalidRegion":
		return terraform.Diagnostics{{Severity: terraform.Error, Attribute: "region",
			Summary: "Volcengine's CLB API does not serve region " + strconv.Quote(h.cfg.region),
			Detail:  "Check region (cn-beijing, cn-shanghai, ...). The cloud said: " + firstLine(rf.Message()) + "\nNothing was planned or written."}}
	case errors.As(err, &rf) && rf.StatusCode() == http.StatusForbidden:
		return terraform.Diagnostics{{Severity: terraform.Error, Attribute: "credentials",
			Summary: "the credentials lack the IAM permission for clb:DescribeLoadBalancers (" + rf.Code() + ")",
			Detail:  "Grant the user or role the IAM actions listed in https://github.com/loopguard/loopguard/blob/main/docs/permissions.md. The cloud said: " + firstLine(rf.Message()) + "\nNothing was planned or written."}}
	case errors.As(err, &rf) && (rf.StatusCode() == http.StatusUnauthorized || rf.StatusCode() == http.StatusForbidden):
		return terraform.Diagnostics{{Severity: terraform.Error, Attribute: "credentials",
			Summary: "Volcengine refused the credentials (" + rf.Code() + ")",
			Detail:  "Check credentials.id and credentials.secret, and the machine's clock. The cloud said: " + firstLine(rf.Message()) + "\nNothing was planned or written."}}
	}
	return terraform.Diagnostics{{Severity: terraform.Error, Attribute: "endpoint", Summary: "cannot reach the Volcengine CLB API", Detail: err.Error()}}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// tkeServiceConfigs are read with the other objects where the cluster serves them: TKE plans
// merge into them.
var tkeServiceConfigs = schema.GroupVersionResource{Group: tencent.ServiceConfigGroup, Version: tencent.ServiceConfigVersion, Resource: "tkeserviceconfigs"}

// backend builds the adapter's Backend for one request, logging through tflog with the
// request's context.
func (h *host) backend(ctx context.Context) (*terraform.Backend, error) {
	log := terraform.Logger(ctx, &terraform.LoggerOptions{Mask: h.secrets})
	w, err := kube.NewWriter(h.rest, &kube.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	return &terraform.Backend{
		Provider: h.newProv,
		Cluster:  w,
		Facts:    h.facts,
		Profile:  h.cfg.profile,
		Logger:   log,
	}, nil
}

// facts reads the object's namespace, with TKE's TkeServiceConfigs and Gateway API's objects
// where the cluster serves them, and then the namespaces a Gateway's implementation keeps its
// objects in (Envoy Gateway's generated Services, the GatewayClasses' parameters).
func (h *host) facts(ctx context.Context, ns string) ([]runtime.Object, error) {
	gwNamespaced, gwCluster := gateway.Resources()
	opts := func(ns string) *kube.GatherOptions {
		return &kube.GatherOptions{Namespace: ns, Custom: append([]schema.GroupVersionResource{tkeServiceConfigs}, gwNamespaced...), ClusterCustom: gwCluster}
	}
	first := opts(ns)
	first.ConfigMaps = func(read []runtime.Object) []kube.ConfigMapRef {
		var out []kube.ConfigMapRef
		for _, r := range gateway.ConfigMaps(read, nil) {
			out = append(out, kube.ConfigMapRef(r))
		}
		return out
	}
	objs, err := kube.Gather(ctx, h.rest, first)
	if err != nil || ns == "" {
		return objs, err
	}
	read := objs
	for _, other := range gateway.Namespaces(read, nil) {
		more, err := kube.Gather(ctx, h.rest, opts(other))
		if err != nil {
			return nil, err
		}
		objs = append(objs, gateway.ForGatewaysOf(more, other, ns, read)...)
	}
	return objs, nil
}
