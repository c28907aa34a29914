package netlab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// How code runs "inside" a namespace.
//
// Everything that must happen in a lab namespace — creating a socket, writing a
// /proc/sys/net sysctl, starting ip or iptables-restore — runs in inNetns: a fresh goroutine
// locks itself to its OS thread, setns(2)es that thread into the namespace, runs the function,
// and exits WITHOUT unlocking. The Go runtime (1.10 and later) then terminates the thread
// instead of reusing it, so no other goroutine can ever run in a lab namespace by accident,
// and the runtime never clones new threads from one (it uses its template thread for that).
//
// Why this is reliable enough to prefer over re-executing the binary per role under
// `ip netns exec`:
//   - a socket belongs to the namespace of the thread that created it, for its whole life, so
//     a listener or a dialed connection made in inNetns can be used from any goroutine;
//     net.Dialer and net.Listen create the socket synchronously in the calling goroutine;
//   - /proc/sys/net resolves against the calling thread's network namespace, so sysctl
//     writes from the locked thread hit the lab namespace;
//   - a child process forked from the locked thread inherits its network namespace, so ip and
//     iptables-restore need no `ip netns exec` (which would also remount /sys);
//   - no process start-up per server, client or proxy: a lab is built and torn down in tens of
//     milliseconds, results come back as Go values, and a failing case cannot leave orphan
//     processes behind.
func inNetns(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: see above.
		fd, err := unix.Open(ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("open namespace %s: %w", ns, err)
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// createNetns makes a new network namespace pinned at path, the way `ip netns add` does but
// without a process: unshare on a throw-away thread, then bind-mount that thread's namespace
// onto the pin. The sandbox's mounts are private, so the pin never reaches the host.
func createNetns(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return fmt.Errorf("create namespace pin: %w", err)
	}
	f.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread is in the new namespace; let it die.
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare network namespace: %w", err)
			return
		}
		if err := unix.Mount("/proc/thread-self/ns/net", path, "", unix.MS_BIND, ""); err != nil {
			errc <- fmt.Errorf("pin network namespace at %s: %w", path, err)
			return
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// deleteNetns unpins a namespace; the kernel destroys it (and its veth ends) once nothing
// else holds it.
func deleteNetns(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
		return fmt.Errorf("unpin %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// run starts a program inside ns ("" = the sandbox's own namespace) with stdin and returns
// its combined output; the error quotes the output so a failed setup says why.
func run(ctx context.Context, ns string, stdin string, name string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &out, &out
	// Deterministic messages, whatever the caller's locale.
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var err error
	if ns == "" {
		err = cmd.Run()
	} else {
		err = inNetns(ns, cmd.Run)
	}
	if err != nil {
		where := "sandbox"
		if ns != "" {
			where = filepath.Base(ns)
		}
		if stdin != "" {
			return out.String(), fmt.Errorf("%s %s in %s: %v: %s\ninput:\n%s", name, strings.Join(args, " "), where, err, strings.TrimSpace(out.String()), stdin)
		}
		return out.String(), fmt.Errorf("%s %s in %s: %v: %s", name, strings.Join(args, " "), where, err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// sysctl is one /proc/sys value; key uses dots, like sysctl(8) ("net.ipv4.ip_forward").
type sysctl struct{ key, value string }

// writeSysctls writes settings inside ns from one locked thread.
func writeSysctls(ns string, settings []sysctl) error {
	return inNetns(ns, func() error {
		for _, s := range settings {
			path := "/proc/sys/" + strings.ReplaceAll(s.key, ".", "/")
			if err := os.WriteFile(path, []byte(s.value), 0); err != nil {
				return fmt.Errorf("sysctl %s=%s in %s: %w", s.key, s.value, filepath.Base(ns), err)
			}
		}
		return nil
	})
}
