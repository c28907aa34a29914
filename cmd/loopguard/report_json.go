package main

import (
	"io"
	"reflect"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// assess's JSON report is written by github.com/go-json-experiment/json (encoding/json/v2),
// which streams the document to w as it encodes; encoding/json (v1) builds it whole and then
// re-scans it to indent, which for 10,000 Services (61 MB of report) was most of assess's
// time. The bytes are what json.Encoder with SetIndent("", "  ") and SetEscapeHTML(false)
// writes for the same Report (TestReportJSONMatchesEncodingJSON, and the golden files), so the
// structs' tags stay the one definition of the contract. v2's defaults differ from v1's in
// ways the options below undo:
//   - nil slices: v2 writes [], v1 null (FormatNilSliceAsNull);
//   - U+2028 and U+2029: v1 always escapes them (EscapeForJS);
//   - '<', '>' and '&': neither escapes them (Actions carry shell-like text);
//   - invalid UTF-8: v2 refuses it unless allowed, and then writes the character U+FFFD where
//     v1 writes the escape \ufffd; see writeReportJSON.
//
// omitempty needs no option: v2 omits a field whose JSON is "", null, [] or {}, v1 one whose
// Go value is empty, and the two agree on the report's omitempty fields, which are all
// strings, slices and pointers (a bool or number marked omitempty would not be omitted by v2;
// it would need omitzero). Floats are formatted alike ('f', or 'e' below 1e-6 and from 1e21,
// with e-7 rather than e-07), and Report has no maps or Marshal methods.
//
// Cost, measured when it replaced the hand-written writer (jsonw.go) on 2 shared cores, 10,000
// generated Services, benchstat of 6-8 interleaved runs: BenchmarkReportJSON/writer 140 → 227
// cpu-ms/op (1.6×; encoding/json takes ~650, 4.6×), 64 KiB → 17 KiB and 3 → 135 allocs per
// report; BenchmarkAssess10kServices 438 → 548 ms/op, 0.65 → 0.77 cpu-s/op (+18%);
// BenchmarkPlan10kServices, whose writer did not change, 0.92 → 0.97 cpu-s/op (p=0.44, noise).
var reportJSONOptions = json.JoinOptions(
	json.FormatNilSliceAsNull(true),
	json.Deterministic(true),
	jsontext.WithIndent("  "),
	jsontext.EscapeForJS(true),
	jsontext.EscapeForHTML(false),
	jsontext.AllowInvalidUTF8(true),
)

// writeReportJSON writes the report, indented, with a final newline.
//
// A report with a string that is not valid UTF-8 is written by encoding/json: decoded
// manifests are always valid, but a file name need not be, and it shows in locations and
// errors. v1 writes each bad byte as \ufffd and v2 as the character itself; checking first
// (about a tenth of the writer's time) is cheaper than a v2 string marshaler (two fifths).
func writeReportJSON(w io.Writer, rep *Report) error {
	if !validUTF8(reflect.ValueOf(rep)) {
		return renderJSON(w, rep)
	}
	return json.MarshalEncode(jsontext.NewEncoder(w, reportJSONOptions), rep)
}

// validUTF8 says whether every string reachable from v, through pointers, slices and struct
// fields (all a Report has), is valid UTF-8.
func validUTF8(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		return utf8.ValidString(v.String())
	case reflect.Pointer:
		return v.IsNil() || validUTF8(v.Elem())
	case reflect.Slice:
		for i := range v.Len() {
			if !validUTF8(v.Index(i)) {
				return false
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if !validUTF8(v.Field(i)) {
				return false
			}
		}
	}
	return true
}
