package controller

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestCloudAPIMetrics: every call counts under its provider and action, a failed one also
// under its code; a second observer on the same registry shares the series.
func TestCloudAPIMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	observe, err := CloudAPIMetrics("tencent", reg)
	if err != nil {
		t.Fatal(err)
	}
	again, err := CloudAPIMetrics("tencent", reg)
	if err != nil {
		t.Fatalf("a second observer on one registry: %v", err)
	}
	observe("DescribeListeners", "")
	observe("ModifyListener", "RequestLimitExceeded")
	again("ModifyListener", "")
	got := gathered(t, reg)
	want := map[string]float64{
		`loopguard_cloud_api_calls_total{action="DescribeListeners",provider="tencent"}`:                           1,
		`loopguard_cloud_api_calls_total{action="ModifyListener",provider="tencent"}`:                              2,
		`loopguard_cloud_api_errors_total{action="ModifyListener",code="RequestLimitExceeded",provider="tencent"}`: 1,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
}

// gathered returns every counter of reg as name{label="value",...} → value, labels sorted
// by name as Prometheus sorts them.
func gathered(t testing.TB, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName() + "{"
			for i, l := range m.GetLabel() {
				if i > 0 {
					key += ","
				}
				key += l.GetName() + `="` + l.GetValue() + `"`
			}
			out[key+"}"] = m.GetCounter().GetValue()
		}
	}
	return out
}
