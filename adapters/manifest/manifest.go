package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/loopguard/loopguard/core"
)

// Source says where a document came from.
type Source struct {
	// Name is the file path, or "-" for standard input.
	Name string
	// Line is the 1-based line the document starts on.
	Line int
}

func (s Source) String() string { return fmt.Sprintf("%s:%d", s.Name, s.Line) }

// Object is one decoded object and where it came from.
type Object struct {
	Object runtime.Object
	Source Source
}

// Set is everything read from the inputs.
type Set struct {
	Objects []Object
	// Profiles are ClusterProfile documents found among the inputs.
	Profiles []*core.ClusterProfile
}

// Error is a document that could not be read or decoded.
type Error struct {
	Source Source
	// Object is "Kind namespace/name" when the document got that far.
	Object string
	Err    error
}

func (e *Error) Error() string {
	if e.Object != "" {
		return fmt.Sprintf("%s: %s: %v", e.Source, e.Object, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Source, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes decoding errors match core.ErrInvalid.
func (e *Error) Is(target error) bool { return target == core.ErrInvalid }

// Scheme knows the kinds loopguard reads as typed objects. Other kinds (a cloud's CRDs such as
// TkeServiceConfig) are kept as *unstructured.Unstructured.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, discoveryv1.AddToScheme, networkingv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // static registration of the API types; cannot fail at run time
		}
	}
	return s
}()

var strict = json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{Yaml: true, Strict: true})

// Reader reads inputs. The zero value is ready to use.
type Reader struct {
	// Stdin is read for the path "-"; nil means os.Stdin.
	Stdin io.Reader
}

// Read reads every path (files, folders recursively, "-" for standard input). It returns all
// objects it could read and one error per document or file it could not.
func (r *Reader) Read(paths ...string) (*Set, []error) {
	set := &Set{}
	var errs []error
	for _, p := range paths {
		if p == "-" {
			in := r.Stdin
			if in == nil {
				in = os.Stdin
			}
			data, err := io.ReadAll(in)
			if err != nil {
				errs = append(errs, &Error{Source: Source{Name: "-"}, Err: err})
				continue
			}
			errs = append(errs, set.Decode("-", data)...)
			continue
		}
		files, err := expand(p)
		if err != nil {
			errs = append(errs, &Error{Source: Source{Name: p}, Err: err})
			continue
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				errs = append(errs, &Error{Source: Source{Name: f}, Err: err})
				continue
			}
			errs = append(errs, set.Decode(f, data)...)
		}
	}
	return set, errs
}

// expand lists the YAML and JSON files under a path, in lexical order.
func expand(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	var out []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != p && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			out = append(out, path)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// Decode splits data into documents and decodes each; it returns one error per bad document.
func (s *Set) Decode(name string, data []byte) []error {
	var errs []error
	for _, doc := range splitDocuments(data) {
		src := Source{Name: name, Line: doc.line}
		if err := s.decodeDocument(src, doc.data); err != nil {
			errs = append(errs, err...)
		}
	}
	return errs
}

type document struct {
	data []byte
	line int
}

// splitDocuments splits YAML at "---" lines, remembering where each document starts. JSON
// input is one document.
func splitDocuments(data []byte) []document {
	var docs []document
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), len(data)+1)
	var cur bytes.Buffer
	start, line := 1, 0
	flush := func(next int) {
		if len(bytes.TrimSpace(cur.Bytes())) > 0 && !onlyComments(cur.Bytes()) {
			docs = append(docs, document{data: bytes.Clone(cur.Bytes()), line: start})
		}
		cur.Reset()
		start = next
	}
	for sc.Scan() {
		line++
		l := sc.Bytes()
		if bytes.HasPrefix(l, []byte("---")) && (len(l) == 3 || l[3] == ' ' || l[3] == '\t') {
			flush(line + 1)
			continue
		}
		if bytes.Equal(bytes.TrimRight(l, " \t"), []byte("...")) {
			flush(line + 1)
			continue
		}
		cur.Write(l)
		cur.WriteByte('\n')
	}
	flush(line + 1)
	return docs
}

func onlyComments(b []byte) bool {
	for _, l := range bytes.Split(b, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) > 0 && l[0] != '#' {
			return false
		}
	}
	return true
}

