package main

import (
	"io"
	"math"
	"strconv"

	"github.com/loopguard/loopguard/internal/jsonstr"
)

// The JSON report is written by hand, result by result, because encoding/json builds the
// whole document in one buffer and then re-scans it to indent: for 10,000 Services (55 MB)
// that was more than half of assess's run time. The output is byte for byte what
// json.Encoder with SetIndent("", "  ") and SetEscapeHTML(false) writes for the same Report
// (TestFastJSONMatchesEncodingJSON), so the structs' tags stay the one definition of the
// contract.

// jw writes indented JSON to a buffer that is flushed to w as it fills. Only field and item
// write separators and line breaks; the value writers after them write the bare value.
type jw struct {
	w   io.Writer
	buf []byte
	err error
	// empty[i] says whether the container at depth i+1 has no member yet.
	empty []bool
}

func newJW(w io.Writer) *jw { return &jw{w: w, buf: make([]byte, 0, 64*1024)} }

func (j *jw) flush() error {
	if j.err == nil && len(j.buf) > 0 {
		_, j.err = j.w.Write(j.buf)
	}
	j.buf = j.buf[:0]
	return j.err
}

func (j *jw) newline() {
	j.buf = append(j.buf, '\n')
	for range j.empty {
		j.buf = append(j.buf, ' ', ' ')
	}
}

func (j *jw) sep() {
	n := len(j.empty) - 1
	if !j.empty[n] {
		j.buf = append(j.buf, ',')
	}
	j.empty[n] = false
	j.newline()
}

// field starts an object member; the value comes next.
func (j *jw) field(name string) {
	j.sep()
	j.buf = jsonstr.Append(j.buf, name)
	j.buf = append(j.buf, ':', ' ')
}

// item starts an array element; the value comes next.
func (j *jw) item() { j.sep() }

func (j *jw) begin(c byte) {
	j.buf = append(j.buf, c)
	j.empty = append(j.empty, true)
}

func (j *jw) end(c byte) {
	n := len(j.empty) - 1
	wasEmpty := j.empty[n]
	j.empty = j.empty[:n]
	if !wasEmpty {
		j.newline()
	}
	j.buf = append(j.buf, c)
	if len(j.buf) >= 48*1024 && j.w != nil {
		j.flush()
	}
}

func (j *jw) str(s string)     { j.buf = jsonstr.Append(j.buf, s) }
func (j *jw) boolean(b bool)   { j.buf = strconv.AppendBool(j.buf, b) }
func (j *jw) integer(i int)    { j.buf = strconv.AppendInt(j.buf, int64(i), 10) }
func (j *jw) null()            { j.buf = append(j.buf, "null"...) }
func (j *jw) number(f float64) { j.buf = appendFloat(j.buf, f) }

// Helpers for the report's shapes.

func (j *jw) strField(name, v string) { j.field(name); j.str(v) }

func (j *jw) strFieldOmitEmpty(name, v string) {
	if v != "" {
		j.strField(name, v)
	}
}

func (j *jw) boolField(name string, v bool) { j.field(name); j.boolean(v) }

func (j *jw) strPtrField(name string, v *string) {
	j.field(name)
	if v == nil {
		j.null()
		return
	}
	j.str(*v)
}

func (j *jw) floatPtrField(name string, v *float64) {
	j.field(name)
	if v == nil {
		j.null()
		return
	}
	j.number(*v)
}

// strings writes a list of strings; nil is null, as encoding/json writes it.
func (j *jw) strings(v []string) {
	if v == nil {
		j.null()
		return
	}
	j.begin('[')
	for _, s := range v {
		j.item()
		j.str(s)
	}
	j.end(']')
}

func appendFloat(b []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		// encoding/json refuses these; probabilities are never infinite.
		return append(b, "null"...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
