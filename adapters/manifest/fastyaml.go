package manifest

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/loopguard/loopguard/internal/jsonstr"
)

// fastYAMLToJSON converts the plain subset of YAML that Kubernetes manifests are written in
// (block mappings and sequences, plain and quoted one-line scalars, one-line flow collections,
// literal block scalars, comments) to JSON, about ten times faster than the general parser,
// which dominates the cost of reading large inputs. It returns ok=false for anything outside
// that subset (anchors, tags, folded or multi-line scalars, tabs, duplicate keys, scalars whose
// YAML 1.1 type is not obvious such as 0755 or 1.5, and every error), and the caller then uses
// the general parser, so the subset only has to be right, never complete. A differential fuzz
// test (FuzzFastYAML) holds it to the general parser's output.
func fastYAMLToJSON(data []byte) (out []byte, ok bool) {
	var p fastParser
	return p.convert(data)
}

// convert is fastYAMLToJSON reusing the parser's buffers: the JSON it returns is valid until
// the next call.
func (p *fastParser) convert(data []byte) (out []byte, ok bool) {
	if !plainText(data) {
		return nil, false
	}
	p.lines = p.lines[:0]
	p.keys = p.keys[:0]
	p.i, p.col = 0, 0
	p.out = p.out[:0]
	p.finalBreak = len(data) > 0 && data[len(data)-1] == '\n'
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		var l []byte
		if i < 0 {
			l, data = data, nil
		} else {
			l, data = data[:i], data[i+1:]
		}
		p.lines = append(p.lines, bytes.TrimSuffix(l, []byte("\r")))
	}
	ind := p.advance(0)
	if ind < 0 || !p.mapping(ind) {
		return nil, false
	}
	if p.i < len(p.lines) {
		// Content after the top-level mapping: an error for the general parser to explain.
		return nil, false
	}
	return p.out, true
}

// fastParser reads line by line. Every reader starts on its first content line and returns
// positioned on the first content line it did not consume (or past the end).
type fastParser struct {
	lines [][]byte
	// i is the current line; col the column where its unread content starts (past "- " for
	// a compact sequence item).
	i, col int
	out    []byte
	// finalBreak: the last line ends with a line break (a literal scalar keeps it).
	finalBreak bool
	keys       [][]byte
}

const (
	atEnd = -1
	// badLine marks a line the subset does not cover (a tab in its indentation).
	badLine = -2
)

// advance moves to the first content line (not blank, not only a comment) at or after line j
// and returns its indentation, atEnd or badLine.
func (p *fastParser) advance(j int) int {
	for p.i = j; p.i < len(p.lines); p.i++ {
		l := p.lines[p.i]
		n := 0
		for n < len(l) && l[n] == ' ' {
			n++
		}
		if n == len(l) || l[n] == '#' {
			continue
		}
		if bytes.IndexByte(l, '\t') >= 0 {
			return badLine
		}
		p.col = n
		return n
	}
	p.col = 0
	return atEnd
}

// indentHere is the indentation of the current line, atEnd past the last one.
func (p *fastParser) indentHere() int {
	if p.i >= len(p.lines) {
		return atEnd
	}
	l := p.lines[p.i]
	n := 0
	for n < len(l) && l[n] == ' ' {
		n++
	}
	return n
}

func (p *fastParser) text() []byte { return p.lines[p.i][p.col:] }

func isSeqItem(t []byte) bool { return len(t) > 0 && t[0] == '-' && (len(t) == 1 || t[1] == ' ') }

// manyKeys is how many keys of one mapping are checked for duplicates by a scan before a set
// takes over.
const manyKeys = 32

