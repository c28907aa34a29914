package manifest

import (
	"bytes"
	stdjson "encoding/json"
	"regexp"
	"strconv"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"

	"github.com/loopguard/loopguard/core"
)

// fieldLine returns the 1-based line, within doc, of the field at path, or of the deepest part
// of the path that exists; 0 when doc does not parse. path is a Kubernetes field path as
// field.Path and the strict JSON decoder print them: "spec.ports[0].protocol",
// "metadata.annotations[service.cloud.tencent.com/prevent-loopback]", or with map keys joined by
// dots ("metadata.annotations.example.com/x"); a key containing dots is matched whole.
//
// It parses the document again, with a YAML library that keeps positions, only when an error
// needs a line: the fast decoding path never pays for it.
func fieldLine(doc []byte, path string) int {
	var root yaml3.Node
	if err := yaml3.Unmarshal(doc, &root); err != nil {
		return 0
	}
	n := &root
	if n.Kind == yaml3.DocumentNode {
		if len(n.Content) == 0 {
			return 0
		}
		n = n.Content[0]
	}
	line := n.Line
	rest := path
	for depth := 0; rest != "" && depth < 1000; depth++ {
		for n.Kind == yaml3.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		switch rest[0] {
		case '.':
			rest = rest[1:]
			continue
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return line
			}
			tok := rest[1:end]
			rest = rest[end+1:]
			switch n.Kind {
			case yaml3.SequenceNode:
				i, err := strconv.Atoi(tok)
				if err != nil || i < 0 || i >= len(n.Content) {
					return line
				}
				n = n.Content[i]
				line = n.Line
			case yaml3.MappingNode:
				k := mapKey(n, tok)
				if k < 0 {
					return line
				}
				line = n.Content[k].Line
				n = n.Content[k+1]
			default:
				return line
			}
		default:
			if n.Kind != yaml3.MappingNode {
				return line
			}
			// The longest key that the path continues with: keys may hold dots.
			best, bestLen := -1, -1
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				if len(k) > bestLen && strings.HasPrefix(rest, k) &&
					(len(rest) == len(k) || rest[len(k)] == '.' || rest[len(k)] == '[') {
					best, bestLen = i, len(k)
				}
			}
			if best < 0 {
				return line
			}
			line = n.Content[best].Line
			n = n.Content[best+1]
			rest = rest[bestLen:]
		}
	}
	return line
}

func mapKey(n *yaml3.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return i
		}
	}
	return -1
}

// itemLines returns the 1-based line, within doc, of each item of a List document, n items
// expected. JSON and the block-style YAML kubectl prints are scanned line by line, in one pass;
// anything else (flow style, a scan that finds another count) is parsed with a YAML library
// that keeps positions. The scan matters: a List of 10,000 items located item by item from
// the document's start took quadratic time.
func itemLines(doc []byte, n int) []int {
	if _, lines, ok := jsonItems(doc); ok && len(lines) == n {
		return lines
	}
	if lines, ok := yamlItemLines(doc); ok && len(lines) == n {
		return lines
	}
	var root yaml3.Node
	if err := yaml3.Unmarshal(doc, &root); err != nil || len(root.Content) == 0 {
		return nil
	}
	m := root.Content[0]
	if m.Kind != yaml3.MappingNode {
		return nil
	}
	k := mapKey(m, "items")
	if k < 0 || m.Content[k+1].Kind != yaml3.SequenceNode {
		return nil
	}
	var out []int
	for _, it := range m.Content[k+1].Content {
		out = append(out, it.Line)
	}
	return out
}

// jsonItems finds the items of a JSON object's top-level "items" array: each as a slice of doc
// (no copy) and the line it starts on, with the List's own apiVersion, kind and metadata. ok
// is false when doc is not such a JSON object, or one this scan cannot read (escaped or
// case-folded keys, a value that is not valid JSON): the caller then decodes it in full.
func jsonItems(doc []byte) ([][]byte, []int, bool) {
	items, lines, _, ok := scanJSONList(doc)
	return items, lines, ok
}

