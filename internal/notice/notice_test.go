package notice

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRepositoryKeepsUpstreamNotices: LICENSE is the Apache License 2.0, every file NOTICE
// lists as adapted from Kubernetes starts with its upstream copyright and license header (the
// very one upstream's file has, when the module cache holds it), and no Go file with upstream's
// copyright is missing from NOTICE.
func TestRepositoryKeepsUpstreamNotices(t *testing.T) {
	root := filepath.Join("..", "..")
	problems, err := Check(root, modCache(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	notice, err := os.ReadFile(filepath.Join(root, "NOTICE"))
	if err != nil {
		t.Fatal(err)
	}
	// The suite wrapped around the decorator is the reason NOTICE exists: it must stay listed.
	var paths []string
	for _, a := range ParseNotice(notice) {
		paths = append(paths, a.Path)
	}
	for _, want := range []string{
		"adapters/cloudprovider/upstreamtest/controller_copy_test.go",
		"adapters/cloudprovider/upstreamtest/controller_test.go",
		"adapters/cloudprovider/upstreamtest/metrics_copy_test.go",
	} {
		if !strings.Contains(strings.Join(paths, "\n")+"\n", want+"\n") {
			t.Errorf("NOTICE does not list %s", want)
		}
	}
}

// modCache is the Go module cache, or "" when there is no go command to ask.
func modCache(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Logf("no module cache to compare headers with upstream's: %v", err)
		return ""
	}
	return strings.TrimSpace(string(out))
}

// header is the upstream boilerplate with a year, built here so that this file carries no
// upstream copyright line itself.
func header(year string) string {
	return "/*\nCopyright " + year + " The Kubernetes " + "Authors." + `

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/
`
}

// TestCheckFails: each way a repository can lose an upstream notice is reported, naming the
// file; a repository that keeps them all reports nothing.
func TestCheckFails(t *testing.T) {
	const license = "\n                                 Apache License\n                           Version 2.0, January 2004\n"
	const notice = "loopguard\n\nAdapted files:\n  pkg/copy_test.go    k8s.io/cloud-provider@v0.37.2 controllers/service/controller.go\n"
	upstream := map[string]string{ // the module cache
		"k8s.io/cloud-provider@v0.37.2/controllers/service/controller.go": header("2015") + "\npackage service\n",
	}
	clean := map[string]string{
		"LICENSE":          license,
		"NOTICE":           notice,
		"pkg/copy_test.go": header("2015") + "\npackage service\n",
		"pkg/own.go":       "package pkg\n",
	}
	tests := map[string]struct {
		change map[string]string // "" deletes the file
		want   []string
	}{
		"every notice kept": {},
		"header removed": {
			change: map[string]string{"pkg/copy_test.go": "package service\n"},
			want:   []string{"pkg/copy_test.go: adapted from k8s.io/cloud-provider@v0.37.2 controllers/service/controller.go, but it does not start with the upstream copyright and license header"},
		},
		"header reworded": {
			change: map[string]string{"pkg/copy_test.go": strings.Replace(header("2015"), "WITHOUT WARRANTIES", "without warranties", 1) + "\npackage service\n"},
			want:   []string{"pkg/copy_test.go: adapted from k8s.io/cloud-provider@v0.37.2 controllers/service/controller.go, but it does not start with the upstream copyright and license header"},
		},
		"year not upstream's": {
			change: map[string]string{"pkg/copy_test.go": header("2026") + "\npackage service\n"},
			want:   []string{`pkg/copy_test.go: its header says "Copyright 2026 The Kubernetes ` + `Authors.", k8s.io/cloud-provider@v0.37.2 controllers/service/controller.go says "Copyright 2015 The Kubernetes ` + `Authors."`},
		},
		"listed file gone": {
			change: map[string]string{"pkg/copy_test.go": ""},
			want:   []string{"pkg/copy_test.go: listed in NOTICE, but there is no such file"},
		},
		"adapted file not listed": {
			change: map[string]string{"cmd/main.go": header("2020") + "\n// Adapted " + "from k8s.io/cloud-provider v0.37.2 sample/basic_main.go.\npackage main\n"},
			want:   []string{`cmd/main.go: carries "The Kubernetes ` + `Authors" but NOTICE does not list it as adapted`},
		},
		"marker without the header, not listed": {
			change: map[string]string{"cmd/main.go": "// Adapted " + "from k8s.io/cloud-provider v0.37.2 sample/basic_main.go.\npackage main\n"},
			want:   []string{`cmd/main.go: carries "// Adapted ` + `from " but NOTICE does not list it as adapted`},
		},
		"NOTICE lists nothing": {
			change: map[string]string{"NOTICE": "loopguard\n"},
			want: []string{
				"NOTICE: lists no adapted file (lines of two spaces, the file, module@version and the upstream file)",
				`pkg/copy_test.go: carries "The Kubernetes ` + `Authors" but NOTICE does not list it as adapted`,
			},
		},
		"another license": {
			change: map[string]string{"LICENSE": "MIT License\n\nCopyright (c) 2026\n"},
			want:   []string{"LICENSE: not the Apache License, Version 2.0"},
		},
		"vendored and hidden folders are not ours": {
			change: map[string]string{"vendor/k8s.io/x/x.go": header("2015"), ".cache/x.go": header("2015")},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			root, cache := t.TempDir(), t.TempDir()
			files := map[string]string{}
			for k, v := range clean {
				files[k] = v
			}
			for k, v := range tc.change {
				files[k] = v
			}
			write(t, root, files)
			write(t, cache, upstream)
			got, err := Check(root, cache)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if content == "" {
			continue
		}
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
