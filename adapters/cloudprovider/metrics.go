package cloudprovider

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The decorator's metrics, registered on the cloud-controller-manager's own registry
// (k8s.io/component-base legacyregistry, where the upstream service controller registers its
// service_controller_* metrics), so they appear on the CCM's /metrics with no wiring.
var (
	registerMetrics sync.Once

	// errorsTotal counts what went wrong in loopguard's part of a load-balancer call, by
	// operation (ensure, update, delete), kind (invalid, precondition, not-allowlisted,
	// unsupported, conflict, invalid-status, not-owned, panic, ...) and what the decorator did
	// about it: failed-open (the inner result stands), failed-closed (WithFailClosed), retry
	// (a RetryError, requeued after its delay) or blocked (a plan loopguard will not apply yet).
	errorsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "loopguard",
		Name:           "ccm_errors_total",
		Help:           "Errors and blocks in loopguard's part of a cloud-controller-manager's load-balancer calls, by operation, kind and outcome (failed-open: the inner result was returned unchanged).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation", "kind", "outcome"})

	// changesTotal counts what loopguard changed: ipMode values in a returned status
	// (writer status) and load-balancer writes (writer cloud).
	changesTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "loopguard",
		Name:           "ccm_changes_total",
		Help:           "Changes loopguard made in a cloud-controller-manager, by writer (status: an ipMode in the returned status; cloud: a load-balancer write).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation", "writer"})
)

func register() {
	registerMetrics.Do(func() {
		legacyregistry.MustRegister(errorsTotal)
		legacyregistry.MustRegister(changesTotal)
	})
}
