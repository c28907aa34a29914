// Package jsonstr is for the manifest reader's fast YAML path, which writes JSON by hand: it
// quotes a string exactly as encoding/json does with HTML escaping off, so output written by
// hand is byte-for-byte what encoding/json would write. The standard library has no exported
// quoter (encoding/json/jsontext is not in this Go). The CLI's JSON report is written by
// github.com/go-json-experiment/json instead.
package jsonstr

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// Append appends s, quoted as a JSON string, to b: control characters, quote and backslash
// escaped as encoding/json escapes them, invalid UTF-8 as U+FFFD, and U+2028/U+2029 escaped.
func Append[S ~string | ~[]byte](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		// At most utf8.UTFMax bytes: the conversion stays on the stack.
		end := min(i+utf8.UTFMax, len(s))
		r, size := utf8.DecodeRuneInString(string(s[i:end]))
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