func scanJSONList(doc []byte) (items [][]byte, lines []int, tm typeMeta, ok bool) {
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return nil, nil, tm, false
	}
	line, counted := 1, 0
	lineAt := func(pos int) int {
		line += bytes.Count(doc[counted:pos], []byte("\n"))
		counted = pos
		return line
	}
	found := false
	i++
	for first := true; ; first = false {
		i = skipSpace(doc, i)
		if i >= len(doc) {
			return nil, nil, tm, false
		}
		if doc[i] == '}' {
			if skipSpace(doc, i+1) != len(doc) {
				return nil, nil, tm, false
			}
			return items, lines, tm, found
		}
		if !first {
			if doc[i] != ',' {
				return nil, nil, tm, false
			}
			i = skipSpace(doc, i+1)
		}
		key, next, ok := plainString(doc, i)
		if !ok || foldsTo(key, "apiVersion", "kind", "items", "metadata") {
			return nil, nil, tm, false
		}
		i = skipSpace(doc, next)
		if i >= len(doc) || doc[i] != ':' {
			return nil, nil, tm, false
		}
		i = skipSpace(doc, i+1)
		if string(key) != "items" {
			j := skipValue(doc, i)
			if j < 0 || !stdjson.Valid(doc[i:j]) {
				return nil, nil, tm, false
			}
			switch string(key) {
			case "apiVersion", "kind":
				v, _, ok := plainString(doc, i)
				if !ok {
					return nil, nil, tm, false
				}
				if key[0] == 'a' {
					tm.APIVersion = string(v)
				} else {
					tm.Kind = string(v)
				}
			case "metadata":
				if doc[i] != '{' {
					return nil, nil, tm, false
				}
				if _, ok := peekMetadata(doc, i, &tm); !ok {
					return nil, nil, tm, false
				}
			}
			i = j
			continue
		}
		if found || i >= len(doc) || doc[i] != '[' {
			return nil, nil, tm, false
		}
		found = true
		items = [][]byte{}
		i++
		for firstItem := true; ; firstItem = false {
			i = skipSpace(doc, i)
			if i >= len(doc) {
				return nil, nil, tm, false
			}
			if doc[i] == ']' {
				i++
				break
			}
			if !firstItem {
				if doc[i] != ',' {
					return nil, nil, tm, false
				}
				i = skipSpace(doc, i+1)
			}
			lines = append(lines, lineAt(i))
			j := skipValue(doc, i)
			if j < 0 {
				return nil, nil, tm, false
			}
			items = append(items, doc[i:j])
			i = j
		}
	}
}

// yamlItemLines finds the items of a block-style top-level "items:" sequence by indentation:
// an item starts at a line whose first character, at the sequence's column, is "-". Lines
// inside an item are indented further, block scalars and continued flow scalars included.
func yamlItemLines(doc []byte) ([]int, bool) {
	var out []int
	inItems, col := false, -1
	line := 0
	for off := 0; off < len(doc); {
		line++
		end := bytes.IndexByte(doc[off:], '\n')
		next := len(doc)
		if end >= 0 {
			end += off
			next = end + 1
		} else {
			end = len(doc)
		}
		l := bytes.TrimRight(doc[off:end], "\r")
		off = next
		content := bytes.TrimLeft(l, " ")
		indent := len(l) - len(content)
		if len(content) == 0 || content[0] == '#' {
			continue
		}
		if !inItems {
			if indent == 0 && bytes.HasPrefix(content, []byte("items:")) {
				rest := bytes.TrimSpace(content[len("items:"):])
				if len(rest) > 0 && rest[0] != '#' {
					return nil, false // flow style or a scalar: not for this scan
				}
				inItems = true
			}
			continue
		}
		isItem := content[0] == '-' && (len(content) == 1 || content[1] == ' ')
		if col < 0 {
			if !isItem {
				return nil, false
			}
			col = indent
		}
		switch {
		case indent < col || (indent == col && !isItem):
			return out, true
		case indent == col:
			out = append(out, line)
		}
	}
	return out, inItems
}

// yamlLineRE finds "line N: " in a YAML parser's message; N counts from the document's start.
var yamlLineRE = regexp.MustCompile(`line (\d+): `)

// yamlError turns a YAML parser's message into the file line of its first problem and a message
// without the parser's prefixes, with any further "line N" made absolute too. base is the file
// line the document starts on.
func yamlError(msg string, base int, doc []byte) (int, string) {
	last := lastLine(base, doc)
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n")
	first := 0
	msg = yamlLineRE.ReplaceAllStringFunc(msg, func(m string) string {
		n, _ := strconv.Atoi(m[len("line ") : len(m)-2])
		if first == 0 {
			first = base + n - 1
			return ""
		}
		return "line " + strconv.Itoa(base+n-1) + ": "
	})
	// Several errors come one per line; keep them on one line.
	msg = strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", "; ")), " ")
	if first == 0 {
		first = base
	}
	// A parser that ran off the end of the document reports the line after it.
	if first > last && last >= base {
		first = last
	}
	return first, msg
}

// yaml11Bool lists the plain scalars YAML 1.1 (which Kubernetes' YAML reader follows) reads
// as booleans, though YAML 1.2 reads them as strings.
var yaml11Bool = map[string]bool{"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "n": true, "N": true,
	"no": true, "No": true, "NO": true, "on": true, "On": true, "ON": true, "off": true, "Off": true, "OFF": true}

