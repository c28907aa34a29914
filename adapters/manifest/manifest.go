package manifest

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/loopguard/loopguard/core"
)

// Source says where a document, or a field in it, came from.
type Source struct {
	// Name is the file path, or "-" for standard input.
	Name string
	// Line is the 1-based line; 0 when the whole file is meant (it could not be read).
	Line int
}

func (s Source) String() string {
	if s.Line <= 0 {
		return s.Name
	}
	return fmt.Sprintf("%s:%d", s.Name, s.Line)
}

// Object is one decoded object and where it came from.
type Object struct {
	Object k8sruntime.Object
	// Source is where the object starts: its document, or its item in a List.
	Source Source

	// doc is the document the object was read from (a slice of the file, not a copy), base the
	// file line the document starts on and prefix the object's path in it ("items[3]" in a
	// List). Locate uses them to find a field's line.
	doc    []byte
	base   int
	prefix string
}

// Locate returns where a field of the object is written, for error messages. path is a field
// path as k8s.io/apimachinery's field.Path prints it ("spec.ports[0].protocol",
// "metadata.annotations[example.com/key]"). When the field is not written (a default) it
// returns the nearest enclosing field that is, and at worst the object's own start.
func (o *Object) Locate(path string) Source {
	if o.doc == nil || path == "" {
		return o.Source
	}
	full := path
	if o.prefix != "" {
		full = o.prefix + "." + path
	}
	if l := fieldLine(o.doc, full); l > 0 {
		return Source{Name: o.Source.Name, Line: fileLine(o.base, o.doc, l)}
	}
	return o.Source
}

// Ref names the object as the core does, when it is a Kubernetes object.
func (o *Object) Ref() core.ObjectRef {
	m, ok := o.Object.(metav1.Object)
	if !ok {
		return core.ObjectRef{}
	}
	return core.ObjectRef{Kind: o.Object.GetObjectKind().GroupVersionKind().Kind, Namespace: m.GetNamespace(), Name: m.GetName()}
}

// Profile is a ClusterProfile document and where it came from.
type Profile struct {
	Profile *core.ClusterProfile
	Source  Source

	doc    []byte
	base   int
	prefix string
}

// Locate returns where a field of the profile is written ("provider", "allowlists[1]"), as
// Object.Locate does.
func (p *Profile) Locate(path string) Source {
	o := Object{Source: p.Source, doc: p.doc, base: p.base, prefix: p.prefix}
	return o.Locate(path)
}

// Set is everything read from the inputs, in input order.
type Set struct {
	Objects []Object
	// Profiles are ClusterProfile documents (loopguard.io/v1alpha1) found among the inputs.
	Profiles []Profile
}

// Error is a file or document that could not be read or decoded.
type Error struct {
	// Source is the file and the line of the offending field when known, else of the
	// document (or List item); Line is 0 when the file itself could not be read.
	Source Source
	// Object is "Kind namespace/name" when the document got that far.
	Object string
	// Field is the path of the offending field when known ("spec.ports[0].protocl").
	Field string
	Err   error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Source.String())
	if e.Object != "" {
		b.WriteString(": ")
		b.WriteString(e.Object)
	}
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes every Error match core.ErrInvalid: the input is at fault.
func (e *Error) Is(target error) bool { return target == core.ErrInvalid }

// scheme knows the kinds loopguard reads as typed objects. Other kinds (a cloud's CRDs such as
// TkeServiceConfig) are kept as *unstructured.Unstructured.
var scheme = func() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	for _, add := range []func(*k8sruntime.Scheme) error{corev1.AddToScheme, discoveryv1.AddToScheme, networkingv1.AddToScheme, appsv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // static registration of the API types; cannot fail at run time
		}
	}
	return s
}()

// knownGroups are API groups whose kinds must decode as typed objects; an unknown kind in one
// of them is a typo, not a CRD.
var knownGroups = map[string]struct{}{"": {}, "apps": {}, "discovery.k8s.io": {}, "networking.k8s.io": {}, profileGroup: {}}

const profileGroup = "loopguard.io"

// clusterScoped lists the typed kinds that have no namespace.
var clusterScoped = map[string]bool{"Node": true, "Namespace": true, "PersistentVolume": true, "IngressClass": true, "ComponentStatus": true}

// DefaultNamespace is given to namespaced objects whose manifest names none, as kubectl does
// with the default context.
const DefaultNamespace = "default"

