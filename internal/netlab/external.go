package netlab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// What a caller needs to run real components (a service proxy, a load balancer, a backend
// server) inside a lab instead of netlab's own rules and servers: the namespaces' pin paths, a
// way to run code and programs in them, a link from a namespace to the sandbox's own namespace
// (where a control plane can listen), and the client-side packet evidence that Dial uses.

// LBNetns is the pin path of the LB namespace (which is also the VPC router).
func (l *Lab) LBNetns() string { return l.lbNS }

// NodeNetns is the pin path of a node's namespace, "" for an unknown node.
func (l *Lab) NodeNetns(node string) string { return l.nodeNS[node] }

// PodNetns is the pin path of a Pod's namespace, "" for an unknown Pod.
func (l *Lab) PodNetns(pod string) string { return l.podNS[pod] }

// InNetns runs fn on an OS thread that is in network namespace ns (a pin path; "" is the
// sandbox's own namespace) and that dies afterwards, so nothing else ever runs there. Sockets
// fn creates belong to ns for their whole life and may be used from any goroutine.
func InNetns(ns string, fn func() error) error {
	if sandboxErr != nil {
		return fmt.Errorf("netlab: refusing to enter a namespace outside the sandbox: %w", sandboxErr)
	}
	if ns == "" {
		return fn()
	}
	return inNetns(ns, fn)
}

// RunIn runs a program to completion inside ns ("" = the sandbox's own namespace) with stdin,
// and returns its combined output; the error quotes the output.
func RunIn(ctx context.Context, ns, stdin, name string, args ...string) (string, error) {
	if sandboxErr != nil {
		return "", fmt.Errorf("netlab: refusing to run %s outside the sandbox: %w", name, sandboxErr)
	}
	return run(ctx, ns, stdin, name, args...)
}

// StartIn starts cmd inside ns and returns a channel that receives cmd.Wait's result once the
// process has exited. The process is killed (SIGKILL) if the test binary dies first: it is
// started from an OS thread that lives exactly as long as the process, with that thread as its
// parent for PR_SET_PDEATHSIG. cmd.SysProcAttr must be nil.
func StartIn(ns string, cmd *exec.Cmd) (<-chan error, error) {
	if sandboxErr != nil {
		return nil, fmt.Errorf("netlab: refusing to start %s outside the sandbox: %w", cmd.Path, sandboxErr)
	}
	if cmd.SysProcAttr != nil {
		return nil, errors.New("netlab: StartIn sets SysProcAttr itself")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread is in ns and must die with the goroutine (see inNetns).
		if ns != "" {
			fd, err := unix.Open(ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				started <- fmt.Errorf("open namespace %s: %w", ns, err)
				return
			}
			err = unix.Setns(fd, unix.CLONE_NEWNET)
			unix.Close(fd)
			if err != nil {
				started <- fmt.Errorf("setns %s: %w", ns, err)
				return
			}
		}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return done, nil
}

// VethToSandbox joins namespace ns to the sandbox's own namespace with a veth pair: hostIf
// with hostAddr in the sandbox, nsIf with nsAddr in ns, both up. A control plane that listens
// in the sandbox (a kube-apiserver for a real kube-proxy) is then reachable from ns, and from
// nowhere else: the sandbox has no other links.
func VethToSandbox(ctx context.Context, ns, hostIf, nsIf string, hostAddr, nsAddr netip.Prefix) error {
	if sandboxErr != nil {
		return fmt.Errorf("netlab: refusing to add links outside the sandbox: %w", sandboxErr)
	}
	if _, err := run(ctx, "", fmt.Sprintf("link add %s type veth peer name %s netns %s\naddr add %s dev %s\nlink set %s up\n",
		hostIf, nsIf, ns, hostAddr, hostIf, hostIf), "ip", "-batch", "-"); err != nil {
		return err
	}
	_, err := run(ctx, ns, fmt.Sprintf("addr add %s dev %s\nlink set %s up\n", nsAddr, nsIf, nsIf), "ip", "-batch", "-")
	return err
}

// SYNACKWatch captures, on a Pod's eth0, the SYN-ACKs that answer one dial: the evidence
// Lab.Dial rests its verdict on, for a caller with a client of its own.
type SYNACKWatch struct{ w *synAckWatch }

// PacketEvidence is what a Pod's eth0 saw during one dial.
type PacketEvidence struct {
	// Answered: a SYN-ACK came from the dialed address.
	Answered bool
	// Stray are the addresses that answered the SYN in place of the dialed one: the reply
	// that short-circuited on the node (docs/sources.md#loopback).
	Stray []netip.AddrPort
}

// WatchSYNACKs starts capturing in the Pod namespace podNS before a dial from self to dialed.
func WatchSYNACKs(podNS string, self netip.Addr, dialed netip.AddrPort) (*SYNACKWatch, error) {
	if sandboxErr != nil {
		return nil, fmt.Errorf("netlab: refusing to capture outside the sandbox: %w", sandboxErr)
	}
	w, err := watchSynAcks(podNS, self, dialed)
	if err != nil {
		return nil, err
	}
	return &SYNACKWatch{w: w}, nil
}

// Drain reads what was captured and closes the capture.
func (w *SYNACKWatch) Drain() (PacketEvidence, error) {
	ev, err := w.w.drain()
	return PacketEvidence{Answered: ev.answered, Stray: ev.stray}, err
}
