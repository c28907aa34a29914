package volcengine

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/loopguard/loopguard/core"
)

// parseVersion must agree with core.ParseVersion (version.ParseGeneric) on what is a version
// and on the first three numbers.
func FuzzParseVersionAgreesWithParseGeneric(f *testing.F) {
	for _, s := range []string{"v1.30.2", "1.30", "v1.43.0-vke.1", "v1.20.6-tke.12", " v1.30.0", "1", "v", "", "01.30",
		"1.030.0", "v1.30.", "1.x", "v1.2.3.4", "99999999999999999999.1", "1.18446744073709551615", "V1.30", "1..2", "\tv1.31.0+k3s1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseVersion(s)
		v, err := version.ParseGeneric(s)
		if ok != (err == nil) {
			t.Fatalf("%q: parseVersion ok=%v, ParseGeneric err=%v", s, ok, err)
		}
		if !ok {
			return
		}
		comps := v.Components()
		for i := range got {
			var want uint
			if i < len(comps) {
				want = comps[i]
			}
			if got[i] != want {
				t.Fatalf("%q: component %d = %d, ParseGeneric says %d", s, i, got[i], want)
			}
		}
		for _, min := range [][3]uint{kubernetesMin, ccmMin} {
			m := version.MustParseGeneric(versionString(min))
			if atLeast(got, min) != v.AtLeast(m) {
				t.Fatalf("%q at least %v: %v, ParseGeneric says %v", s, min, atLeast(got, min), v.AtLeast(m))
			}
		}
	})
}

func versionString(c [3]uint) string {
	return version.MajorMinor(c[0], c[1]).WithPatch(c[2]).String()
}

func TestPrerequisitesAllocateNothingWhenMet(t *testing.T) {
	p := readyProfile()
	if n := testing.AllocsPerRun(100, func() { _ = prerequisites(&p) }); n != 0 {
		t.Errorf("prerequisites allocates %v times for a ready cluster", n)
	}
}

func readyProfile() core.ClusterProfile {
	return core.ClusterProfile{KubernetesVersion: "v1.32.2", CCMVersion: "v1.43.0", ProxyMode: core.ProxyModeEBPF,
		Dataplane: core.DataplaneProfile{CNI: "vpc-cni", PodInterface: "ipvlan"}}
}