// mapping reads a block mapping whose keys sit at column ind.
func (p *fastParser) mapping(ind int) bool {
	p.out = append(p.out, '{')
	// This mapping's keys sit on a stack shared by all mappings, for the duplicate check.
	base := len(p.keys)
	defer func() { p.keys = p.keys[:base] }()
	// A mapping with many keys (a hostile or generated document) checks them in a set:
	// scanning the stack for each key would take time quadratic in their number.
	var seen map[string]struct{}
	for first := true; ; first = false {
		key, rest, ok := splitKey(p.text())
		if !ok {
			return false
		}
		if seen != nil {
			if _, dup := seen[string(key)]; dup {
				return false
			}
			seen[string(key)] = struct{}{}
		} else {
			for _, k := range p.keys[base:] {
				if bytes.Equal(k, key) {
					return false
				}
			}
			if len(p.keys)-base == manyKeys {
				seen = make(map[string]struct{}, 4*manyKeys)
				for _, k := range p.keys[base:] {
					seen[string(k)] = struct{}{}
				}
				seen[string(key)] = struct{}{}
			}
		}
		p.keys = append(p.keys, key)
		if !first {
			p.out = append(p.out, ',')
		}
		p.out = jsonstr.Append(p.out, key)
		p.out = append(p.out, ':')
		if !p.value(ind, rest, true) {
			return false
		}
		switch n := p.indentHere(); {
		case n == badLine:
			return false
		case n < ind:
			p.out = append(p.out, '}')
			return true
		case n > ind:
			// A continuation line (a multi-line scalar) or an error.
			return false
		}
		p.col = ind
		if isSeqItem(p.text()) {
			return false
		}
	}
}

// sequence reads a block sequence whose dashes sit at column ind.
func (p *fastParser) sequence(ind int) bool {
	p.out = append(p.out, '[')
	for first := true; ; first = false {
		t := p.text()
		if !isSeqItem(t) {
			return false
		}
		if !first {
			p.out = append(p.out, ',')
		}
		sp := 1
		for sp < len(t) && t[sp] == ' ' {
			sp++
		}
		rest := t[sp:]
		var ok bool
		switch {
		case len(rest) == 0 || rest[0] == '#':
			ok = p.value(ind, rest, false)
		case isSeqItem(rest):
			p.col += sp
			ok = p.sequence(p.col)
		default:
			if _, _, isKey := splitKey(rest); isKey {
				p.col += sp
				ok = p.mapping(p.col)
			} else {
				ok = p.value(ind, rest, false)
			}
		}
		if !ok {
			return false
		}
		n := p.indentHere()
		switch {
		case n == badLine:
			return false
		case n == ind:
			p.col = ind
			if isSeqItem(p.text()) {
				continue
			}
			// A sequence at its parent key's indentation ends at the next key.
			fallthrough
		case n < ind:
			p.out = append(p.out, ']')
			return true
		default:
			return false
		}
	}
}

// value reads the value after "key:" or "- " (rest is the text after the indicator) for a
// node whose key or dash sits at column ind. A value on a later line must be more indented,
// except that a mapping's value may be a sequence at the key's own indentation.
func (p *fastParser) value(ind int, rest []byte, inMapping bool) bool {
	if len(rest) == 0 || rest[0] == '#' {
		n := p.advance(p.i + 1)
		if n == badLine {
			return false
		}
		if n == atEnd {
			p.out = append(p.out, "null"...)
			return true
		}
		t := p.text()
		switch {
		case n > ind && isSeqItem(t), n == ind && inMapping && isSeqItem(t):
			return p.sequence(n)
		case n > ind:
			if _, _, isKey := splitKey(t); !isKey {
				// A scalar on its own line (or a multi-line one): left to the general parser.
				return false
			}
			return p.mapping(n)
		}
		p.out = append(p.out, "null"...)
		return true
	}
	switch rest[0] {
	case '|':
		return p.literal(ind, rest)
	case '[', '{':
		var ok bool
		var tail []byte
		p.out, tail, ok = appendFlow(p.out, rest, 0)
		if !ok || !blankOrComment(tail) {
			return false
		}
	case '"', '\'':
		s, tail, ok := quoted(rest)
		if !ok || !blankOrComment(tail) {
			return false
		}
		p.out = jsonstr.Append(p.out, s)
	default:
		v := plainValue(rest)
		if v == nil {
			return false
		}
		var ok bool
		if p.out, ok = appendPlain(p.out, v); !ok {
			return false
		}
	}
	return p.advance(p.i+1) != badLine
}

