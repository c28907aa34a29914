package core

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

var SnatEdit = Edit{Path: []PathElem{PathElem{Field: "spec"}, PathElem{Field: "loadBalancer"}, PathElem{Field: "l4Listeners"}, PathElem{Keys: map[string]any{"protocol": "TCP", "port": int64(80)}}, PathElem{Field: "snatEnable"}}, Value: true}

func TestEditString(t *testing.T) {
	if got := SnatEdit.String(); got != "spec.loadBalancer.l4Listeners[port=80,protocol=TCP].snatEnable" {
		t.Error(got)
	}
}

func TestEditApplyTo(t *testing.T) {
	cases := map[string]struct {
		in, want string
		changed  bool
	}{
		"CreatesEverything": {
			in:      `{}`,
			want:    `{"spec":{"loadBalancer":{"l4Listeners":[{"protocol":"TCP","port":80,"snatEnable":true}]}}}`,
			changed: true,
		},
		"MergesIntoExistingEntryKeepingForeignFields": {
			in: `{"metadata":{"labels":{"team":"x"}},"spec":{"loadBalancer":{"internetMaxBandwidthOut":10,"l4Listeners":[
				{"protocol":"UDP","port":80,"scheduler":"WRR"},
				{"protocol":"TCP","port":80,"healthCheck":{"enable":true,"intervalTime":5},"x-unknown":[1,2]}]}}}`,
			want: `{"metadata":{"labels":{"team":"x"}},"spec":{"loadBalancer":{"internetMaxBandwidthOut":10,"l4Listeners":[
				{"protocol":"UDP","port":80,"scheduler":"WRR"},
				{"protocol":"TCP","port":80,"healthCheck":{"enable":true,"intervalTime":5},"x-unknown":[1,2],"snatEnable":true}]}}}`,
			changed: true,
		},
		"AppendsMissingEntry": {
			in:      `{"spec":{"loadBalancer":{"l4Listeners":[{"protocol":"TCP","port":443,"snatEnable":false}]}}}`,
			want:    `{"spec":{"loadBalancer":{"l4Listeners":[{"protocol":"TCP","port":443,"snatEnable":false},{"protocol":"TCP","port":80,"snatEnable":true}]}}}`,
			changed: true,
		},
		"AlreadySo": {
			in:      `{"spec":{"loadBalancer":{"l4Listeners":[{"protocol":"TCP","port":80,"snatEnable":true}]}}}`,
			want:    `{"spec":{"loadBalancer":{"l4Listeners":[{"protocol":"TCP","port":80,"snatEnable":true}]}}}`,
			changed: false,
		},
		"NullListReplaced": {
			in:      `{"spec":{"loadBalancer":{"l4Listeners":null}}}`,
			want:    `{"spec":{"loadBalancer":{"l4Listeners":[{"protocol":"TCP","port":80,"snatEnable":true}]}}}`,
			changed: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := decode(t, tc.in)
			changed, err := SnatEdit.ApplyTo(obj)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
			// Compare as JSON: the edit writes Go int64 ports, the decoder float64.
			if diff := cmp.Diff(decode(t, tc.want), roundTrip(t, obj)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if !SnatEdit.Satisfied(obj) {
				t.Error("edit not satisfied after applying it")
			}
		})
	}
}

func roundTrip(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, string(b))
}

func TestEditRefusesShapeConflicts(t *testing.T) {
	for name, in := range map[string]string{
		"ListenersNotAList": `{"spec":{"loadBalancer":{"l4Listeners":"TCP:80"}}}`,
		"SpecNotAnObject":   `{"spec":"none"}`,
	} {
		t.Run(name, func(t *testing.T) {
			obj := decode(t, in)
			before := decode(t, in)
			if _, err := SnatEdit.ApplyTo(obj); err == nil || !strings.Contains(err.Error(), "want") {
				t.Errorf("err = %v", err)
			}
			if !cmp.Equal(before, obj) {
				t.Error("a refused edit changed the object")
			}
		})
	}
}

func TestAnnotationEdit(t *testing.T) {
	e := Edit{Path: []PathElem{PathElem{Field: "metadata"}, PathElem{Field: "annotations"}, PathElem{Field: "service.cloud.tencent.com/prevent-loopback"}}, Value: "true"}
	obj := decode(t, `{"metadata":{"name":"web","annotations":{"owner":"team-a"}}}`)
	if changed, err := e.ApplyTo(obj); err != nil || !changed {
		t.Fatal(changed, err)
	}
	want := decode(t, `{"metadata":{"name":"web","annotations":{"owner":"team-a","service.cloud.tencent.com/prevent-loopback":"true"}}}`)
	if diff := cmp.Diff(want, obj); diff != "" {
		t.Error(diff)
	}
}

func FuzzEditApplyTo(f *testing.F) {
	f.Add(`{}`, "TCP", int64(80))
	f.Add(`{"spec":{"loadBalancer":{"l4Listeners":[{"protocol":"TCP","port":80}]}}}`, "TCP", int64(80))
	f.Add(`{"spec":{"loadBalancer":{"l4Listeners":[1,"x",null]}}}`, "UDP", int64(53))
	f.Add(`{"spec":[]}`, "TCP", int64(1))
	f.Fuzz(func(t *testing.T, doc, proto string, port int64) {
		var obj map[string]any
		if json.Unmarshal([]byte(doc), &obj) != nil || obj == nil {
			return
		}
		before, _ := json.Marshal(obj)
		e := Edit{Path: []PathElem{PathElem{Field: "spec"}, PathElem{Field: "loadBalancer"}, PathElem{Field: "l4Listeners"}, PathElem{Keys: map[string]any{"protocol": proto, "port": float64(port)}}, PathElem{Field: "snatEnable"}}, Value: true}
		changed, err := e.ApplyTo(obj)
		after, _ := json.Marshal(obj)
		if err != nil {
			if string(before) != string(after) {
				t.Fatalf("failed edit changed the object: %s → %s", before, after)
			}
			return
		}
		if !e.Satisfied(obj) {
			t.Fatalf("edit not satisfied: %s", after)
		}
		if changed == (string(before) == string(after)) {
			t.Fatalf("changed=%v but before %s after %s", changed, before, after)
		}
		if again, err := e.ApplyTo(obj); again || err != nil {
			t.Fatalf("second application changed=%v err=%v", again, err)
		}
	})
}
