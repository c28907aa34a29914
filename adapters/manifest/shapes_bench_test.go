package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"
)

// The input shapes users give loopguard, each holding the same cluster: N LoadBalancer
// Services, one EndpointSlice each, and 50 Nodes. Issue 13: every shape reads in linear time
// (100,000 Services within 11x of 10,000) and within 1.5x of multi-document YAML.

const shapeNodes = 50

// shapeObjects builds the cluster's objects as JSON, grouped by kind as kubectl prints them
// (Services, then EndpointSlices, then Nodes).
func shapeObjects(services int) [][]byte {
	var out [][]byte
	add := func(v any) {
		js, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		out = append(out, js)
	}
	for i := 0; i < services; i++ {
		add(map[string]any{"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": fmt.Sprintf("svc-%d", i), "namespace": fmt.Sprintf("ns-%d", i%20),
				"annotations": map[string]any{"service.kubernetes.io/qcloud-loadbalancer-internal-subnetid": "subnet-abc"}},
			"spec": map[string]any{"type": "LoadBalancer", "externalTrafficPolicy": "Local", "selector": map[string]any{"app": fmt.Sprintf("app-%d", i)},
				"ports": []any{map[string]any{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}}}})
	}
	for i := 0; i < services; i++ {
		add(map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
			"metadata": map[string]any{"name": fmt.Sprintf("svc-%d-abcde", i), "namespace": fmt.Sprintf("ns-%d", i%20),
				"labels": map[string]any{"kubernetes.io/service-name": fmt.Sprintf("svc-%d", i)}},
			"addressType": "IPv4", "ports": []any{map[string]any{"name": "http", "port": 8080, "protocol": "TCP"}},
			"endpoints": []any{
				map[string]any{"addresses": []any{fmt.Sprintf("10.0.%d.%d", i/250%250, i%250)}, "nodeName": fmt.Sprintf("node-%d", i%shapeNodes), "conditions": map[string]any{"ready": true}},
				map[string]any{"addresses": []any{fmt.Sprintf("10.1.%d.%d", i/250%250, i%250)}, "nodeName": fmt.Sprintf("node-%d", (i+1)%shapeNodes), "conditions": map[string]any{"ready": true}},
			}})
	}
	for i := 0; i < shapeNodes; i++ {
		add(map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": fmt.Sprintf("node-%d", i),
			"labels": map[string]any{"kubernetes.io/hostname": fmt.Sprintf("node-%d", i)}}})
	}
	return out
}

func toYAML(js []byte) []byte {
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		panic(err)
	}
	return y
}

// shape is one way of writing the cluster: one or more files.
type shape struct {
	name  string
	build func(objs [][]byte) []input
}

var shapes = []shape{
	{"MultiDocYAML", func(objs [][]byte) []input {
		var b bytes.Buffer
		for _, o := range objs {
			b.WriteString("---\n")
			b.Write(toYAML(o))
		}
		return []input{{"cluster.yaml", b.Bytes()}}
	}},
	{"YAMLList", func(objs [][]byte) []input {
		// kubectl get ... -o yaml: a List, items at the left margin.
		var b bytes.Buffer
		b.WriteString("apiVersion: v1\nitems:\n")
		for _, o := range objs {
			lines := strings.Split(strings.TrimRight(string(toYAML(o)), "\n"), "\n")
			for i, l := range lines {
				if i == 0 {
					b.WriteString("- ")
				} else {
					b.WriteString("  ")
				}
				b.WriteString(l)
				b.WriteByte('\n')
			}
		}
		b.WriteString("kind: List\nmetadata:\n  resourceVersion: \"\"\n")
		return []input{{"list.yaml", b.Bytes()}}
	}},
	{"JSONList", func(objs [][]byte) []input {
		// A compact List, as a script writes it.
		var b bytes.Buffer
		b.WriteString(`{"apiVersion":"v1","kind":"List","items":[`)
		for i, o := range objs {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(o)
		}
		b.WriteString("]}\n")
		return []input{{"list.json", b.Bytes()}}
	}},
	{"KubectlGetJSON", func(objs [][]byte) []input {
		// kubectl get svc,endpointslices,nodes -A -o json: several kinds in one List,
		// indented by four spaces.
		var items []json.RawMessage
		for _, o := range objs {
			items = append(items, o)
		}
		js, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "items": items, "kind": "List",
			"metadata": map[string]any{"resourceVersion": ""}}, "", "    ")
		if err != nil {
			panic(err)
		}
		return []input{{"kubectl.json", append(js, '\n')}}
	}},
	{"JSONObjectPerFile", func(objs [][]byte) []input {
		ins := make([]input, len(objs))
		for i, o := range objs {
			var b bytes.Buffer
			if err := json.Indent(&b, o, "", "  "); err != nil {
				panic(err)
			}
			ins[i] = input{fmt.Sprintf("objects/%06d.json", i), b.Bytes()}
		}
		return ins
	}},
}

var (
	shapeMu    sync.Mutex
	shapeCache = map[string][]input{}
)