// Reader reads inputs. The zero value is ready to use.
type Reader struct {
	// Stdin is read for the path "-"; nil means os.Stdin.
	Stdin io.Reader
	// Workers is how many documents are decoded at once; 0 means GOMAXPROCS.
	Workers int
	// MaxInputBytes bounds each file and standard input; a larger one is an error naming it,
	// and the other inputs are still read. 0 means DefaultMaxInputBytes, a negative value no
	// limit.
	MaxInputBytes int64
}

// DefaultMaxInputBytes is the default Reader.MaxInputBytes: 32 MiB, about 60,000 Services as
// kubectl prints them, which decode in a few seconds and about half a gigabyte of memory.
// Reading a larger input whole could exhaust a small machine's memory.
const DefaultMaxInputBytes = 32 << 20

func (r *Reader) maxInput() int64 {
	switch {
	case r.MaxInputBytes == 0:
		return DefaultMaxInputBytes
	case r.MaxInputBytes < 0:
		return -1
	}
	return r.MaxInputBytes
}

// tooLarge is the error for an input over the limit.
func tooLarge(name string, size, limit int64) error {
	what := "the file"
	if name == "-" {
		what = "standard input"
	}
	how := "more than"
	if size > limit+1 {
		how = fmt.Sprintf("%d MiB, more than", size>>20)
	}
	return &Error{Source: Source{Name: name}, Err: fmt.Errorf("%s is too large to read: it holds %s the limit of %d MiB; split it into smaller files (kubectl get -n NAMESPACE, one kind at a time)", what, how, limit>>20)}
}

// readLimited reads all of in, or fails when it holds more than limit bytes (limit < 0: no
// limit) without reading more than one byte past it.
func readLimited(in io.Reader, limit int64) ([]byte, bool, error) {
	if limit < 0 {
		b, err := io.ReadAll(in)
		return b, false, err
	}
	b, err := io.ReadAll(io.LimitReader(in, limit+1))
	if err != nil {
		return nil, false, err
	}
	return b, int64(len(b)) > limit, nil
}

type input struct {
	name string
	data []byte
}

// Read reads every path (files, folders recursively, "-" for standard input). It returns all
// objects it could read, in input order, and one error per file it could not read and per
// problem in a document; a bad document never stops the others from being read.
//
// A path that yields no document at all (an empty file or standard input, a folder with no
// .yaml, .yml or .json file, or only empty ones) is an error too: a mistyped folder in CI
// must not pass as "nothing at risk".
func (r *Reader) Read(paths ...string) (*Set, []error) {
	var inputs []input
	var errs []error
	// group[i] is the index in paths of the path input i came from.
	var group []int
	failed := make([]bool, len(paths))
	for pi, p := range paths {
		if p == "-" {
			in := r.Stdin
			if in == nil {
				in = os.Stdin
			}
			data, over, err := readLimited(in, r.maxInput())
			if err != nil {
				errs = append(errs, &Error{Source: Source{Name: "-"}, Err: err})
				failed[pi] = true
				continue
			}
			if over {
				errs = append(errs, tooLarge("-", r.maxInput()+1, r.maxInput()))
				failed[pi] = true
				continue
			}
			inputs = append(inputs, input{"-", data})
			group = append(group, pi)
			continue
		}
		files, err := expand(p)
		if err != nil {
			errs = append(errs, &Error{Source: Source{Name: p}, Err: err})
			failed[pi] = true
		}
		for _, f := range files {
			if limit := r.maxInput(); limit >= 0 {
				if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() && st.Size() > limit {
					errs = append(errs, tooLarge(f, st.Size(), limit))
					failed[pi] = true
					continue
				}
			}
			data, err := readFile(f, r.maxInput())
			if errors.Is(err, errTooLarge) {
				errs = append(errs, tooLarge(f, r.maxInput()+1, r.maxInput()))
				failed[pi] = true
				continue
			}
			if err != nil {
				errs = append(errs, &Error{Source: Source{Name: f}, Err: err})
				failed[pi] = true
				continue
			}
			inputs = append(inputs, input{f, data})
			group = append(group, pi)
		}
	}
	set := &Set{}
	derrs, docs := set.decode(inputs, r.Workers)
	errs = append(errs, derrs...)
	perPath := make([]int, len(paths))
	files := make([]int, len(paths))
	for i, n := range docs {
		perPath[group[i]] += n
		files[group[i]]++
	}
	for pi, p := range paths {
		if failed[pi] || perPath[pi] > 0 {
			continue
		}
		var why string
		switch {
		case p == "-":
			why = "no manifests: standard input is empty or holds only comments"
		case files[pi] == 0:
			why = "no manifests: the folder holds no .yaml, .yml or .json file"
		default:
			if st, err := os.Stat(p); err == nil && st.IsDir() {
				why = fmt.Sprintf("no manifests: the folder's %d file(s) are empty or hold only comments", files[pi])
			} else {
				why = "no manifests: the file is empty or holds only comments"
			}
		}
		errs = append(errs, &Error{Source: Source{Name: p}, Err: errors.New(why)})
	}
	return set, errs
}

