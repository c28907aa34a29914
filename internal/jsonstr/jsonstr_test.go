package jsonstr

import (
	"bytes"
	"encoding/json"
	"testing"
)

func marshal(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func TestAppendMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " and \ backslash`, "tab\tnl\ncr\r", "\b\f\x00\x1f\x7f",
		"<html> & 'x'", "ünïcödé 中文", "\u2028\u2029", "bad \xff\xfe utf8", "truncated \xe4\xb8"} {
		want := marshal(s)
		if got := Append(nil, s); !bytes.Equal(got, want) {
			t.Errorf("string %q: got %s, want %s", s, got, want)
		}
		if got := Append(nil, []byte(s)); !bytes.Equal(got, want) {
			t.Errorf("bytes %q: got %s, want %s", s, got, want)
		}
	}
}

func FuzzAppend(f *testing.F) {
	f.Add("a\"b\\c\n")
	f.Add("\xff\u2028")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Append(nil, s), marshal(s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}

func BenchmarkAppend(b *testing.B) {
	s := "service.cloud.tencent.com/prevent-loopback: \"true\" — Intra-cluster forwarding"
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = Append(buf[:0], s)
	}
}
