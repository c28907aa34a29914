package main

import (
	"context"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"path"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"
	volcclb "github.com/volcengine/volcengine-go-sdk/service/clb"
	volcsdk "github.com/volcengine/volcengine-go-sdk/volcengine"
	"github.com/volcengine/volcengine-go-sdk/volcengine/credentials"
	"github.com/volcengine/volcengine-go-sdk/volcengine/session"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/adapters/manifest"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/memcluster"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/tencent/clbtest"
	"github.com/loopguard/loopguard/providers/volcengine"
	vclbtest "github.com/loopguard/loopguard/providers/volcengine/clbtest"
)

// demoFiles are copies of examples/manifests (tke) and examples/volcengine (vke); a test keeps
// them identical to the examples, which go:embed cannot reach from here.
//
//go:embed demo
var demoFiles embed.FS

// demoLB and demoListener are the CLB the in-process Tencent API server holds for the direct
// mode part of the demo.
const (
	demoLB       = "lb-demo0001"
	demoListener = "lbl-demo0080"
)

func newDemoCommand(stdout, stderr io.Writer, code *int) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Run the whole job on the built-in examples: no cluster, no cloud, no credentials",
		Long: `demo runs what scan and apply do, on the built-in example clusters, with no cluster, no cloud
and no credentials: an in-memory cluster made from the example manifests (the TKE example of
examples/manifests, the VKE example of examples/volcengine) and the in-process Tencent and
Volcengine CLB API servers, which the official SDK clients talk to. It assesses, plans and applies through the same Reconciler and drivers as apply, then
re-assesses and shows what changed in the "cluster" and on the "cloud":

  1. TKE, as 'loopguard apply' does it: annotations written to the in-memory cluster;
  2. TKE, as a host that owns the CLB does it (the Tencent driver's direct mode, which the CLI
     never uses against a real cloud): listener SNAT turned on through the CLB API of the
     in-process server with the official SDK client, and read back;
  3. VKE: the CLBs' facts read through the Volcengine API (address type, PROXY protocol),
     then what can be fixed, and what is left for you and why.

Progress goes to standard error, the report to standard output.

Exit codes: 0 every exposure the demo could fix is safe afterwards (the others say why not);
3 otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d := &demo{out: stdout, progress: stderr, ok: true, start: time.Now()}
			if err := d.run(cmd.Context()); err != nil {
				*code = exitBlocked
				return err
			}
			if !d.ok {
				*code = exitBlocked
			}
			return nil
		},
	}
}

type demo struct {
	out, progress io.Writer
	start         time.Time
	// ok stays true while every exposure the demo could fix is safe afterwards.
	ok bool
}

func (d *demo) step(format string, args ...any) {
	fmt.Fprintf(d.progress, "demo [%5.2fs] %s\n", time.Since(d.start).Seconds(), fmt.Sprintf(format, args...))
}

// readDemo reads one embedded example folder as assess reads -f FOLDER.
func readDemo(dir string) (*manifest.Set, error) {
	set := &manifest.Set{}
	entries, err := fs.ReadDir(demoFiles, path.Join("demo", dir))
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := path.Join("demo", dir, e.Name())
		data, err := demoFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		if errs := set.Decode(path.Join("(built-in) examples", dir, e.Name()), data); len(errs) > 0 {
			return nil, fmt.Errorf("built-in example: %v", errs[0])
		}
	}
	return set, nil
}

func (d *demo) run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := d.tke(ctx); err != nil {
		return err
	}
	if err := d.direct(ctx); err != nil {
		return err
	}
	if err := d.vke(ctx); err != nil {
		return err
	}
	d.step("done")
	if d.ok {
		fmt.Fprintln(d.out, "\nEvery exposure the demo could fix is safe afterwards; the others say above why not.")
	} else {
		fmt.Fprintln(d.out, "\nSome exposure the demo could fix is not safe afterwards (above).")
	}
	return nil
}

// cluster is an in-memory cluster holding the set's objects, and the keys to read them back.
type demoCluster struct {
	c    *memcluster.Cluster
	keys []core.ObjectKey
	// types remembers each object's Go type, to read it back typed.
	types map[core.ObjectKey]reflect.Type
}

func newDemoCluster(set *manifest.Set) (*demoCluster, error) {
	dc := &demoCluster{types: map[core.ObjectKey]reflect.Type{}}
	var us []*unstructured.Unstructured
	for i := range set.Objects {
		u, err := memcluster.ToUnstructured(set.Objects[i].Object)
		if err != nil {
			return nil, err
		}
		k := memcluster.KeyOf(u)
		dc.keys = append(dc.keys, k)
		dc.types[k] = reflect.TypeOf(set.Objects[i].Object).Elem()
		us = append(us, u)
	}
	dc.c = memcluster.NewCluster(us...)
	return dc, nil
}

// read reads every object back from the in-memory cluster, typed as it was read, located at
// "in-memory cluster".
func (dc *demoCluster) read(ctx context.Context, profiles []manifest.Profile) (*manifest.Set, error) {
	set := &manifest.Set{Profiles: profiles}
	for _, k := range dc.keys {
		u, err := dc.c.Get(ctx, k)
		if err != nil || u == nil {
			return nil, fmt.Errorf("in-memory cluster: %s: %v", k, err)
		}
		var obj k8sruntime.Object = u
		if t := dc.types[k]; t != reflect.TypeOf(unstructured.Unstructured{}) {
			typed := reflect.New(t).Interface().(k8sruntime.Object)
			if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
				return nil, err
			}
			obj = typed
		}
		set.Objects = append(set.Objects, manifest.Object{Object: obj, Source: manifest.Source{Name: "in-memory cluster"}})
	}
	return set, nil
}

func demoOptions() *assessOptions {
	return &assessOptions{output: "table", set: func(string) bool { return false }}
}

// verdicts assesses a set as assess does; adjust, when set, changes the inputs first (the
// dialect the cloud's reads feed).
func verdicts(set *manifest.Set, adjust ...func(*inputs)) (*Report, *inputs, error) {
	rep := newReport()
	in, err := demoOptions().prepare(set, rep)
	if err != nil {
		return nil, nil, err
	}
	for _, a := range adjust {
		a(in)
	}
	evaluateAll(in.entry.newDialect, in.set, in.cluster, in.profile.Policy, rep, 0)
	rep.finish()
	return rep, in, nil
}

// tke is the CLI's own job on the TKE example: plan against the in-memory cluster, write,
// re-assess.
func (d *demo) tke(ctx context.Context) error {
	fmt.Fprintln(d.out, "== 1. TKE, as 'loopguard apply' does it: the example of examples/manifests in an in-memory cluster")
	set, err := readDemo("tke")
	if err != nil {
		return err
	}
	d.step("read the built-in TKE example: %d objects", len(set.Objects))
	dc, err := newDemoCluster(set)
	if err != nil {
		return err
	}
	before, in, err := verdicts(set)
	if err != nil {
		return err
	}
	d.step("assessed %d exposures: %d at risk", before.Summary.Assessed, before.Summary.AtRisk)
	pl := &planner{in: in, writer: dc.c}
	prep, rec, plans, err := pl.plan(ctx, newReport(), ApplyReportKind, "demo")
	if err != nil {
		return err
	}
	d.step("planned %d exposures against the in-memory cluster", len(prep.Plans))
	apply(ctx, rec, prep, plans)
	prep.finish()
	d.step("applied: %d change(s) written to %d object(s)", prep.Summary.Written, prep.Summary.Applied+prep.Summary.Pending)
	live, err := dc.read(ctx, set.Profiles)
	if err != nil {
		return err
	}
	after, _, err := verdicts(live)
	if err != nil {
		return err
	}
	d.step("re-assessed the in-memory cluster: %d at risk", after.Summary.AtRisk)
	d.compare(before, after, prep)
	fmt.Fprintln(d.out, "\n  In the cluster:")
	if len(dc.c.Writes()) == 0 {
		fmt.Fprintln(d.out, "    nothing written")
	}
	for _, p := range prep.Plans {
		for _, c := range p.Written {
			fmt.Fprintf(d.out, "    wrote %s\n", changeText(&c))
		}
	}
	return nil
}

// compare prints each exposure's verdict before and after, with what was done about it, and
// records whether every fixable one is safe.
func (d *demo) compare(before, after *Report, prep *PlanReport) {
	afterBy := map[ObjectRef]*Result{}
	for i := range after.Results {
		afterBy[after.Results[i].Object] = &after.Results[i]
	}
	planBy := map[ObjectRef]*ObjectPlan{}
	for i := range prep.Plans {
		planBy[prep.Plans[i].Object] = &prep.Plans[i]
	}
	fmt.Fprintln(d.out, "\n  OBJECT                      BEFORE     AFTER      WHAT HAPPENED")
	for i := range before.Results {
		b := &before.Results[i]
		a := afterBy[b.Object]
		p := planBy[b.Object]
		afterRisk := "?"
		if a != nil {
			afterRisk = a.Risk
		}
		what := "-"
		if p != nil {
			what = statusColumn(p)
			if p.Blocked != nil {
				what += ": " + p.Blocked.Message
			}
			if p.Error != nil {
				what += ": " + p.Error.Message
			}
		}
		fixable := p != nil && (p.Status == StatusApplied || p.Status == StatusUpToDate || p.Status == StatusPlanned)
		if fixable && afterRisk != string(core.RiskNone) && b.Risk != string(core.RiskNone) {
			d.ok = false
			what += " — NOT safe afterwards"
		}
		if p != nil && p.Status == StatusUserAction {
			for _, c := range p.Changes {
				if c.By == "user" {
					what += "; for you: " + strings.TrimPrefix(changeText(&c), "you: ")
				}
			}
		}
		fmt.Fprintf(d.out, "  %-27s %-10s %-10s %s\n", objectColumn(b.Object), b.Risk, afterRisk, what)
	}
}

// direct is the Tencent driver's direct mode against the in-process CLB API server: what a
// host that owns the CLB does, through the same Reconciler.
func (d *demo) direct(ctx context.Context) error {
	fmt.Fprintln(d.out, "\n== 2. TKE direct mode, as a host that owns the CLB does it: listener SNAT through the CLB API (in-process server)")
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

	set, err := readDemo("tke")
	if err != nil {
		return err
	}
	// checkout, as TKE's controller leaves it once its CLB exists (service.kubernetes.io/loadbalance-id).
	var svc *corev1.Service
	for i := range set.Objects {
		if s, ok := set.Objects[i].Object.(*corev1.Service); ok && s.Namespace == "shop" && s.Name == "checkout" {
			svc = s.DeepCopy()
		}
	}
	if svc == nil {
		return fmt.Errorf("built-in example: no Service shop/checkout")
	}
	svc.Annotations[tencent.AnnotationLoadBalancerID] = demoLB
	rep := newReport()
	in, err := demoOptions().prepare(set, rep)
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
		Allowlists: in.profile.Allowlists, TaskPollInterval: 10 * time.Millisecond})
	if err != nil {
		return err
	}
	policy := in.profile.Policy
	policy.Prefer = core.PreferLBFeatures // keep the CLB's features: listener SNAT, not prevent-loopback
	r := core.NewReconciler(prov, core.WithPolicy(policy), core.WithClusterWriter(memcluster.NewCluster()))

	p, err := r.Plan(ctx, svc, in.cluster)
	if err != nil {
		return err
	}
	d.step("planned Service shop/checkout with the LB's features preferred: %s, %d change(s)", p.Decision.Remedy, len(p.Changes))
	fmt.Fprintf(d.out, "\n  Service shop/checkout: %s → %s\n", p.Decision.Remedy, p.Decision.Path)
	for _, c := range p.Changes {
		fmt.Fprintf(d.out, "    change: %s\n", c.String())
	}
	if p.Blocked != nil {
		d.ok = false
		fmt.Fprintf(d.out, "    blocked: %v\n", p.Blocked)
		return nil
	}
	out, err := r.Apply(ctx, p)
	if err != nil {
		d.ok = false
		fmt.Fprintf(d.out, "    apply failed: %v\n", err)
		return nil
	}
	d.step("applied through the CLB API: %d change(s) written", len(out.Written))
	l, _ := srv.Listener(demoListener)
	again, err := r.Plan(ctx, svc, in.cluster)
	if err != nil {
		return err
	}
	d.step("re-planned from the listener read back: %d change(s) left", len(again.Changes))
	fmt.Fprintln(d.out, "\n  On the cloud (the in-process CLB API server):")
	for _, w := range srv.Writes() {
		fmt.Fprintf(d.out, "    %s %s\n", w.Action, strings.Join(sortedParams(w.Params), " "))
	}
	fmt.Fprintf(d.out, "    read back: listener %s SnatEnable %v; a second plan has %d change(s)\n", demoListener, l.SnatEnable, len(again.Changes))
	if !l.SnatEnable || !again.Empty() {
		d.ok = false
		fmt.Fprintln(d.out, "    NOT safe afterwards: the listener does not have SNAT on")
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

// vke plans the VKE example offline: its at-risk Service needs a new Service to change
// ip-mode, which the demo does not do, and says so.
func (d *demo) vke(ctx context.Context) error {
	fmt.Fprintln(d.out, "\n== 3. VKE: the example of examples/volcengine in an in-memory cluster")
	set, err := readDemo("vke")
	if err != nil {
		return err
	}
	d.step("read the built-in VKE example: %d objects", len(set.Objects))
	dc, err := newDemoCluster(set)
	if err != nil {
		return err
	}
	// The in-memory cluster plays VKE's cloud-controller-manager, which publishes each CLB's
	// address and the ip-mode in effect in the Service's status (seed 003; KEP-1860), so that
	// apply's check of status.loadBalancer.ingress[].ipMode has something to read.
	for i, k := range dc.keys {
		if k.Kind != "Service" {
			continue
		}
		u, _ := dc.c.Get(ctx, k)
		if typ, _, _ := unstructured.NestedString(u.Object, "spec", "type"); typ != string(corev1.ServiceTypeLoadBalancer) {
			continue
		}
		mode := u.GetAnnotations()[volcengine.AnnotationIPMode]
		if mode == "" {
			mode = string(core.PathVIP)
		}
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"ip": fmt.Sprintf("192.168.10.%d", 10+i), "ipMode": mode}}, "status", "loadBalancer", "ingress")
		dc.c.Put(u)
	}
	d.step("the in-memory cluster published each CLB's address and ip-mode in the Services' status, as VKE's cloud-controller-manager does")
	live0, err := dc.read(ctx, set.Profiles)
	if err != nil {
		return err
	}
	// What the Volcengine API says about those CLBs (address type, PROXY protocol on the
	// listeners), read with the official SDK from the in-process server, as a host would.
	snap, calls, err := d.readVolcengineCLBs(ctx, live0)
	if err != nil {
		return err
	}
	useCLBs := func(in *inputs) {
		in.entry.newDialect = func() core.Dialect { return volcengine.NewDialect(&volcengine.Options{CLBs: snap}) }
		in.entry.newProvider = func(env driverEnv) (core.Provider, error) {
			return volcengine.NewProvider(&volcengine.DriverOptions{Dialect: &volcengine.Options{CLBs: snap}, ServerVersion: env.serverVersion})
		}
	}
	fmt.Fprintln(d.out, "\n  Read from the cloud (the in-process Volcengine CLB API server):")
	for _, c := range calls {
		fmt.Fprintf(d.out, "    %s\n", c)
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
		fmt.Fprintf(d.out, "    CLB %s (%s): %s, PROXY protocol on the Service's listeners: %s\n", f.ID, strings.Join(f.Addresses, ", "), f.AddressType, f.ProxyProtocol)
	}
	before, in, err := verdicts(live0, useCLBs)
	if err != nil {
		return err
	}
	pl := &planner{in: in, writer: dc.c}
	prep, rec, plans, err := pl.plan(ctx, newReport(), ApplyReportKind, "demo")
	if err != nil {
		return err
	}
	apply(ctx, rec, prep, plans)
	prep.finish()
	d.step("planned and applied %d exposures: %d written, %d blocked", len(prep.Plans), prep.Summary.Written, prep.Summary.Blocked)
	live, err := dc.read(ctx, set.Profiles)
	if err != nil {
		return err
	}
	after, _, err := verdicts(live, useCLBs)
	if err != nil {
		return err
	}
	d.compare(before, after, prep)
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
