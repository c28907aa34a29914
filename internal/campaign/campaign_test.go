package campaign_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/hashicorp/go-hclog"
	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"
	vkeclb "github.com/volcengine/volcengine-go-sdk/service/clb"
	vkesdk "github.com/volcengine/volcengine-go-sdk/volcengine"
	"github.com/volcengine/volcengine-go-sdk/volcengine/credentials"
	"github.com/volcengine/volcengine-go-sdk/volcengine/session"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/loopguard/loopguard/adapters/kube"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
	"github.com/loopguard/loopguard/internal/apiserver"
	"github.com/loopguard/loopguard/providers/kubernetes"
	"github.com/loopguard/loopguard/providers/tencent"
	tcclbtest "github.com/loopguard/loopguard/providers/tencent/clbtest"
	"github.com/loopguard/loopguard/providers/volcengine"
	vkeclbtest "github.com/loopguard/loopguard/providers/volcengine/clbtest"
)

var server = apiserver.NewShared(apiserver.WithCRDPaths("../../providers/tencent/crds"))

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	// client-go logs the requests the campaign cancels and times out; they are counted.
	klog.SetLogger(logr.Discard())
	os.Exit(server.Run(m))
}

// Environment variables that steer a run.
const (
	envSeed       = "LOOPGUARD_CAMPAIGN_SEED"
	envReconciles = "LOOPGUARD_CAMPAIGN_RECONCILES"
)

// Fault rates.
const (
	pCloud     = 0.30 // a cloud call faulted
	pTimeout   = 0.03 // an API server request timed out before it was sent
	pTimeoutWr = 0.03 // ... or after it was made
	pRace      = 0.25 // a foreign edit races a loopguard write
	pStop      = 0.15 // the reconciler is stopped right after a write
	pEdit      = 0.15 // between passes, others edit an object
	maxPasses  = 80   // passes for one wave to converge
	vkeAK      = "AKLTcampaign00000000000000000000"
	vkeSK      = "campaign-volcengine-secret-0000000000"
	// Temporary Tencent credentials: a key and a session token, both secret.
	tkeID       = "AKIDcampaign000000000000000000000000"
	tkeKey      = "campaign-tencent-secret-key-0000000"
	tkeToken    = "campaign-tencent-session-token-00000000"
	defaultGoal = 1000
)

func TestReliabilityCampaign(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(envSeed); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", envSeed, s, err)
		}
		seed = n
	}
	goal := defaultGoal
	if s := os.Getenv(envReconciles); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", envReconciles, s)
		}
		goal = n
	}
	srv := server.Get(t)
	c := newCampaign(t, srv, seed)
	start := time.Now()
	c.run(goal)
	c.report(seed, time.Since(start))
	c.out.scan(t, tkeKey, tkeToken, vkeSK)
}

type campaign struct {
	t    *testing.T
	ctx  context.Context
	ns   string
	dice *dice
	tly  *tally
	stop *stopper
	on   bool

	cfg     *rest.Config // loopguard's, through the faulty transport
	dyn     dynamic.Interface
	foreign *foreignWriter

	tke *tcclbtest.Server
	vke *vkeclbtest.Server

	items []*item
	// owned: direct-mode listener ID → the attribute loopguard sets.
	owned map[string]string
	lbSeq int
	lost  []string
	inc   *incarnation

	// out holds every log line, error and plan the campaign produces, for the secret scan.
	out *transcript
	log hclog.Logger
}

func newCampaign(t *testing.T, srv *apiserver.Server, seed uint64) *campaign {
	c := &campaign{t: t, ctx: context.Background(), ns: srv.Namespace(t), dice: newDice(seed), tly: newTally(), owned: map[string]string{}}
	c.out = &transcript{}
	c.log = c.out.logger()
	c.stop = &stopper{p: pStop, dice: c.dice, tally: c.tly}
	dyn, err := dynamic.NewForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	c.dyn = dyn
	c.tke, err = tcclbtest.Start(&tcclbtest.Options{RateLimit: tcclbtest.Unlimited,
		Credentials: []tcclbtest.Credential{{SecretID: tkeID, SecretKey: tkeKey, Token: tkeToken}},
		Allowlist:   []tcclbtest.Capability{tcclbtest.L4SNAT, tcclbtest.L7SNAT, tcclbtest.KeepAlive}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.tke.Close() })
	c.vke = vkeclbtest.NewTestServer(t, &vkeclbtest.Options{Credentials: []vkeclbtest.Credential{{AccessKeyID: vkeAK, SecretAccessKey: vkeSK}}})
	c.foreign = newForeignWriter(dyn, c.ns, c.dice, c.tke)

	c.cfg = srv.Config()
	c.cfg.QPS, c.cfg.Burst = 1000, 1000
	c.cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &kubeFaults{next: rt, dice: c.dice, tally: c.tly, stop: c.stop, foreign: c.foreign, on: &c.on,
			pBefore: pTimeout, pAfter: pTimeoutWr, pRace: pRace}
	})
	return c
}

