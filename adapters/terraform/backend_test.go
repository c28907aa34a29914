package terraform

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/terraform-plugin-log/tflogtest"
	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/drivertest"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

const (
	lbID   = "lb-unit0001"
	lbl80  = "lbl-unit0080"
	lbl81  = "lbl-unit0081"
	key80  = "clb " + lbID + " listener " + lbl80 + " (TCP:80): SnatEnable"
	key81  = "clb " + lbID + " listener " + lbl81 + " (TCP:81): SnatEnable"
	annKey = "Service default/web: metadata.annotations.service.cloud.tencent.com/prevent-loopback"
)

// fixture is a TKE cluster in IPVS mode in memory, with the in-process CLB API server: the
// Tencent driver's direct mode through the official SDK client, unchanged.
type fixture struct {
	srv     *clbtest.Server
	cluster *drivertest.Cluster
	b       *Backend
}

func newFixture(t *testing.T, allow ...clbtest.Capability) *fixture {
	t.Helper()
	srv, err := clbtest.Start(&clbtest.Options{Allowlist: allow, RateLimit: clbtest.Unlimited})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	must[clbtest.LoadBalancer](t)(srv.AddLoadBalancer(clbtest.LoadBalancer{ID: lbID, Type: clbtest.LoadBalancerInternal}))
	must[clbtest.Listener](t)(srv.AddListener(clbtest.Listener{LoadBalancerID: lbID, ID: lbl80, Protocol: clbtest.ProtocolTCP, Port: 80}))
	// Someone else's SNAT, on before loopguard: never loopguard's to take back.
	must[clbtest.Listener](t)(srv.AddListener(clbtest.Listener{LoadBalancerID: lbID, ID: lbl81, Protocol: clbtest.ProtocolTCP, Port: 81, SnatEnable: true}))

	svc := &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{
			tencent.AnnotationInternalSubnet: "subnet-1a2b3c4d", tencent.AnnotationLoadBalancerID: lbID}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}, {Port: 81, Protocol: corev1.ProtocolTCP}}},
	}
	u, err := drivertest.ToUnstructured(svc)
	if err != nil {
		t.Fatal(err)
	}
	cluster := drivertest.NewCluster(u)

	cpf := profile.NewClientProfile()
	cpf.HttpProfile.Endpoint = srv.Endpoint()
	cpf.HttpProfile.Scheme = "HTTP"
	client, err := clb.NewClient(common.NewCredential(clbtest.DefaultSecretID, clbtest.DefaultSecretKey), clbtest.DefaultRegion, cpf)
	if err != nil {
		t.Fatal(err)
	}
	nodes := []runtime.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}},
	}
	b := &Backend{
		Provider: func(context.Context, runtime.Object) (core.Provider, error) {
			return tencent.NewProvider(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: client, TaskPollInterval: time.Millisecond})
		},
		Cluster: cluster,
		Facts:   func(context.Context, string) ([]runtime.Object, error) { return nodes, nil },
		Profile: core.ClusterProfile{Provider: tencent.Name, ProxyMode: core.ProxyModeIPVS, KubeProxyVersion: "v1.20.6-tke.12"},
	}
	return &fixture{srv: srv, cluster: cluster, b: b}
}

