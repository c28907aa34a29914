package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestPlansTheExampleCluster(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, "../manifests"); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"Service shop/checkout: intercept-vip",
		`metadata.annotations["service.cloud.tencent.com/prevent-loopback"] (unset) → true`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
