package core

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// PathElem is one step of an Edit's path: a map field, or the element of a list whose key
// fields equal Keys (a list-map, like TkeServiceConfig's l4Listeners keyed by protocol and port).
type PathElem struct {
	Field string         `json:"field,omitempty"`
	Keys  map[string]any `json:"keys,omitempty"`
}

// Edit sets one leaf of an unstructured object, creating the maps and keyed list elements on
// its way. It never touches anything else, which is how loopguard keeps every field it does not
// own: users put many other fields in TkeServiceConfigs and annotations (docs/sources.md#tkeserviceconfig).
//
// A Remove edit takes a value back: it deletes the leaf when it still holds Value, and leaves
// any other value alone (someone else's since).
type Edit struct {
	Path   []PathElem `json:"path"`
	Value  any        `json:"value"`
	Remove bool       `json:"remove,omitempty"`
}

// String renders the path as spec.loadBalancer.l4Listeners[port=80,protocol=TCP].snatEnable.
func (e Edit) String() string {
	var b strings.Builder
	for i, p := range e.Path {
		if p.Keys != nil {
			b.WriteString("[")
			b.WriteString(formatKeys(p.Keys))
			b.WriteString("]")
			continue
		}
		if i > 0 {
			b.WriteString(".")
		}
		b.WriteString(p.Field)
	}
	return b.String()
}

func formatKeys(keys map[string]any) string {
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s=%v", k, keys[k])
	}
	return strings.Join(parts, ",")
}

// Current returns the value at the edit's path and whether it is present.
func (e Edit) Current(obj map[string]any) (any, bool) {
	var cur any = obj
	for _, p := range e.Path {
		switch {
		case p.Keys != nil:
			list, ok := cur.([]any)
			if !ok {
				return nil, false
			}
			i := findKeyed(list, p.Keys)
			if i < 0 {
				return nil, false
			}
			cur = list[i]
		default:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			v, ok := m[p.Field]
			if !ok {
				return nil, false
			}
			cur = v
		}
	}
	return cur, true
}

// Satisfied reports whether the object already holds the edit's value (for a Remove edit:
// no longer holds it).
func (e Edit) Satisfied(obj map[string]any) bool {
	v, ok := e.Current(obj)
	held := ok && equalJSON(v, e.Value)
	if e.Remove {
		return !held
	}
	return held
}

// ApplyTo makes the edit on obj. It reports whether anything changed, and fails without
// changing anything when the path runs into a value of the wrong shape (a string where a map
// is needed): a user's field is never overwritten to make room.
func (e Edit) ApplyTo(obj map[string]any) (bool, error) {
	if len(e.Path) == 0 || e.Path[len(e.Path)-1].Keys != nil {
		return false, fmt.Errorf("edit %s: the path must end in a field", e)
	}
	if e.Satisfied(obj) {
		return false, nil
	}
	if err := e.check(obj); err != nil {
		return false, err
	}
	if e.Remove {
		parent, _ := Edit{Path: e.Path[:len(e.Path)-1]}.Current(obj)
		m, ok := parent.(map[string]any)
		if !ok {
			return false, nil
		}
		delete(m, e.Path[len(e.Path)-1].Field)
		return true, nil
	}
	var parent any = obj
	set := func(v any) {} // replaces the current container in its parent
	for i, p := range e.Path {
		last := i == len(e.Path)-1
		switch {
		case p.Keys != nil:
			list, _ := parent.([]any)
			idx := findKeyed(list, p.Keys)
			if idx < 0 {
				el := map[string]any{}
				for k, v := range p.Keys {
					el[k] = v
				}
				list = append(list, el)
				set(list)
				idx = len(list) - 1
			}
			l := list
			set = func(v any) { l[idx] = v }
			parent = list[idx]
		default:
			m := parent.(map[string]any)
			if last {
				m[p.Field] = e.Value
				return true, nil
			}
			next, ok := m[p.Field]
			if !ok || next == nil {
				if e.Path[i+1].Keys != nil {
					next = []any{}
				} else {
					next = map[string]any{}
				}
				m[p.Field] = next
			}
			f := p.Field
			set = func(v any) { m[f] = v }
			parent = next
		}
	}
	return true, nil
}

// check walks the path without changing anything and fails on a shape conflict.
func (e Edit) check(obj map[string]any) error {
	var cur any = obj
	for i, p := range e.Path {
		if cur == nil {
			return nil // created from here on
		}
		prefix := Edit{Path: e.Path[:i+1]}.String()
		switch {
		case p.Keys != nil:
			list, ok := cur.([]any)
			if !ok {
				return fmt.Errorf("%s: want a list, found %T", prefix, cur)
			}
			idx := findKeyed(list, p.Keys)
			if idx < 0 {
				return nil
			}
			cur = list[idx]
		default:
			m, ok := cur.(map[string]any)
			if !ok {
				return fmt.Errorf("%s: want an object, found %T", prefix, cur)
			}
			cur = m[p.Field]
		}
	}
	return nil
}

// findKeyed returns the index of the first list element whose fields equal keys, or -1.
func findKeyed(list []any, keys map[string]any) int {
	for i, el := range list {
		m, ok := el.(map[string]any)
		if !ok {
			continue
		}
		match := true
		for k, v := range keys {
			if !equalJSON(m[k], v) {
				match = false
				break
			}
		}
		if match {
			return i
		}
	}
	return -1
}

// equalJSON compares decoded JSON values, treating all numbers as numbers (an int64 port in a
// Go literal equals the float64 or int64 the decoder produced).
func equalJSON(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	}
	return 0, false
}
