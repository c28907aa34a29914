package demo

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"
	volcclb "github.com/volcengine/volcengine-go-sdk/service/clb"
	volcsdk "github.com/volcengine/volcengine-go-sdk/volcengine"
	"github.com/volcengine/volcengine-go-sdk/volcengine/credentials"
	"github.com/volcengine/volcengine-go-sdk/volcengine/session"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/adapters/manifest"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/memcluster"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/tencent/clbtest"
	"github.com/loopguard/loopguard/providers/volcengine"
	vclbtest "github.com/loopguard/loopguard/providers/volcengine/clbtest"
)

// examples holds copies of examples/manifests (tke) and examples/volcengine (vke); a test keeps
// them identical to the examples, which go:embed cannot reach from here.
//
//go:embed examples
var examples embed.FS

// exampleDirs maps an embedded folder to the repository's example it copies.
var exampleDirs = map[string]string{"tke": "examples/manifests", "vke": "examples/volcengine"}

// Width is the widest line the demo prints on standard output: a terminal of 100 columns shows
// it unwrapped.
const Width = 100

// The CLB the in-process Tencent API server holds for the direct-mode part.
const (
	demoLB       = "lb-demo0001"
	demoListener = "lbl-demo0080"
)

// Verdict is one exposure as the demo left it.
type Verdict struct {
	// Example is tke or vke.
	Example       string
	Object        core.ObjectRef
	Before, After core.Risk
	// Status is what happened: applied, up-to-date, user-action, blocked, pending or failed.
	Status string
}

// Result is what Run did.
type Result struct {
	// Safe: every exposure the demo could fix is safe afterwards (the others say why not).
	Safe     bool
	Verdicts []Verdict
}

// Run runs the demo: the report goes to out, one progress line per step to progress.
func Run(ctx context.Context, out, progress io.Writer) (*Result, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	d := &demo{out: out, progress: progress, start: time.Now(), res: &Result{Safe: true}}
	for _, part := range []func(context.Context) error{d.tke, d.direct, d.vke} {
		if err := part(ctx); err != nil {
			return nil, err
		}
	}
	d.step("done")
	if d.res.Safe {
		d.say("\nEvery exposure the demo could fix is safe afterwards; the others say above why not.")
	} else {
		d.say("\nSome exposure the demo could fix is not safe afterwards (above).")
	}
	return d.res, nil
}

type demo struct {
	out, progress io.Writer
	start         time.Time
	res           *Result
}

func (d *demo) step(format string, args ...any) {
	fmt.Fprintf(d.progress, "demo [%5.2fs] %s\n", time.Since(d.start).Seconds(), fmt.Sprintf(format, args...))
}

// say prints a line as it is; callers keep it within Width.
func (d *demo) say(s string) { fmt.Fprintln(d.out, s) }

// wrapped prints text after first, wrapped at Width, continuation lines indented by cont.
func (d *demo) wrapped(first, cont, text string) {
	for _, l := range wrap(first, cont, text, Width) {
		fmt.Fprintln(d.out, l)
	}
}