// literal reads a "|" or "|-" block scalar whose parent sits at column ind.
func (p *fastParser) literal(ind int, rest []byte) bool {
	strip := false
	h := rest[1:]
	if len(h) > 0 && h[0] == '-' {
		strip = true
		h = h[1:]
	}
	if !blankOrComment(h) || (len(h) > 0 && h[0] != ' ' && h[0] != '#') {
		return false
	}
	var body []byte
	start := p.i + 1
	n := -1 // content indentation, from the first non-blank line
	last := p.i
	for j := start; j < len(p.lines); j++ {
		l := p.lines[j]
		sp := 0
		for sp < len(l) && l[sp] == ' ' {
			sp++
		}
		if sp == len(l) {
			// A blank line: part of the scalar if more content follows.
			if n >= 0 && sp > n {
				return false
			}
			if n < 0 && sp > 0 {
				return false
			}
			continue
		}
		if n < 0 {
			if sp <= ind {
				break
			}
			n = sp
		}
		if sp < n {
			if sp > ind {
				return false
			}
			break
		}
		if l[sp] == '\t' && sp == n {
			// Tabs inside content are fine, but keep the rule simple.
			return false
		}
		for k := last + 1; k < j; k++ {
			body = append(body, '\n')
		}
		if last >= start {
			body = append(body, '\n')
		}
		body = append(body, l[n:]...)
		last = j
	}
	if last >= start && !strip && (last < len(p.lines)-1 || p.finalBreak) {
		body = append(body, '\n')
	}
	p.out = jsonstr.Append(p.out, body)
	return p.advance(last+1) != badLine
}

func blankOrComment(b []byte) bool {
	b = bytes.TrimLeft(b, " ")
	return len(b) == 0 || b[0] == '#'
}

// splitKey splits "key: rest" or "key:" at the first ": ". Only plain keys that YAML reads as
// strings, and double- or single-quoted keys, are accepted.
func splitKey(t []byte) (key, rest []byte, ok bool) {
	if len(t) == 0 {
		return nil, nil, false
	}

	if t[0] == '"' || t[0] == '\'' {
		k, tail, ok := quoted(t)
		if !ok || len(t)-len(tail) > maxKey || len(tail) == 0 || tail[0] != ':' || (len(tail) > 1 && tail[1] != ' ') {
			return nil, nil, false
		}
		return k, bytes.TrimLeft(tail[1:], " "), true
	}
	if !plainStart(t[0]) {
		return nil, nil, false
	}
	for i := 0; i < len(t) && i <= maxKey; i++ {
		switch t[i] {
		case ':':
			if i+1 == len(t) || t[i+1] == ' ' {
				k := bytes.TrimRight(t[:i], " ")
				if len(k) == 0 || !stringy(k) {
					return nil, nil, false
				}
				return k, bytes.TrimLeft(t[i+1:], " "), true
			}
		case '#':
			if i > 0 && t[i-1] == ' ' {
				return nil, nil, false
			}
		case '"', '\'', '{', '}', '[', ']', ',':
			// Legal in some plain keys, but never in the ones manifests use.
			return nil, nil, false
		}
	}
	return nil, nil, false
}

// maxKey bounds the bytes from a key's start to its colon: YAML parsers refuse implicit keys
// longer than 1024 characters; far shorter ones are left to the general parser too.
const maxKey = 512

// plainStart reports whether c can start a plain scalar this parser accepts.
func plainStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '/' || c == '$' || c == '(' || c >= 0x80
}

// stringy reports whether YAML 1.1 reads a plain scalar as a string and not as a boolean,
// null or number.
func stringy(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	c := s[0]
	switch {
	case c >= '0' && c <= '9':
		return dottedDigits(s)
	case c == '~' || c == '.' || c == '+' || c == '-':
		return false
	}
	if _, special := yaml11Scalars[string(s)]; special {
		return false
	}
	return true
}

