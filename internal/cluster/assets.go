package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Environment variables the tests read.
const (
	// EnvAssets names the folder hack/cluster-assets.sh prints: bin/ with every binary,
	// cni/ with the CNI plugins, images.tar with the base images.
	EnvAssets = "LOOPGUARD_CLUSTER_ASSETS"
	// EnvRequired, when "1", turns every skip of a cluster test into a failure: CI sets it, so
	// a machine that cannot run the cluster is a red run there, not a quiet skip.
	EnvRequired = "LOOPGUARD_CLUSTER_REQUIRED"
)

// Assets is the folder hack/cluster-assets.sh fills.
type Assets struct{ Dir string }

// Binaries every cluster needs from Assets.Dir/bin.
var binaries = []string{
	"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
	"kubelet", "kube-proxy", "containerd", "containerd-shim-runc-v2", "ctr", "runc", "coredns",
}

// cniPlugins the node's network configuration uses (containerd adds loopback itself).
var cniPlugins = []string{"bridge", "host-local", "loopback"}

// Bin is the path of a binary.
func (a Assets) Bin(name string) string { return filepath.Join(a.Dir, "bin", name) }

// CNIDir holds the CNI plugins.
func (a Assets) CNIDir() string { return filepath.Join(a.Dir, "cni") }

// Images is the tarball of the base images (pause, backend, coredns).
func (a Assets) Images() string { return filepath.Join(a.Dir, "images.tar") }

// ImagesTool is hack/images built: it writes more images (the controller's, the CLI's).
func (a Assets) ImagesTool() string { return filepath.Join(a.Dir, "bin", "images") }

// Check says which asset is missing.
func (a Assets) Check() error {
	if a.Dir == "" {
		return fmt.Errorf("%w: %s not set; run `export %s=\"$(hack/cluster-assets.sh)\"`", ErrUnsupported, EnvAssets, EnvAssets)
	}
	var errs []error
	need := func(p string) {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			errs = append(errs, fmt.Errorf("missing %s", p))
		}
	}
	for _, b := range binaries {
		need(a.Bin(b))
	}
	for _, p := range cniPlugins {
		need(filepath.Join(a.CNIDir(), p))
	}
	need(a.Images())
	need(a.ImagesTool())
	if len(errs) > 0 {
		return fmt.Errorf("cluster assets in %s incomplete (run hack/cluster-assets.sh): %w", a.Dir, errors.Join(errs...))
	}
	return nil
}

// AssetsFromEnv is the folder EnvAssets names.
func AssetsFromEnv() Assets { return Assets{Dir: os.Getenv(EnvAssets)} }

// Require skips the test, or fails it where EnvRequired is set, when a cluster cannot be
// brought up here; it returns the assets to use.
func Require(t testing.TB, mode ProxyMode) Assets {
	t.Helper()
	a := AssetsFromEnv()
	err := a.Check()
	if err == nil {
		err = Supported(mode)
	}
	if err != nil {
		if os.Getenv(EnvRequired) == "1" {
			t.Fatalf("%v (%s=1: this machine must run the cluster tests)", err, EnvRequired)
		}
		t.Skip(err)
	}
	return a
}
