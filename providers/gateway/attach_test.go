package gateway_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/loopguard/loopguard/providers/gateway"
)

// TestPolicyTargets: a policy is read for the Gateways of its namespace that its targetRefs
// name or its targetSelectors match, the same Gateways the dialect reads it for.
func TestPolicyTargets(t *testing.T) {
	gw := &metav1.ObjectMeta{Namespace: "shop", Name: "web", Labels: map[string]string{"tier": "edge"}}
	cases := map[string]struct {
		ns, spec string
		want     bool
	}{
		"targetRefs":                  {"shop", `{targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: web}]}`, true},
		"targetRef (older, singular)": {"shop", `{targetRef: {group: gateway.networking.k8s.io, kind: Gateway, name: web}}`, true},
		"targetRefs, another Gateway": {"shop", `{targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: api}]}`, false},
		"targetSelectors matchLabels": {"shop", `{targetSelectors: [{group: gateway.networking.k8s.io, kind: Gateway, matchLabels: {tier: edge}}]}`, true},
		"targetSelectors matchExpressions": {"shop",
			`{targetSelectors: [{kind: Gateway, matchExpressions: [{key: tier, operator: In, values: [edge, core]}]}]}`, true},
		"targetSelectors, other labels":  {"shop", `{targetSelectors: [{kind: Gateway, matchLabels: {tier: internal}}]}`, false},
		"targetSelectors, another kind":  {"shop", `{targetSelectors: [{kind: HTTPRoute, matchLabels: {tier: edge}}]}`, false},
		"an empty selector selects none": {"shop", `{targetSelectors: [{kind: Gateway}]}`, false},
		"another namespace":              {"team", `{targetSelectors: [{kind: Gateway, matchLabels: {tier: edge}}]}`, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := &unstructured.Unstructured{Object: map[string]any{}}
			if err := yaml.Unmarshal([]byte(`{apiVersion: gateway.envoyproxy.io/v1alpha1, kind: ClientTrafficPolicy, metadata: {name: p, namespace: `+c.ns+`}, spec: `+c.spec+`}`), &p.Object); err != nil {
				t.Fatal(err)
			}
			if got := gateway.PolicyTargets(p, gw); got != c.want {
				t.Errorf("PolicyTargets = %v, want %v", got, c.want)
			}
		})
	}
}
