package core

import (
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ownedRemovals keeps the Remove edits whose leaf loopguard still owns on the live object, by
// its metadata.managedFields: a leaf that another manager owns too (it set the same value) or
// instead (it changed it since) is theirs, and removing it would take away their setting. An
// object with no managedFields at all (an in-memory test cluster, a server without field
// management) gives no evidence against loopguard, so its leaves count as owned.
func ownedRemovals(live *unstructured.Unstructured, edits []Edit) []Edit {
	mf := live.GetManagedFields()
	if len(mf) == 0 {
		return edits
	}
	out := make([]Edit, 0, len(edits))
	for _, e := range edits {
		if !e.Remove {
			out = append(out, e)
			continue
		}
		ours, theirs := false, false
		for _, m := range mf {
			if m.FieldsV1 == nil {
				continue
			}
			var fields map[string]any
			if json.Unmarshal(m.FieldsV1.Raw, &fields) != nil || !ownsPath(fields, e.Path) {
				continue
			}
			if m.Manager == FieldManager {
				ours = true
			} else {
				theirs = true
			}
		}
		if ours && !theirs {
			out = append(out, e)
		}
	}
	return out
}

// ownsPath reports whether a FieldsV1 set covers path: each field is "f:<name>", each list
// element "k:<its keys as JSON>"; an empty set at any step owns everything below it (an atomic
// list or map, as a CRD without list-map markers has).
func ownsPath(set map[string]any, path []PathElem) bool {
	cur := set
	for _, p := range path {
		if len(cur) == 0 {
			return true
		}
		var next any
		var ok bool
		if p.Keys == nil {
			next, ok = cur["f:"+p.Field]
		} else {
			for k, v := range cur {
				if !strings.HasPrefix(k, "k:") {
					continue
				}
				var keys map[string]any
				if json.Unmarshal([]byte(k[2:]), &keys) == nil && keysEqual(keys, p.Keys) {
					next, ok = v, true
					break
				}
			}
		}
		if !ok {
			return false
		}
		cur, _ = next.(map[string]any)
	}
	return true
}

func keysEqual(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if !equalJSON(a[k], v) {
			return false
		}
	}
	return true
}
