package manifest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loopguard/loopguard/core"
)

// problem is an error flattened for comparison.
type problem struct {
	Line   int
	Object string
	Field  string
	Msg    string
}

func problems(t *testing.T, errs []error) []problem {
	t.Helper()
	var out []problem
	for _, err := range errs {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("error %v (%T) is not a *manifest.Error", err, err)
		}
		if !errors.Is(err, core.ErrInvalid) {
			t.Errorf("error %v does not match core.ErrInvalid", err)
		}
		out = append(out, problem{e.Source.Line, e.Object, e.Field, e.Err.Error()})
	}
	return out
}

func refs(set *Set) []string {
	var out []string
	for i := range set.Objects {
		o := &set.Objects[i]
		out = append(out, fmt.Sprintf("%d %s", o.Source.Line, o.Ref()))
	}
	return out
}

func TestDecodeReportsEachProblemAtItsLine(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     string
		want   []problem
		objs   []string
	}{
		"unknown field": {
			reason: "a typo in a field name must not silently give a different object",
			in: `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  type: LoadBalancer
  externalTraficPolicy: Local
`,
			want: []problem{{7, "Service default/web", "spec.externalTraficPolicy", "unknown field"}},
		},
		"two unknown fields in a list item": {
			reason: "each field is reported at its own line",
			in: `apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  ports:
  - port: 80
    protocl: TCP
    nmae: http
`,
			want: []problem{
				{7, "Service shop/web", "spec.ports[0].protocl", "unknown field"},
				{8, "Service shop/web", "spec.ports[0].nmae", "unknown field"},
			},
		},
		"duplicate key": {
			reason: "YAML keeps only one of two equal keys; kubectl refuses them",
			in:     "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  name: b\n",
			want:   []problem{{5, "Service default/a", "", `not valid YAML: key "name" already set in map`}},
		},
		"duplicate key in a flow mapping": {
			reason: "the decoder's own duplicate check is skipped for YAML, so the converters must catch this one too",
			in:     "apiVersion: v1\nkind: Service\nmetadata: {name: a, name: b}\n",
			want:   []problem{{3, "Service default/a", "", `not valid YAML: key "name" already set in map`}},
		},
		"duplicate key in JSON after a comment": {
			in:   "# dumped\n{\"apiVersion\": \"v1\", \"kind\": \"Service\", \"metadata\": {\"name\": \"a\", \"name\": \"b\"}}\n",
			want: []problem{{2, "Service default/b", "metadata.name", `duplicate field`}},
		},
		"duplicate key in JSON": {
			reason: "JSON is decoded as it is: the strict decoder checks its keys",
			in:     `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a", "name": "b"}}`,
			want:   []problem{{1, "Service default/b", "metadata.name", `duplicate field`}},
		},
		"duplicate key in a YAML List item": {
			in:   "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata:\n    name: a\n    name: b\n",
			want: []problem{{8, "List", "", `not valid YAML: key "name" already set in map`}},
		},
		"unquoted boolean annotation": {
			reason: "annotation values are strings: prevent-loopback: true must be quoted",
			in: `apiVersion: v1
kind: Service
metadata:
  name: web
  annotations:
    example.com/ok: "x"
    service.cloud.tencent.com/prevent-loopback: true
`,
			want: []problem{{7, "Service default/web", "metadata.annotations[service.cloud.tencent.com/prevent-loopback]",
				"cannot use a bool here (want a string): quote the value"}},
		},
		"number in ConfigMap data": {
			in:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tke-ingress-controller-config, namespace: kube-system}\ndata:\n  VERSION: 2.9\n",
			want: []problem{{5, "ConfigMap kube-system/tke-ingress-controller-config", "data[VERSION]", "cannot use a number here (want a string): quote the value"}},
		},
		"syntax error": {
			reason: "the parser's line is relative to the document; the error names the file's line",
			in:     "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: b\n",
			want:   []problem{{7, "Node b", "", "not valid YAML: did not find expected ',' or '}'"}},
			objs:   []string{"1 Node a"},
		},
		"unknown kind in a core group": {
			in:   "apiVersion: v1\nkind: Sevice\nmetadata: {name: web}\n",
			want: []problem{{2, "Sevice default/web", "kind", "apiVersion v1 has no kind Sevice (did you mean Service?)"}},
		},
		"missing kind": {
			in:   "apiVersion: v1\nmetadata: {name: web}\n",
			want: []problem{{1, "", "kind", "missing kind"}},
		},
		"missing apiVersion": {
			in:   "kind: Service\nmetadata:\n  name: web\n",
			want: []problem{{1, "Service default/web", "apiVersion", "missing apiVersion"}},
		},
		"not a mapping": {
			in:   "- a\n- b\n",
			want: []problem{{1, "", "", "not a Kubernetes object: the document is a list, not a mapping with apiVersion and kind"}},
		},
		"separator with content": {
			in:   "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n--- oops\napiVersion: v1\nkind: Node\nmetadata: {name: b}\n",
			want: []problem{{4, "", "", `invalid document separator: only a comment may follow "---" on its line`}},
			objs: []string{"1 Node a", "5 Node b"},
		},
		"bad List item": {
			reason: "a List item is reported at its own line, and the other items are read",
			in: `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: a}
- apiVersion: v1
  kind: Node
  metadata: {name: b}
  spec: {unschedulabel: true}
`,
			want: []problem{{10, "Node b", "spec.unschedulabel", "unknown field"}},
			objs: []string{"4 Node a"},
		},
		"bad profile": {
			in:   "apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\nprovider: tencent\nproxyMode: ipvss\n",
			want: []problem{{4, "ClusterProfile", "proxyMode", `Unsupported value: "ipvss": supported values: "iptables", "ipvs", "nftables", "ebpf"`}},
		},
		"profile field names are case-sensitive": {
			reason: "Kubernetes matches field names exactly; ProxyMode is a typo",
			in:     "apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\nProxyMode: ipvs\n",
			want:   []problem{{3, "ClusterProfile", "ProxyMode", "unknown field"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var set Set
			errs := set.Decode("in.yaml", []byte(tc.in))
			if diff := cmp.Diff(tc.want, problems(t, errs)); diff != "" {
				t.Errorf("%s\nerrors (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.objs, refs(&set)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGuessObjectOfBrokenDocument(t *testing.T) {
	for in, want := range map[string]string{
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: shop\nspec: [\n": "Service shop/web",
		"kind: Service\nmetadata: {name: web, namespace: shop\n":                              "Service shop/web",
		"kind: Node\nmetadata:\n  labels: {a: b}\n  name: n1\nspec:\n  name: other\n":         "Node n1",
		"kind: ConfigMap\nmetadata:\n  name: x\ndata:\n  namespace: y\n  broken: [\n":         "ConfigMap default/x",
		"metadata: {name: a}\n  bad\n":                                                        "",
		"kind: Service\nspec: {\n":                                                            "Service",
	} {
		if got := guessObject([]byte(in)); got != want {
			t.Errorf("guessObject(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestErrorMessageNamesFileLineObjectAndField(t *testing.T) {
	var set Set
	errs := set.Decode("svc.yaml", []byte("apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  typo: 1\n"))
	if len(errs) != 1 {
		t.Fatalf("got %v", errs)
	}
	want := "svc.yaml:5: Service default/web: spec.typo: unknown field"
	if got := errs[0].Error(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestDecodeObjects(t *testing.T) {
	in := `# a comment before the first document
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  type: LoadBalancer
---
---
# only a comment
---
apiVersion: v1
kind: Node
metadata:
  name: n1
...
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: qcloud}
---
apiVersion: cloud.tencent.com/v1alpha1
kind: TkeServiceConfig
metadata: {name: web-config}
spec:
  loadBalancer:
    l4Listeners:
    - {protocol: TCP, port: 80, snatEnable: true}
---
{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "web-x", "namespace": "shop"}, "addressType": "IPv4", "endpoints": []}
---
apiVersion: v1
kind: ServiceList
items:
- metadata: {name: listed, namespace: shop}
  spec: {type: LoadBalancer}
---
apiVersion: loopguard.io/v1alpha1
kind: ClusterProfile
provider: tencent
proxyMode: ipvs
`
	var set Set
	if errs := set.Decode("in.yaml", []byte(in)); len(errs) > 0 {
		t.Fatal(errs)
	}
	want := []string{"2 Service default/web", "12 Node n1", "17 IngressClass qcloud", "21 TkeServiceConfig default/web-config",
		"29 EndpointSlice shop/web-x", "34 Service shop/listed"}
	if diff := cmp.Diff(want, refs(&set)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	types := []any{&corev1.Service{}, &corev1.Node{}, &networkingv1.IngressClass{}, &unstructured.Unstructured{}, &discoveryv1.EndpointSlice{}, &corev1.Service{}}
	for i, o := range set.Objects {
		if reflect.TypeOf(o.Object) != reflect.TypeOf(types[i]) {
			t.Errorf("object %d is %T, want %T", i, o.Object, types[i])
		}
	}
	tsc := set.Objects[3].Object.(*unstructured.Unstructured)
	snat, _, _ := unstructured.NestedSlice(tsc.Object, "spec", "loadBalancer", "l4Listeners")
	if got := snat[0].(map[string]any)["snatEnable"]; got != true {
		t.Errorf("TkeServiceConfig snatEnable = %v, want true", got)
	}
	if len(set.Profiles) != 1 || set.Profiles[0].Profile.ProxyMode != core.ProxyModeIPVS || set.Profiles[0].Source.Line != 37 {
		t.Errorf("profiles = %+v", set.Profiles)
	}
}

func TestLocateFindsTheFieldLine(t *testing.T) {
	in := `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata:
    name: web
    annotations:
      service.kubernetes.io/qcloud-loadbalancer-internal-subnetid: subnet-1
      service.cloud.tencent.com/prevent-loopback: "ture"
  spec:
    ports:
    - port: 80
    - port: 53
      protocol: SCTP
`
	var set Set
	if errs := set.Decode("list.yaml", []byte(in)); len(errs) > 0 {
		t.Fatal(errs)
	}
	o := &set.Objects[0]
	for path, want := range map[string]int{
		"metadata.annotations[service.cloud.tencent.com/prevent-loopback]": 10,
		"metadata.annotations.service.cloud.tencent.com/prevent-loopback":  10,
		"spec.ports[1].protocol":        15,
		"spec.ports[1]":                 14,
		"spec.externalTrafficPolicy":    11, // not written: the nearest written parent
		"":                              4,
		"metadata.annotations[missing]": 8,
	} {
		if got := o.Locate(path); got.Line != want || got.Name != "list.yaml" {
			t.Errorf("Locate(%q) = %v, want line %d", path, got, want)
		}
	}
}

func TestReadFilesFoldersAndStdin(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	node := func(name string) string { return "apiVersion: v1\nkind: Node\nmetadata: {name: " + name + "}\n" }
	write("b.yaml", node("b"))
	write("a/z.yml", node("az")+"---\n"+node("az2"))
	write("a/deep/y.json", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"ay"}}`)
	write("a/notes.txt", "not read")
	write(".git/x.yaml", node("hidden"))
	write("broken.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: broken\n")

	r := Reader{Stdin: strings.NewReader(node("stdin")), Workers: 3}
	set, errs := r.Read(dir, "-", filepath.Join(dir, "missing.yaml"))
	var names []string
	for _, o := range set.Objects {
		names = append(names, o.Ref().Name+"@"+filepath.Base(o.Source.Name))
	}
	want := []string{"ay@y.json", "az@z.yml", "az2@z.yml", "b@b.yaml", "stdin@-"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if len(errs) != 2 {
		t.Fatalf("errors = %v, want the broken document and the missing file", errs)
	}
	var e *Error
	if !errors.As(errs[0], &e) || !strings.HasSuffix(e.Source.Name, "missing.yaml") || e.Source.Line != 0 {
		t.Errorf("first error = %v, want the missing file (files are listed before documents are decoded)", errs[0])
	}
	if !errors.As(errs[1], &e) || !strings.HasSuffix(e.Source.Name, "broken.yaml") || e.Source.Line != 3 {
		t.Errorf("second error = %v, want broken.yaml:3", errs[1])
	}
}

func TestParallelDecodingKeepsInputOrder(t *testing.T) {
	data := generate(300, 7)
	data = append(data, "---\napiVersion: v1\nkind: Nope\nmetadata: {name: x}\n"...)
	var one, many Set
	e1, _ := one.decode([]input{{"g.yaml", data}}, 1)
	e2, _ := many.decode([]input{{"g.yaml", data}}, 8)
	if len(one.Objects) != 607 {
		t.Fatalf("got %d objects", len(one.Objects))
	}
	if diff := cmp.Diff(refs(&one), refs(&many)); diff != "" {
		t.Errorf("order differs (-1 worker +8 workers):\n%s", diff)
	}
	if diff := cmp.Diff(problems(t, e1), problems(t, e2)); diff != "" {
		t.Errorf("errors differ:\n%s", diff)
	}
}

func TestReadProfile(t *testing.T) {
	cases := map[string]struct {
		in   string
		want []problem
	}{
		"valid":         {in: "apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\nprovider: tencent\nallowlists: [clb-l4-snat]\n"},
		"unknown field": {in: "apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\n\nproxymode: ipvs\n", want: []problem{{4, "ClusterProfile", "proxymode", "unknown field"}}},
		"two documents": {in: "a: 1\n---\nb: 2\n", want: []problem{{1, "ClusterProfile", "", "want exactly one ClusterProfile document (apiVersion loopguard.io/v1alpha1, kind ClusterProfile), found 2 documents: 2 without a kind"}}},
		"wrong kind":    {in: "apiVersion: loopguard.io/v1alpha1\nkind: Profile\n", want: []problem{{2, "ClusterProfile", "kind", `Unsupported value: "Profile": supported values: "ClusterProfile"`}}},
		"bad version":   {in: "apiVersion: loopguard.io/v1alpha1\nkind: ClusterProfile\nkubeProxyVersion: latest\n", want: []problem{{3, "ClusterProfile", "kubeProxyVersion", `Invalid value: "latest": not a version (want e.g. v1.30.2)`}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, errs := ReadProfile("p.yaml", []byte(tc.in))
			if diff := cmp.Diff(tc.want, problems(t, errs)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if (p != nil) != (len(tc.want) == 0) {
				t.Errorf("profile = %v", p)
			}
		})
	}
}

func TestSplitDocumentsLines(t *testing.T) {
	in := "\xEF\xBB\xBFa: 1\r\n---\r\n\r\nb: 2\r\n--- # comment\nc: 3\n...\n# trailing comment\n"
	docs := splitDocuments("x", []byte(in))
	var got []string
	for _, d := range docs {
		got = append(got, fmt.Sprintf("%d:%q", d.line, d.data))
	}
	want := []string{`1:"a: 1\r\n"`, `4:"b: 2\r\n"`, `6:"c: 3\n"`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