// incarnation is one start of the reconciler host: its clients, drivers and reconcilers,
// and the context a stop cancels.
type incarnation struct {
	ctx       context.Context
	cancel    context.CancelFunc
	writer    *kube.Writer
	dyn       dynamic.Interface
	discovery discovery.ServerVersionInterface
	tkeDrv    *tencent.Driver
	direct    *tencent.Driver
	clbReader *volcengine.CLBReader
}

func (c *campaign) start() *incarnation {
	t := c.t
	ctx, cancel := context.WithCancel(c.ctx)
	inc := &incarnation{ctx: ctx, cancel: cancel}
	var err error
	if inc.writer, err = kube.NewWriter(c.cfg, &kube.Options{Logger: c.log}); err != nil {
		t.Fatal(err)
	}
	if inc.dyn, err = dynamic.NewForConfig(c.cfg); err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	inc.discovery = dc
	if inc.tkeDrv, err = tencent.NewDriver(&tencent.DriverOptions{Logger: c.log}); err != nil {
		t.Fatal(err)
	}

	cpf := profile.NewClientProfile()
	cpf.HttpProfile.Endpoint = c.tke.Endpoint()
	cpf.HttpProfile.Scheme = "HTTP"
	client, err := clb.NewClient(common.NewTokenCredential(tkeID, tkeKey, tkeToken), tcclbtest.DefaultRegion, cpf)
	if err != nil {
		t.Fatal(err)
	}
	client.WithHttpTransport(&tencentFaults{next: &http.Transport{}, srv: c.tke, dice: c.dice, tally: c.tly, stop: c.stop, on: &c.on, p: pCloud})
	inc.direct, err = tencent.NewDriver(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: client, Logger: c.log,
		Backoff:          tencent.Backoff{Initial: time.Millisecond, Max: 8 * time.Millisecond, Budget: time.Second},
		TaskPollInterval: time.Millisecond, TaskTimeout: 2 * time.Second, RateLimit: 100000, Burst: 100})
	if err != nil {
		t.Fatal(err)
	}

	vcfg := vkesdk.NewConfig().WithRegion(vkeclbtest.DefaultRegion).
		WithCredentials(credentials.NewStaticCredentials(vkeAK, vkeSK, "")).
		WithEndpoint(c.vke.Endpoint()).WithDisableSSL(true).WithMaxRetries(0).
		WithHTTPClient(&http.Client{Transport: &volcengineFaults{next: &http.Transport{}, srv: c.vke, dice: c.dice, tally: c.tly, on: &c.on, p: pCloud}})
	sess, err := session.NewSession(vcfg)
	if err != nil {
		t.Fatal(err)
	}
	inc.clbReader = volcengine.NewCLBReader(vkeclb.New(sess), &volcengine.CLBReaderOptions{RetryDelay: time.Millisecond, Logger: c.log})
	return inc
}

// ---- the fleet ----

func (c *campaign) nextLB() string {
	c.lbSeq++
	return fmt.Sprintf("lb-%08d", c.lbSeq)
}

func (c *campaign) must(err error) {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
}

func (c *campaign) createTyped(obj runtime.Object, loopguards ...string) {
	c.t.Helper()
	u, err := toUnstructured(obj)
	c.must(err)
	c.must(c.foreign.create(c.ctx, u, false, loopguards...))
}

// applyTyped creates obj by server-side apply, as a GitOps tool does: fields it does not
// set (a defaulted externalTrafficPolicy) belong to nobody.
func (c *campaign) applyTyped(obj runtime.Object) {
	c.t.Helper()
	u, err := toUnstructured(obj)
	c.must(err)
	c.must(c.foreign.create(c.ctx, u, true))
}