func shapeInputs(s shape, services int) []input {
	shapeMu.Lock()
	defer shapeMu.Unlock()
	key := fmt.Sprintf("%s/%d", s.name, services)
	if in, ok := shapeCache[key]; ok {
		return in
	}
	in := s.build(shapeObjects(services))
	shapeCache[key] = in
	return in
}

func benchmarkShape(b *testing.B, s shape, services int) {
	in := shapeInputs(s, services)
	var size int64
	for _, i := range in {
		size += int64(len(i.data))
	}
	b.SetBytes(size)
	b.ReportAllocs()
	// Generating the input leaves garbage; collecting it is not reading's cost.
	runtime.GC()
	b.ResetTimer()
	for b.Loop() {
		var set Set
		if errs, _ := set.decode(in, 0); len(errs) > 0 {
			b.Fatal(errs[0])
		}
		if want := 2*services + shapeNodes; len(set.Objects) != want {
			b.Fatalf("%d objects, want %d", len(set.Objects), want)
		}
	}
}

// BenchmarkShapes reads every input shape at 10,000 and 100,000 Services. Run it with
// -benchmem; `make bench` does.
func BenchmarkShapes(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		for _, s := range shapes {
			b.Run(fmt.Sprintf("%s/%dk", s.name, n/1000), func(b *testing.B) { benchmarkShape(b, s, n) })
		}
	}
}

// TestShapesReadTheSameObjects keeps the benchmark honest: every shape holds the same objects,
// each at its own line.
func TestShapesReadTheSameObjects(t *testing.T) {
	objs := shapeObjects(30)
	var want []string
	for _, s := range shapes {
		var set Set
		if errs, _ := set.decode(s.build(objs), 1); len(errs) > 0 {
			t.Fatalf("%s: %v", s.name, errs)
		}
		var got []string
		lines := map[string]bool{}
		for _, o := range set.Objects {
			got = append(got, o.Ref().String())
			lines[o.Source.String()] = true
		}
		if s.name != "JSONList" && len(lines) != len(set.Objects) { // JSONList is one line
			t.Errorf("%s: %d objects at %d distinct places", s.name, len(set.Objects), len(lines))
		}
		if want == nil {
			want = got
			continue
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s reads other objects than %s", s.name, shapes[0].name)
		}
	}
}

// TestListItemsAsDocuments: the fast List path places each item and each field error at its
// file line, and falls back to reading the whole document when an item does not parse alone.
func TestListItemsAsDocuments(t *testing.T) {
	in := `# a dump
apiVersion: v1
items:
- apiVersion: v1
  kind: Service
  metadata: {name: a, namespace: shop}
  spec:
    ports:
    - port: 80
      protocl: TCP
- &svc
  apiVersion: v1
  kind: Service
  metadata: {name: b, namespace: shop}
kind: List
metadata:
  resourceVersion: ""
`
	var s Set
	errs := s.Decode("list.yaml", []byte(in))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "list.yaml:10: Service shop/a: spec.ports[0].protocl: unknown field") {
		t.Errorf("errors: %v", errs)
	}
	if len(s.Objects) != 1 || s.Objects[0].Source.Line != 11 || s.Objects[0].Ref().Name != "b" {
		t.Errorf("objects: %+v", s.Objects)
	}
	// An alias to another item's anchor: only the whole document resolves it.
	alias := strings.Replace(in, "kind: List", "- *svc\nkind: List", 1)
	alias = strings.Replace(alias, "      protocl: TCP\n", "", 1)
	var s2 Set
	if errs := s2.Decode("alias.yaml", []byte(alias)); len(errs) != 0 || len(s2.Objects) != 3 {
		t.Errorf("alias: %d objects, errors %v", len(s2.Objects), errs)
	}
}

// Lists the item scan must not read differently from the whole-document reader.
func TestListFallbacks(t *testing.T) {
	cases := map[string]struct {
		in      string
		objects int
		errs    []string
	}{
		"JSON valid only as YAML (a trailing comma)": {
			in:      `{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a", "namespace": "x"},}]}`,
			objects: 1,
		},
		"two items keys": {
			in:   "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: a}\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: b}\n",
			errs: []string{`key "items" already set`},
		},
		"a JSON List with a missing comma": {
			in:   `{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}} {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"}}]}`,
			errs: []string{"not valid YAML"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var s Set
			errs := s.Decode("l", []byte(tc.in))
			if len(s.Objects) != tc.objects || len(errs) != len(tc.errs) {
				t.Fatalf("%d objects, errors %v", len(s.Objects), errs)
			}
			for i, want := range tc.errs {
				if !strings.Contains(errs[i].Error(), want) {
					t.Errorf("error %q lacks %q", errs[i], want)
				}
			}
		})
	}
}

func TestSkipValueStrings(t *testing.T) {
	for in, want := range map[string]int{
		`"abc",`:      5,
		`"a\"b",`:     6,
		`"a\\",`:      5,
		`"a\\\"b",`:   8,
		`"unclosed`:   -1,
		`"a\\\\"x"`:   7,
		`{"k":"}"},1`: 9,
	} {
		if got := skipValue([]byte(in), 0); got != want {
			t.Errorf("skipValue(%s) = %d, want %d", in, got, want)
		}
	}
}
