package manifest

import (
	"bytes"
)

// document is one YAML or JSON document of a file: a slice of the file's bytes (no copy) and the
// 1-based line it starts on.
type document struct {
	data []byte
	line int
	// err is set when the separator that opened the document was malformed.
	err *Error
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// splitDocuments splits a YAML stream at "---" lines the way kubectl does: a separator is a
// line starting with "---" followed only by blanks or a comment; "..." ends a document. JSON
// input is one document. Documents holding only blanks and comments are dropped. Line endings
// may be LF or CRLF.
func splitDocuments(name string, data []byte) []document {
	data = bytes.TrimPrefix(data, utf8BOM)
	var docs []document
	start, startLine := 0, 1
	var pending *Error
	flush := func(end int) {
		if d := data[start:end]; !blank(d) {
			// Start at the first line with content, so that the document's line is the
			// object's, not that of a comment above it.
			for {
				i := bytes.IndexByte(d, '\n')
				if i < 0 || !blank(d[:i]) {
					break
				}
				d = d[i+1:]
				startLine++
			}
			docs = append(docs, document{data: d, line: startLine, err: pending})
		} else if pending != nil {
			docs = append(docs, document{data: nil, line: startLine, err: pending})
		}
		pending = nil
	}
	line := 0
	for off := 0; off < len(data); {
		line++
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			end += off
			next = end + 1
		} else {
			end = len(data)
		}
		l := bytes.TrimRight(data[off:end], "\r")
		switch {
		case bytes.HasPrefix(l, []byte("---")):
			rest := bytes.TrimSpace(l[3:])
			flush(off)
			if len(rest) > 0 && rest[0] != '#' {
				pending = &Error{Source: Source{Name: name, Line: line},
					Err: errorString("invalid document separator: only a comment may follow \"---\" on its line")}
			}
			start, startLine = next, line+1
		case len(l) == 3 && string(l) == "...":
			flush(off)
			start, startLine = next, line+1
		}
		off = next
	}
	flush(len(data))
	return docs
}

// blank reports whether b holds only whitespace and comment lines.
func blank(b []byte) bool {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		var l []byte
		if i < 0 {
			l, b = b, nil
		} else {
			l, b = b[:i], b[i+1:]
		}
		l = bytes.TrimSpace(l)
		if len(l) > 0 && l[0] != '#' {
			return false
		}
	}
	return true
}

type errorString string

func (e errorString) Error() string { return string(e) }
