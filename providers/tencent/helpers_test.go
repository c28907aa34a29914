package tencent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/adapters/manifest"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
	"github.com/loopguard/loopguard/providers/tencent"
)

// world is a cluster read from testdata files as the CLI reads them: objects through the
// manifest adapter, the ClusterProfile (a file under testdata/profiles) through
// core.ParseProfile, as --profile does.
type world struct {
	objects []runtime.Object
	cluster *core.Cluster
}

func load(t testing.TB, files ...string) *world {
	t.Helper()
	var profile core.ClusterProfile
	var paths []string
	for _, f := range files {
		name := filepath.Join("testdata", f)
		if !strings.HasPrefix(f, "profiles/") {
			paths = append(paths, name)
			continue
		}
		// The profile is read as the CLI's --profile reads it.
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

// object finds "Kind/namespace/name" among the objects read.
func (w *world) object(t testing.TB, ref string) runtime.Object {
	t.Helper()
	parts := strings.Split(ref, "/")
	if len(parts) != 3 {
		t.Fatalf("object ref %q: want Kind/namespace/name", ref)
	}
	for _, o := range w.objects {
		m, err := meta.Accessor(o)
		if err != nil {
			continue
		}
		kind := fmt.Sprintf("%T", o)
		if i := strings.LastIndex(kind, "."); i >= 0 {
			kind = kind[i+1:]
		}
		if kind == parts[0] && m.GetNamespace() == parts[1] && m.GetName() == parts[2] {
			return o
		}
	}
	t.Fatalf("object %s not in the input", ref)
	return nil
}

// evaluate runs the dialect and the core together, under the profile's policy.
func (w *world) evaluate(t testing.TB, d *tencent.Dialect, ref string) (*core.Result, error) {
	t.Helper()
	return core.Evaluate(d, w.object(t, ref), w.cluster, w.cluster.Profile.Policy)
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

func offerFor(offers []core.Offer, r core.Remedy) *core.Offer {
	for i := range offers {
		if offers[i].Remedy == r {
			return &offers[i]
		}
	}
	return nil
}

func rejectionFor(d core.Decision, r core.Remedy) (core.Rejection, bool) {
	for _, rj := range d.Rejected {
		if rj.Remedy == r {
			return rj, true
		}
	}
	return core.Rejection{}, false
}

// documented is every code the core and the Tencent dialect document.
func documented() map[core.Code]bool {
	m := map[core.Code]bool{}
	for _, r := range append(core.Rules(), dialect.Rules()...) {
		m[r.Code] = true
	}
	for _, r := range tencent.NewDialect(nil).Rules() {
		m[r.Code] = true
	}
	return m
}

// checkDocumented fails when a result carries a reason code that no Rules list documents.
func checkDocumented(t testing.TB, res *core.Result) {
	t.Helper()
	doc := documented()
	all := slices.Concat(res.Exposure.Reasons, res.Exposure.Notes, res.Assessment.Reasons, []core.Reason{res.Decision.Reason})
	for _, o := range res.Offers {
		all = append(all, o.Reason)
		all = append(all, o.Notes...)
		for _, u := range o.Unmet {
			all = append(all, u.Reason)
		}
	}
	for _, rj := range res.Decision.Rejected {
		all = append(all, rj.Reason)
	}
	for _, r := range all {
		if !doc[r.Code] {
			t.Errorf("reason code %q is not documented by any Rules (message %q)", r.Code, r.Message)
		}
		if r.Source == "" {
			t.Errorf("reason %q cites no source", r.Code)
		}
	}
}

// ruleReason is the Reason of one of the dialect's rules, by code (the rule values are the
// package's own; tests reach them through Rules).
func ruleReason(c core.Code) core.Reason {
	for _, r := range tencent.NewDialect(nil).Rules() {
		if r.Code == c {
			return r.Reason()
		}
	}
	return core.Reason{Code: c}
}
