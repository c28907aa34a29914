package kubernetes

import (
	"testing"

	"github.com/loopguard/loopguard/core"
)

// scopeOfService is the scope the dialect reads for a Service of class cls (none: "").
func scopeOfService(t *testing.T, ann map[string]string, cls string) string {
	t.Helper()
	svc := cloudService("web", ann, "TCP", ipVIP)
	if cls != "" {
		svc.Spec.LoadBalancerClass = ptr(cls)
	}
	tr, err := NewDialect(nil).Translate(svc, cloudCluster(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Exposure.Scope == core.ScopeUnknown {
		return "unknown"
	}
	return string(tr.Exposure.Scope)
}

// TestGKEParsers: load-balancer-type read as GetLoadBalancerAnnotationType@v1.41.1 reads it,
// and the class before it.
func TestGKEParsers(t *testing.T) {
	one := func(key string) func(string) string {
		return func(v string) string {
			ann := map[string]string{}
			if v != absent {
				ann[key] = v
			}
			return scopeOfService(t, ann, "")
		}
	}
	want := map[string]string{absent: "unknown", "Internal": "private", "internal": "private", "INTERNAL": "public", "External": "public",
		"true": "public", "True": "public", "TRUE": "public", "1": "public", "t": "public", "yes": "public", "": "public", "garbage": "public"}
	checkSpellings(t, srcGKEType, want, one(annGKELBType))
	checkSpellings(t, srcGKEType, want, one(annGKELBTypeDeprecated))
	// The new key, present at all, wins; the class wins over both.
	for name, tc := range map[string]struct {
		ann  map[string]string
		cls  string
		want string
	}{
		"new key first":                {ann: map[string]string{annGKELBType: "External", annGKELBTypeDeprecated: "Internal"}, want: "public"},
		"external class over Internal": {ann: map[string]string{annGKELBType: "Internal"}, cls: gkeClassExternal, want: "public"},
		"internal legacy class":        {cls: gkeClassInternalLegacy, want: "private"},
	} {
		if got := scopeOfService(t, tc.ann, tc.cls); got != tc.want {
			t.Errorf("%s: %s, want %s", name, got, tc.want)
		}
	}
}

// TestAzureParsers: azure-load-balancer-internal exactly "true" (requiresInternalLoadBalancer
// @v1.36.5), and the disable-floating-ip switch in any case.
func TestAzureParsers(t *testing.T) {
	checkSpellings(t, srcAzureInternal, map[string]string{absent: "unknown", "true": "private", "True": "public", "TRUE": "public", "1": "public",
		"t": "public", "yes": "public", "": "public", "garbage": "public", "false": "public"},
		func(v string) string {
			ann := map[string]string{}
			if v != absent {
				ann[annAzureInternal] = v
			}
			return scopeOfService(t, ann, "")
		})
	checkSpellings(t, srcAzureFloating, map[string]string{absent: "default", "true": "true", "True": "true", "TRUE": "true", "1": "false",
		"t": "false", "yes": "false", "": "false", "garbage": "false"},
		func(v string) string { return outcome(azureNoFloatingIP(annotated(annAzureNoFloatingIP, v))) })
	tr, err := NewDialect(nil).Translate(cloudService("web", map[string]string{annAzureInternal: "True"}, "TCP", ipVIP), cloudCluster(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	if !hasNote(tr.Exposure.Notes, codeAzureInternalCase, "builds a public load balancer") {
		t.Errorf("no note about \"True\": %v", tr.Exposure.Notes)
	}
}
