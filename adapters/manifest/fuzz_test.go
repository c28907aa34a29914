package manifest

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the decoder. It must never panic, every error must be a
// *Error that names the input and a line inside it, and every object must have a line too.
// The seed corpus is under testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add(generate(1, 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := bytes.Count(data, []byte("\n")) + 1
		var set Set
		errs := set.Decode("fuzz.yaml", data)
		for _, err := range errs {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not a *manifest.Error", err, err)
			}
			if e.Source.Name != "fuzz.yaml" || e.Source.Line < 1 || e.Source.Line > lines {
				t.Fatalf("error %q names line %d of %d", err, e.Source.Line, lines)
			}
			if e.Err == nil || e.Error() == "" {
				t.Fatalf("empty error %#v", e)
			}
		}
		for i := range set.Objects {
			o := &set.Objects[i]
			if o.Source.Line < 1 || o.Source.Line > lines {
				t.Fatalf("object %v at line %d of %d", o.Ref(), o.Source.Line, lines)
			}
			if l := o.Locate("metadata.annotations[a.b/c]").Line; l < o.Source.Line || l > lines {
				t.Fatalf("Locate gave line %d for an object at %d (of %d)", l, o.Source.Line, lines)
			}
		}
		for _, p := range set.Profiles {
			if p.Profile == nil || p.Source.Line < 1 {
				t.Fatalf("profile %+v", p)
			}
		}
	})
}

// FuzzReadProfile feeds arbitrary bytes to the --profile reader: it must never panic, and it
// returns either a valid profile or errors that each name a line of the file.
func FuzzReadProfile(f *testing.F) {
	for _, s := range []string{
		"apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\nprovider: tencent\nproxyMode: ipvs\nallowlists: [clb-l4-snat]\npolicy: {prefer: source-ip, allowTickets: true}\nclients: app=web\n",
		"apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\nProxyMode: ipvs\n",
		"apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\nkubeProxyVersion: latest\ndataplane: {cni: flannel, attachment: tunnel}\n",
		"apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\nclients: 'app in (a'\n",
		"a: 1\n---\nb: 2\n", "- x\n", "{\"apiVersion\":\"loopguard.io/v1alpha1\",\"kind\":\"ClusterProfile\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := bytes.Count(data, []byte("\n")) + 1
		p, errs := ReadProfile("p.yaml", data)
		if (p == nil) == (len(errs) == 0) {
			t.Fatalf("profile %v with errors %v", p, errs)
		}
		if p != nil {
			if verrs := p.Profile.Validate(); len(verrs) > 0 {
				t.Fatalf("accepted an invalid profile: %v", verrs)
			}
		}
		for _, err := range errs {
			var e *Error
			if !errors.As(err, &e) || e.Source.Line < 1 || e.Source.Line > lines {
				t.Fatalf("error %v does not name a line of the file (%d lines)", err, lines)
			}
		}
	})
}
