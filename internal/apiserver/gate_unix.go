//go:build unix

package apiserver

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// startGate lets at most one server per core start at a time on this machine, across all test
// binaries: `go test -p N ./...` runs N packages at once, each perhaps starting a server, and
// CI runs the floor's go test beside make test. Starting is the costly part (~3 s of CPU);
// with more starts than cores each one slows down until envtest's timeout ends it, envtest
// starts it again from scratch (five times), and the retries feed the overload. That is how
// CI failed on two cores with eight test binaries at once (providers/volcengine: "timeout
// waiting for process kube-apiserver to start", five times). A server that has started costs
// little, so only starts are gated, and the start timeout counts from when the slot is held.
//
// The slots are flock(2) locks on files in the temporary directory: the kernel releases a
// lock when its holder exits, however it exits, so a killed test binary frees its slot.
type startGate struct{ f *os.File }

// gateWait bounds how long a start waits for a slot before it goes ahead anyway: a wait that
// long means something holds the locks that is not a starting server.
const gateWait = 10 * time.Minute

// acquireStartSlot returns once this process holds one of the machine's start slots (or the
// wait bound has passed, or the lock files cannot be used), and how long it waited.
func acquireStartSlot() (*startGate, time.Duration) {
	begin := time.Now()
	slots := max(runtime.NumCPU(), 1)
	dir := os.TempDir()
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 250*time.Millisecond) {
		for i := range slots {
			name := filepath.Join(dir, fmt.Sprintf("loopguard-apiserver-start-%d.lock", i))
			f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o666)
			if err != nil {
				// A temporary directory we cannot write to: start ungated rather than fail.
				return &startGate{}, time.Since(begin)
			}
			err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
			if err == nil {
				return &startGate{f: f}, time.Since(begin)
			}
			_ = f.Close()
			if err != unix.EWOULDBLOCK && err != unix.EINTR {
				return &startGate{}, time.Since(begin)
			}
		}
		if time.Since(begin) > gateWait {
			return &startGate{}, time.Since(begin)
		}
		time.Sleep(delay)
	}
}

// release frees the slot; closing the file drops its lock.
func (g *startGate) release() {
	if g.f != nil {
		_ = g.f.Close()
		g.f = nil
	}
}
