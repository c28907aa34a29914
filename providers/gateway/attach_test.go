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
		// Judging the Gateway again is what reports the bad selector (the dialect's error).
		"a selector that does not parse": {"shop", `{targetSelectors: [{kind: Gateway, matchExpressions: [{key: tier, operator: Near}]}]}`, true},
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

// TestPolicyTargetsListenerSet: a ClientTrafficPolicy is read for a ListenerSet of its namespace
// that its targetRefs name (a section of it too) or its targetSelectors of kind ListenerSet
// match; a host maps it to the ListenerSet's parent Gateway (ListenerSetParent).
func TestPolicyTargetsListenerSet(t *testing.T) {
	ls := &unstructured.Unstructured{Object: map[string]any{}}
	if err := yaml.Unmarshal([]byte(`{apiVersion: gateway.networking.k8s.io/v1, kind: ListenerSet, metadata: {name: extra, namespace: team, labels: {tier: edge}},
  spec: {parentRef: {name: web, namespace: shop}, listeners: [{name: api, port: 8443, protocol: HTTP}]}}`), &ls.Object); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		ns, spec string
		want     bool
	}{
		"targetRefs":                          {"team", `{targetRefs: [{group: gateway.networking.k8s.io, kind: ListenerSet, name: extra}]}`, true},
		"targetRefs with a sectionName":       {"team", `{targetRefs: [{group: gateway.networking.k8s.io, kind: ListenerSet, name: extra, sectionName: api}]}`, true},
		"targetRefs, a Gateway of its name":   {"team", `{targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: extra}]}`, false},
		"targetSelectors of kind ListenerSet": {"team", `{targetSelectors: [{kind: ListenerSet, matchLabels: {tier: edge}}]}`, true},
		"targetSelectors of kind Gateway":     {"team", `{targetSelectors: [{kind: Gateway, matchLabels: {tier: edge}}]}`, false},
		"another namespace":                   {"shop", `{targetRefs: [{group: gateway.networking.k8s.io, kind: ListenerSet, name: extra}]}`, false},
		"a selector that does not parse":      {"team", `{targetSelectors: [{kind: ListenerSet, matchExpressions: [{key: tier, operator: Near}]}]}`, true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := &unstructured.Unstructured{Object: map[string]any{}}
			if err := yaml.Unmarshal([]byte(`{apiVersion: gateway.envoyproxy.io/v1alpha1, kind: ClientTrafficPolicy, metadata: {name: p, namespace: `+c.ns+`}, spec: `+c.spec+`}`), &p.Object); err != nil {
				t.Fatal(err)
			}
			if got := gateway.PolicyTargetsListenerSet(p, ls); got != c.want {
				t.Errorf("PolicyTargetsListenerSet = %v, want %v", got, c.want)
			}
		})
	}
	if gw, ok := gateway.ListenerSetParent(ls); !ok || gw.Namespace != "shop" || gw.Name != "web" {
		t.Errorf("ListenerSetParent = %v, %v; want shop/web", gw, ok)
	}
	ls.Object["spec"] = map[string]any{"parentRef": map[string]any{"name": "web"}}
	if gw, ok := gateway.ListenerSetParent(ls); !ok || gw.Namespace != "team" || gw.Name != "web" {
		t.Errorf("ListenerSetParent without a namespace = %v, %v; want team/web (the ListenerSet's)", gw, ok)
	}
	ls.Object["spec"] = map[string]any{"parentRef": map[string]any{"kind": "HTTPRoute", "name": "web"}}
	if gw, ok := gateway.ListenerSetParent(ls); ok {
		t.Errorf("ListenerSetParent of another kind = %v, want none", gw)
	}
	for name, want := range map[string]string{"contourconfig-cweb": "shop/cweb", "contourconfig-": "", "contour": ""} {
		gw, ok := gateway.ContourConfigurationGateway(&metav1.ObjectMeta{Namespace: "shop", Name: name})
		if got := map[bool]string{true: gw.String()}[ok]; got != want {
			t.Errorf("ContourConfigurationGateway(%s) = %q, want %q", name, got, want)
		}
	}
}
