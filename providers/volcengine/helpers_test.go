package volcengine_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/adapters/manifest"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/volcengine"
)

// world is a cluster read from testdata files with the manifest adapter, as the CLI reads it.
type world struct {
	objects []runtime.Object
	cluster *core.Cluster
}

// load reads a ClusterProfile file ("" for none: every cluster fact unknown) and object files,
// all relative to testdata/. Objects go through the manifest adapter, as the CLI reads them;
// the profile through core.ParseProfile, as the CLI's --profile does.
func load(t testing.TB, profileFile string, files ...string) *world {
	t.Helper()
	var profile core.ClusterProfile
	if profileFile != "" {
		name := filepath.Join("testdata", profileFile)
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := core.ParseProfile(name, data)
		if err != nil {
			t.Fatalf("profile: %v", err)
		}
		profile = *p
	}
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = filepath.Join("testdata", f)
	}
	var r manifest.Reader
	set, errs := r.Read(paths...)
	if len(errs) > 0 {
		t.Fatalf("reading %v: %v", files, errs)
	}
	w := &world{}
	for _, o := range set.Objects {
		w.objects = append(w.objects, o.Object)
	}
	c, err := core.NewCluster(profile, w.objects...)
	if err != nil {
		t.Fatalf("NewCluster: %v", err)
	}
	w.cluster = c
	return w
}

// object finds a loaded object by kind and namespace/name ("default" when ns is empty).
func (w *world) object(t testing.TB, kind, ns, name string) runtime.Object {
	t.Helper()
	if ns == "" {
		ns = "default"
	}
	for _, o := range w.objects {
		m, ok := o.(v1.Object)
		if !ok || o.GetObjectKind().GroupVersionKind().Kind != kind {
			continue
		}
		if m.GetName() == name && (m.GetNamespace() == ns || kind == "Node") {
			return o
		}
	}
	t.Fatalf("no %s %s/%s in testdata", kind, ns, name)
	return nil
}

// evaluate runs core.Evaluate on a Service with the profile's policy.
func (w *world) evaluate(t testing.TB, d *volcengine.Dialect, ns, name string) *core.Result {
	t.Helper()
	r, err := core.Evaluate(d, w.object(t, "Service", ns, name), w.cluster, w.cluster.Profile.Policy)
	if err != nil {
		t.Fatalf("Evaluate %s/%s: %v", ns, name, err)
	}
	return r
}

func codes(rs []core.Reason) []core.Code {
	out := make([]core.Code, len(rs))
	for i, r := range rs {
		out[i] = r.Code
	}
	return out
}

func reasonFor(rs []core.Reason, c core.Code) (core.Reason, bool) {
	for _, r := range rs {
		if r.Code == c {
			return r, true
		}
	}
	return core.Reason{}, false
}

func offer(t testing.TB, r *core.Result, remedy core.Remedy) core.Offer {
	t.Helper()
	for _, o := range r.Offers {
		if o.Remedy == remedy {
			return o
		}
	}
	t.Fatalf("no %s offer among %v", remedy, r.Offers)
	return core.Offer{}
}

func rejection(t testing.TB, d core.Decision, remedy core.Remedy) core.Rejection {
	t.Helper()
	for _, r := range d.Rejected {
		if r.Remedy == remedy {
			return r
		}
	}
	t.Fatalf("%s not among the rejected remedies %v", remedy, d.Rejected)
	return core.Rejection{}
}

func unmetKinds(o core.Offer) []core.PreconditionKind {
	out := make([]core.PreconditionKind, len(o.Unmet))
	for i, u := range o.Unmet {
		out[i] = u.Kind
	}
	return out
}

// wantCodes fails unless every code appears among the reasons.
func wantCodes(t testing.TB, rs []core.Reason, want ...core.Code) {
	t.Helper()
	have := codes(rs)
	for _, c := range want {
		if !slices.Contains(have, c) {
			t.Errorf("reason %s missing; have %v", c, have)
		}
	}
}

// wantNoCodes fails if any of the codes appears among the reasons.
func wantNoCodes(t testing.TB, rs []core.Reason, unwanted ...core.Code) {
	t.Helper()
	have := codes(rs)
	for _, c := range unwanted {
		if slices.Contains(have, c) {
			t.Errorf("reason %s present but not expected; have %v", c, have)
		}
	}
}

func wantContains(t testing.TB, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s = %q\nwant it to contain %q", what, s, sub)
		}
	}
}

// ruleReason is the Reason of one of the dialect's rules, by code (the rule values are the
// package's own; tests reach them through Rules).
func ruleReason(c core.Code) core.Reason {
	for _, r := range volcengine.NewDialect(nil).Rules() {
		if r.Code == c {
			return r.Reason()
		}
	}
	return core.Reason{Code: c}
}
