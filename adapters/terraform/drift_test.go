package terraform

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
)

// TestDestroyAfterDriftRemovesTheCreatedConfig: without cloud credentials the Tencent remedy
// is a TkeServiceConfig loopguard creates. When a field of it drifts behind Terraform's back,
// Read drops that field from the state; destroy must still delete the config loopguard
// created (the Reconciler's removal knows it is loopguard's), not leave it behind.
func TestDestroyAfterDriftRemovesTheCreatedConfig(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.b.Provider = func(context.Context, runtime.Object) (core.Provider, error) {
		return tencent.NewProvider(&tencent.DriverOptions{Allowlists: []core.Capability{tencent.CapL4SNAT}})
	}
	st, ds := f.b.Create(ctx, snatSpec)
	if ds.HasError() {
		t.Fatal(ds)
	}
	var cfgKey *core.ObjectKey
	var field string
	for k := range st.Managed {
		if strings.Contains(k, tencent.ServiceConfigKind) {
			field = k
		}
	}
	for _, u := range f.cluster.Objects() {
		if u.GetKind() == tencent.ServiceConfigKind {
			cfgKey = &core.ObjectKey{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
		}
	}
	if cfgKey == nil || field == "" {
		t.Fatalf("no TkeServiceConfig created or claimed: state %v", st.Managed)
	}
	// Behind Terraform's back: every listener entry of the config changes.
	u, err := f.cluster.Get(ctx, *cfgKey)
	if err != nil || u == nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(u.Object, "spec")
	if err := unstructured.SetNestedField(u.Object, map[string]any{"loadBalancer": map[string]any{}}, "spec"); err != nil {
		t.Fatal(err)
	}
	f.cluster.Put(u)
	read, ds := f.b.Read(ctx, *st)
	if ds.HasError() {
		t.Fatal(ds)
	}
	if _, ok := read.Managed[field]; ok {
		t.Fatalf("read after drift still claims %s", field)
	}
	if ds := f.b.Delete(ctx, *read); ds.HasError() {
		t.Fatal(ds)
	}
	if u, _ := f.cluster.Get(ctx, *cfgKey); u != nil {
		t.Errorf("destroy left the TkeServiceConfig %s loopguard created", cfgKey)
	}
}
