package demo

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// repoRoot is the repository, from this package's folder.
const repoRoot = "../../../.."

// The demo does the whole job on the examples and says what changed where, in lines a terminal
// of 100 columns shows whole.
func TestRun(t *testing.T) {
	var out, progress bytes.Buffer
	res, err := Run(context.Background(), &out, &progress)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if !res.Safe {
		t.Errorf("not safe afterwards:\n%s", out.String())
	}
	report := out.String()
	for _, want := range []string{
		// 1: the cluster write, and the verdict it changes
		"  Service shop/checkout       at-risk    none       applied: 1 change written\n",
		`    wrote Service shop/checkout: metadata.annotations["service.cloud.tencent.com/prevent-loopback"]:`,
		"  Ingress shop/web-internal   at-risk    at-risk    user-action: 1 change for you\n",
		"      for you: Ingress shop/web-internal: node-separation: add a required podAntiAffinity",
		// 2: the CLB listener change, through the API, read back
		"    change: cloud clb lb-demo0001 listener lbl-demo0080 (TCP:80): SnatEnable false → true\n",
		"    ModifyListener ListenerId=lbl-demo0080 LoadBalancerId=lb-demo0001 SnatEnable=true\n",
		"    read back: listener lbl-demo0080 SnatEnable true; a second plan has 0 change(s)\n",
		// 3: facts read from the Volcengine API; what loopguard cannot do says why
		"    DescribeLoadBalancers EniAddress=192.168.10.19\n",
		"    CLB clb-demo-ledger (192.168.10.19): PRIVATE, PROXY protocol on the Service's listeners: no\n",
		"  Service orders/ledger       at-risk    at-risk    user-action: 1 change for you\n",
		"\nEvery exposure the demo could fix is safe afterwards; the others say above why not.\n",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	for i, l := range strings.Split(strings.TrimSuffix(report, "\n"), "\n") {
		if n := columns(l); n > Width {
			t.Errorf("line %d is %d columns wide, more than %d:\n%s", i+1, n, Width, l)
		}
	}
	if n := strings.Count(progress.String(), "demo ["); n < 10 {
		t.Errorf("%d progress lines:\n%s", n, progress.String())
	}
	type row struct {
		Example, Object, Before, After, Status string
	}
	var got []row
	for _, v := range res.Verdicts {
		got = append(got, row{v.Example, v.Object.String(), string(v.Before), string(v.After), v.Status})
	}
	want := []row{
		{"tke", "Ingress shop/web-internal", "at-risk", "at-risk", "user-action"},
		{"tke", "Ingress shop/web-public", "none", "none", "up-to-date"},
		{"tke", "Service shop/catalog", "none", "none", "up-to-date"},
		{"tke", "Service shop/checkout", "at-risk", "none", "applied"},
		{"tke", "Service shop/payments", "none", "none", "up-to-date"},
		{"tke", "Service shop/storefront", "none", "none", "up-to-date"},
		{"vke", "Service orders/api", "none", "none", "up-to-date"},
		{"vke", "Service orders/ledger", "at-risk", "at-risk", "user-action"},
		{"vke", "Service orders/reports", "none", "none", "up-to-date"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
}

func TestWrap(t *testing.T) {
	for name, tc := range map[string]struct {
		first, cont, text string
		width             int
		want              []string
	}{
		"fits": {first: "  ", cont: "    ", text: "one two", width: 20, want: []string{"  one two"}},
		"breaks at spaces": {first: "> ", cont: "    ", text: "alpha beta gamma delta", width: 12,
			want: []string{"> alpha beta", "    gamma", "    delta"}},
		"a long word gets its own line": {first: "", cont: "  ", text: "a bcdefghijklmnop q", width: 8,
			want: []string{"a", "  bcdefghijklmnop", "  q"}},
		"width counts runes, not bytes": {first: "", cont: "", text: "→ → → →", width: 5,
			want: []string{"→ → →", "→"}},
		"runs of spaces collapse": {first: "", cont: "", text: "a   b\n c", width: 10, want: []string{"a b c"}},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, wrap(tc.first, tc.cont, tc.text, tc.width)); diff != "" {
				t.Errorf("wrap (-want +got):\n%s", diff)
			}
		})
	}
}

// The embedded copies are the examples: go:embed cannot reach examples/ from here.
func TestExamplesAreTheRepositorys(t *testing.T) {
	for dir, example := range exampleDirs {
		entries, err := fs.ReadDir(examples, path.Join("examples", dir))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := filepath.Glob(filepath.Join(repoRoot, example, "*.yaml"))
		fix := "cp " + example + "/*.yaml cmd/loopguard/internal/demo/examples/" + dir + "/"
		if len(entries) != len(want) {
			t.Errorf("examples/%s has %d files, %s %d (%s)", dir, len(entries), example, len(want), fix)
		}
		for _, e := range entries {
			got, _ := examples.ReadFile(path.Join("examples", dir, e.Name()))
			orig, err := os.ReadFile(filepath.Join(repoRoot, example, e.Name()))
			if err != nil || string(got) != string(orig) {
				t.Errorf("examples/%s/%s differs from %s/%s (%s)", dir, e.Name(), example, e.Name(), fix)
			}
		}
	}
}