// dottedDigits reports whether s is digits with at least two dots ("10.0.0.1"): not an int,
// float or timestamp for YAML 1.1, so a string.
func dottedDigits(s []byte) bool {
	dots := 0
	for i, c := range s {
		switch {
		case c == '.':
			if i == 0 || s[i-1] == '.' {
				return false
			}
			dots++
		case c < '0' || c > '9':
			return false
		}
	}
	return dots >= 2 && s[len(s)-1] != '.'
}

// yaml11Scalars are the plain scalars YAML 1.1 (go.yaml.in/yaml/v2) resolves to something
// other than a string, with their JSON form.
var yaml11Scalars = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"} {
		m[s] = "true"
	}
	for _, s := range []string{"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"} {
		m[s] = "false"
	}
	for _, s := range []string{"~", "null", "Null", "NULL"} {
		m[s] = "null"
	}
	// Floats that JSON cannot hold, and the merge key: left to the general parser.
	for _, s := range []string{".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", "<<"} {
		m[s] = ""
	}
	return m
}()

// plainValue returns a block plain scalar without its comment and trailing blanks, or nil
// when the scalar needs the general parser.
func plainValue(t []byte) []byte {
	end := len(t)
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '#':
			if i > 0 && t[i-1] == ' ' {
				end = i
				i = len(t)
			}
		case ':':
			if i+1 == len(t) || t[i+1] == ' ' {
				return nil
			}
		}
	}
	v := bytes.TrimRight(t[:end], " ")
	if len(v) == 0 {
		return nil
	}
	return v
}

// appendPlain writes a plain scalar as JSON: a string, true/false/null, or an integer.
func appendPlain(out, v []byte) ([]byte, bool) {
	if j, special := yaml11Scalars[string(v)]; special {
		if j == "" {
			return out, false
		}
		return append(out, j...), true
	}
	c := v[0]
	if c == '-' || c >= '0' && c <= '9' {
		if decimalInt(v) {
			return append(out, v...), true
		}
		if c != '-' && dottedDigits(v) {
			return jsonstr.Append(out, v), true
		}
		return out, false
	}
	if !plainStart(c) {
		return out, false
	}
	return jsonstr.Append(out, v), true
}

