package gateway

import (
	"testing"

	"sigs.k8s.io/yaml"
)

// TestKGatewayListenerConfigSpellings: kgateway's ListenerConfig fields as its API types read
// them (api/v1alpha1/kgateway/listener_policy_types.go at main 028d2df5): proxyProtocol is a
// *ProxyProtocolConfig, "The presence of this configuration enables PROXY protocol support" (a
// JSON null leaves the pointer nil); httpSettings.xffNumTrustedHops an *int32 with
// +kubebuilder:validation:Minimum=0, so 0 to 2147483647 (the API server refuses the rest).
func TestKGatewayListenerConfigSpellings(t *testing.T) {
	pp := map[string]struct {
		yaml string
		on   bool
	}{
		"empty object": {`proxyProtocol: {}`, true},
		"null":         {`proxyProtocol: null`, false},
		"absent":       {`httpSettings: {}`, false},
		"with fields":  {`proxyProtocol: {unknown: 1}`, true},
	}
	for name, tc := range pp {
		t.Run("proxyProtocol/"+name, func(t *testing.T) {
			m := map[string]any{}
			if err := yaml.Unmarshal([]byte(tc.yaml), &m); err != nil {
				t.Fatal(err)
			}
			if got := kgatewayProxyProtocolOn(m); got != tc.on {
				t.Errorf("%s: on = %v, want %v", tc.yaml, got, tc.on)
			}
		})
	}
	hops := map[string]struct {
		value any
		want  int64
		fails bool
	}{
		"zero":     {int64(0), 0, false},
		"two":      {int64(2), 2, false},
		"float":    {float64(2), 2, false},
		"maxInt32": {int64(2147483647), 2147483647, false},
		"over":     {int64(2147483648), 0, true},
		"negative": {int64(-1), 0, true},
		"fraction": {1.5, 0, true},
		"string":   {"2", 0, true},
		"bool":     {true, 0, true},
	}
	for name, tc := range hops {
		t.Run("xffNumTrustedHops/"+name, func(t *testing.T) {
			n, err := kgatewayHops(tc.value)
			if (err != nil) != tc.fails || n != tc.want {
				t.Errorf("%v = %d, %v; want %d, fails %v", tc.value, n, err, tc.want, tc.fails)
			}
		})
	}
}
