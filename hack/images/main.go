package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Image is one image of the spec.
type Image struct {
	Ref        string   `json:"ref"`
	Entrypoint []string `json:"entrypoint"`
	Cmd        []string `json:"cmd,omitempty"`
	User       string   `json:"user,omitempty"`
	Env        []string `json:"env,omitempty"`
	// Files maps a path in the image to a file on this machine; each is written 0755, root-owned.
	Files map[string]string `json:"files"`
	// Dirs are empty directories to create (a mount point, /tmp), mode 1777 for /tmp, else 0755.
	Dirs []string `json:"dirs,omitempty"`
}

func main() {
	spec := flag.String("spec", "", "the JSON spec: a list of images")
	out := flag.String("o", "", "the docker-archive tarball to write")
	flag.Parse()
	if err := run(*spec, *out); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(specPath, out string) error {
	if specPath == "" || out == "" {
		return errors.New("usage: images -spec images.json -o images.tar")
	}
	data, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	var images []Image
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&images); err != nil {
		return fmt.Errorf("%s: %w", specPath, err)
	}
	refs := map[name.Reference]v1.Image{}
	for i, im := range images {
		ref, err := name.NewTag(im.Ref, name.WeakValidation)
		if err != nil {
			return fmt.Errorf("%s: image %d: ref %q: %w", specPath, i, im.Ref, err)
		}
		img, err := build(im)
		if err != nil {
			return fmt.Errorf("%s: image %s: %w", specPath, im.Ref, err)
		}
		refs[ref] = img
	}
	tmp := out + ".partial"
	if err := tarball.MultiRefWriteToFile(tmp, refs); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// epoch is every file's and the image's time, so the same binaries make the same image ID.
var epoch = time.Unix(0, 0).UTC()

func build(im Image) (v1.Image, error) {
	if len(im.Files) == 0 {
		return nil, errors.New("files: none given")
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		b, err := layerTar(im)
		if err != nil {
			return nil, err
		}
		return io.NopCloser(bytes.NewReader(b)), nil
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	if a := os.Getenv("GOARCH"); a != "" {
		cf.Architecture = a
	}
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = im.Entrypoint
	cf.Config.Cmd = im.Cmd
	cf.Config.User = im.User
	cf.Config.Env = append([]string{"PATH=/"}, im.Env...)
	return mutate.ConfigFile(img, cf)
}

// layerTar is the image's one layer: its directories, then its files, sorted, so equal inputs
// give an equal digest.
func layerTar(im Image) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	var addDir func(string) error
	addDir = func(d string) error {
		if d == "/" || d == "." || d == "" || dirs[d] {
			return nil
		}
		if err := addDir(path.Dir(d)); err != nil {
			return err
		}
		dirs[d] = true
		mode := int64(0o755)
		if d == "/tmp" {
			mode = 0o1777
		}
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: mode, ModTime: epoch})
	}
	for _, d := range im.Dirs {
		if !path.IsAbs(d) {
			return nil, fmt.Errorf("dir %q: not absolute", d)
		}
		if err := addDir(path.Clean(d)); err != nil {
			return nil, err
		}
	}
	dsts := make([]string, 0, len(im.Files))
	for dst := range im.Files {
		if !path.IsAbs(dst) {
			return nil, fmt.Errorf("file %q: not absolute", dst)
		}
		dsts = append(dsts, dst)
	}
	sort.Strings(dsts)
	for _, dst := range dsts {
		if err := addDir(path.Dir(path.Clean(dst))); err != nil {
			return nil, err
		}
		data, err := os.ReadFile(im.Files[dst])
		if err != nil {
			return nil, err
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(path.Clean(dst), "/"), Mode: 0o755, Size: int64(len(data)), ModTime: epoch}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
