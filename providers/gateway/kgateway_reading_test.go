package gateway

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
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

// TestKGatewayClientSettingsSpellings: httpSettings.useRemoteAddress is a *bool ("If this field
// is omitted, it will fallback to the default value of 'true', which we set for all Envoy
// HCMs"; false: "Envoy will use the X-Forwarded-For header to determine the client address"),
// and xffNumTrustedHops an *int32, in listener_policy_types.go at main 028d2df5. A JSON null is
// an unset pointer; a string or number where the API types a bool is refused by the API server
// (the CRD's schema), so loopguard reports the policy and field rather than reading a default.
func TestKGatewayClientSettingsSpellings(t *testing.T) {
	cases := map[string]struct {
		yaml  string
		says  string
		fails string
	}{
		"absent":             {yaml: `httpSettings: {}`},
		"no httpSettings":    {yaml: `proxyProtocol: {}`},
		"remote true":        {yaml: `httpSettings: {useRemoteAddress: true}`},
		"remote false":       {yaml: `httpSettings: {useRemoteAddress: false}`, says: "httpSettings.useRemoteAddress: false"},
		"remote null":        {yaml: `httpSettings: {useRemoteAddress: null}`},
		"remote string":      {yaml: `httpSettings: {useRemoteAddress: "false"}`, fails: `spec.default.httpSettings.useRemoteAddress: Invalid value: "false": must be true or false`},
		"remote String True": {yaml: `httpSettings: {useRemoteAddress: "True"}`, fails: `spec.default.httpSettings.useRemoteAddress: Invalid value: "True"`},
		"remote zero":        {yaml: `httpSettings: {useRemoteAddress: 0}`, fails: `spec.default.httpSettings.useRemoteAddress: Invalid value: 0`},
		"hops zero":          {yaml: `httpSettings: {xffNumTrustedHops: 0}`},
		"hops null":          {yaml: `httpSettings: {xffNumTrustedHops: null}`},
		"hops one":           {yaml: `httpSettings: {xffNumTrustedHops: 1}`, says: "httpSettings.xffNumTrustedHops (1)"},
		"hops string":        {yaml: `httpSettings: {xffNumTrustedHops: "1"}`, fails: `spec.default.httpSettings.xffNumTrustedHops: Invalid value: "1"`},
		"both": {yaml: `httpSettings: {xffNumTrustedHops: 2, useRemoteAddress: false}`,
			says: "httpSettings.xffNumTrustedHops (2) and httpSettings.useRemoteAddress: false"},
		"hops zero remote true": {yaml: `httpSettings: {xffNumTrustedHops: 0, useRemoteAddress: true}`},
	}
	v := &view{gw: &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "web"}}}
	p := &unstructured.Unstructured{}
	p.SetNamespace("edge")
	p.SetName("lp")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := kgatewayListenerConfig{entry: -1}
			if err := yaml.Unmarshal([]byte(tc.yaml), &cfg.m); err != nil {
				t.Fatal(err)
			}
			says, err := kgatewayClientSettings(v, p, cfg)
			if tc.fails != "" {
				if err == nil || !strings.Contains(err.Error(), "ListenerPolicy edge/lp: "+tc.fails) {
					t.Fatalf("%s: error %v, want one with %q", tc.yaml, err, tc.fails)
				}
				return
			}
			if err != nil || says != tc.says {
				t.Errorf("%s: %q, %v; want %q", tc.yaml, says, err, tc.says)
			}
		})
	}
}
