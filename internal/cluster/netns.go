package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// netnsDir is where `ip netns add` pins network namespaces.
const netnsDir = "/run/netns"

// inNetns runs fn on a thread that entered the network namespace pinned at path. The thread is
// never unlocked, so the Go runtime ends it afterwards instead of reusing it: no other
// goroutine ever runs in the namespace by accident. A socket keeps the namespace it was
// created in, so a connection dialed here may be used from any goroutine.
func inNetns(path string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("open network namespace %s: %w", path, err)
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			errc <- fmt.Errorf("enter network namespace %s: %w", path, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// DialContext opens TCP connections from inside the network namespace pinned at path.
func dialIn(path string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var conn net.Conn
		err := inNetns(path, func() error {
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			conn = c
			return err
		})
		return conn, err
	}
}

// run runs a command on this machine (not in a namespace) and returns its combined output; the
// error quotes it.
func run(ctx context.Context, stdin string, name string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if err := cmd.Run(); err != nil {
		msg := fmt.Sprintf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
		if stdin != "" {
			msg += "\ninput:\n" + stdin
		}
		return out.String(), fmt.Errorf("%s", msg)
	}
	return out.String(), nil
}
