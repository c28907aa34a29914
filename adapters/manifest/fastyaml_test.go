package manifest

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

// sameAsGeneral checks the fast path against the general parser: when the fast path accepts a
// document, the general parser must accept it too and mean the same JSON value.
func sameAsGeneral(t *testing.T, doc []byte) (accepted bool) {
	t.Helper()
	fast, ok := fastYAMLToJSON(doc)
	if !ok {
		return false
	}
	general, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		t.Fatalf("fast path accepted what the general parser refuses (%v):\n%q\nfast: %s", err, clip(doc), clip(fast))
	}
	var a, b any
	if err := decodeNumbers(fast, &a); err != nil {
		t.Fatalf("fast path wrote invalid JSON %s: %v\ninput:\n%s", fast, err, doc)
	}
	if err := decodeNumbers(general, &b); err != nil {
		t.Fatalf("general parser wrote invalid JSON %s: %v", general, err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("fast path and general parser differ for\n%q\nfast:    %s\ngeneral: %s", clip(doc), clip(fast), clip(general))
	}
	return true
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

func decodeNumbers(js []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(js))
	d.UseNumber()
	return d.Decode(v)
}

func TestFastYAMLMatchesGeneralParser(t *testing.T) {
	cases := map[string]struct {
		doc  string
		fast bool // whether the fast path is expected to take it
	}{
		"service": {fast: true, doc: `apiVersion: v1
kind: Service
metadata:
  name: web   # trailing comment
  namespace: shop
  annotations:
    service.kubernetes.io/qcloud-loadbalancer-internal-subnetid: subnet-12345678
    service.cloud.tencent.com/prevent-loopback: "true"
    example.com/single: 'it''s'
  labels: {app: web, tier: "front"}
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  selector:
    app: web
  ports:
  - name: http
    port: 80
    targetPort: 8080
    protocol: TCP
  -   name: https
      port: -443
`},
		"sequence at key indentation": {fast: true, doc: "a:\n- x\n- y\nb: 1\n"},
		"nested sequences":            {fast: true, doc: "a:\n  - - x\n    - y\n  - z\n"},
		"null values":                 {fast: true, doc: "a:\nb: ~\nc: null\nd:\n  # only a comment\ne: 1\n"},
		"yaml 1.1 booleans":           {fast: true, doc: "a: yes\nb: off\nc: y\nd: True\n"},
		"ip addresses":                {fast: true, doc: "a: 10.0.0.1\nb: [10.0.0.2, \"10.0.0.3\"]\n"},
		"literal block":               {fast: true, doc: "data:\n  Corefile: |\n    .:53 {\n        errors\n\n        health\n    }\n  other: |-\n    x\n\n  last: 1\n"},
		"empty literal":               {fast: true, doc: "a: |\nb: 2\n"},
		"escapes":                     {fast: true, doc: `a: "tab\there \"q\" \\ \u00e9 /"` + "\n"},
		"crlf":                        {fast: true, doc: "a: 1\r\nb:\r\n  c: d\r\n"},
		"unicode":                     {fast: true, doc: "名前: 値\n"},
		"flow nested":                 {fast: true, doc: "a: {b: [1, 2, {c: d}], e: {}}\nf: []\n"},
		"octal":                       {doc: "mode: 0755\n"},
		"float":                       {doc: "v: 1.20\n"},
		"timestamp":                   {doc: "t: 2001-12-14\n"},
		"anchor":                      {doc: "a: &x 1\nb: *x\n"},
		"folded":                      {doc: "a: >\n  x\n  y\n"},
		"multi-line plain":            {doc: "a: x\n  y\n"},
		"tab":                         {doc: "a:\tb\n"},
		"duplicate key":               {doc: "a: 1\na: 2\n"},
		"bool key":                    {doc: "yes: 1\n"},
		"number key":                  {doc: "80: http\n"},
		"merge":                       {doc: "a:\n  <<: {b: 1}\n"},
		"tag":                         {doc: "a: !!str 1\n"},
		"mapping value in plain":      {doc: "a: b: c\n"},
		"top-level list":              {doc: "- a\n"},
		"bad indentation":             {doc: "a:\n  b: 1\n c: 2\n"},
		"control character":           {doc: "a: \"\x01\"\n"},
		"invalid utf-8":               {doc: "a: \xff\n"},
		"nel":                         {doc: "a: b\u0085c\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := sameAsGeneral(t, []byte(tc.doc)); got != tc.fast {
				t.Errorf("fast path took it: %v, want %v", got, tc.fast)
			}
		})
	}
}

// FuzzFastYAML holds the fast path to the general parser: whatever it accepts must mean the same.
func FuzzFastYAML(f *testing.F) {
	for _, s := range []string{
		"a: 1\n", "a:\n- b\n- c: d\n  e: f\n", "a: |\n  x\n\n  y\nb: 'q'\n", "a: {b: [c, 1, \"d\"]}\n",
		"k: 10.0.0.1 # c\n", "a:\n  - - 1\n    - 2\n", "x: \"\\u00e9\\n\"\n", "a: yes\nb: ~\n",
		string(generate(2, 2)),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		sameAsGeneral(t, doc)
	})
}

// peekTypeMeta must agree with encoding/json whenever it answers.
func FuzzPeekTypeMeta(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"a","namespace":"b","labels":{"x":"y"}},"spec":{"ports":[{"port":80}]}}`,
		`{"kind":"List","items":[]}`, `{"metadata":{"name":"a\"b"}}`, `{"kind":5}`, `{}`, `{"a":[1,"]",{"b":"}"}],"kind":"X"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, js []byte) {
		if !json.Valid(js) {
			return
		}
		got, ok := peekTypeMeta(js)
		if !ok {
			return
		}
		var want typeMeta
		if err := json.Unmarshal(js, &want); err != nil {
			t.Fatalf("peek accepted %s, encoding/json says %v", clip(js), err)
		}
		want.Items = nil
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("peek %+v, encoding/json %+v for %s", got, want, clip(js))
		}
	})
}
