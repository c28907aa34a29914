package tencent

import (
	"fmt"
	"sort"
	"strings"
)

// Revision is a TKE component version such as v1.20.6-tke.12: the upstream Kubernetes version
// plus TKE's revision number (image tag of kube-proxy's hyperkube, docs/sources.md#tke-annotations).
type Revision struct {
	Major, Minor, Patch int
	// TKE is the -tke.N suffix; -1 when the version has none.
	TKE int
}

// ParseRevision reads "v1.20.6-tke.12" (the v is optional). A version without the -tke.N
// suffix parses with TKE = -1; text after the revision (".1", "-rc1", "+build") is ignored.
// It allocates only for the error.
func ParseRevision(s string) (Revision, error) {
	in := strings.TrimSpace(s)
	in = strings.TrimPrefix(in, "v")
	r := Revision{TKE: -1}
	var ok bool
	for i, dst := range []*int{&r.Major, &r.Minor, &r.Patch} {
		if *dst, in, ok = leadingInt(in); !ok {
			return Revision{}, fmt.Errorf("not a TKE revision (want e.g. v1.20.6-tke.12): %q", s)
		}
		if i < 2 {
			if !strings.HasPrefix(in, ".") {
				return Revision{}, fmt.Errorf("not a TKE revision (want e.g. v1.20.6-tke.12): %q", s)
			}
			in = in[1:]
		}
	}
	if rest, found := strings.CutPrefix(in, "-tke."); found {
		if r.TKE, in, ok = leadingInt(rest); !ok {
			return Revision{}, fmt.Errorf("not a TKE revision (want e.g. v1.20.6-tke.12): %q", s)
		}
	}
	if in != "" && in[0] != '-' && in[0] != '+' && in[0] != '.' {
		return Revision{}, fmt.Errorf("not a TKE revision (want e.g. v1.20.6-tke.12): %q", s)
	}
	return r, nil
}

// leadingInt reads the decimal digits at the start of s.
func leadingInt(s string) (int, string, bool) {
	n, i := 0, 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		if n > 1<<20 {
			return 0, s, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, s[i:], i > 0
}

func (r Revision) String() string {
	s := fmt.Sprintf("v%d.%d.%d", r.Major, r.Minor, r.Patch)
	if r.TKE >= 0 {
		s += fmt.Sprintf("-tke.%d", r.TKE)
	}
	return s
}

// MinorKey is "1.20" for v1.20.x.
func (r Revision) MinorKey() string { return fmt.Sprintf("%d.%d", r.Major, r.Minor) }

type minor struct{ major, minor int }

func (r Revision) minor() minor { return minor{r.Major, r.Minor} }

// Less orders revisions by version, then TKE revision.
func (r Revision) Less(o Revision) bool {
	for _, p := range [][2]int{{r.Major, o.Major}, {r.Minor, o.Minor}, {r.Patch, o.Patch}, {r.TKE, o.TKE}} {
		if p[0] != p[1] {
			return p[0] < p[1]
		}
	}
	return false
}

// DefaultPreventLoopbackMinimums are the first kube-proxy revisions that "support binding LB
// addresses to the IPVS NIC", which prevent-loopback needs (intl doc 457/42976; docs/sources.md
// §3.2). Keys are minors. The table is data: Options.PreventLoopbackMinimums overrides it.
func DefaultPreventLoopbackMinimums() map[string]string {
	return map[string]string{
		"1.20": "v1.20.6-tke.12",
		"1.18": "v1.18.4-tke.20",
		"1.16": "v1.16.3-tke.25",
		"1.14": "v1.14.3-tke.24",
		"1.12": "v1.12.4-tke.30",
	}
}

// Support is what a kube-proxy revision says about prevent-loopback.
type Support int

const (
	// SupportUnknown: the revision, or the minimum for its minor, is not known.
	SupportUnknown Support = iota
	// Supported: the revision is at or above its minor's minimum.
	Supported
	// TooOld: the revision is below its minor's minimum, or older than every listed minor.
	TooOld
)

// revisionTable answers whether a kube-proxy revision supports prevent-loopback.
type revisionTable struct {
	mins   map[minor]Revision
	newest Revision // the newest listed minimum
	oldest Revision // the oldest listed minimum
	strict bool
}

func newRevisionTable(overrides map[string]string, strict bool) (revisionTable, error) {
	raw := DefaultPreventLoopbackMinimums()
	for k, v := range overrides {
		if v == "" {
			delete(raw, k)
			continue
		}
		raw[k] = v
	}
	t := revisionTable{mins: map[minor]Revision{}, strict: strict}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r, err := ParseRevision(raw[k])
		if err != nil {
			return revisionTable{}, fmt.Errorf("PreventLoopbackMinimums[%q]: %w", k, err)
		}
		if r.MinorKey() != k {
			return revisionTable{}, fmt.Errorf("PreventLoopbackMinimums[%q]: %s is not a %s revision", k, r, k)
		}
		if r.TKE < 0 {
			return revisionTable{}, fmt.Errorf("PreventLoopbackMinimums[%q]: %s has no -tke.N revision", k, r)
		}
		t.mins[r.minor()] = r
		if len(t.mins) == 1 || t.newest.Less(r) {
			t.newest = r
		}
		if len(t.mins) == 1 || r.Less(t.oldest) {
			t.oldest = r
		}
	}
	return t, nil
}

// check returns the support for a kube-proxy version string ("" = unknown) and the minimum
// that applies (ok false when none is known). It allocates nothing.
func (t *revisionTable) check(kubeProxy string) (s Support, min Revision, ok bool) {
	if kubeProxy == "" {
		return SupportUnknown, Revision{}, false
	}
	r, err := ParseRevision(kubeProxy)
	if err != nil {
		return SupportUnknown, Revision{}, false
	}
	min, ok = t.mins[r.minor()]
	if r.TKE < 0 {
		// An upstream version string carries no TKE revision to compare.
		return SupportUnknown, min, ok
	}
	if ok {
		if r.Less(min) {
			return TooOld, min, true
		}
		return Supported, min, true
	}
	if len(t.mins) == 0 {
		return SupportUnknown, Revision{}, false
	}
	switch {
	case versionLess(t.newest, r):
		if t.strict || !assumeNewerMinorsSupportPreventLoopback {
			return SupportUnknown, Revision{}, false
		}
		return Supported, Revision{}, false
	case versionLess(r, t.oldest):
		return TooOld, t.oldest, true
	}
	// A minor between listed ones that has no entry.
	return SupportUnknown, Revision{}, false
}

// minimumsText lists the known minimums, newest first, for messages.
func (t *revisionTable) minimumsText() string {
	rs := make([]Revision, 0, len(t.mins))
	for _, r := range t.mins {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[j].Less(rs[i]) })
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ", ")
}

// versionLess compares minors only (major, minor).
func versionLess(a, b Revision) bool {
	if a.Major != b.Major {
		return a.Major < b.Major
	}
	return a.Minor < b.Minor
}