func must[T any](t *testing.T) func(T, error) {
	return func(_ T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) snat(t *testing.T, id string) bool {
	t.Helper()
	l, ok := f.srv.Listener(id)
	if !ok {
		t.Fatalf("no listener %s", id)
	}
	return l.SnatEnable
}

var snatSpec = Spec{Namespace: "default", Name: "web", Prefer: "lb-features", Allowlists: []string{string(tencent.CapL4SNAT)}}

func TestLifecycleDirectMode(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, clbtest.L4SNAT)

	pl, ds := f.b.Plan(ctx, snatSpec, nil)
	if ds.HasError() {
		t.Fatalf("plan: %v", ds)
	}
	wantDiff := []string{"cloud clb " + lbID + " listener " + lbl80 + " (TCP:80): SnatEnable false → true"}
	if d := cmp.Diff(wantDiff, pl.Diff); d != "" {
		t.Errorf("plan diff (-want +got):\n%s", d)
	}
	want := State{Spec: snatSpec, Remedy: "lb-snat", Path: "Proxy", Managed: map[string]string{key80: "true"}, LoadBalancer: lbID, Listeners: []string{lbl80}}
	if d := cmp.Diff(want, pl.State); d != "" {
		t.Errorf("planned state (-want +got):\n%s", d)
	}
	if len(f.srv.Writes()) != 0 {
		t.Fatalf("plan wrote: %v", f.srv.Writes())
	}

	st, ds := f.b.Create(ctx, snatSpec)
	if ds.HasError() {
		t.Fatalf("create: %v", ds)
	}
	if d := cmp.Diff(want, *st); d != "" {
		t.Errorf("created state differs from the planned one (-want +got):\n%s", d)
	}
	if !f.snat(t, lbl80) {
		t.Fatal("create: SNAT off")
	}

	// A second plan: nothing to do, the same state.
	again, ds := f.b.Plan(ctx, snatSpec, st)
	if ds.HasError() || len(again.Diff) != 0 {
		t.Fatalf("second plan: %v %v", again.Diff, ds)
	}
	if d := cmp.Diff(*st, again.State); d != "" {
		t.Errorf("second plan changes the state (-want +got):\n%s", d)
	}

	// Drift: the listener's SNAT turned off behind Terraform's back drops out on Read and
	// comes back as a change in the next plan, without being written by the Read.
	if err := f.srv.UpdateListener(lbl80, func(l *clbtest.Listener) { l.SnatEnable = false }); err != nil {
		t.Fatal(err)
	}
	writes := len(f.srv.Writes())
	read, ds := f.b.Read(ctx, *st)
	if ds.HasError() {
		t.Fatalf("read: %v", ds)
	}
	if _, ok := read.Managed[key80]; ok {
		t.Errorf("read after drift still claims %s", key80)
	}
	drift, ds := f.b.Plan(ctx, snatSpec, read)
	if ds.HasError() || len(drift.Diff) != 1 || drift.State.Managed[key80] != "true" {
		t.Fatalf("plan after drift: %v %v %v", drift.Diff, drift.State.Managed, ds)
	}
	if len(f.srv.Writes()) != writes {
		t.Fatal("read or plan wrote to the cloud")
	}
	fixed, ds := f.b.Update(ctx, snatSpec, *read)
	if ds.HasError() || !f.snat(t, lbl80) || fixed.Managed[key80] != "true" {
		t.Fatalf("update after drift: %v %v", fixed, ds)
	}

	// Delete takes back listener 80 only: 81 was someone else's.
	if ds := f.b.Delete(ctx, *fixed); ds.HasError() {
		t.Fatalf("delete: %v", ds)
	}
	if f.snat(t, lbl80) {
		t.Error("delete left the SNAT loopguard set")
	}
	if !f.snat(t, lbl81) {
		t.Error("delete turned off SNAT that someone else set")
	}
}

// An allowlist the cloud has not granted: the plan goes through (the user declared it), apply
// fails with an error on the allowlists attribute, nothing is written, and once the cloud
// grants it a second apply converges.
func TestAllowlistRefusedByCloud(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	st, ds := f.b.Create(ctx, snatSpec)
	if st != nil || !ds.HasError() {
		t.Fatalf("create without the allowlist: state %v, diagnostics %v", st, ds)
	}
	d := ds[len(ds)-1]
	if d.Attribute != AttrAllowlists || !strings.Contains(d.Summary, "not allowlisted") || !strings.Contains(d.Detail, "Nothing was written.") {
		t.Errorf("diagnostic: %+v", d)
	}
	if f.snat(t, lbl80) {
		t.Fatal("half-applied: SNAT on")
	}
	f.srv.Allow(clbtest.L4SNAT)
	st, ds = f.b.Create(ctx, snatSpec)
	if ds.HasError() || !f.snat(t, lbl80) || st.Managed[key80] != "true" {
		t.Fatalf("second create: %v %v", st, ds)
	}
}

// Not declared and not allowed to file a ticket: loopguard picks another remedy. Allowed to:
// the plan is blocked, an error on allowlists naming what to ask support for.
func TestAllowlistTicketBlocksPlan(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	spec := Spec{Namespace: "default", Name: "web", Prefer: "lb-features", AllowTickets: true}
	_, ds := f.b.Plan(ctx, spec, nil)
	if !ds.HasError() {
		t.Fatalf("plan: want a blocked plan, got %v", ds)
	}
	d := ds[0]
	if d.Attribute != AttrAllowlists || !strings.Contains(d.Summary, string(tencent.CapL4SNAT)) || !strings.Contains(d.Detail, "Ask the cloud's support") {
		t.Errorf("diagnostic: %+v", d)
	}
}