var errTooLarge = errors.New("too large")

// readFile reads a file of at most limit bytes (limit < 0: any size); a larger one, such as a
// named pipe that keeps writing, is errTooLarge.
func readFile(name string, limit int64) ([]byte, error) {
	if limit < 0 {
		return os.ReadFile(name)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var size int64
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	// One buffer of the file's size, as os.ReadFile does (plus the byte that shows the end, or
	// a file grown past the limit): io.ReadAll's doublings allocated about 2.5 times the input
	// when reading 10,000 Services.
	b := make([]byte, 0, min(size, limit)+1)
	r := io.LimitReader(f, limit+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if int64(len(b)) > limit {
		return nil, errTooLarge
	}
	return b, nil
}

// expand lists a file, or the YAML and JSON files under a folder in lexical order, skipping
// hidden folders.
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

// Decode reads one file's contents (name is used in sources and errors) and adds its objects
// to the set. It returns one error per problem in a document.
func (s *Set) Decode(name string, data []byte) []error {
	errs, _ := s.decode([]input{{name, data}}, 0)
	return errs
}

type task struct {
	name string
	doc  document
}

type result struct {
	// slot, when set, is where the first object goes (objects is then slot).
	slot     []Object
	objects  []Object
	profiles []Profile
	errs     []error
}

// decode splits every input into documents and decodes them on several goroutines; YAML
// parsing dominates the cost of reading large inputs, and documents are independent. Results
// are merged in input order, so the output does not depend on scheduling. It also returns
// how many documents each input held.
func (s *Set) decode(inputs []input, workers int) ([]error, []int) {
	docs := make([]int, len(inputs))
	split := make([][]document, len(inputs))
	n := 0
	for i, in := range inputs {
		split[i] = splitDocuments(in.name, in.data)
		docs[i] = len(split[i])
		n += docs[i]
	}
	tasks := make([]task, 0, n)
	for i, in := range inputs {
		for _, d := range split[i] {
			tasks = append(tasks, task{in.name, d})
		}
	}
	results := make([]result, len(tasks))
	// Most documents hold one object: each decodes into its own slot of one slab, which
	// becomes s.Objects below, instead of a slice per document copied into another.
	slab := make([]Object, len(tasks))
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers > len(tasks) {
		workers = len(tasks)
	}
	if workers <= 1 {
		var fp fastParser
		for i := range tasks {
			results[i] = decodeDocument(tasks[i].name, tasks[i].doc, &fp, slab[i:i+1:i+1])
		}
	} else {
		var wg sync.WaitGroup
		var mu sync.Mutex
		next := 0
		// Documents are handed out in small batches: one lock per document would cost more
		// than decoding a small one.
		const batch = 16
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var fp fastParser
				for {
					mu.Lock()
					i := next
					next += batch
					mu.Unlock()
					if i >= len(tasks) {
						return
					}
					for j := i; j < i+batch && j < len(tasks); j++ {
						results[j] = decodeDocument(tasks[j].name, tasks[j].doc, &fp, slab[j:j+1:j+1])
					}
				}
			}()
		}
		wg.Wait()
	}
	n = 0
	inSlab := true
	for i := range results {
		n += len(results[i].objects)
		if objs := results[i].objects; len(objs) > 1 || len(objs) == 1 && &objs[0] != &slab[i] {
			inSlab = false
		}
	}
	var errs []error
	if s.Objects == nil && inSlab {
		// Compacted in place: the w-th object comes from a slot at or after w.
		w := 0
		for i := range results {
			if len(results[i].objects) == 1 {
				slab[w] = slab[i]
				w++
			}
		}
		clear(slab[w:])
		s.Objects = slab[:w:w]
		for i := range results {
			s.Profiles = append(s.Profiles, results[i].profiles...)
			errs = append(errs, results[i].errs...)
		}
		return errs, docs
	}
	if s.Objects == nil {
		s.Objects = make([]Object, 0, n)
	}
	for i := range results {
		s.Objects = append(s.Objects, results[i].objects...)
		s.Profiles = append(s.Profiles, results[i].profiles...)
		errs = append(errs, results[i].errs...)
	}
	return errs, docs
}