// wrap breaks text into lines of at most width columns at spaces: the first line starts with
// first, the others with cont. A word longer than a line gets a line of its own.
func wrap(first, cont, text string, width int) []string {
	var lines []string
	line := first
	empty := true // nothing of text on this line yet
	for _, w := range strings.Fields(text) {
		switch {
		case empty:
			line += w
		case columns(line)+1+columns(w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = cont + w
		}
		empty = false
	}
	return append(lines, line)
}

func columns(s string) int { return len([]rune(s)) }

// read reads one embedded example folder as `loopguard assess -f FOLDER` reads it.
func read(dir string) (*manifest.Set, error) {
	set := &manifest.Set{}
	entries, err := fs.ReadDir(examples, path.Join("examples", dir))
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		data, err := examples.ReadFile(path.Join("examples", dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if errs := set.Decode("(built-in) "+path.Join(exampleDirs[dir], e.Name()), data); len(errs) > 0 {
			return nil, fmt.Errorf("built-in example: %w", errors.Join(errs...))
		}
	}
	return set, nil
}

// profileOf is the example's ClusterProfile document (each example has one).
func profileOf(set *manifest.Set) core.ClusterProfile {
	if len(set.Profiles) == 0 {
		return core.ClusterProfile{}
	}
	return *set.Profiles[0].Profile
}

// exposure is one LoadBalancer Service or Ingress and its evaluation.
type exposure struct {
	obj runtime.Object
	res *core.Result
}

// evaluate evaluates every exposure of set with the dialect d, ordered by object.
func evaluate(d core.Dialect, set *manifest.Set) (*core.Cluster, []exposure, error) {
	prof := profileOf(set)
	objs := make([]runtime.Object, len(set.Objects))
	for i := range set.Objects {
		objs[i] = set.Objects[i].Object
	}
	c, err := core.NewCluster(prof, objs...)
	if err != nil {
		return nil, nil, err
	}
	var out []exposure
	for i := range set.Objects {
		res, err := core.Evaluate(d, set.Objects[i].Object, c, prof.Policy)
		switch {
		case errors.Is(err, core.ErrNotExposed):
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("%s: %w", set.Objects[i].Source, err)
		}
		out = append(out, exposure{obj: set.Objects[i].Object, res: res})
	}
	sort.Slice(out, func(a, b int) bool { return refLess(out[a].res.Exposure.Object, out[b].res.Exposure.Object) })
	return c, out, nil
}

func refLess(a, b core.ObjectRef) bool {
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// memCluster is an in-memory cluster holding an example's objects, and what reads them back.
type memCluster struct {
	c    *memcluster.Cluster
	keys []core.ObjectKey
	// types remembers each object's Go type, to read it back typed.
	types map[core.ObjectKey]reflect.Type
}

func newMemCluster(set *manifest.Set) (*memCluster, error) {
	mc := &memCluster{types: map[core.ObjectKey]reflect.Type{}}
	var us []*unstructured.Unstructured
	for i := range set.Objects {
		u, err := memcluster.ToUnstructured(set.Objects[i].Object)
		if err != nil {
			return nil, err
		}
		k := memcluster.KeyOf(u)
		mc.keys = append(mc.keys, k)
		mc.types[k] = reflect.TypeOf(set.Objects[i].Object).Elem()
		us = append(us, u)
	}
	mc.c = memcluster.NewCluster(us...)
	return mc, nil
}

// read reads every object back, typed as it was read.
func (mc *memCluster) read(ctx context.Context, profiles []manifest.Profile) (*manifest.Set, error) {
	set := &manifest.Set{Profiles: profiles}
	for _, k := range mc.keys {
		u, err := mc.c.Get(ctx, k)
		if err != nil || u == nil {
			return nil, fmt.Errorf("in-memory cluster: %s: %v", k, err)
		}
		var obj runtime.Object = u
		if t := mc.types[k]; t != reflect.TypeOf(unstructured.Unstructured{}) {
			typed := reflect.New(t).Interface().(runtime.Object)
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
				return nil, err
			}
			obj = typed
		}
		set.Objects = append(set.Objects, manifest.Object{Object: obj, Source: manifest.Source{Name: "in-memory cluster"}})
	}
	return set, nil
}

// outcome is what planning and applying did to one exposure.
type outcome struct {
	ref     core.ObjectRef
	before  core.Risk
	status  string
	details []string
	written []core.Change
}

// planAndApply computes every plan before the first write, as `loopguard apply` does, then
// applies the ones nothing blocks.
func planAndApply(ctx context.Context, rec *core.Reconciler, c *core.Cluster, exps []exposure) []outcome {
	outs := make([]outcome, len(exps))
	plans := make([]*core.Plan, len(exps))
	for i, e := range exps {
		o := &outs[i]
		o.ref, o.before = e.res.Exposure.Object, e.res.Assessment.Risk
		p, err := rec.Plan(ctx, e.obj, c)
		switch {
		case err != nil:
			o.status, o.details = "failed: "+core.BlockerOf(err).Kind, []string{err.Error()}
			continue
		case p.Blocked != nil:
			o.status, o.details = "blocked: "+p.Blocked.Kind, []string{p.Blocked.Message}
			continue
		}
		plans[i] = p
	}
	for i, p := range plans {
		if p == nil {
			continue
		}
		o := &outs[i]
		var user []core.Change
		for _, ch := range p.Changes {
			if ch.By == core.WriterUser {
				user = append(user, ch)
			}
		}
		var res *core.Outcome
		var err error
		if !p.Empty() {
			res, err = rec.Apply(ctx, p)
		}
		if res != nil {
			o.written = res.Written
		}
		switch {
		case errors.Is(err, core.ErrRetryLater):
			o.status = "pending: " + count(len(o.written), "change") + " written, not visible yet"
			o.details = append(o.details, err.Error())
		case err != nil:
			o.status = "failed: " + core.BlockerOf(err).Kind
			o.details = append(o.details, err.Error())
		case len(o.written) > 0:
			o.status = "applied: " + count(len(o.written), "change") + " written"
		case len(user) > 0:
			o.status = "user-action: " + count(len(user), "change") + " for you"
		default:
			o.status = "up-to-date"
		}
		for i := range user {
			o.details = append(o.details, "for you: "+userChange(&user[i]))
		}
	}
	return outs
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// userChange says what the user has to do, as `loopguard plan` says it.
func userChange(c *core.Change) string {
	target := c.Resource
	if c.Object != nil {
		target = c.Object.String()
	}
	s := target + ": "
	if c.Field != "" && c.Field != c.To {
		s += c.Field + ": "
	}
	return s + c.To
}

// writtenChange says what was written to the cluster, as `loopguard apply` says it.
func writtenChange(c *core.Change) string {
	target := c.Resource
	if c.Object != nil {
		target = c.Object.String()
	}
	from := c.From
	if from == "" {
		from = "(unset)"
	}
	s := fmt.Sprintf("%s: %s: %s → %s", target, c.Field, from, c.To)
	if c.Strategy == core.StrategyApply {
		s += " (server-side apply)"
	}
	return s
}

// compare prints each exposure's verdict before and after, with what happened under it, and
// records whether every exposure the demo could fix is safe.
func (d *demo) compare(example string, outs []outcome, after []exposure) {
	afterBy := map[core.ObjectRef]core.Risk{}
	for _, e := range after {
		afterBy[e.res.Exposure.Object] = e.res.Assessment.Risk
	}
	d.say("")
	d.say(fmt.Sprintf("  %-27s %-10s %-10s %s", "OBJECT", "BEFORE", "AFTER", "WHAT HAPPENED"))
	for _, o := range outs {
		a, ok := afterBy[o.ref]
		if !ok {
			a = "?"
		}
		details := o.details
		fixed := strings.HasPrefix(o.status, "applied") || o.status == "up-to-date"
		if fixed && o.before != core.RiskNone && a != core.RiskNone {
			d.res.Safe = false
			details = append(details, "NOT safe afterwards")
		}
		d.say(fmt.Sprintf("  %-27s %-10s %-10s %s", o.ref.Kind+" "+o.ref.Namespace+"/"+o.ref.Name, o.before, a, o.status))
		for _, t := range details {
			d.wrapped("      ", "        ", t)
		}
		status, _, _ := strings.Cut(o.status, ":")
		d.res.Verdicts = append(d.res.Verdicts, Verdict{Example: example, Object: o.ref, Before: o.before, After: a, Status: status})
	}
}

// tke is the CLI's own job on the TKE example: plan against the in-memory cluster, write,
// assess again.
func (d *demo) tke(ctx context.Context) error {
	d.say("== 1. TKE, as `loopguard apply` does it: examples/manifests in an in-memory cluster")
	set, err := read("tke")
	if err != nil {
		return err
	}
	d.step("read the built-in TKE example: %d objects", len(set.Objects))
	mc, err := newMemCluster(set)
	if err != nil {
		return err
	}
	prof := profileOf(set)
	prov, err := tencent.NewProvider(&tencent.DriverOptions{Allowlists: prof.Allowlists})
	if err != nil {
		return err
	}
	c, before, err := evaluate(prov.Dialect(), set)
	if err != nil {
		return err
	}
	d.step("assessed %d exposures: %d at risk", len(before), atRisk(before))
	rec := core.NewReconciler(prov, &core.ReconcilerOptions{Policy: prof.Policy, ClusterWriter: mc.c})
	outs := planAndApply(ctx, rec, c, before)
	written := 0
	for _, o := range outs {
		written += len(o.written)
	}
	d.step("planned %d exposures against the in-memory cluster and applied them: %d change(s) written", len(outs), written)
	live, err := mc.read(ctx, set.Profiles)
	if err != nil {
		return err
	}
	_, after, err := evaluate(prov.Dialect(), live)
	if err != nil {
		return err
	}
	d.step("assessed the in-memory cluster again: %d at risk", atRisk(after))
	d.compare("tke", outs, after)
	d.say("\n  In the cluster:")
	if written == 0 {
		d.say("    nothing written")
	}
	for _, o := range outs {
		for _, ch := range o.written {
			d.wrapped("    wrote ", "      ", writtenChange(&ch))
		}
	}
	return nil
}

func atRisk(exps []exposure) int {
	n := 0
	for _, e := range exps {
		if e.res.Assessment.Risk == core.RiskAtRisk {
			n++
		}
	}
	return n
}

// direct is the Tencent driver's direct mode against the in-process CLB API server: what a
// host that owns the CLB does, through the same Reconciler.
func (d *demo) direct(ctx context.Context) error {
	d.say("\n== 2. TKE direct mode, as a host that owns the CLB does it: listener SNAT through the")
	d.say("      CLB API of the in-process server")
	srv, err := clbtest.Start(&clbtest.Options{Allowlist: []clbtest.Capability{clbtest.L4SNAT}, TaskDuration: 20 * time.Millisecond})
	if err != nil {
		return err
	}
	defer srv.Close()
	if _, err := srv.AddLoadBalancer(clbtest.LoadBalancer{ID: demoLB, Type: clbtest.LoadBalancerInternal}); err != nil {
		return err
	}
	if _, err := srv.AddListener(clbtest.Listener{LoadBalancerID: demoLB, ID: demoListener, Protocol: clbtest.ProtocolTCP, Port: 80}); err != nil {
		return err
	}
	d.step("started the in-process Tencent CLB API server at %s with %s (listener %s, TCP:80, SNAT off)", srv.Endpoint(), demoLB, demoListener)

	set, err := read("tke")
	if err != nil {
		return err
	}
	// checkout, as TKE's controller leaves it once its CLB exists (service.kubernetes.io/loadbalance-id).
	var svc *corev1.Service
	var objs []runtime.Object
	for i := range set.Objects {
		objs = append(objs, set.Objects[i].Object)
		if s, ok := set.Objects[i].Object.(*corev1.Service); ok && s.Namespace == "shop" && s.Name == "checkout" {
			svc = s.DeepCopy()
		}
	}
	if svc == nil {
		return fmt.Errorf("built-in example: no Service shop/checkout")
	}
	svc.Annotations[tencent.AnnotationLoadBalancerID] = demoLB
	prof := profileOf(set)
	c, err := core.NewCluster(prof, objs...)
	if err != nil {
		return err
	}

	cpf := profile.NewClientProfile()
	cpf.HttpProfile.Endpoint = srv.Endpoint()
	cpf.HttpProfile.Scheme = "HTTP"
	// The in-process server's own test credential: nothing real is used or needed.
	client, err := clb.NewClient(common.NewCredential(clbtest.DefaultSecretID, clbtest.DefaultSecretKey), clbtest.DefaultRegion, cpf)
	if err != nil {
		return err
	}
	prov, err := tencent.NewProvider(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: client,
		Allowlists: prof.Allowlists, TaskPollInterval: 10 * time.Millisecond})
	if err != nil {
		return err
	}
	policy := prof.Policy
	policy.Prefer = core.PreferLBFeatures // keep the CLB's features: listener SNAT, not prevent-loopback
	r := core.NewReconciler(prov, &core.ReconcilerOptions{Policy: policy, ClusterWriter: memcluster.NewCluster()})

	p, err := r.Plan(ctx, svc, c)
	if err != nil {
		return err
	}
	d.step("planned Service shop/checkout with the LB's features preferred: %s, %d change(s)", p.Decision.Remedy, len(p.Changes))
	d.say(fmt.Sprintf("\n  Service shop/checkout: %s → %s", p.Decision.Remedy, p.Decision.Path))
	for _, ch := range p.Changes {
		d.wrapped("    change: ", "      ", ch.String())
	}
	if p.Blocked != nil {
		d.res.Safe = false
		d.wrapped("    blocked: ", "      ", p.Blocked.String())
		return nil
	}
	out, err := r.Apply(ctx, p)
	if err != nil {
		d.res.Safe = false
		d.wrapped("    apply failed: ", "      ", err.Error())
		return nil
	}
	d.step("applied through the CLB API: %d change(s) written", len(out.Written))
	l, _ := srv.Listener(demoListener)
	again, err := r.Plan(ctx, svc, c)
	if err != nil {
		return err
	}
	d.step("planned again from the listener read back: %d change(s) left", len(again.Changes))
	d.say("\n  On the cloud (the in-process CLB API server):")
	for _, w := range srv.Writes() {
		d.wrapped("    ", "      ", w.Action+" "+strings.Join(sortedParams(w.Params), " "))
	}
	d.wrapped("    ", "      ", fmt.Sprintf("read back: listener %s SnatEnable %v; a second plan has %d change(s)", demoListener, l.SnatEnable, len(again.Changes)))
	if !l.SnatEnable || !again.Empty() {
		d.res.Safe = false
		d.say("    NOT safe afterwards: the listener does not have SNAT on")
	}
	return nil
}

func sortedParams(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// vke plans the VKE example: its at-risk Service needs a new Service to change ip-mode, which
// the demo does not do, and says so.
func (d *demo) vke(ctx context.Context) error {
	d.say("\n== 3. VKE: examples/volcengine in an in-memory cluster")
	set, err := read("vke")
	if err != nil {
		return err
	}
	d.step("read the built-in VKE example: %d objects", len(set.Objects))
	mc, err := newMemCluster(set)
	if err != nil {
		return err
	}
	// The in-memory cluster plays VKE's cloud-controller-manager, which publishes each CLB's
	// address and the ip-mode in effect in the Service's status (KEP-1860), so that apply's
	// check of status.loadBalancer.ingress[].ipMode has something to read.
	for i, k := range mc.keys {
		if k.Kind != "Service" {
			continue
		}
		u, _ := mc.c.Get(ctx, k)
		if typ, _, _ := unstructured.NestedString(u.Object, "spec", "type"); typ != string(corev1.ServiceTypeLoadBalancer) {
			continue
		}
		mode := u.GetAnnotations()[volcengine.AnnotationIPMode]
		if mode == "" {
			mode = string(core.PathVIP)
		}
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"ip": fmt.Sprintf("192.168.10.%d", 10+i), "ipMode": mode}}, "status", "loadBalancer", "ingress")
		mc.c.Put(u)
	}
	d.step("the in-memory cluster published each CLB's address and ip-mode in the Services' status, as VKE's cloud-controller-manager does")
	live0, err := mc.read(ctx, set.Profiles)
	if err != nil {
		return err
	}
	// What the Volcengine API says about those CLBs (address type, PROXY protocol on the
	// listeners), read with the official SDK from the in-process server, as a host would.
	snap, calls, err := d.readVolcengineCLBs(ctx, live0)
	if err != nil {
		return err
	}
	d.say("\n  Read from the cloud (the in-process Volcengine CLB API server):")
	for _, c := range calls {
		d.wrapped("    ", "      ", c)
	}
	ids := make([]string, 0, len(snap))
	for id := range snap {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	shown := map[string]bool{}
	for _, id := range ids {
		f := snap[id]
		if shown[f.ID] { // the snapshot holds each CLB under its ID and its addresses
			continue
		}
		shown[f.ID] = true
		d.wrapped("    ", "      ", fmt.Sprintf("CLB %s (%s): %s, PROXY protocol on the Service's listeners: %s", f.ID, strings.Join(f.Addresses, ", "), f.AddressType, f.ProxyProtocol))
	}
	prov, err := volcengine.NewProvider(&volcengine.DriverOptions{Dialect: &volcengine.Options{CLBs: snap}})
	if err != nil {
		return err
	}
	prof := profileOf(set)
	c, before, err := evaluate(prov.Dialect(), live0)
	if err != nil {
		return err
	}
	rec := core.NewReconciler(prov, &core.ReconcilerOptions{Policy: prof.Policy, ClusterWriter: mc.c})
	outs := planAndApply(ctx, rec, c, before)
	written, blocked := 0, 0
	for _, o := range outs {
		written += len(o.written)
		if strings.HasPrefix(o.status, "blocked") {
			blocked++
		}
	}
	d.step("planned and applied %d exposures: %d written, %d blocked", len(outs), written, blocked)
	live, err := mc.read(ctx, set.Profiles)
	if err != nil {
		return err
	}
	_, after, err := evaluate(prov.Dialect(), live)
	if err != nil {
		return err
	}
	d.compare("vke", outs, after)
	return nil
}

// readVolcengineCLBs starts the in-process Volcengine CLB API server with one private CLB per
// LoadBalancer Service, at the address its status shows, and reads them back with
// volcengine.CLBReader over the official SDK client.
func (d *demo) readVolcengineCLBs(ctx context.Context, set *manifest.Set) (volcengine.CLBSnapshot, []string, error) {
	// The in-process server's own demo credential: nothing real is used or needed.
	const keyID, secret = "AKLTdemo", "demo-secret"
	srv, err := vclbtest.NewServer(&vclbtest.Options{Credentials: []vclbtest.Credential{{AccessKeyID: keyID, SecretAccessKey: secret}}})
	if err != nil {
		return nil, nil, err
	}
	defer srv.Close()
	var svcs []*corev1.Service
	for i := range set.Objects {
		svc, ok := set.Objects[i].Object.(*corev1.Service)
		if !ok || svc.Spec.Type != corev1.ServiceTypeLoadBalancer || len(svc.Status.LoadBalancer.Ingress) == 0 {
			continue
		}
		var ls []vclbtest.Listener
		for _, p := range svc.Spec.Ports {
			proto := string(p.Protocol)
			if proto == "" {
				proto = string(corev1.ProtocolTCP) // the API server's default
			}
			ls = append(ls, vclbtest.Listener{Protocol: proto, Port: int64(p.Port), ProxyProtocolType: vclbtest.ProxyProtocolOff})
		}
		id := fmt.Sprintf("clb-demo-%s", svc.Name)
		if _, err := srv.AddLoadBalancer(vclbtest.LoadBalancer{ID: id, Type: vclbtest.TypePrivate, EniAddress: svc.Status.LoadBalancer.Ingress[0].IP, Listeners: ls}); err != nil {
			return nil, nil, err
		}
		svcs = append(svcs, svc)
	}
	d.step("started the in-process Volcengine CLB API server at %s with %d private CLB(s)", srv.Endpoint(), len(svcs))
	sess, err := session.NewSession(volcsdk.NewConfig().
		WithRegion(vclbtest.DefaultRegion).
		WithCredentials(credentials.NewStaticCredentials(keyID, secret, "")).
		WithEndpoint(srv.Endpoint()).WithDisableSSL(true).WithMaxRetries(0).
		WithHTTPClient(srv.Client()))
	if err != nil {
		return nil, nil, err
	}
	snap, err := volcengine.NewCLBReader(volcclb.New(sess), nil).Snapshot(ctx, svcs...)
	if err != nil {
		return nil, nil, err
	}
	var calls, actions []string
	for _, c := range srv.Calls() {
		params := map[string]string{}
		for k, v := range c.Params {
			params[k] = strings.Join(v, ",")
		}
		calls = append(calls, c.Action+" "+strings.Join(sortedParams(params), " "))
		actions = append(actions, c.Action)
	}
	d.step("read the CLBs through the Volcengine API: %s", strings.Join(actions, ", "))
	return snap, calls, nil
}