func TestMissingObject(t *testing.T) {
	f := newFixture(t)
	_, ds := f.b.Plan(context.Background(), Spec{Namespace: "default", Name: "nope"}, nil)
	if len(ds) != 1 || ds[0].Attribute != AttrName || !strings.Contains(ds[0].Summary, "Service default/nope does not exist") {
		t.Fatalf("diagnostics: %v", ds)
	}
	st, ds := f.b.Read(context.Background(), State{Spec: Spec{Namespace: "default", Name: "nope"}})
	if st != nil || ds.HasError() {
		t.Fatalf("read of a gone object: want (nil, no error), got %v %v", st, ds)
	}
}

// The default policy on IPVS: prevent-loopback, an annotation; its notes become warnings; an
// annotation removed behind Terraform's back is drift; import finds what loopguard's field
// manager owns.
func TestAnnotationRemedy(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	spec := Spec{Namespace: "default", Name: "web"}
	pl, ds := f.b.Plan(ctx, spec, nil)
	if ds.HasError() || pl.State.Remedy != "intercept-vip" || pl.State.Managed[annKey] != "true" {
		t.Fatalf("plan: %+v %v", pl.State, ds)
	}
	warnings := 0
	for _, d := range ds {
		if d.Severity == Warning && d.Code != "" {
			warnings++
		}
	}
	if warnings == 0 {
		t.Errorf("plan: want the notes as warnings, got %v", ds)
	}
	st, ds := f.b.Create(ctx, spec)
	if ds.HasError() {
		t.Fatal(ds)
	}
	again, _ := f.b.Plan(ctx, spec, st)
	if len(again.Diff) != 0 || again.State.Remedy != "intercept-vip" {
		t.Fatalf("second plan: %v %+v", again.Diff, again.State)
	}
	// Behind Terraform's back: the annotation goes.
	u, _ := f.cluster.Get(ctx, core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "default", Name: "web"})
	ann := u.GetAnnotations()
	delete(ann, tencent.AnnotationPreventLoopback)
	u.SetAnnotations(ann)
	f.cluster.Put(u)
	read, _ := f.b.Read(ctx, *st)
	if _, ok := read.Managed[annKey]; ok {
		t.Fatal("read after the annotation went still claims it")
	}
	if ds := f.b.Delete(ctx, *read); ds.HasError() {
		t.Fatal(ds)
	}
}

func TestParseID(t *testing.T) {
	cases := map[string]struct {
		id      string
		want    Spec
		wantErr bool
	}{
		"service":   {id: "shop/web", want: Spec{Kind: "Service", Namespace: "shop", Name: "web"}},
		"ingress":   {id: "Ingress/shop/web", want: Spec{Kind: "Ingress", Namespace: "shop", Name: "web"}},
		"one part":  {id: "web", wantErr: true},
		"bad kind":  {id: "Pod/shop/web", wantErr: true},
		"empty ns":  {id: "/web", wantErr: true},
		"four part": {id: "a/b/c/d", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseID(tc.id)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr {
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("(-want +got):\n%s", d)
				}
				if got.ID() != tc.id && !(tc.want.Kind == "Service" && got.ID() == tc.id) {
					t.Errorf("ID() = %q, want %q", got.ID(), tc.id)
				}
			}
		})
	}
}