// typeMeta is read first to route the document.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Items []jsonRaw `json:"items"`
}

type jsonRaw []byte

func (r *jsonRaw) UnmarshalJSON(b []byte) error { *r = append((*r)[:0], b...); return nil }

func (s *Set) decodeDocument(src Source, data []byte) []error {
	js, err := yaml.ToJSON(data)
	if err != nil {
		return []error{&Error{Source: src, Err: fmt.Errorf("not valid YAML: %w", err)}}
	}
	var tm typeMeta
	if err := jsonUnmarshal(js, &tm); err != nil {
		return []error{&Error{Source: src, Err: fmt.Errorf("not a Kubernetes object: %w", err)}}
	}
	if tm.Kind == "" {
		return []error{&Error{Source: src, Err: errors.New("missing kind")}}
	}
	if tm.APIVersion == "" {
		return []error{&Error{Source: src, Object: describe(&tm), Err: errors.New("missing apiVersion")}}
	}
	if strings.HasSuffix(tm.Kind, "List") && tm.Items != nil {
		var errs []error
		for i, item := range tm.Items {
			isrc := src
			if err := s.decodeJSON(isrc, item); err != nil {
				errs = append(errs, &Error{Source: src, Object: fmt.Sprintf("%s item %d", tm.Kind, i), Err: err})
			}
		}
		return errs
	}
	if err := s.decodeJSON(src, js); err != nil {
		return []error{&Error{Source: src, Object: describe(&tm), Err: err}}
	}
	return nil
}

func (s *Set) decodeJSON(src Source, js []byte) error {
	var tm typeMeta
	if err := jsonUnmarshal(js, &tm); err != nil {
		return err
	}
	if tm.Kind == "" || tm.APIVersion == "" {
		return errors.New("missing apiVersion or kind")
	}
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil {
		return fmt.Errorf("apiVersion: %w", err)
	}
	gvk := gv.WithKind(tm.Kind)
	if gvk.Group == "loopguard.io" && gvk.Kind == core.ProfileKind {
		p, err := core.ParseProfile(src.String(), js)
		if err != nil {
			return err
		}
		s.Profiles = append(s.Profiles, p)
		return nil
	}
	if !scheme.Recognizes(gvk) {
		if _, known := knownGroups[gvk.Group]; known {
			return fmt.Errorf("apiVersion %s does not serve kind %s", tm.APIVersion, tm.Kind)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return err
		}
		if u.GetNamespace() == "" {
			// Cloud CRDs loopguard reads (TkeServiceConfig) are namespaced.
			u.SetNamespace(DefaultNamespace)
		}
		s.Objects = append(s.Objects, Object{Object: u, Source: src})
		return nil
	}
	obj, _, err := strict.Decode(js, &gvk, nil)
	if err != nil {
		if runtime.IsStrictDecodingError(err) {
			return fmt.Errorf("unknown or duplicate field: %s", strictMessage(err))
		}
		return err
	}
	if m, ok := obj.(metav1.Object); ok && m.GetNamespace() == "" && gvk.Kind != "Node" {
		m.SetNamespace(DefaultNamespace)
	}
	s.Objects = append(s.Objects, Object{Object: obj, Source: src})
	return nil
}

// DefaultNamespace is given to namespaced objects whose manifest names none, as kubectl does
// with the default context.
const DefaultNamespace = "default"

// knownGroups are API groups whose kinds must decode as typed objects; an unknown kind in
// them is a typo, not a CRD.
var knownGroups = map[string]struct{}{"": {}, "discovery.k8s.io": {}, "networking.k8s.io": {}}

func strictMessage(err error) string {
	var se interface{ Errors() []error }
	if errors.As(err, &se) {
		var parts []string
		for _, e := range se.Errors() {
			parts = append(parts, e.Error())
		}
		return strings.Join(parts, "; ")
	}
	return err.Error()
}

func describe(tm *typeMeta) string {
	ref := core.ObjectRef{Kind: tm.Kind, Namespace: tm.Metadata.Namespace, Name: tm.Metadata.Name}
	if ref.Namespace == "" && tm.Kind != "Node" && !strings.HasSuffix(tm.Kind, "List") {
		ref.Namespace = DefaultNamespace
	}
	if ref.Name == "" {
		return tm.Kind
	}
	return ref.String()
}
