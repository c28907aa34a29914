package main

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// The demo runs the whole job on the built-in examples and says what changed where.
func TestDemo(t *testing.T) {
	stdout, stderr, code := runCLI(t, "", "demo")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		// 1: the cluster write, and the verdict it changes
		"Service shop/checkout       at-risk    none       applied: 1 change written",
		`wrote cluster: Service shop/checkout: metadata.annotations["service.cloud.tencent.com/prevent-loopback"]: (unset) → true`,
		"Ingress shop/web-internal   at-risk    at-risk    user-action",
		// 2: the CLB listener change, through the API, read back
		"change: cloud clb lb-demo0001 listener lbl-demo0080 (TCP:80): SnatEnable false → true",
		"ModifyListener ListenerId=lbl-demo0080 LoadBalancerId=lb-demo0001 SnatEnable=true",
		"read back: listener lbl-demo0080 SnatEnable true; a second plan has 0 change(s)",
		// 3: facts read from the Volcengine API; what loopguard cannot do says why
		"DescribeLoadBalancers EniAddress=192.168.10.19",
		"CLB clb-demo-ledger (192.168.10.19): PRIVATE, PROXY protocol on the Service's listeners: no",
		"Service orders/ledger       at-risk    at-risk    user-action",
		"Every exposure the demo could fix is safe afterwards",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, stdout)
		}
	}
	if n := strings.Count(stderr, "\ndemo ["); n < 8 {
		t.Errorf("%d progress lines on standard error:\n%s", n+1, stderr)
	}
}

// The embedded copies are the examples: go:embed cannot reach examples/ from here.
func TestDemoFilesAreTheExamples(t *testing.T) {
	for dir, example := range map[string]string{"tke": "manifests", "vke": "volcengine"} {
		entries, err := fs.ReadDir(demoFiles, path.Join("demo", dir))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := filepath.Glob(filepath.Join(repoRoot, "examples", example, "*.yaml"))
		if len(entries) != len(want) {
			t.Errorf("demo/%s has %d files, examples/%s %d (cp examples/%s/*.yaml cmd/loopguard/demo/%s/)", dir, len(entries), example, len(want), example, dir)
		}
		for _, e := range entries {
			got, _ := demoFiles.ReadFile(path.Join("demo", dir, e.Name()))
			orig, err := os.ReadFile(filepath.Join(repoRoot, "examples", example, e.Name()))
			if err != nil || string(got) != string(orig) {
				t.Errorf("demo/%s/%s differs from examples/%s/%s (cp examples/%s/*.yaml cmd/loopguard/demo/%s/)", dir, e.Name(), example, e.Name(), example, dir)
			}
		}
	}
}