func (c *campaign) createYAML(doc string, loopguards ...string) {
	c.t.Helper()
	u, err := fromYAML(doc)
	c.must(err)
	c.must(c.foreign.create(c.ctx, u, false, loopguards...))
}

func svcKey(ns, name string) core.ObjectKey {
	return core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: ns, Name: name}
}

func ingKey(ns, name string) core.ObjectKey {
	return core.ObjectKey{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Namespace: ns, Name: name}
}

// addWave creates one object of every kind of the fleet, as their users would.
func (c *campaign) addWave(w int) []*item {
	ns := c.ns
	var out []*item
	add := func(it *item) { out = append(out, it) }

	// TKE service-config: lb-snat merged into a config others wrote.
	name := fmt.Sprintf("merge-%d", w)
	c.createYAML(l4Config(name+"-cfg"), "spec.loadBalancer.l4Listeners[1].snatEnable")
	c.createTyped(tkeService(name, map[string]string{tencent.AnnotationServiceConfig: name + "-cfg"}, port("TCP", 80)))
	add(&item{name: name, mode: modeTKE, key: svcKey(ns, name), profile: tkeProfile(tencent.CapL4SNAT), policy: snatPolicy,
		configs: []string{name + "-cfg"}, safe: true})

	// TKE service-config: lb-snat in a config loopguard creates, then the reference.
	name = fmt.Sprintf("create-%d", w)
	c.createTyped(tkeService(name, nil, port("TCP", 80), port("UDP", 53)))
	add(&item{name: name, mode: modeTKE, key: svcKey(ns, name), profile: tkeProfile(tencent.CapL4SNAT), policy: snatPolicy,
		configs: []string{name + "-loopguard"}, safe: true})

	// TKE: intercept-vip, the prevent-loopback annotation.
	name = fmt.Sprintf("intercept-%d", w)
	c.createTyped(tkeService(name, nil, port("TCP", 80)))
	add(&item{name: name, mode: modeTKE, key: svcKey(ns, name), profile: tkeProfile(), safe: true})

	// TKE service-config: layer-7 SNAT in an Ingress's auto config.
	name = fmt.Sprintf("ingress-%d", w)
	c.createYAML(l7Config(name+"-auto-ingress-config", name+".example.com"))
	c.createTyped(tkeIngress(name, "web", map[string]string{tencent.AnnotationIngressServiceConfigAuto: "true"}))
	add(&item{name: name, mode: modeTKE, key: ingKey(ns, name), profile: tkeProfile(tencent.CapL7SNAT, tencent.CapKeepalive), policy: snatPolicy,
		configs: []string{name + "-auto-ingress-config"}, extra: []runtime.Object{backendService("web")}, safe: true})

	// TKE direct: SnatEnable on the Service's two listeners; a third listener is someone else's.
	name = fmt.Sprintf("direct-%d", w)
	lb := c.nextLB()
	c.seedTKE(lb, map[string]string{"TCP/80": "SnatEnable", "UDP/53": "SnatEnable", "TCP/443": ""})
	c.createTyped(tkeService(name, map[string]string{tencent.AnnotationLoadBalancerID: lb}, port("TCP", 80), port("UDP", 53)))
	add(&item{name: name, mode: modeTKEDirect, key: svcKey(ns, name), profile: tkeProfile(tencent.CapL4SNAT), policy: snatPolicy})

	// TKE direct: layer-7 SNAT on an Ingress's HTTP listener.
	name = fmt.Sprintf("direct-ingress-%d", w)
	lb = c.nextLB()
	c.seedTKE(lb, map[string]string{"HTTP/80": "SnatEnable", "TCP/8443": ""})
	c.createTyped(tkeIngress(name, "web", map[string]string{tencent.AnnotationIngressLoadBalancerID: lb}))
	add(&item{name: name, mode: modeTKEDirect, key: ingKey(ns, name), profile: tkeProfile(tencent.CapL7SNAT, tencent.CapKeepalive), policy: snatPolicy,
		extra: []runtime.Object{backendService("web")}})

	// VKE: a Service loopguard creates with its ip-mode (VIP); a CLB reused by ID.
	name = fmt.Sprintf("vke-create-%d", w)
	lb = c.seedVKE()
	add(&item{name: name, mode: modeVKE, key: svcKey(ns, name), manifest: withNS(vkeService(name, lb, nil), ns), profile: vkeProfile(),
		vkeLB: lb, safe: true})

	// VKE: an existing Proxy Service a GitOps tool applied; node separation sets
	// externalTrafficPolicy Local.
	name = fmt.Sprintf("vke-proxy-%d", w)
	lb = c.seedVKE()
	c.applyTyped(vkeService(name, lb, map[string]string{volcengine.AnnotationIPMode: volcengine.IPModeProxy, core.AnnotationClients: "app=client"}))
	c.ccm(name)
	add(&item{name: name, mode: modeVKE, key: svcKey(ns, name), profile: vkeProfile(), vkeLB: lb, extra: vkePlacement(ns, name)})

	// Plain Kubernetes: ipMode Proxy published by a non-SNAT LB; the host writes VIP.
	name = fmt.Sprintf("plain-%d", w)
	c.createTyped(kubernetesService(name))
	proxy := corev1.LoadBalancerIPModeProxy
	c.status(name, []corev1.LoadBalancerIngress{{IP: fmt.Sprintf("10.0.%d.9", w), IPMode: &proxy}})
	add(&item{name: name, mode: modeKubernetes, key: svcKey(ns, name), profile: kubernetesProfile(), safe: true})

	return out
}