// nonStringChild finds, under the mapping or list at path, the first unquoted value that is
// not a string (true, 1.2, yes), for a "want a string" error the JSON decoder could only pin
// to the mapping ("metadata.annotations"). It returns the child's path suffix ("[key]" or
// "[3]") or "".
func nonStringChild(doc []byte, path string) string {
	var root yaml3.Node
	if err := yaml3.Unmarshal(doc, &root); err != nil || len(root.Content) == 0 {
		return ""
	}
	n := nodeAt(root.Content[0], path)
	if n == nil {
		return ""
	}
	bad := func(v *yaml3.Node) bool {
		if v.Kind != yaml3.ScalarNode || v.Style&(yaml3.DoubleQuotedStyle|yaml3.SingleQuotedStyle|yaml3.LiteralStyle|yaml3.FoldedStyle) != 0 {
			return v.Kind != yaml3.ScalarNode
		}
		return v.Tag != "!!str" || yaml11Bool[v.Value]
	}
	switch n.Kind {
	case yaml3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if bad(n.Content[i+1]) {
				return "[" + n.Content[i].Value + "]"
			}
		}
	case yaml3.SequenceNode:
		for i, v := range n.Content {
			if bad(v) {
				return "[" + strconv.Itoa(i) + "]"
			}
		}
	}
	return ""
}

// nodeAt follows a dotted path of plain keys (as the JSON decoder reports type errors).
func nodeAt(n *yaml3.Node, path string) *yaml3.Node {
	rest := path
	for rest != "" {
		for n.Kind == yaml3.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if rest[0] == '.' {
			rest = rest[1:]
			continue
		}
		if n.Kind != yaml3.MappingNode {
			return nil
		}
		best, bestLen := -1, -1
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if len(k) > bestLen && strings.HasPrefix(rest, k) && (len(rest) == len(k) || rest[len(k)] == '.') {
				best, bestLen = i, len(k)
			}
		}
		if best < 0 {
			return nil
		}
		n = n.Content[best+1]
		rest = rest[bestLen:]
	}
	return n
}

// lastLine is the file line of a document's last line, counting LF line breaks as this
// package does. YAML also breaks lines at a lone CR, so a YAML parser's line can lie beyond it;
// callers clamp to it.
func lastLine(base int, doc []byte) int {
	last := base + bytes.Count(doc, []byte("\n")) - 1
	if len(doc) > 0 && doc[len(doc)-1] != '\n' {
		last++
	}
	return last
}

// fileLine converts a 1-based line within doc to a file line, clamped to the document.
func fileLine(base int, doc []byte, rel int) int {
	l := base + rel - 1
	if last := lastLine(base, doc); l > last && last >= base {
		l = last
	}
	return l
}

var (
	guessKindRE = regexp.MustCompile(`(?m)^kind:[ \t]*["']?([A-Za-z][A-Za-z0-9]*)`)
	guessMetaRE = regexp.MustCompile(`(?m)^metadata:`)
	guessNameRE = regexp.MustCompile(`(?:^|[\s{,])name:[ \t]*["']?([a-z0-9][-a-z0-9.]*)`)
	guessNSRE   = regexp.MustCompile(`(?:^|[\s{,])namespace:[ \t]*["']?([a-z0-9][-a-z0-9]*)`)
)

// guessObject names the object of a document the YAML parser refused, from its top-level
// kind and the name and namespace right under metadata, so that the error still says which
// object is broken. It returns "" when the text does not show them.
func guessObject(doc []byte) string {
	k := guessKindRE.FindSubmatch(doc)
	if k == nil {
		return ""
	}
	kind := string(k[1])
	loc := guessMetaRE.FindIndex(doc)
	if loc == nil {
		return kind
	}
	// The metadata block: from "metadata:" to the next top-level key.
	meta := doc[loc[1]:]
	for i := 0; i < len(meta); i++ {
		if meta[i] == '\n' && i+1 < len(meta) && meta[i+1] != ' ' && meta[i+1] != '#' && meta[i+1] != '\n' && meta[i+1] != '\r' {
			meta = meta[:i]
			break
		}
	}
	n := guessNameRE.FindSubmatch(meta)
	if n == nil {
		return kind
	}
	ns := ""
	if m := guessNSRE.FindSubmatch(meta); m != nil {
		ns = string(m[1])
	} else if !clusterScoped[kind] {
		ns = DefaultNamespace
	}
	return core.ObjectRef{Kind: kind, Namespace: ns, Name: string(n[1])}.String()
}
