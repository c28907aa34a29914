package manifest_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/loopguard/loopguard/adapters/manifest"
)

const goodService = "apiVersion: v1\nkind: Service\nmetadata: {name: good, namespace: shop}\nspec: {type: LoadBalancer, ports: [{port: 80}]}\n"

// billionLaughs is nine levels of nine aliases: 9^9 strings once expanded.
func billionLaughs() string {
	s := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\ndata:\n  a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		s += "  " + n + ": &" + n + " [" + strings.Repeat("*"+prev+",", 8) + "*" + prev + "]\n"
		prev = n
	}
	return s
}

func manyKeys(n int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: keys, namespace: shop}\ndata:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  k%d: v\n", i)
	}
	return b.String()
}

// services writes Service documents until size bytes.
type services struct{ left, i int }

func (s *services) Read(p []byte) (int, error) {
	if s.left <= 0 {
		return 0, io.EOF
	}
	doc := fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: web%d, namespace: shop}\nspec: {type: LoadBalancer, ports: [{port: 80}]}\n---\n", s.i)
	s.i++
	n := copy(p, doc)
	s.left -= n
	return n, nil
}

// measure runs f and returns how long it took, the CPU time the process used meanwhile (the
// wall time where that is not measured), and how many bytes it allocated. The bounds below
// apply to the CPU time: a parser that goes quadratic still blows through them, while a
// machine whose cores other work shares does not (in a cold .ci/run of 2026-12-06, with the
// cores shared by a dozen builds and tests, "100,000 keys, general parser" took 11.4 s of wall
// time for what takes under a second on an idle machine). A parse that blocks forever without
// computing is go test's -timeout's to catch.
func measure(f func()) (wall, cpu time.Duration, allocs uint64) {
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0, measured := processCPU()
	start := time.Now()
	f()
	wall = time.Since(start)
	cpu1, _ := processCPU()
	runtime.ReadMemStats(&m1)
	cpu = wall
	if measured {
		cpu = cpu1 - cpu0
	}
	return wall, cpu, m1.TotalAlloc - m0.TotalAlloc
}

// TestHostileInputs: a 100 MB manifest (a file and standard input), a billion-laughs document,
// 100,000 keys in one mapping and a 1 MB annotation each end in bounded time and memory: the
// too-large inputs and the refused documents get an error naming the file (and the line and
// field), and the good object next to them is still read.
func TestHostileInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", goodService)
	big := filepath.Join(dir, "big.yaml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, &services{left: 100 << 20}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	annotation := "apiVersion: v1\nkind: Service\nmetadata:\n  name: big\n  namespace: shop\n  annotations:\n    example.com/blob: " + strings.Repeat("x", 1<<20) + "\nspec: {type: LoadBalancer, ports: [{port: 80}]}\n"

	for name, tc := range map[string]struct {
		path      string
		stdin     io.Reader
		want      []string // in the one error
		objects   int      // read besides good.yaml's Service
		maxTime   time.Duration
		maxAllocs uint64
	}{
		"100 MB file":           {path: big, want: []string{"big.yaml", "too large", "100 MiB", "limit of 32 MiB"}, maxTime: time.Second, maxAllocs: 1 << 20},
		"100 MB standard input": {path: "-", stdin: &services{left: 100 << 20}, want: []string{"standard input", "too large", "limit of 32 MiB"}, maxTime: 10 * time.Second, maxAllocs: 200 << 20},
		"billion laughs":        {path: write("laughs.yaml", billionLaughs()), want: []string{"laughs.yaml:", "excessive aliasing"}, maxTime: 2 * time.Second, maxAllocs: 50 << 20},
		"100,000 keys":          {path: write("keys.yaml", manyKeys(100000)), objects: 1, maxTime: 10 * time.Second, maxAllocs: 300 << 20},
		// A folded scalar sends the document past the fast converter to the general YAML
		// parser, whose duplicate-key check must stay linear too (measured: 0.3 s for 50,000
		// keys, 3 s for 400,000 on two busy cores).
		"100,000 keys, general parser": {path: write("keys-general.yaml", strings.Replace(manyKeys(100000), "data:\n", "data:\n  folded: >\n    text\n", 1)), objects: 1, maxTime: 10 * time.Second, maxAllocs: 600 << 20},
		"1 MB annotation":              {path: write("annotation.yaml", annotation), want: []string{"annotation.yaml:6", "Service shop/big", "metadata.annotations", "256 KiB"}, maxTime: 2 * time.Second, maxAllocs: 50 << 20},
	} {
		t.Run(name, func(t *testing.T) {
			var set *manifest.Set
			var errs []error
			wall, cpu, allocs := measure(func() {
				set, errs = (&manifest.Reader{Stdin: tc.stdin}).Read(good, tc.path)
			})
			t.Logf("%s (%s of CPU), %d MiB allocated", wall.Round(time.Millisecond), cpu.Round(time.Millisecond), allocs>>20)
			if cpu > tc.maxTime || allocs > tc.maxAllocs {
				t.Errorf("took %s of CPU and allocated %d MiB; the bound is %s and %d MiB", cpu, allocs>>20, tc.maxTime, tc.maxAllocs>>20)
			}
			if len(tc.want) == 0 && len(errs) > 0 || len(tc.want) > 0 && len(errs) != 1 {
				t.Fatalf("errors %v, want %d", errs, min(1, len(tc.want)))
			}
			for _, w := range tc.want {
				if !strings.Contains(errs[0].Error(), w) {
					t.Errorf("error %q does not say %q", errs[0], w)
				}
			}
			if len(set.Objects) != 1+tc.objects || set.Objects[0].Ref().Name != "good" {
				t.Errorf("read %d objects, want good.yaml's Service and %d more", len(set.Objects), tc.objects)
			}
		})
	}
}
