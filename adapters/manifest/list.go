package manifest

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
)

// listItem is one item of a List, cut out as a document of its own: its text (YAML or JSON)
// and the document line it starts on. Decoding and locating fields then cost what they cost
// for a document of a multi-document file, on every core, instead of a walk from the List's
// start per item.
type listItem struct {
	data []byte
	line int
	json bool
}

// splitList cuts a List document into its header (everything but the items, as JSON), its
// items and its own type. ok is false when the document is not a List this fast path understands (flow-style
// YAML, anything the scans disagree on); the caller then reads the whole document at once.
func splitList(data []byte, fp *fastParser) (header []byte, items []listItem, tm typeMeta, ok bool) {
	t := bytes.TrimLeft(data, " \t\r\n")
	if len(t) > 0 && t[0] == '{' {
		if !bytes.Contains(data, []byte(`"items"`)) {
			return nil, nil, tm, false // an object, not a List: not worth a scan
		}
		raw, lines, tm, ok := scanJSONList(data)
		if !ok {
			return nil, nil, tm, false
		}
		items = make([]listItem, len(raw))
		for i := range raw {
			items[i] = listItem{data: raw[i], line: lines[i], json: true}
		}
		return nil, items, tm, true
	}
	if !bytes.HasPrefix(data, []byte("items:")) && !bytes.Contains(data, []byte("\nitems:")) {
		return nil, nil, tm, false
	}
	var head bytes.Buffer
	inItems, col := false, -1
	line, itemStart, itemLine := 0, -1, 0
	flush := func(end int) {
		if itemStart >= 0 {
			text := append([]byte(nil), data[itemStart:end]...)
			// "- apiVersion: v1" becomes "  apiVersion: v1": a mapping indented like the
			// rest of the item, which YAML reads as the document's root.
			text[col] = ' '
			items = append(items, listItem{data: text, line: itemLine})
			itemStart = -1
		}
	}
	done := false
	for off := 0; off < len(data); {
		line++
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		l := bytes.TrimRight(data[off:next], "\r\n")
		content := bytes.TrimLeft(l, " ")
		indent := len(l) - len(content)
		blankLine := len(content) == 0 || content[0] == '#'
		wasDone := done
		switch {
		case done || (!inItems && !blankLine && !(indent == 0 && bytes.HasPrefix(content, []byte("items:")))):
			head.Write(data[off:next])
		case !inItems && blankLine:
			head.Write(data[off:next])
		case !inItems:
			rest := bytes.TrimSpace(content[len("items:"):])
			if len(rest) > 0 && rest[0] != '#' {
				return nil, nil, tm, false
			}
			inItems = true
		case blankLine:
			// belongs to the item it is in (or lies between items)
		default:
			isItem := content[0] == '-' && (len(content) == 1 || content[1] == ' ')
			if col < 0 {
				if !isItem {
					return nil, nil, tm, false
				}
				col = indent
			}
			switch {
			case indent < col || (indent == col && !isItem):
				flush(off)
				done = true
				head.Write(data[off:next])
			case indent == col:
				flush(off)
				itemStart, itemLine = off, line
			}
		}
		if (wasDone || done) && indent == 0 && bytes.HasPrefix(content, []byte("items:")) {
			return nil, nil, tm, false // a second items key: the strict reader reports it
		}
		off = next
	}
	if !inItems {
		return nil, nil, tm, false
	}
	flush(len(data))
	js, err := toJSON(head.Bytes(), fp)
	if err != nil || len(js) == 0 || js[0] != '{' {
		return nil, nil, tm, false
	}
	var lite typeMetaLite
	if err := stdjson.Unmarshal(js, &lite); err != nil {
		return nil, nil, tm, false
	}
	tm = typeMeta{APIVersion: lite.APIVersion, Kind: lite.Kind, Metadata: lite.Metadata}
	return js, items, tm, true
}

// decodeList decodes a List whose items splitList cut out. tm is the List's own type (from
// the header). It returns false, having added nothing to res, when an item does not parse on
// its own (a YAML alias to another item's anchor, JSON that is only valid as YAML): the caller
// then reads the whole document at once, which also reports a real syntax error best.
func decodeList(name string, d document, tm *typeMeta, items []listItem, res *result) bool {
	if tm.APIVersion == "" {
		res.errs = append(res.errs, errorAt(name, d, "", d.line, tm.Kind, "apiVersion", errors.New("missing apiVersion")))
		return true
	}
	var yamlFailed atomic.Bool
	parts := make([]result, len(items))
	forEachWithParser(len(items), func(i int, fp *fastParser) {
		it := items[i]
		part := &parts[i]
		doc := document{data: it.data, line: d.line + it.line - 1}
		js := it.data
		if !it.json {
			var err error
			if js, err = toJSON(it.data, fp); err != nil {
				yamlFailed.Store(true)
				return
			}
		}
		js = bytes.TrimSpace(js)
		if len(js) == 0 || js[0] != '{' {
			part.errs = append(part.errs, &Error{Source: Source{Name: name, Line: doc.line}, Object: fmt.Sprintf("%s item %d", tm.Kind, i),
				Err: fmt.Errorf("not a Kubernetes object: the item is %s", jsonKind(js))})
			return
		}
		itm, ok := peekTypeMeta(js)
		if !ok {
			itm = typeMeta{}
			if err := stdjson.Unmarshal(js, &itm); err != nil {
				var se *stdjson.SyntaxError
				if it.json && errors.As(err, &se) {
					yamlFailed.Store(true) // as below: JSON only as YAML reads it
					return
				}
				part.errs = append(part.errs, typeMetaError(name, doc, "", doc.line, err))
				return
			}
		}
		// kubectl prints typed lists (ServiceList) with kind and apiVersion on every item, but
		// hand-written ones often leave them to the list.
		if itm.Kind == "" && tm.Kind != "List" {
			itm.Kind = strings.TrimSuffix(tm.Kind, "List")
			if itm.APIVersion == "" {
				itm.APIVersion = tm.APIVersion
			}
			js = withTypeMeta(js, itm.APIVersion, itm.Kind)
		}
		part.add(decodeObject(name, doc, "", doc.line, js, &itm))
		if it.json && len(part.errs) > 0 && !stdjson.Valid(js) {
			// Not JSON after all (a trailing comma, a comment): the whole document is read
			// as YAML, as it was before Lists were cut into items. Checked only after an
			// error: the decoder validates what it decodes.
			yamlFailed.Store(true)
		}
	})
	if yamlFailed.Load() {
		return false
	}
	for i := range parts {
		res.objects = append(res.objects, parts[i].objects...)
		res.profiles = append(res.profiles, parts[i].profiles...)
		res.errs = append(res.errs, parts[i].errs...)
	}
	return true
}
