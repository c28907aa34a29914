package near

import (
	"reflect"
	"testing"
)

func TestWords(t *testing.T) {
	cases := map[string]struct {
		word       string
		candidates []string
		want       []string
	}{
		"case only":        {"TKEServiceConfig", []string{"Service", "TkeServiceConfig"}, []string{"TkeServiceConfig"}},
		"one letter off":   {"tke-prevent-lopback", []string{"public-lb", "tke-prevent-loopback"}, []string{"tke-prevent-loopback"}},
		"a part of a code": {"snat", []string{"tke-offer-l4-snat", "public-lb", "tke-offer-l7-snat"}, []string{"tke-offer-l4-snat", "tke-offer-l7-snat"}},
		"nothing near":     {"banana", []string{"Service", "Ingress"}, []string{}},
		"itself excluded":  {"Service", []string{"Service"}, []string{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Words(tc.word, tc.candidates, 3); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Words(%q) = %q, want %q", tc.word, got, tc.want)
			}
		})
	}
	if d := Distance("kitten", "sitting"); d != 3 {
		t.Errorf("Distance(kitten, sitting) = %d, want 3", d)
	}
}
