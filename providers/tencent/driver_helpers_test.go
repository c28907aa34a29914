package tencent_test

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/drivertest"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

// newMemCluster is an in-memory cluster holding objs (core/drivertest).
func newMemCluster(objs ...*unstructured.Unstructured) *drivertest.Cluster {
	return drivertest.NewCluster(objs...)
}

// fromYAML reads one object.
func fromYAML(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("yaml: %v\n%s", err, doc)
	}
	return u
}

func toUnstructured(t testing.TB, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	switch obj.(type) {
	case *corev1.Service:
		u.SetAPIVersion("v1")
		u.SetKind("Service")
	case *networkingv1.Ingress:
		u.SetAPIVersion("networking.k8s.io/v1")
		u.SetKind("Ingress")
	}
	return u
}

// privateService is a LoadBalancer Service on a private CLB with the given ports
// ("TCP/80", "UDP/53").
func privateService(name string, ann map[string]string, ports ...string) *corev1.Service {
	a := map[string]string{tencent.AnnotationInternalSubnet: "subnet-1a2b3c4d"}
	for k, v := range ann {
		a[k] = v
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: a},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name}},
	}
	for _, p := range ports {
		proto, port, _ := strings.Cut(p, "/")
		n, _ := strconv.Atoi(port)
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: strings.ToLower(proto) + "-" + port, Protocol: corev1.Protocol(proto), Port: int32(n)})
	}
	return svc
}

// privateIngress is a CLB Ingress on a private CLB routing to Service web.
func privateIngress(name string, ann map[string]string) *networkingv1.Ingress {
	a := map[string]string{tencent.AnnotationIngressSubnet: "subnet-1a2b3c4d"}
	for k, v := range ann {
		a[k] = v
	}
	prefix := networkingv1.PathTypePrefix
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: a},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "web.example.com", IngressRuleValue: networkingv1.IngressRuleValue{
			HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}},
		}}}},
	}
}

func threeNodes() []runtime.Object {
	var out []runtime.Object
	for _, n := range []string{"node-1", "node-2", "node-3"} {
		out = append(out, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	return out
}

// ipvsProfile is an IPVS cluster of regular nodes whose kube-proxy supports prevent-loopback.
func ipvsProfile(allowlists ...core.Capability) core.ClusterProfile {
	return core.ClusterProfile{Provider: tencent.Name, ProxyMode: core.ProxyModeIPVS, KubeProxyVersion: "v1.20.6-tke.12",
		IngressControllerVersion: "v2.9.0", Allowlists: allowlists}
}

// snatPolicy makes Decide choose lb-snat over intercept-vip (it keeps LB features).
var snatPolicy = core.Policy{Prefer: core.PreferLBFeatures, AllowTickets: true}

func cluster(t testing.TB, p core.ClusterProfile, objs ...runtime.Object) *core.Cluster {
	t.Helper()
	c, err := core.NewCluster(p, append(threeNodes(), objs...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newDriver(t testing.TB, o *tencent.DriverOptions) *tencent.Driver {
	t.Helper()
	d, err := tencent.NewDriver(o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// planFor evaluates obj with the driver's dialect and plans.
func planFor(t testing.TB, d *tencent.Driver, obj runtime.Object, c *core.Cluster, pol core.Policy, r core.ClusterReader) (*core.Plan, *core.Result) {
	t.Helper()
	res, err := core.Evaluate(d.Dialect(), obj, c, pol)
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.Plan(context.Background(), &core.PlanRequest{Object: obj, Cluster: c, Result: res, Policy: pol, Reader: r})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return p, res
}

func noteCodes(p *core.Plan) []core.Code { return codes(p.Notes) }

// ---- direct mode against clbtest ----

// fastRetries keeps tests short where o leaves the timings at zero; the logic is the same as
// with the defaults. TestDirectRateLimit checks the limiter at realistic rates.
func fastRetries(o *tencent.DriverOptions) *tencent.DriverOptions {
	if o.Backoff == (tencent.Backoff{}) {
		o.Backoff = tencent.Backoff{Initial: 2 * time.Millisecond, Max: 20 * time.Millisecond, Budget: 3 * time.Second}
	}
	if o.TaskPollInterval == 0 {
		o.TaskPollInterval = 2 * time.Millisecond
	}
	if o.TaskTimeout == 0 {
		o.TaskTimeout = 3 * time.Second
	}
	if o.RateLimit == 0 {
		o.RateLimit = 1000
	}
	return o
}

// cloud is a clbtest server and an official SDK client pointed at it.
type cloud struct {
	srv    *clbtest.Server
	client *clb.Client
}

func startCloud(t testing.TB, o *clbtest.Options) *cloud {
	t.Helper()
	srv, err := clbtest.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return &cloud{srv: srv, client: sdkClient(t, srv, clbtest.DefaultSecretID, clbtest.DefaultSecretKey)}
}

func sdkClient(t testing.TB, srv *clbtest.Server, id, key string) *clb.Client {
	t.Helper()
	return sdkClientIn(t, srv, id, key, clbtest.DefaultRegion)
}

// sdkClientIn is sdkClient for another region.
func sdkClientIn(t testing.TB, srv *clbtest.Server, id, key, region string) *clb.Client {
	t.Helper()
	cpf := profile.NewClientProfile()
	cpf.HttpProfile.Endpoint = srv.Endpoint()
	cpf.HttpProfile.Scheme = "HTTP"
	c, err := clb.NewClient(common.NewCredential(id, key), region, cpf)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// signedFor is a transport that rewrites the credential scope of each request to another
// service, as a client built for that service's API would sign: the SDK's CLB client always
// signs for clb, so this is the only way to send what a misconfigured caller would.
type signedFor string

func (s signedFor) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "/clb/tc3_request", "/"+string(s)+"/tc3_request", 1))
	return http.DefaultTransport.RoundTrip(r)
}

// seedLB adds a private CLB with listeners ("TCP/80", "HTTP/80") named lbl-<proto><port>.
func (c *cloud) seedLB(t testing.TB, id string, listeners ...string) {
	t.Helper()
	if _, err := c.srv.AddLoadBalancer(clbtest.LoadBalancer{ID: id, Type: clbtest.LoadBalancerInternal, VIPs: []string{"10.0.0.10"}}); err != nil {
		t.Fatal(err)
	}
	for _, l := range listeners {
		proto, port, _ := strings.Cut(l, "/")
		n, _ := strconv.ParseInt(port, 10, 64)
		if _, err := c.srv.AddListener(clbtest.Listener{LoadBalancerID: id, ID: listenerID(l), Protocol: proto, Port: n}); err != nil {
			t.Fatal(err)
		}
	}
}

func listenerID(l string) string {
	return "lbl-" + strings.ToLower(strings.ReplaceAll(l, "/", ""))
}

func (c *cloud) listener(t testing.TB, l string) clbtest.Listener {
	t.Helper()
	got, ok := c.srv.Listener(listenerID(l))
	if !ok {
		t.Fatalf("listener %s not in clbtest", l)
	}
	return got
}

// actions lists the calls' actions (with the error code after a colon when one failed).
func (c *cloud) actions() []string {
	var out []string
	for _, call := range c.srv.Calls() {
		a := call.Action
		if call.ErrorCode != "" {
			a += ":" + call.ErrorCode
		}
		if call.HTTPStatus != 200 {
			a += ":" + strconv.Itoa(call.HTTPStatus)
		}
		out = append(out, a)
	}
	return out
}

// logBuffer captures a driver's logs at the most verbose level.
func logBuffer() (hclog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Trace}), &buf
}
