package controller

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// metrics are the controller's Prometheus collectors.
type metrics struct {
	exposures *prometheus.GaugeVec
	writes    *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	errors    *prometheus.CounterVec

	mu   sync.Mutex
	last map[objectID][3]string // provider, risk, remedy counted for each object
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{last: map[objectID][3]string{}}
	m.exposures = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "loopguard_exposures",
		Help: "LoadBalancer Services and Ingresses by provider, risk and chosen remedy."}, []string{"provider", "risk", "remedy"})
	m.writes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "loopguard_writes_total",
		Help: "Changes written, by writer: cluster and cloud (plan changes, enforcing mode), verdict (a condition or annotation)."}, []string{"writer"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "loopguard_reconcile_duration_seconds",
		Help: "Time to reconcile one object, by kind.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"kind"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "loopguard_reconcile_errors_total",
		Help: "Reconciles that ended in an error (retried with backoff), by kind."}, []string{"kind"})
	var err error
	if m.exposures, err = register(reg, m.exposures); err != nil {
		return nil, err
	}
	if m.writes, err = register(reg, m.writes); err != nil {
		return nil, err
	}
	if m.latency, err = register(reg, m.latency); err != nil {
		return nil, err
	}
	if m.errors, err = register(reg, m.errors); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the collector already registered under its name (a second
// controller in one process shares the series).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

// exposure counts an object under its current labels, moving it from the ones it had.
func (m *metrics) exposure(id objectID, provider, risk, remedy string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := [3]string{provider, risk, remedy}
	if old, ok := m.last[id]; ok {
		if old == now {
			return
		}
		m.exposures.WithLabelValues(old[:]...).Dec()
	}
	m.last[id] = now
	m.exposures.WithLabelValues(now[:]...).Inc()
}

func (m *metrics) forget(id objectID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.last[id]; ok {
		m.exposures.WithLabelValues(old[:]...).Dec()
		delete(m.last, id)
	}
}

// CloudAPIMetrics returns a cloud API call observer for a provider's options
// (tencent.DriverOptions.OnCall, volcengine.CLBReaderOptions.OnCall) that counts every cloud
// API request in loopguard_cloud_api_calls_total{provider,action} and every failed one in
// loopguard_cloud_api_errors_total{provider,action,code}. reg nil means controller-runtime's
// registry, which the manager's metrics endpoint serves. The provider is built before Setup,
// so the host wires the observer in itself:
//
//	calls, err := controller.CloudAPIMetrics(tencent.Name, nil)
//	p, err := tencent.NewProvider(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: api, OnCall: calls})
func CloudAPIMetrics(provider string, reg prometheus.Registerer) (func(action, code string), error) {
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	calls, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "loopguard_cloud_api_calls_total",
		Help: "Cloud API requests the provider sent (each retry too), by provider and action."}, []string{"provider", "action"}))
	if err != nil {
		return nil, err
	}
	errs, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "loopguard_cloud_api_errors_total",
		Help: "Cloud API requests that failed, by provider, action and the cloud's error code."}, []string{"provider", "action", "code"}))
	if err != nil {
		return nil, err
	}
	return func(action, code string) {
		calls.WithLabelValues(provider, action).Inc()
		if code != "" {
			errs.WithLabelValues(provider, action, code).Inc()
		}
	}, nil
}
