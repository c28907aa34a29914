package kubernetes

import (
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/adapters/manifest"
	"github.com/loopguard/loopguard/core"
)

// loadCase reads testdata/cases/<file> with the strict manifest reader and builds the cluster
// from its ClusterProfile document and the other objects.
func loadCase(t testing.TB, file string) (*manifest.Set, *core.Cluster) {
	t.Helper()
	var r manifest.Reader
	set, errs := r.Read(filepath.Join("testdata", "cases", file))
	for _, err := range errs {
		t.Errorf("%s: %v", file, err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	var prof core.ClusterProfile
	if len(set.Profiles) > 0 {
		prof = *set.Profiles[0].Profile
	}
	objs := make([]runtime.Object, len(set.Objects))
	for i := range set.Objects {
		objs[i] = set.Objects[i].Object
	}
	c, err := core.NewCluster(prof, objs...)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return set, c
}

// find returns the object of a kind and name in a set.
func find(t testing.TB, set *manifest.Set, kind, name string) runtime.Object {
	t.Helper()
	for _, o := range set.Objects {
		m, ok := o.Object.(interface{ GetName() string })
		if ok && m.GetName() == name && o.Object.GetObjectKind().GroupVersionKind().Kind == kind {
			return o.Object
		}
	}
	t.Fatalf("no %s %s in the set", kind, name)
	return nil
}

// emitted collects every reason code the tests saw, so TestEveryEmittedCodeIsDocumented can
// check them against Rules.
var emitted = struct {
	sync.Mutex
	codes map[core.Code]bool
}{codes: map[core.Code]bool{}}

func record(rs ...[]core.Reason) {
	emitted.Lock()
	defer emitted.Unlock()
	for _, list := range rs {
		for _, r := range list {
			emitted.codes[r.Code] = true
		}
	}
}

func recordResult(r *core.Result) {
	record(r.Exposure.Reasons, r.Exposure.Notes, r.Assessment.Reasons)
	for _, o := range r.Offers {
		record([]core.Reason{o.Reason})
		for _, u := range o.Unmet {
			record([]core.Reason{u.Reason})
		}
	}
}

func codes(rs ...[]core.Reason) map[core.Code]bool {
	out := map[core.Code]bool{}
	for _, list := range rs {
		for _, r := range list {
			out[r.Code] = true
		}
	}
	return out
}

func offer(r *core.Result, remedy core.Remedy) *core.Offer {
	for i := range r.Offers {
		if r.Offers[i].Remedy == remedy {
			return &r.Offers[i]
		}
	}
	return nil
}

func unmetKinds(o *core.Offer) []core.PreconditionKind {
	if o == nil {
		return nil
	}
	var out []core.PreconditionKind
	for _, u := range o.Unmet {
		out = append(out, u.Kind)
	}
	return out
}