// decimalInt reports whether v is a decimal integer without leading zeros that fits an int64.
func decimalInt(v []byte) bool {
	d := v
	if d[0] == '-' {
		d = d[1:]
		if len(d) > 0 && d[0] == '0' {
			// -0 is 0 to YAML; not worth a special case.
			return false
		}
	}
	if len(d) == 0 || len(d) > 18 || (d[0] == '0' && len(d) > 1) {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// quoted reads a double- or single-quoted scalar that ends on the same line. Only the escapes
// JSON shares with YAML are accepted in double quotes.
func quoted(t []byte) (s, tail []byte, ok bool) {
	q := t[0]
	var b []byte
	for i := 1; i < len(t); i++ {
		c := t[i]
		switch {
		case c == q && q == '\'':
			if i+1 < len(t) && t[i+1] == '\'' {
				b = append(b, '\'')
				i++
				continue
			}
			return b, t[i+1:], true
		case c == q:
			return b, t[i+1:], true
		case c == '\\' && q == '"':
			if i+1 >= len(t) {
				return nil, nil, false
			}
			i++
			switch t[i] {
			case '"', '\\':
				b = append(b, t[i])
			case 'n':
				b = append(b, '\n')
			case 't':
				b = append(b, '\t')
			case 'r':
				b = append(b, '\r')
			case 'u':
				if i+4 >= len(t) {
					return nil, nil, false
				}
				r, err := strconv.ParseUint(string(t[i+1:i+5]), 16, 16)
				if err != nil || (r >= 0xD800 && r <= 0xDFFF) {
					return nil, nil, false
				}
				b = utf8.AppendRune(b, rune(r))
				i += 4
			default:
				return nil, nil, false
			}
		case c < 0x20 && c != '\t':
			return nil, nil, false
		default:
			b = append(b, c)
		}
	}
	return nil, nil, false
}

// appendFlow reads a one-line flow sequence or mapping and writes it as JSON.
func appendFlow(out, t []byte, depth int) ([]byte, []byte, bool) {
	if depth > 20 {
		return out, nil, false
	}
	open := t[0]
	closer := byte(']')
	if open == '{' {
		closer = '}'
	}
	out = append(out, open)
	t = bytes.TrimLeft(t[1:], " ")
	if len(t) > 0 && t[0] == closer {
		return append(out, closer), t[1:], true
	}
	var keys [][]byte
	for first := true; ; first = false {
		if !first {
			out = append(out, ',')
		}
		if open == '{' {
			var key []byte
			switch {
			case len(t) == 0:
				return out, nil, false
			case t[0] == '"' || t[0] == '\'':
				k, tail, ok := quoted(t)
				if !ok || len(t)-len(tail) > maxKey {
					return out, nil, false
				}
				key, t = k, bytes.TrimLeft(tail, " ")
				if len(t) == 0 || t[0] != ':' {
					return out, nil, false
				}
				t = t[1:]
			default:
				i := bytes.Index(t, []byte(": "))
				if i <= 0 || i > maxKey {
					return out, nil, false
				}
				key = bytes.TrimRight(t[:i], " ")
				// In a flow collection '?' ends a plain scalar as ',' and the brackets do (the
				// general parser's scanner, yaml_parser_scan_plain_scalar): left to it.
				if !plainStart(key[0]) || !stringy(key) || bytes.ContainsAny(key, ",[]{}#\"'?") {
					return out, nil, false
				}
				t = t[i+1:]
			}
			for _, k := range keys {
				if bytes.Equal(k, key) {
					return out, nil, false
				}
			}
			keys = append(keys, key)
			out = jsonstr.Append(out, key)
			out = append(out, ':')
			t = bytes.TrimLeft(t, " ")
		}
		if len(t) == 0 {
			return out, nil, false
		}
		switch t[0] {
		case '[', '{':
			var ok bool
			out, t, ok = appendFlow(out, t, depth+1)
			if !ok {
				return out, nil, false
			}
		case '"', '\'':
			s, tail, ok := quoted(t)
			if !ok {
				return out, nil, false
			}
			out = jsonstr.Append(out, s)
			t = tail
		default:
			i := bytes.IndexAny(t, ",]}")
			if i < 0 {
				return out, nil, false
			}
			v := bytes.TrimRight(t[:i], " ")
			if len(v) == 0 || bytes.ContainsAny(v, "#:[{\"'?") {
				return out, nil, false
			}
			var ok bool
			out, ok = appendPlain(out, v)
			if !ok {
				return out, nil, false
			}
			t = t[i:]
		}
		t = bytes.TrimLeft(t, " ")
		if len(t) == 0 {
			return out, nil, false
		}
		switch t[0] {
		case ',':
			t = bytes.TrimLeft(t[1:], " ")
			if len(t) > 0 && t[0] == closer {
				// A trailing comma: left to the general parser.
				return out, nil, false
			}
		case closer:
			return append(out, closer), t[1:], true
		default:
			return out, nil, false
		}
	}
}

// plainText reports whether data is UTF-8 made of characters YAML prints as they are, with
// LF or CRLF line breaks: no control characters, no byte order mark inside, and none of the
// Unicode line breaks (NEL, LS, PS) that YAML 1.1 counts as new lines.
func plainText(data []byte) bool {
	for i := 0; i < len(data); {
		c := data[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\r':
				if i+1 >= len(data) || data[i+1] != '\n' {
					return false
				}
			case c < 0x20 && c != '\t' && c != '\n', c == 0x7F:
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size == 1,
			r <= 0x9F, r == 0x2028, r == 0x2029, r == 0xFEFF, r == 0xFFFE, r == 0xFFFF:
			return false
		}
		i += size
	}
	return true
}
