package manifest

import (
	"bytes"
	"unicode/utf8"
)

// peekTypeMeta reads apiVersion, kind, metadata.name and metadata.namespace from a JSON object
// without decoding the rest: routing a document needs only these, and a full decode of every
// document just to route it cost a fifth of the reading time. It returns ok=false when a value
// it needs is not a plain string (escapes, wrong type) or items is present, and the caller
// then uses encoding/json. js must be valid JSON (every producer here guarantees it).
func peekTypeMeta(js []byte) (tm typeMeta, ok bool) {
	i := skipSpace(js, 0)
	if i >= len(js) || js[i] != '{' {
		return tm, false
	}
	i++
	for {
		i = skipSpace(js, i)
		if i >= len(js) {
			return tm, false
		}
		if js[i] == '}' {
			return tm, true
		}
		if js[i] == ',' {
			i++
			continue
		}
		key, next, ok := plainString(js, i)
		if !ok {
			return tm, false
		}
		i = skipSpace(js, next)
		if i >= len(js) || js[i] != ':' {
			return tm, false
		}
		i = skipSpace(js, i+1)
		if foldsTo(key, "apiVersion", "kind", "items", "metadata") {
			// encoding/json matches keys case-insensitively; leave such documents to it.
			return tm, false
		}
		switch string(key) {
		case "apiVersion", "kind":
			v, next, ok := plainString(js, i)
			if !ok {
				return tm, false
			}
			if key[0] == 'a' {
				tm.APIVersion = string(v)
			} else {
				tm.Kind = string(v)
			}
			i = next
			continue
		case "items":
			return tm, false
		case "metadata":
			if i < len(js) && js[i] == '{' {
				end, ok := peekMetadata(js, i, &tm)
				if !ok {
					return tm, false
				}
				i = end
				continue
			}
			return tm, false
		}
		i = skipValue(js, i)
		if i < 0 {
			return tm, false
		}
	}
}

func peekMetadata(js []byte, i int, tm *typeMeta) (int, bool) {
	i++
	for {
		i = skipSpace(js, i)
		if i >= len(js) {
			return 0, false
		}
		switch js[i] {
		case '}':
			return i + 1, true
		case ',':
			i++
			continue
		}
		key, next, ok := plainString(js, i)
		if !ok {
			return 0, false
		}
		i = skipSpace(js, next)
		if i >= len(js) || js[i] != ':' {
			return 0, false
		}
		i = skipSpace(js, i+1)
		if foldsTo(key, "name", "namespace") {
			return 0, false
		}
		switch string(key) {
		case "name", "namespace":
			v, next, ok := plainString(js, i)
			if !ok {
				return 0, false
			}
			if len(key) == 4 {
				tm.Metadata.Name = string(v)
			} else {
				tm.Metadata.Namespace = string(v)
			}
			i = next
			continue
		}
		i = skipValue(js, i)
		if i < 0 {
			return 0, false
		}
	}
}

func skipSpace(js []byte, i int) int {
	for i < len(js) && (js[i] == ' ' || js[i] == '\n' || js[i] == '\r' || js[i] == '\t') {
		i++
	}
	return i
}

// plainString reads a JSON string without escapes starting at i.
func plainString(js []byte, i int) ([]byte, int, bool) {
	if i >= len(js) || js[i] != '"' {
		return nil, 0, false
	}
	end := bytes.IndexByte(js[i+1:], '"')
	if end < 0 {
		return nil, 0, false
	}
	s := js[i+1 : i+1+end]
	if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
		return nil, 0, false
	}
	return s, i + 2 + end, true
}

// skipValue returns the index just past the JSON value starting at i, or -1.
func skipValue(js []byte, i int) int {
	if i >= len(js) {
		return -1
	}
	switch js[i] {
	case '"':
		// The next quote not escaped by an odd run of backslashes ends the string; finding
		// quotes with IndexByte keeps a scan of a large List near memory speed.
		for j := i + 1; ; {
			k := bytes.IndexByte(js[j:], '"')
			if k < 0 {
				return -1
			}
			q := j + k
			n := 0
			for b := q - 1; b > i && js[b] == '\\'; b-- {
				n++
			}
			if n%2 == 0 {
				return q + 1
			}
			j = q + 1
		}
	case '{', '[':
		depth := 0
		for j := i; j < len(js); j++ {
			switch js[j] {
			case '"':
				k := skipValue(js, j)
				if k < 0 {
					return -1
				}
				j = k - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default:
		j := i
		for j < len(js) && js[j] != ',' && js[j] != '}' && js[j] != ']' && js[j] != ' ' && js[j] != '\n' && js[j] != '\r' && js[j] != '\t' {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}

// foldsTo reports whether key equals one of names under Unicode case folding but not exactly.
func foldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if string(key) != n && bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}
