package main

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/loopguard/loopguard/adapters/manifest"
)

// loopguard reads a TkeServiceConfig kind exactly as the API server serves it: the spelling
// of Tencent's documentation page (TKEServiceConfig) is refused by both, and the right one
// accepted by both.
func TestCustomKindSpellingAgreesWithTheAPIServer(t *testing.T) {
	s := server.Get(t)
	ns := s.Namespace(t)
	dyn := dynamic.NewForConfigOrDie(s.Config())
	for i, tc := range []struct {
		kind string
		ok   bool
	}{{"TKEServiceConfig", false}, {"TkeServiceConfig", true}} {
		name := []string{"near-miss", "exact"}[i]
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cloud.tencent.com/v1alpha1", "kind": tc.kind,
			"metadata": map[string]any{"name": name, "namespace": ns}}}
		_, err := dyn.Resource(tkeServiceConfigs).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{})
		if (err == nil) != tc.ok {
			t.Errorf("the API server on kind %s: %v", tc.kind, err)
		}
		var set manifest.Set
		errs := set.Decode("x.yaml", []byte("apiVersion: cloud.tencent.com/v1alpha1\nkind: "+tc.kind+"\nmetadata: {name: "+name+", namespace: "+ns+"}\n"))
		if (len(errs) == 0) != tc.ok {
			t.Errorf("loopguard on kind %s: %v", tc.kind, errs)
		}
		if !tc.ok && (len(errs) != 1 || !strings.Contains(errs[0].Error(), "did you mean kind: TkeServiceConfig")) {
			t.Errorf("loopguard's error does not name the kind to use: %v", errs)
		}
	}
}