func TestBlockerDiagnostics(t *testing.T) {
	obj := core.ObjectRef{Kind: "Service", Namespace: "shop", Name: "web"}
	cases := map[string]struct {
		err      error
		attr     string
		contains string
	}{
		"allowlist": {err: &core.AllowlistError{Object: obj, Capability: "clb-l4-snat", Ask: "CLB L4 SNAT"}, attr: AttrAllowlists, contains: "CLB L4 SNAT"},
		"immutable": {err: &core.KindError{Kind: core.ErrImmutable, Msg: "needs a new Service"}, attr: AttrAllowDisruptive, contains: AttrAllowDisruptive + " = true"},
		"precondition": {err: &core.PreconditionError{Component: "kube-proxy", Have: "v1.18.4-tke.19", Need: "v1.18.4-tke.20 or later"},
			contains: "kube-proxy is v1.18.4-tke.19"},
		"unauthenticated": {err: &core.KindError{Kind: core.ErrUnauthenticated, Msg: "AuthFailure.SignatureFailure"}, contains: "credentials"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := blockerDiagnostic(obj, core.BlockerOf(tc.err))
			if d.Severity != Error || d.Attribute != tc.attr || !strings.Contains(d.Summary+"\n"+d.Detail, tc.contains) {
				t.Errorf("%+v", d)
			}
			if !strings.Contains(d.Detail, "Kind: ") {
				t.Errorf("detail names no kind: %q", d.Detail)
			}
		})
	}
}

// A change left to a person carries its structure in the diagnostic's detail: the fields and
// values to set (not a command for one tool), and the deletion that ends a replacement.
func TestUserDiagnosticsCarryTheEdits(t *testing.T) {
	obj := core.ObjectRef{Kind: "Service", Namespace: "shop", Name: "web"}
	deploy := core.ObjectKey{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "client"}
	old := core.ObjectKey{APIVersion: "v1", Kind: "Service", Namespace: "shop", Name: "web"}
	path := []core.PathElem{{Field: "spec"}, {Field: "template"}, {Field: "spec"}, {Field: "affinity"}}
	got := userDiagnostics(obj, []core.Change{
		{By: core.WriterUser, Object: &deploy, Field: "spec.template.spec.affinity", From: "0 required term(s)", To: "1 required term(s)",
			Edits: []core.Edit{{Path: path, Value: map[string]any{"podAntiAffinity": map[string]any{}}}}, Reason: core.Reason{Code: "vke-anti-affinity-patch"}},
		{By: core.WriterUser, Object: &old, Delete: true, Field: "clients", To: "Service shop/web-proxy"},
		{By: core.WriterCluster, Object: &old, Field: "metadata.annotations[x]", To: "y"},
	})
	if len(got) != 2 {
		t.Fatalf("%d diagnostics, want 2 (the cluster change is loopguard's): %+v", len(got), got)
	}
	for i, want := range []string{`set spec.template.spec.affinity = {"podAntiAffinity":{}}`, "then delete Service shop/web"} {
		if d := got[i]; d.Severity != Warning || !strings.Contains(d.Detail, want) || strings.Contains(d.Detail, "kubectl") {
			t.Errorf("diagnostic %d = %+v, want a warning whose detail has %q and no kubectl command", i, d, want)
		}
	}
}

// The bridge writes hclog records through tflog with the request's context: levels, names,
// implied and call arguments as fields, errors as their message, masked secrets.
func TestLoggerWritesThroughTflog(t *testing.T) {
	var buf bytes.Buffer
	ctx := tflogtest.RootLogger(context.Background(), &buf)
	l := Logger(ctx, &LoggerOptions{Mask: []string{"s3cret"}}).Named("tencent").With("object", "Service shop/web")
	l.Info("listener write accepted", "task", "t-1")
	l.Warn("change failed", "error", errors.New("refused: key s3cret"))
	l.Debug("lone value", "dangling")
	l.Log(hclog.Error, "by level")
	entries, err := tflogtest.MultilineJSONDecode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 {
		t.Fatalf("entries: %v", entries)
	}
	first := entries[0]
	if first["@level"] != "info" || first["@message"] != "listener write accepted" || first["task"] != "t-1" ||
		first["object"] != "Service shop/web" || first["@loopguard"] != "tencent" {
		t.Errorf("first entry: %v", first)
	}
	if entries[1]["@level"] != "warn" || strings.Contains(entries[1]["error"].(string), "s3cret") {
		t.Errorf("second entry: %v", entries[1])
	}
	if entries[2]["@level"] != "debug" || entries[2][hclog.MissingKey] != "dangling" {
		t.Errorf("third entry: %v", entries[2])
	}
	if entries[3]["@level"] != "error" {
		t.Errorf("fourth entry: %v", entries[3])
	}
	if strings.Contains(buf.String(), "s3cret") {
		t.Error("a masked secret reached the log")
	}
}
