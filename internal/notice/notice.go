package notice

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Adapted is one file NOTICE lists as adapted from an upstream Go module.
type Adapted struct {
	// Path is the file in this repository, slash-separated.
	Path string
	// Module and Version name the upstream module the file was adapted from
	// (k8s.io/cloud-provider, v0.37.2), Source the file in it.
	Module, Version, Source string
}

// listed is a line of NOTICE's list: two spaces, the file, then module@version and the
// upstream file.
var listed = regexp.MustCompile(`^  (\S+)\s+(\S+)@(v\S+)\s+(\S+)$`)

// ParseNotice returns the files a NOTICE text lists as adapted.
func ParseNotice(notice []byte) []Adapted {
	var out []Adapted
	sc := bufio.NewScanner(bytes.NewReader(notice))
	for sc.Scan() {
		if m := listed.FindStringSubmatch(sc.Text()); m != nil {
			out = append(out, Adapted{Path: m[1], Module: m[2], Version: m[3], Source: m[4]})
		}
	}
	return out
}

// kubernetesHeader is the boilerplate every Kubernetes source file starts with
// (kubernetes/kubernetes hack/boilerplate/boilerplate.go.txt), with the year the file was
// created.
var kubernetesHeader = regexp.MustCompile(`^/\*
Copyright [0-9]{4} The Kubernetes ` + `Authors\.

Licensed under the Apache License, Version 2\.0 \(the "License"\);
you may not use this file except in compliance with the License\.
You may obtain a copy of the License at

    http://www\.apache\.org/licenses/LICENSE-2\.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied\.
See the License for the specific language governing permissions and
limitations under the License\.
\*/
`)

// upstreamMarkers make a file one that must be listed: upstream's copyright line, or the
// line loopguard's adapted files carry under it.
//
// Each is split in two so that this file does not carry it.
var upstreamMarkers = []string{"The Kubernetes " + "Authors", "// Adapted " + "from "}

// Check reports every way root breaks the rule: a LICENSE that is not the Apache License 2.0,
// a file NOTICE lists that is missing or has lost its upstream header (or whose header differs
// from the upstream file's, when modCache, the Go module cache, holds that file), and a Go
// file carrying upstream's copyright or an "Adapted from" line that NOTICE does not list. An
// error means root could not be read.
func Check(root, modCache string) ([]string, error) {
	var problems []string
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		return nil, err
	}
	if f := strings.Fields(string(license)); len(f) < 5 || strings.Join(f[:5], " ") != "Apache License Version 2.0, January" {
		problems = append(problems, "LICENSE: not the Apache License, Version 2.0")
	}
	text, err := os.ReadFile(filepath.Join(root, "NOTICE"))
	if err != nil {
		return nil, err
	}
	adapted := ParseNotice(text)
	if len(adapted) == 0 {
		problems = append(problems, "NOTICE: lists no adapted file (lines of two spaces, the file, module@version and the upstream file)")
	}
	seen := map[string]bool{}
	for _, a := range adapted {
		seen[a.Path] = true
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(a.Path)))
		if errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, a.Path+": listed in NOTICE, but there is no such file")
			continue
		}
		if err != nil {
			return nil, err
		}
		head := kubernetesHeader.Find(src)
		if head == nil {
			problems = append(problems, fmt.Sprintf("%s: adapted from %s@%s %s, but it does not start with the upstream copyright and license header", a.Path, a.Module, a.Version, a.Source))
			continue
		}
		if modCache == "" {
			continue
		}
		up, err := os.ReadFile(filepath.Join(modCache, escape(a.Module)+"@"+a.Version, filepath.FromSlash(a.Source)))
		if err != nil {
			continue // not downloaded here: the header's form was checked above
		}
		if uhead := kubernetesHeader.Find(up); uhead != nil && !bytes.Equal(head, uhead) {
			problems = append(problems, fmt.Sprintf("%s: its header says %q, %s@%s %s says %q", a.Path, copyrightLine(head), a.Module, a.Version, a.Source, copyrightLine(uhead)))
		}
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "vendor" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if seen[rel] {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range upstreamMarkers {
			if bytes.Contains(src, []byte(m)) {
				problems = append(problems, fmt.Sprintf("%s: carries %q but NOTICE does not list it as adapted", rel, m))
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(problems)
	return problems, nil
}

func copyrightLine(header []byte) string {
	return strings.Split(string(header), "\n")[1]
}

// escape is the module cache's case encoding of a module path (golang.org/x/mod/module
// EscapePath): an upper-case letter becomes '!' and its lower case.
func escape(path string) string {
	var b strings.Builder
	for _, r := range path {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
