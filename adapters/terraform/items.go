package terraform

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/loopguard/loopguard/core"
)

// item is one field loopguard sets: where it lives, and the value it gets.
type item struct {
	key, value string
}

// itemsOf lists the fields a change sets. Cluster changes set one field per edit (a change
// that creates an object sets its edits; the rest of the new object is its template, which
// loopguard deletes again only when it created the object); cloud changes set one attribute.
// Changes for a person (user) or for the status's owner (status) set nothing loopguard keeps.
func itemsOf(ch *core.Change) []item {
	switch ch.By {
	case core.WriterCluster:
		if ch.Object == nil {
			return nil
		}
		var out []item
		for _, e := range ch.Edits {
			out = append(out, item{key: clusterKey(*ch.Object, e), value: valueString(e.Value)})
		}
		return out
	case core.WriterCloud:
		return []item{{key: ch.Resource + ": " + ch.Field, value: ch.To}}
	}
	return nil
}

func clusterKey(k core.ObjectKey, e core.Edit) string {
	return objectPrefix(k) + e.String()
}

func objectPrefix(k core.ObjectKey) string {
	return k.Kind + " " + k.Namespace + "/" + k.Name + ": "
}

func valueString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// changeKeys are the keys of the fields a change writes, and for a change that deletes an
// object, the prefix every field of that object has.
func changeKeys(ch *core.Change) (keys []string, objectPrefixes []string) {
	if ch.By == core.WriterCluster && ch.Delete && ch.Object != nil {
		return nil, []string{objectPrefix(*ch.Object)}
	}
	for _, it := range itemsOf(ch) {
		keys = append(keys, it.key)
	}
	return keys, nil
}

// mine reports whether a removal change takes back something the state says loopguard set,
// and narrows a cluster change's edits to those fields.
func mine(ch core.Change, managed map[string]string) (core.Change, bool) {
	switch ch.By {
	case core.WriterCloud:
		_, ok := managed[ch.Resource+": "+ch.Field]
		return ch, ok
	case core.WriterCluster:
		if ch.Object == nil {
			return ch, false
		}
		if ch.Delete {
			// An object loopguard created is deleted whole, when the state holds a field of it.
			p := objectPrefix(*ch.Object)
			for k := range managed {
				if strings.HasPrefix(k, p) {
					return ch, true
				}
			}
			return ch, false
		}
		var edits []core.Edit
		for _, e := range ch.Edits {
			if _, ok := managed[clusterKey(*ch.Object, e)]; ok {
				edits = append(edits, e)
			}
		}
		ch.Edits = edits
		return ch, len(edits) > 0
	}
	return ch, false
}

// sortedKeys is for deterministic output.
func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}