// typeMeta is read first to route the document.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Items []stdjson.RawMessage `json:"items"`
}

func (tm *typeMeta) describe() string {
	if tm.Kind == "" {
		return ""
	}
	ref := core.ObjectRef{Kind: tm.Kind, Namespace: tm.Metadata.Namespace, Name: tm.Metadata.Name}
	if ref.Namespace == "" && !clusterScoped[tm.Kind] && !strings.HasSuffix(tm.Kind, "List") {
		ref.Namespace = DefaultNamespace
	}
	if ref.Name == "" {
		return tm.Kind
	}
	return ref.String()
}

// errorAt builds an Error for a field of a document, locating the field's line.
func errorAt(name string, d document, prefix string, fallback int, object, field string, err error) *Error {
	line := fallback
	if field != "" {
		full := field
		if prefix != "" {
			full = prefix + "." + field
		}
		if l := fieldLine(d.data, full); l > 0 {
			line = fileLine(d.line, d.data, l)
		}
	}
	return &Error{Source: Source{Name: name, Line: line}, Object: object, Field: field, Err: err}
}

// decodeDocument decodes one document; fp holds scratch buffers reused across the documents one
// goroutine decodes (nil allocates new ones).
func decodeDocument(name string, d document, fp *fastParser, slot []Object) result {
	res := result{slot: slot}
	if d.err != nil {
		res.errs = append(res.errs, d.err)
	}
	if d.data == nil {
		return res
	}
	src := Source{Name: name, Line: d.line}
	if _, items, tm, ok := splitList(d.data, fp); ok && strings.HasSuffix(tm.Kind, "List") {
		// A copy for the List's decoder, which keeps it: taking tm's address would put
		// every document's header on the heap.
		ltm := tm
		if decodeList(name, d, &ltm, items, &res) {
			sortErrors(res.errs)
			return res
		}
	}
	js, err := toJSON(d.data, fp)
	if err != nil {
		line, msg := yamlError(err.Error(), d.line, d.data)
		res.errs = append(res.errs, &Error{Source: Source{Name: name, Line: line}, Object: guessObject(d.data), Err: fmt.Errorf("not valid YAML: %s", msg)})
		return res
	}
	if len(js) == 0 || js[0] != '{' {
		res.errs = append(res.errs, &Error{Source: src, Err: fmt.Errorf("not a Kubernetes object: the document is %s, not a mapping with apiVersion and kind", jsonKind(js))})
		return res
	}
	tm, ok := peekTypeMeta(js)
	if !ok {
		tm = typeMeta{}
		// A List's items are found by a scan that slices them out of js; decoding them
		// here would copy the whole List once more.
		items, _, scanned := jsonItems(js)
		var err error
		if scanned {
			var lite typeMetaLite
			err = stdjson.Unmarshal(js, &lite)
			tm.APIVersion, tm.Kind, tm.Metadata = lite.APIVersion, lite.Kind, lite.Metadata
			tm.Items = make([]stdjson.RawMessage, len(items))
			for i, it := range items {
				tm.Items[i] = it
			}
		} else {
			full := new(typeMeta)
			err = stdjson.Unmarshal(js, full)
			tm = *full
		}
		if err != nil {
			res.errs = append(res.errs, typeMetaError(name, d, "", d.line, err))
			return res
		}
	}
	if !strings.HasSuffix(tm.Kind, "List") || tm.Items == nil {
		res.add(decodeObject(name, d, "", d.line, js, &tm))
		sortErrors(res.errs)
		return res
	}
	// The items' decoder captures the header: a copy made here keeps it off the heap for
	// every document that is not a List.
	lt := tm
	if lt.APIVersion == "" {
		res.errs = append(res.errs, errorAt(name, d, "", d.line, lt.Kind, "apiVersion", errors.New("missing apiVersion")))
		return res
	}
	lines := itemLines(d.data, len(lt.Items))
	last := lastLine(d.line, d.data)
	parts := make([]result, len(lt.Items))
	decodeItem := func(i int) {
		item := lt.Items[i]
		res := &parts[i]
		line := d.line
		if i < len(lines) {
			// fileLine, with the document's last line computed once, not once per item.
			line = d.line + lines[i] - 1
			if line > last && last >= d.line {
				line = last
			}
		}
		prefix := fmt.Sprintf("items[%d]", i)
		if len(item) == 0 || item[0] != '{' {
			res.errs = append(res.errs, &Error{Source: Source{Name: name, Line: line}, Object: fmt.Sprintf("%s item %d", lt.Kind, i),
				Err: fmt.Errorf("not a Kubernetes object: the item is %s", jsonKind(item))})
			return
		}
		itm, ok := peekTypeMeta(item)
		if !ok {
			itm = typeMeta{}
			if err := stdjson.Unmarshal(item, &itm); err != nil {
				res.errs = append(res.errs, typeMetaError(name, d, prefix, line, err))
				return
			}
		}
		// kubectl prints typed lists (ServiceList) with kind and apiVersion on every item, but
		// hand-written ones often leave them to the list.
		if itm.Kind == "" && lt.Kind != "List" {
			itm.Kind = strings.TrimSuffix(lt.Kind, "List")
			if itm.APIVersion == "" {
				itm.APIVersion = lt.APIVersion
			}
			item = withTypeMeta(item, itm.APIVersion, itm.Kind)
		}
		res.add(decodeObject(name, d, prefix, line, item, &itm))
	}
	forEach(len(lt.Items), decodeItem)
	for i := range parts {
		res.objects = append(res.objects, parts[i].objects...)
		res.profiles = append(res.profiles, parts[i].profiles...)
		res.errs = append(res.errs, parts[i].errs...)
	}
	sortErrors(res.errs)
	return res
}

