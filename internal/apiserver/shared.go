package apiserver

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
)

// Shared is one server for all tests of a package, started by the first test that asks for it
// (so `go test -run` of tests that need none pays nothing) and stopped when the package's
// tests are done:
//
//	var server = apiserver.NewShared()
//
//	func TestMain(m *testing.M) {
//		ctrllog.SetLogger(logr.Discard()) // or a real logger; see below
//		os.Exit(server.Run(m))
//	}
//
//	func TestSomething(t *testing.T) {
//		s := server.Get(t)
//		ns := s.Namespace(t)
//		...
//	}
//
// envtest logs through controller-runtime's global logger. If nobody sets it, a test binary
// that runs longer than 30 s prints a "log.SetLogger(...) was never called" stack trace; this
// package does not set it for you, because the first SetLogger wins and a controller's tests
// may want a real one.
type Shared struct {
	opts []Option

	mu      sync.Mutex
	inMain  bool
	started bool
	srv     *Server
	err     error
}

// NewShared returns a Shared that will start its server with these options.
func NewShared(opts ...Option) *Shared { return &Shared{opts: opts} }

// Run runs the package's tests and then stops the server if one was started. Call it from
// TestMain and pass its result to os.Exit.
func (sh *Shared) Run(m *testing.M) int {
	sh.mu.Lock()
	sh.inMain = true
	sh.mu.Unlock()

	code := m.Run()

	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.srv != nil {
		if err := sh.srv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "apiserver: stop shared server: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Get returns the shared server, starting it on first use. It skips the test when no binaries
// are configured; when the server failed to start, every test that asks for it fails with the
// same error instead of trying again.
func (sh *Shared) Get(t testing.TB) *Server {
	t.Helper()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !sh.inMain {
		// Without Run nobody would stop the server, and kube-apiserver and etcd would
		// outlive the test binary.
		t.Fatal("apiserver: Shared.Get needs Shared.Run to be called from TestMain")
	}
	if !sh.started {
		sh.started = true
		sh.srv, sh.err = Launch(sh.opts...)
	}
	if errors.Is(sh.err, ErrNoAssets) {
		t.Skip(SkipMessage)
	}
	if sh.err != nil {
		t.Fatal(sh.err)
	}
	return sh.srv
}
