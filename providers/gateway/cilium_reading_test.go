package gateway

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// TestCiliumConfigSpellings: the cilium-config keys the operator reads for Gateway API, decoded
// as it decodes them: github.com/cilium/hive cell/config.go (701ba0e3) decoderConfig,
// mapstructure with WeaklyTypedInput, whose decodeBool is strconv.ParseBool with "" as false and
// decodeUint strconv.ParseUint(s, 0, 32) with "" as 0 (github.com/mitchellh/mapstructure v1.5.0
// mapstructure.go); a value it refuses fails provideConfig and the operator does not start. The
// keys and their defaults: operator/pkg/gateway-api/cell.go gatewayApiConfig (cilium main
// a5827f4d).
func TestCiliumConfigSpellings(t *testing.T) {
	type reading struct {
		Value, Set, Fails bool
	}
	bools := map[string]struct {
		value string
		want  reading
	}{
		"true":    {"true", reading{Value: true, Set: true}},
		"True":    {"True", reading{Value: true, Set: true}},
		"TRUE":    {"TRUE", reading{Value: true, Set: true}},
		"1":       {"1", reading{Value: true, Set: true}},
		"t":       {"t", reading{Value: true, Set: true}},
		"yes":     {"yes", reading{Set: true, Fails: true}},
		"empty":   {"", reading{Set: true}},
		"garbage": {"garbage", reading{Set: true, Fails: true}},
		"false":   {"false", reading{Set: true}},
		"F":       {"F", reading{Set: true}},
	}
	for name, tc := range bools {
		t.Run("bool/"+name, func(t *testing.T) {
			cm := &corev1.ConfigMap{Data: map[string]string{ciliumProxyProtocol: tc.value}}
			v, set, err := ciliumBool(cm, ciliumProxyProtocol)
			if err != nil && !errors.Is(err, core.ErrInvalid) {
				t.Fatalf("err = %v, want bad input", err)
			}
			if diff := cmp.Diff(tc.want, reading{Value: v, Set: set, Fails: err != nil}); diff != "" {
				t.Errorf("%q (-want +got):\n%s", tc.value, diff)
			}
		})
	}
	if _, set, err := ciliumBool(&corev1.ConfigMap{}, ciliumProxyProtocol); set || err != nil {
		t.Errorf("absent key: set %v err %v, want the flag's default", set, err)
	}
	hops := map[string]struct {
		value string
		want  uint64
		fails bool
	}{
		"decimal":  {"2", 2, false},
		"hex":      {"0x10", 16, false},
		"empty":    {"", 0, false},
		"max":      {"4294967295", 4294967295, false},
		"tooBig":   {"4294967296", 0, true},
		"negative": {"-1", 0, true},
		"word":     {"two", 0, true},
	}
	for name, tc := range hops {
		t.Run("uint32/"+name, func(t *testing.T) {
			cm := &corev1.ConfigMap{Data: map[string]string{ciliumXFFHops: tc.value}}
			n, _, err := ciliumUint32(cm, ciliumXFFHops)
			if (err != nil) != tc.fails || n != tc.want {
				t.Errorf("%q = %d, %v; want %d, fails %v", tc.value, n, err, tc.want, tc.fails)
			}
		})
	}
}
