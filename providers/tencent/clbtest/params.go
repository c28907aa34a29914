package clbtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// commonQueryParams are API 3.0 common parameters a hand-written GET client may put in
// the query. The SDK sends them as X-TC-* headers and strips them from the query
// (common/client.go sendWithSignatureV3), so they are never action parameters.
var commonQueryParams = map[string]bool{
	"Action": true, "Version": true, "Region": true, "Timestamp": true, "Nonce": true,
	"RequestClient": true, "Language": true, "Token": true, "SecretId": true,
	"Signature": true, "SignatureMethod": true,
}

// decodeParams fills dst (a pointer to one of the request structs in actions.go) from a
// POST JSON body or a GET query. Field names and types follow the SDK's models.go, so an
// unknown name is UnknownParameter and a value of the wrong type is
// InvalidParameter.FormatError, as the cloud answers.
func decodeParams(method string, body []byte, query url.Values, dst any) *apiError {
	if method == "GET" {
		tree := map[string]any{}
		for key, vals := range query {
			if commonQueryParams[key] || len(vals) == 0 {
				continue
			}
			insertFlat(tree, strings.Split(key, "."), vals[0])
		}
		v, err := treeToJSON(tree, reflect.TypeOf(dst).Elem(), "")
		if err != nil {
			return err
		}
		b, mErr := json.Marshal(v)
		if mErr != nil {
			return errorf(CodeFormatError, "%v", mErr)
		}
		body = b
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return errorf(CodeUnknownParameter, "The parameter %s is not recognized.", name)
		}
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return errorf(CodeFormatError, "The value of parameter `%s` has a wrong type: want %s.", typeErr.Field, typeErr.Type)
		}
		return errorf(CodeFormatError, "The request body is not valid JSON: %v", err)
	}
	return nil
}

// insertFlat puts "A.0.B"=v into a tree of maps (indices stay string keys until the
// target type says the node is a list).
func insertFlat(tree map[string]any, path []string, v string) {
	for i, seg := range path {
		if i == len(path)-1 {
			tree[seg] = v
			return
		}
		next, ok := tree[seg].(map[string]any)
		if !ok {
			next = map[string]any{}
			tree[seg] = next
		}
		tree = next
	}
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

// treeToJSON converts a flattened-query tree into JSON values typed by t, the way the SDK's
// flatStructure (common/http/request.go) produced it.
func treeToJSON(node any, t reflect.Type, name string) (any, *apiError) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType {
		return untyped(node), nil
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := node.(map[string]any)
		if !ok {
			return nil, errorf(CodeFormatError, "The parameter `%s` must be an object.", name)
		}
		out := map[string]any{}
		for key, child := range m {
			f, ok := fieldByJSONName(t, key)
			if !ok {
				// Keep it so that the JSON decoder reports UnknownParameter.
				out[key] = untyped(child)
				continue
			}
			v, err := treeToJSON(child, f.Type, join(name, key))
			if err != nil {
				return nil, err
			}
			out[key] = v
		}
		return out, nil
	case reflect.Slice:
		m, ok := node.(map[string]any)
		if !ok {
			return nil, errorf(CodeFormatError, "The parameter `%s` must be a list (%s.0, %s.1, ...).", name, name, name)
		}
		idx := make([]int, 0, len(m))
		for k := range m {
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 {
				return nil, errorf(CodeFormatError, "The parameter `%s.%s` is not a list index.", name, k)
			}
			idx = append(idx, i)
		}
		sort.Ints(idx)
		out := make([]any, 0, len(idx))
		for _, i := range idx {
			v, err := treeToJSON(m[strconv.Itoa(i)], t.Elem(), join(name, strconv.Itoa(i)))
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	s, ok := node.(string)
	if !ok {
		return nil, errorf(CodeFormatError, "The parameter `%s` must be a single value.", name)
	}
	switch t.Kind() {
	case reflect.String:
		return s, nil
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, errorf(CodeFormatError, "The value of parameter `%s` must be a boolean.", name)
		}
		return b, nil
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, errorf(CodeFormatError, "The value of parameter `%s` must be an integer.", name)
		}
		return n, nil
	case reflect.Uint, reflect.Uint64:
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, errorf(CodeFormatError, "The value of parameter `%s` must be a non-negative integer.", name)
		}
		return n, nil
	case reflect.Float64:
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, errorf(CodeFormatError, "The value of parameter `%s` must be a number.", name)
		}
		return n, nil
	}
	return nil, errorf(CodeInternalError, "clbtest cannot decode parameter `%s`", name)
}

// untyped turns a tree into plain JSON values: maps whose keys are all indices become lists.
func untyped(node any) any {
	m, ok := node.(map[string]any)
	if !ok {
		return node
	}
	keys := make([]int, 0, len(m))
	for k := range m {
		i, err := strconv.Atoi(k)
		if err != nil {
			keys = nil
			break
		}
		keys = append(keys, i)
	}
	if keys != nil {
		sort.Ints(keys)
		out := make([]any, 0, len(keys))
		for _, i := range keys {
			out = append(out, untyped(m[strconv.Itoa(i)]))
		}
		return out
	}
	out := map[string]any{}
	for k, v := range m {
		out[k] = untyped(v)
	}
	return out
}

func fieldByJSONName(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			if inner, ok := fieldByJSONName(f.Type, name); ok {
				return inner, true
			}
			continue
		}
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "" {
			tag = f.Name
		}
		if tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// redactedParams hold key material (CertificateInput.CertKey and friends); the call log
// never shows them.
var redactedParams = []string{"Certificate", "MultiCertInfo"}

// flattenForLog renders request parameters for the call log, flattened like the SDK's GET
// form. It works from the raw request so that it also shows parameters a handler ignores.
func flattenForLog(method string, body []byte, query url.Values) map[string]string {
	out := map[string]string{}
	if method == "GET" {
		for key, vals := range query {
			if !commonQueryParams[key] && len(vals) > 0 {
				out[key] = vals[0]
			}
		}
	} else {
		var v any
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if dec.Decode(&v) == nil {
			flattenValue(out, "", v)
		}
	}
	for key := range out {
		top, _, _ := strings.Cut(key, ".")
		if slices.Contains(redactedParams, top) {
			out[key] = "REDACTED"
		}
	}
	return out
}

func flattenValue(out map[string]string, prefix string, v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			flattenValue(out, join(prefix, k), child)
		}
	case []any:
		for i, child := range x {
			flattenValue(out, join(prefix, strconv.Itoa(i)), child)
		}
	case nil:
	case string:
		out[prefix] = x
	default:
		out[prefix] = fmt.Sprint(x)
	}
}
