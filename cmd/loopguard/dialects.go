package main

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/kubernetes"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/volcengine"
)

// dialectEntry is one cloud the CLI can use. Registration lives here, in the host, not
// in the providers (no package-level registries in libraries).
type dialectEntry struct {
	name       string
	newDialect func() core.Dialect
	// recognizes says whether an input object carries this cloud's marks.
	recognizes func(runtime.Object) bool
	// capabilities are the allowlist names this cloud's profiles may declare.
	capabilities []core.Capability
	// fallback: used when no other dialect recognizes the inputs; never auto-detected.
	fallback bool
	// newProvider builds the cloud's Provider to plan with (its dialect counts what the driver
	// is configured with); nil when the CLI cannot carry out this cloud's remedies, and plans
	// are unsupported.
	newProvider func(env driverEnv) (core.Provider, error)
	// cloudDialect and cloudProvider are the cloud's own, which withGateways wraps.
	cloudDialect  func() core.Dialect
	cloudProvider func(env driverEnv) (core.Provider, error)
}

// driverEnv is what a Driver may use beyond the objects: nothing offline; the API server's
// version on a live cluster.
type driverEnv struct {
	// serverVersion is nil offline.
	serverVersion volcengine.ServerVersioner
}

func dialectEntries() []dialectEntry {
	return withGateways([]dialectEntry{
		{name: tencent.Name, newDialect: func() core.Dialect { return tencent.NewDialect(nil) },
			recognizes: tencent.Recognizes, capabilities: tencent.Capabilities(), newProvider: newTencentProvider},
		{name: volcengine.Name, newDialect: func() core.Dialect { return volcengine.NewDialect(nil) },
			recognizes: volcengine.Recognizes, newProvider: newVolcengineProvider},
		{name: kubernetes.Name, newDialect: func() core.Dialect { return kubernetes.NewDialect(nil) },
			recognizes: kubernetes.Recognizes, fallback: true,
			// The clouds' own annotation fixes (docs/clouds.md); ipMode stays the CCM's.
			newProvider: func(driverEnv) (core.Provider, error) { return kubernetes.NewCloudFixProvider(nil), nil }},
	})
}

// newTencentProvider is TKE in its default mode: remedies are written as annotations and
// TkeServiceConfig entries, which TKE's controllers carry to the CLB. The CLI does not call the
// CLB API (the driver's direct mode), so it needs no cloud credentials.
func newTencentProvider(driverEnv) (core.Provider, error) {
	return tencent.NewProvider(nil)
}

// newVolcengineProvider is VKE; on a live cluster the API server's version decides the
// Kubernetes prerequisite of Proxy mode.
func newVolcengineProvider(env driverEnv) (core.Provider, error) {
	return volcengine.NewProvider(&volcengine.DriverOptions{ServerVersion: env.serverVersion})
}

func findDialect(name string) (dialectEntry, bool) {
	for _, d := range dialectEntries() {
		if d.name == name {
			return d, true
		}
	}
	return dialectEntry{}, false
}

func providerNames() []string {
	var out []string
	for _, d := range dialectEntries() {
		out = append(out, d.name)
	}
	return out
}

// capabilityNames lists every allowlist name any dialect accepts, sorted.
func capabilityNames() []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range dialectEntries() {
		for _, c := range d.capabilities {
			if !seen[string(c)] {
				seen[string(c)] = true
				out = append(out, string(c))
			}
		}
	}
	sort.Strings(out)
	return out
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = `"` + v + `"`
	}
	return strings.Join(q, ", ")
}