// typeMetaLite is typeMeta without the items, which a List's scan slices out instead.
type typeMetaLite struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// forEach calls f for 0..n-1, on several goroutines when n is large: the items of one big
// List (kubectl get -o yaml of a whole cluster) are as independent as the documents of a
// multi-document file, and would otherwise be decoded on one core.
func forEach(n int, f func(int)) {
	forEachWithParser(n, func(i int, _ *fastParser) { f(i) })
}

// forEachWithParser is forEach with a YAML parser's scratch buffers per goroutine.
func forEachWithParser(n int, f func(int, *fastParser)) {
	workers := runtime.GOMAXPROCS(0)
	if n < 512 || workers < 2 {
		var fp fastParser
		for i := 0; i < n; i++ {
			f(i, &fp)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var fp fastParser
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i, &fp)
			}
		}()
	}
	wg.Wait()
}

// sortErrors orders one document's errors by line.
func sortErrors(errs []error) {
	line := func(e error) int {
		var me *Error
		if errors.As(e, &me) {
			return me.Source.Line
		}
		return 0
	}
	sort.SliceStable(errs, func(i, j int) bool { return line(errs[i]) < line(errs[j]) })
}

func (r *result) add(o *Object, p *Profile, errs []error) {
	switch {
	case o == nil:
	case r.objects == nil && r.slot != nil:
		r.slot[0] = *o
		r.objects = r.slot
	default:
		r.objects = append(r.objects, *o)
	}
	if p != nil {
		r.profiles = append(r.profiles, *p)
	}
	r.errs = append(r.errs, errs...)
}

// toJSON converts a YAML document to JSON, refusing duplicate keys (kubectl's strict
// validation does too: a duplicated key silently loses one of its values). A document that is
// already JSON is used as it is; the strict JSON decoder checks its duplicate keys.
func toJSON(data []byte, fp *fastParser) ([]byte, error) {
	t := bytes.TrimSpace(data)
	if len(t) > 0 && t[0] == '{' && stdjson.Valid(t) {
		return t, nil
	}
	if fp == nil {
		fp = &fastParser{}
	}
	if js, ok := fp.convert(data); ok {
		return js, nil
	}
	return yaml.YAMLToJSONStrict(data)
}