func withNS(s *corev1.Service, ns string) *corev1.Service {
	s.Namespace = ns
	return s
}

// seedTKE adds a private CLB with listeners "PROTO/PORT"; those mapped to an attribute are
// the object's (loopguard sets that attribute), the others are someone else's.
func (c *campaign) seedTKE(lb string, listeners map[string]string) {
	c.t.Helper()
	_, err := c.tke.AddLoadBalancer(tcclbtest.LoadBalancer{ID: lb, Type: tcclbtest.LoadBalancerInternal, VIPs: []string{fmt.Sprintf("10.1.%d.%d", c.lbSeq/200, c.lbSeq%200+10)}})
	c.must(err)
	specs := make([]string, 0, len(listeners))
	for spec := range listeners {
		specs = append(specs, spec)
	}
	sort.Strings(specs)
	for _, spec := range specs {
		attr := listeners[spec]
		proto, portText, _ := strings.Cut(spec, "/")
		p, err := strconv.ParseInt(portText, 10, 64)
		c.must(err)
		l := tcclbtest.Listener{LoadBalancerID: lb, ID: fmt.Sprintf("lbl-%s%s%d", lb[len("lb-"):], strings.ToLower(proto), p), Protocol: proto, Port: p, Name: "by-hand"}
		if attr == "" {
			l.Scheduler, l.SessionExpireTime = "WRR", 30
		}
		got, err := c.tke.AddListener(l)
		c.must(err)
		got, _ = c.tke.Listener(got.ID)
		c.foreign.listeners[got.ID] = got
		if attr != "" {
			c.owned[got.ID] = attr
		}
	}
}

// seedVKE adds a private CLB whose TCP/80 listener sends no PROXY header.
func (c *campaign) seedVKE() string {
	c.t.Helper()
	c.lbSeq++
	id := fmt.Sprintf("clb-campaign%04d", c.lbSeq)
	_, err := c.vke.AddLoadBalancer(vkeclbtest.LoadBalancer{ID: id, Type: vkeclbtest.TypePrivate, EniAddress: fmt.Sprintf("192.168.%d.%d", c.lbSeq/200, c.lbSeq%200+10),
		Listeners: []vkeclbtest.Listener{{ID: fmt.Sprintf("lsn-c%04d", c.lbSeq), Protocol: "TCP", Port: 80, ProxyProtocolType: vkeclbtest.ProxyProtocolOff}}})
	c.must(err)
	return id
}

// status writes a Service's status as the cloud-controller-manager does (not faulted).
func (c *campaign) status(name string, ing []corev1.LoadBalancerIngress) {
	c.t.Helper()
	r := c.dyn.Resource(serviceGVR).Namespace(c.ns)
	u, err := r.Get(c.ctx, name, metav1.GetOptions{})
	c.must(err)
	list := make([]any, len(ing))
	for i := range ing {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&ing[i])
		c.must(err)
		list[i] = m
	}
	c.must(unstructured.SetNestedSlice(u.Object, list, "status", "loadBalancer", "ingress"))
	_, err = r.UpdateStatus(c.ctx, u, metav1.UpdateOptions{FieldManager: "cloud-controller-manager"})
	c.must(err)
}

