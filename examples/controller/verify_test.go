package main

import (
	"strings"
	"testing"
	"time"
)

// TestVerifyOptions: --verify needs an image; the probe namespace defaults to the controller's
// own ($POD_NAMESPACE), and only there is the controller's Pod the probe Pods' owner (a Pod's
// owner must share its namespace).
func TestVerifyOptions(t *testing.T) {
	cases := map[string]struct {
		image, ns, podNS string
		wantNS, wantErr  string
		wantOwner        bool
	}{
		"no image":          {podNS: "loopguard-system", wantErr: "--verify-image"},
		"own namespace":     {image: "img:v1", podNS: "loopguard-system", wantNS: "loopguard-system", wantOwner: true},
		"another namespace": {image: "img:v1", ns: "probes", podNS: "loopguard-system", wantNS: "probes"},
		"outside a Pod":     {image: "img:v1", wantErr: "--verify-namespace"},
	}
	serviceAccountNamespace = "/nonexistent"
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", c.podNS)
			t.Setenv("POD_NAME", "loopguard-abc")
			t.Setenv("POD_UID", "0b5e7c4e-0000-4000-8000-000000000001")
			o, err := verifyOptions(c.image, c.ns, 3, time.Minute)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want one naming %s", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Probe.Namespace != c.wantNS || o.Probe.Image != c.image || (o.Probe.Owner != nil) != c.wantOwner {
				t.Errorf("namespace %q image %q owner %+v", o.Probe.Namespace, o.Probe.Image, o.Probe.Owner)
			}
			if c.wantOwner && (o.Probe.Owner.Kind != "Pod" || o.Probe.Owner.Name != "loopguard-abc") {
				t.Errorf("owner %+v", o.Probe.Owner)
			}
		})
	}
}