func jsonKind(js []byte) string {
	js = bytes.TrimSpace(js)
	if len(js) == 0 {
		return "empty"
	}
	switch js[0] {
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

func typeMetaError(name string, d document, prefix string, line int, err error) *Error {
	var te *stdjson.UnmarshalTypeError
	if errors.As(err, &te) {
		return errorAt(name, d, prefix, line, "", te.Field, fmt.Errorf("cannot use a %s here (want %s)", te.Value, goTypeName(typeName(te.Type))))
	}
	return &Error{Source: Source{Name: name, Line: line}, Err: fmt.Errorf("not a Kubernetes object: %v", err)}
}

// withTypeMeta adds apiVersion and kind to a JSON object.
func withTypeMeta(item []byte, apiVersion, kind string) []byte {
	head, _ := stdjson.Marshal(map[string]string{"apiVersion": apiVersion, "kind": kind})
	rest := bytes.TrimSpace(item[1:])
	out := make([]byte, 0, len(item)+len(head))
	out = append(out, head[:len(head)-1]...)
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

var (
	allChecks     = []kjson.StrictOption{kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields}
	unknownFields = []kjson.StrictOption{kjson.DisallowUnknownFields}
)

// strictChecks is what the strict decoder must check in JSON converted from the document
// data. YAML reaches it through toJSON's converters, and both reject a duplicated key (the
// fast one falls back, the general one fails), so only JSON written as JSON needs the
// decoder's own check: tracking every key it sees was a tenth of what reading 10,000
// Services allocated.
func strictChecks(data []byte) []kjson.StrictOption {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] != '{' && t[0] != '[' {
		return unknownFields
	}
	return allChecks
}

// decodeObject decodes one object (a document, or an item of a List) from JSON.
func decodeObject(name string, d document, prefix string, line int, js []byte, tm *typeMeta) (*Object, *Profile, []error) {
	src := Source{Name: name, Line: line}
	// The object's name for messages, built only when there is one to write: naming every
	// object read was a per cent of what reading 10,000 Services allocated.
	object := tm.describe
	fail := func(field string, err error) (*Object, *Profile, []error) {
		return nil, nil, []error{errorAt(name, d, prefix, line, object(), field, err)}
	}
	if tm.Kind == "" {
		return fail("kind", errors.New("missing kind"))
	}
	if tm.APIVersion == "" {
		return fail("apiVersion", errors.New("missing apiVersion"))
	}
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil {
		return fail("apiVersion", err)
	}
	gvk := gv.WithKind(tm.Kind)
	if gvk.Group == profileGroup && gvk.Kind == core.ProfileKind {
		p, errs := decodeProfile(name, d, prefix, line, js)
		if len(errs) > 0 {
			return nil, nil, errs
		}
		return nil, &Profile{Profile: p, Source: src, doc: d.data, base: d.line, prefix: prefix}, nil
	}
	if !scheme.Recognizes(gvk) {
		if _, known := knownGroups[gvk.Group]; known {
			return fail("kind", fmt.Errorf("apiVersion %s has no kind %s%s", tm.APIVersion, tm.Kind, didYouMean(tm.Kind, typedKinds(gv))))
		}
		if err := nearCustomKind(gvk); err != nil {
			return fail("kind", err)
		}
		m := map[string]any{}
		strictErrs, err := kjson.UnmarshalStrict(js, &m, kjson.DisallowDuplicateFields)
		if err != nil {
			return fail("", err)
		}
		if len(strictErrs) > 0 {
			return nil, nil, strictErrors(name, d, prefix, line, object(), strictErrs)
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetNamespace() == "" {
			// Cloud CRDs loopguard reads (TkeServiceConfig) are namespaced.
			u.SetNamespace(DefaultNamespace)
		}
		return &Object{Object: u, Source: src, doc: d.data, base: d.line, prefix: prefix}, nil, nil
	}
	obj, err := scheme.New(gvk)
	if err != nil {
		return fail("kind", err)
	}
	strictErrs, err := kjson.UnmarshalStrict(js, obj, strictChecks(d.data)...)
	if err != nil {
		var te *stdjson.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if te.Type.Kind() == reflect.String {
				// For a map or list of strings the decoder names only the container.
				full := field
				if prefix != "" {
					full = prefix + "." + field
				}
				field += nonStringChild(d.data, full)
			}
			return fail(field, typeError(te))
		}
		return fail("", errors.New(strings.TrimPrefix(err.Error(), "json: ")))
	}
	if len(strictErrs) > 0 {
		return nil, nil, strictErrors(name, d, prefix, line, object(), strictErrs)
	}
	if svc, ok := obj.(*corev1.Service); ok {
		if errs := validateServicePorts(svc); len(errs) > 0 {
			out := make([]error, len(errs))
			for i, fe := range errs {
				out[i] = errorAt(name, d, prefix, line, object(), fe.Field, errors.New(fe.ErrorBody()))
			}
			return nil, nil, out
		}
	}
	if m, ok := obj.(metav1.Object); ok {
		if n := annotationBytes(m.GetAnnotations()); n > MaxAnnotationBytes {
			return fail("metadata.annotations", fmt.Errorf("the annotations total %d bytes, more than the %d (256 KiB) Kubernetes allows: the API server would refuse this object", n, MaxAnnotationBytes))
		}
		if m.GetNamespace() == "" && !clusterScoped[gvk.Kind] {
			m.SetNamespace(DefaultNamespace)
		}
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return &Object{Object: obj, Source: src, doc: d.data, base: d.line, prefix: prefix}, nil, nil
}

// MaxAnnotationBytes is the most an object's annotations may hold, keys and values together:
// the API server's limit (k8s.io/apimachinery/pkg/api/validation TotalAnnotationSizeLimitB).
const MaxAnnotationBytes = 256 << 10

func annotationBytes(a map[string]string) int {
	n := 0
	for k, v := range a {
		n += len(k) + len(v)
	}
	return n
}

// strictErrors turns the strict decoder's unknown- and duplicate-field errors into one Error
// per field, each at the field's line.
func strictErrors(name string, d document, prefix string, line int, object string, errs []error) []error {
	out := make([]error, 0, len(errs))
	for _, e := range errs {
		var fe kjson.FieldError
		if errors.As(e, &fe) {
			kind := "unknown field"
			if strings.HasPrefix(e.Error(), "duplicate field") {
				kind = "duplicate field"
			}
			out = append(out, errorAt(name, d, prefix, line, object, fe.FieldPath(), errors.New(kind)))
			continue
		}
		out = append(out, errorAt(name, d, prefix, line, object, "", e))
	}
	return out
}

// typeError says what was wrong with a value in the words of the manifest, with a hint for
// the usual mistake: an unquoted true, 1.2 or 0755 where Kubernetes wants a string.
func typeError(te *stdjson.UnmarshalTypeError) error {
	want := goTypeName(typeName(te.Type))
	msg := fmt.Sprintf("cannot use a %s here (want %s)", te.Value, want)
	if want == "a string" && (te.Value == "bool" || strings.HasPrefix(te.Value, "number")) {
		msg += ": quote the value"
	}
	return errors.New(msg)
}

// typeName is a Go type's name for goTypeName: a named type of a basic kind (core.ProxyMode
// is a string) by its kind.
func typeName(t reflect.Type) string {
	if t.Kind() <= reflect.Complex128 || t.Kind() == reflect.String {
		return t.Kind().String()
	}
	return t.String()
}

func goTypeName(t string) string {
	switch {
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "an integer"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case strings.HasPrefix(t, "map["):
		return "a mapping"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	}
	return "a " + t
}

// decodeProfile reads a ClusterProfile. core.ParseProfile decides what is valid; when it
// refuses, a second, position-keeping pass finds the fields at fault, every one of them: each
// top-level field is decoded on its own, so a wrong type in one does not hide an unknown field
// or an invalid value in another. Field names are matched case-sensitively, as Kubernetes
// does, so "ProxyMode:" is an unknown field, not proxyMode.
func decodeProfile(name string, d document, prefix string, line int, js []byte) (*core.ClusterProfile, []error) {
	object := core.ProfileKind
	p, perr := core.ParseProfile(Source{Name: name, Line: line}.String(), js)
	if perr == nil {
		return p, nil
	}
	var errs []error
	var fields map[string]stdjson.RawMessage
	if err := stdjson.Unmarshal(js, &fields); err != nil {
		errs = append(errs, &Error{Source: Source{Name: name, Line: line}, Object: object, Err: err})
		return nil, errs
	}
	good := map[string]stdjson.RawMessage{}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		one, _ := stdjson.Marshal(map[string]stdjson.RawMessage{k: fields[k]})
		var probe core.ClusterProfile
		if _, err := kjson.UnmarshalStrict(one, &probe); err != nil {
			var te *stdjson.UnmarshalTypeError
			if errors.As(err, &te) {
				errs = append(errs, errorAt(name, d, prefix, line, object, te.Field, typeError(te)))
			} else {
				errs = append(errs, errorAt(name, d, prefix, line, object, k, errors.New(strings.TrimPrefix(err.Error(), "json: "))))
			}
			continue
		}
		good[k] = fields[k]
	}
	rest, _ := stdjson.Marshal(good)
	var strict core.ClusterProfile
	strictErrs, err := kjson.UnmarshalStrict(rest, &strict)
	if err == nil {
		errs = append(errs, strictErrors(name, d, prefix, line, object, strictErrs)...)
		for _, fe := range strict.Validate() {
			if _, given := fields[rootField(fe.Field)]; given && good[rootField(fe.Field)] == nil {
				continue // its type error is reported already
			}
			errs = append(errs, errorAt(name, d, prefix, line, object, fe.Field, errors.New(fe.ErrorBody())))
		}
	}
	// A duplicated key is lost in the map above; the strict decoder sees it in the original.
	if dupErrs, err := kjson.UnmarshalStrict(js, &map[string]any{}); err == nil {
		for _, e := range strictErrors(name, d, prefix, line, object, dupErrs) {
			if strings.Contains(e.Error(), "duplicate field") {
				errs = append(errs, e)
			}
		}
	}
	if len(errs) == 0 {
		// The core refused something the structured pass did not place.
		msg := strings.TrimPrefix(perr.Error(), Source{Name: name, Line: line}.String()+": ")
		msg = strings.TrimPrefix(msg, core.ErrInvalid.Error()+": ")
		errs = append(errs, &Error{Source: Source{Name: name, Line: line}, Object: object, Err: errors.New(msg)})
	}
	sortErrors(errs)
	return nil, errs
}

// rootField is the first element of a field path ("dataplane" of "dataplane.cni").
func rootField(path string) string {
	if i := strings.IndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return path
}

// describeDocuments says what a file that should hold one profile holds: "no document", or
// how many documents and of which kinds ("5 documents: 4 Service, 1 Node").
func describeDocuments(docs []document) string {
	if len(docs) == 0 {
		return "no document (the file is empty or holds only comments)"
	}
	count := map[string]int{}
	var order []string
	for _, d := range docs {
		kind := "unreadable"
		if js, err := toJSON(d.data, nil); err == nil {
			if tm, ok := peekTypeMeta(js); ok && tm.Kind != "" {
				kind = tm.Kind
			} else if err := stdjson.Unmarshal(js, &tm); err == nil && tm.Kind != "" {
				kind = tm.Kind
			} else {
				kind = "without a kind"
			}
		}
		if count[kind] == 0 {
			order = append(order, kind)
		}
		count[kind]++
	}
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = fmt.Sprintf("%d %s", count[k], k)
	}
	return fmt.Sprintf("%d documents: %s", len(docs), strings.Join(parts, ", "))
}

// ReadProfile reads a file that holds one ClusterProfile document (the CLI's --profile).
// Errors are *Error values naming the file, line and field.
func ReadProfile(name string, data []byte) (*Profile, []error) {
	docs := splitDocuments(name, data)
	if len(docs) != 1 {
		return nil, []error{&Error{Source: Source{Name: name, Line: 1}, Object: core.ProfileKind,
			Err: fmt.Errorf("want exactly one ClusterProfile document (apiVersion %s, kind %s), found %s", core.ProfileAPIVersion, core.ProfileKind, describeDocuments(docs))}}
	}
	d := docs[0]
	if d.err != nil {
		return nil, []error{d.err}
	}
	js, err := toJSON(d.data, nil)
	if err != nil {
		line, msg := yamlError(err.Error(), d.line, d.data)
		return nil, []error{&Error{Source: Source{Name: name, Line: line}, Object: core.ProfileKind, Err: fmt.Errorf("not valid YAML: %s", msg)}}
	}
	if len(js) == 0 || js[0] != '{' {
		return nil, []error{&Error{Source: Source{Name: name, Line: d.line}, Object: core.ProfileKind,
			Err: fmt.Errorf("the document is %s, not a ClusterProfile", jsonKind(js))}}
	}
	p, errs := decodeProfile(name, d, "", d.line, js)
	if len(errs) > 0 {
		return nil, errs
	}
	return &Profile{Profile: p, Source: Source{Name: name, Line: d.line}, doc: d.data, base: d.line}, nil
}