// ccm publishes a VKE Service's CLB address with the ipMode its annotation asks for, once the
// Service exists and has none.
func (c *campaign) ccm(name string) bool {
	u, err := c.dyn.Resource(serviceGVR).Namespace(c.ns).Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	if ing, _, _ := unstructured.NestedSlice(u.Object, "status", "loadBalancer", "ingress"); len(ing) > 0 {
		return false
	}
	m := corev1.LoadBalancerIPModeVIP
	if u.GetAnnotations()[volcengine.AnnotationIPMode] == volcengine.IPModeProxy {
		m = corev1.LoadBalancerIPModeProxy
	}
	c.status(name, []corev1.LoadBalancerIngress{{IP: "172.16.8." + strconv.Itoa(10+len(c.items)%200), IPMode: &m}})
	c.foreign.known[svcKey(c.ns, name)] = true
	return true
}

// ---- one reconcile ----

// input reads what one reconcile of it starts from: the object and its Cluster.
func (c *campaign) input(inc *incarnation, it *item) (runtime.Object, *core.Cluster, error) {
	var obj runtime.Object
	if it.manifest != nil {
		obj = it.manifest
	} else {
		u, err := inc.writer.Get(inc.ctx, it.key)
		if err != nil {
			return nil, nil, err
		}
		if u == nil {
			return nil, nil, fmt.Errorf("%s does not exist", it.key)
		}
		if obj, err = dialect.TypedFromUnstructured(u); err != nil {
			return nil, nil, err
		}
	}
	objs := []runtime.Object{obj}
	switch it.mode {
	case modeTKE, modeTKEDirect:
		objs = append(objs, tkeNodes...)
	case modeKubernetes:
		objs = append(objs, kubernetesNodes...)
	}
	objs = append(objs, it.extra...)
	for _, name := range it.configs {
		u, err := inc.writer.Get(inc.ctx, configKey(c.ns, name))
		if err != nil {
			return nil, nil, err
		}
		if u != nil {
			objs = append(objs, u)
		}
	}
	cl, err := core.NewCluster(it.profile, objs...)
	return obj, cl, err
}

func (c *campaign) reconciler(inc *incarnation, it *item) (*core.Reconciler, error) {
	var p core.Provider
	switch it.mode {
	case modeTKE:
		p = core.NewProvider(inc.tkeDrv.Dialect(), inc.tkeDrv)
	case modeTKEDirect:
		p = core.NewProvider(inc.direct.Dialect(), inc.direct)
	case modeVKE:
		svc := it.manifest
		if svc == nil {
			u, err := inc.writer.Get(inc.ctx, it.key)
			if err != nil || u == nil {
				return nil, fmt.Errorf("read %s: %v", it.key, err)
			}
			if svc, err = dialect.TypedFromUnstructured(u); err != nil {
				return nil, err
			}
		}
		var snap volcengine.CLBSnapshot
		var err error
		for range 10 { // the host retries a throttled or failing read at once
			if snap, err = inc.clbReader.Snapshot(inc.ctx, svc.(*corev1.Service)); err == nil || inc.ctx.Err() != nil {
				break
			}
		}
		if err != nil {
			return nil, err
		}
		drv, err := volcengine.NewDriver(&volcengine.DriverOptions{Dialect: &volcengine.Options{CLBs: snap}, ServerVersion: inc.discovery, NoClusterReads: true, Logger: c.log})
		if err != nil {
			return nil, err
		}
		p = core.NewProvider(drv.Dialect(), drv)
	case modeKubernetes:
		p = kubernetes.NewProvider(nil)
	}
	return core.NewReconciler(p, &core.ReconcilerOptions{ClusterWriter: inc.writer, Policy: it.policy, RetryDelay: time.Millisecond, Logger: c.log}), nil
}

// writable counts the changes of a plan that loopguard or its host writes: one write each,
// and one status update for all of the status changes.
func writable(p *core.Plan) int {
	if p == nil {
		return 0
	}
	n, status := 0, 0
	for _, ch := range p.Changes {
		switch ch.By {
		case core.WriterCluster, core.WriterCloud:
			n++
		case core.WriterStatus:
			status = 1
		}
	}
	return n + status
}

// reconcileOnce runs one reconcile of it, as a host does, and says whether it found nothing
// left to write.
func (c *campaign) reconcileOnce(inc *incarnation, it *item) (bool, error) {
	r, err := c.reconciler(inc, it)
	if err != nil {
		c.tly.add(func(t *tally) { t.hostFailures++ })
		return false, err
	}
	obj, cl, err := c.input(inc, it)
	if err != nil {
		c.tly.add(func(t *tally) { t.hostFailures++ })
		return false, err
	}
	c.tly.add(func(t *tally) { t.reconciles++ })
	out, err := r.Reconcile(inc.ctx, obj, cl)
	c.out.record(out, err)
	if out != nil && len(out.ForStatus) > 0 {
		// The host (a cloud-controller-manager) returns the status changes; here it writes them.
		if serr := c.writeStatus(inc, it, out.ForStatus); serr != nil && err == nil {
			err = serr
		}
	}
	if err != nil {
		return false, err
	}
	return writable(out.Plan) == 0, nil
}

func (c *campaign) writeStatus(inc *incarnation, it *item, changes []core.Change) error {
	r := inc.dyn.Resource(serviceGVR).Namespace(c.ns)
	u, err := r.Get(inc.ctx, it.key.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, ch := range changes {
		for _, e := range ch.Edits {
			if _, err := e.ApplyTo(u.Object); err != nil {
				return err
			}
		}
	}
	_, err = r.UpdateStatus(inc.ctx, u, metav1.UpdateOptions{FieldManager: core.FieldManager})
	return err
}

// ---- the run ----

func (c *campaign) run(goal int) {
	t := c.t
	for w := 1; c.tly.reconciles < goal; w++ {
		if w > 40 {
			t.Fatalf("%d waves ran only %d reconciles", w-1, c.tly.reconciles)
		}
		wave := c.addWave(w)
		c.measure(wave)
		c.items = append(c.items, wave...)
		for _, it := range c.items {
			it.converged, it.lastErr = false, nil
		}
		c.converge(w)
		if t.Failed() {
			return
		}
	}
	c.final()
}

// measure plans each new object once, with nothing faulted, to learn the fewest writes it
// needs.
func (c *campaign) measure(wave []*item) {
	c.on, c.stop.off = false, true
	defer func() { c.on, c.stop.off = true, false }()
	inc := c.start()
	defer inc.cancel()
	for _, it := range wave {
		r, err := c.reconciler(inc, it)
		c.must(err)
		obj, cl, err := c.input(inc, it)
		c.must(err)
		p, err := r.Plan(inc.ctx, obj, cl)
		if err != nil {
			c.t.Fatalf("%s: first plan: %v", it.name, err)
		}
		if p.Blocked != nil || writable(p) == 0 {
			c.t.Fatalf("%s: the first plan has nothing to write (blocked: %v): %v", it.name, p.Blocked, p)
		}
		n := writable(p)
		c.tly.add(func(t *tally) { t.needed += n })
	}
}

func (c *campaign) converge(w int) {
	t := c.t
	if c.inc == nil {
		c.inc = c.start()
	}
	c.stop.set(c.inc.cancel)
	for pass := 1; ; pass++ {
		left := 0
		for _, it := range c.items {
			if it.converged {
				continue
			}
			done, err := c.reconcileOnce(c.inc, it)
			it.converged, it.lastErr = done, err
			if c.inc.ctx.Err() != nil {
				// Stopped between two writes: start again from scratch.
				c.tly.add(func(t *tally) { t.restarts++ })
				c.inc = c.start()
				c.stop.set(c.inc.cancel)
				it.converged = false
			}
			if !it.converged {
				left++
			}
		}
		c.between()
		if left == 0 {
			return
		}
		if pass == maxPasses {
			for _, it := range c.items {
				if !it.converged {
					t.Errorf("wave %d: %s (%s) did not converge in %d passes: %v", w, it.name, it.mode, maxPasses, it.lastErr)
				}
			}
			return
		}
	}
}

// between is what happens between passes: the cloud-controller-manager publishes new VKE
// Services' addresses, others edit what they own.
func (c *campaign) between() {
	for _, it := range c.items {
		if it.mode == modeVKE && c.ccm(it.key.Name) {
			it.converged = false
		}
		if c.dice.chance(pEdit) && c.foreign.known[it.key] {
			c.must(c.foreign.edit(c.ctx, it.key))
		}
		for _, name := range it.configs {
			if k := configKey(c.ns, name); c.dice.chance(pEdit) {
				if _, err := c.dyn.Resource(configGVR).Namespace(c.ns).Get(c.ctx, name, metav1.GetOptions{}); err == nil {
					c.foreign.known[k] = true
					c.must(c.foreign.edit(c.ctx, k))
				}
			}
		}
	}
	ids := make([]string, 0, len(c.foreign.listeners))
	for id := range c.foreign.listeners {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if c.dice.chance(pEdit / 3) {
			c.must(c.foreign.console(id))
		}
	}
}

// final checks the end state with nothing faulted: each object plans nothing, loopguard's
// remedies leave no loop, and what others own is all there.
func (c *campaign) final() {
	t := c.t
	c.on, c.stop.off = false, true
	inc := c.start()
	defer inc.cancel()
	for _, it := range c.items {
		r, err := c.reconciler(inc, it)
		c.must(err)
		obj, cl, err := c.input(inc, it)
		c.must(err)
		p, err := r.Plan(inc.ctx, obj, cl)
		if err != nil {
			t.Errorf("%s: final plan: %v", it.name, err)
			continue
		}
		if n := writable(p); n != 0 {
			t.Errorf("%s: the final plan still changes %d things: %v", it.name, n, p.Changes)
			continue
		}
		if it.safe {
			live := obj
			if it.manifest != nil {
				u, err := inc.writer.Get(inc.ctx, it.key)
				c.must(err)
				live, err = dialect.TypedFromUnstructured(u)
				c.must(err)
			}
			res, err := core.Evaluate(r.Provider().Dialect(), live, cl, it.policy)
			if err != nil {
				t.Errorf("%s: final evaluation: %v", it.name, err)
			} else if res.Assessment.Risk != core.RiskNone {
				t.Errorf("%s: converged, but the assessment says %s (%s)", it.name, res.Assessment.Risk, res.Decision.Why)
			}
		}
		c.tly.add(func(t *tally) { t.converged++ })
	}
	lost, err := c.foreign.check(c.ctx, c.owned)
	c.must(err)
	c.lost = lost
	for _, l := range lost {
		t.Errorf("foreign state lost or changed: %s", l)
	}
	// Every owned listener carries loopguard's attribute.
	for id, attr := range c.owned {
		l, _ := c.tke.Listener(id)
		if attr == "SnatEnable" && !l.SnatEnable {
			t.Errorf("listener %s: SnatEnable is off", id)
		}
	}
}

func (c *campaign) report(seed uint64, took time.Duration) {
	t := c.t
	tl := c.tly
	writes := tl.kubeWrites + tl.cloudWrites
	extra := writes - tl.needed
	fmt.Printf("reliability: %d reconciles, %d faults, %d restarts, %d converged, %d foreign fields lost, %d extra writes (seed %d)\n",
		tl.reconciles, c.tly.faults(), tl.restarts, tl.converged, len(c.lost), extra, seed)
	t.Logf("cloud faults: %s", summary(tl.cloudFaults))
	t.Logf("API server faults: %s", summary(tl.kubeFaults))
	t.Logf("writes: %d on the API server, %d on the CLB; %d needed, %d ambiguous; %d host reads failed; %d objects; %s",
		tl.kubeWrites, tl.cloudWrites, tl.needed, tl.ambiguous, tl.hostFailures, len(c.items), took.Round(time.Millisecond))
	if extra < 0 && !t.Failed() {
		t.Errorf("%d writes, fewer than the %d the fleet needs", writes, tl.needed)
	}
	if extra > 0 {
		// An ambiguous failure (an answer lost after the write took, a stop right after it)
		// does not excuse a repeat: the next attempt reads before it writes.
		t.Errorf("%d extra writes (%d ambiguous failures): a write that took was made again", extra, tl.ambiguous)
	}
	if tl.reconciles < 1 || tl.converged != len(c.items) {
		t.Errorf("%d of %d objects converged", tl.converged, len(c.items))
	}
	if t.Failed() {
		t.Logf("rerun this run alone: %s=%d go test ./internal/campaign", envSeed, seed)
	}
}
