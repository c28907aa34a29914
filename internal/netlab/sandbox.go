package netlab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// sandboxEnv marks the re-executed test binary that runs inside the sandbox. Its value is the
// parent's namespace identities, so a child can prove it really is in new ones.
const sandboxEnv = "LOOPGUARD_NETLAB_SANDBOX"

// runDir is where network namespaces are pinned. It is the private tmpfs the sandbox mounts
// on /run, so `ip netns`/`ip -n` and the iptables lock (/run/xtables.lock) work without root
// and nothing lands in the host's /run (docs/sources.md#kernel-lab).
const runDir = "/run"

// netnsDir is where `ip` looks up namespace names.
const netnsDir = runDir + "/netns"

// sandboxErr says why labs cannot be built in this process, nil when they can. It is
// package state on purpose: being inside the sandbox is a fact about the whole process (its
// namespaces), decided once by Main before any test runs and only read afterwards.
var sandboxErr = errors.New("netlab: not inside the sandbox (call netlab.Main from TestMain)")

// Main runs a test binary's tests inside the sandbox and returns the exit code for os.Exit:
//
//	func TestMain(m *testing.M) { os.Exit(netlab.Main(m)) }
//
// Outside the sandbox it re-executes the test binary, with the same arguments, in fresh
// mount and network namespaces (and a user namespace mapping the caller to root when not
// already root), then relays its exit code. Inside, it makes every mount private, mounts a
// tmpfs on /run and runs the tests. If the sandbox cannot be made — user namespaces not
// allowed, ip or iptables-restore missing — the tests run where they are and Require skips
// them with the reason; nothing touches the host network either way.
//
// m is a *testing.M, or anything that runs the tests the same way (a harness built on netlab
// may wrap m.Run to stop what it started once the tests are done, inside the sandbox).
func Main(m interface{ Run() int }) int {
	if parent, ok := os.LookupEnv(sandboxEnv); ok {
		sandboxErr = enterSandbox(parent)
		return m.Run()
	}
	if err := missingTools(); err != nil {
		sandboxErr = err
		return m.Run()
	}
	code, err := reexecInSandbox()
	if err != nil {
		sandboxErr = err
		return m.Run()
	}
	return code
}

// Require skips the test, with the reason, when labs cannot be built here.
func Require(t testing.TB) {
	t.Helper()
	if sandboxErr != nil {
		t.Skipf("netlab: no sandbox: %v", sandboxErr)
	}
}

// Available reports why labs cannot be built in this process, or nil.
func Available() error { return sandboxErr }

// IPVSAvailable reports why InterceptIPVS cannot run here, or nil. IPVS is missing on the
// machine docs/sources.md#how-it-is-tested was measured on ("Can't initialize ipvs: Protocol not available"), so
// real-IPVS cases must skip rather than fail.
func IPVSAvailable() error {
	if sandboxErr != nil {
		return sandboxErr
	}
	// /proc/net is the reader's network namespace; the module's file appears in every
	// namespace once IPVS is loaded or built in.
	if _, err := os.Stat("/proc/net/ip_vs"); err != nil {
		return fmt.Errorf("no IPVS in this kernel (/proc/net/ip_vs: %w)", err)
	}
	if _, err := exec.LookPath("ipvsadm"); err != nil {
		return fmt.Errorf("ipvsadm not installed: %w", err)
	}
	return nil
}

// missingTools names the programs the harness drives that are not installed.
func missingTools() error {
	var errs []error
	for _, tool := range []string{"ip", "iptables-restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			errs = append(errs, fmt.Errorf("%s not installed (Debian: %s): %w", tool, debianPackage[tool], err))
		}
	}
	return errors.Join(errs...)
}

var debianPackage = map[string]string{"ip": "iproute2", "iptables-restore": "iptables", "conntrack": "conntrack", "ipvsadm": "ipvsadm"}

// reexecInSandbox runs this binary again in new namespaces and returns its exit code. An error
// means the child could not be started at all (namespaces not allowed); a child that started
// and failed is a failing run, not an error.
func reexecInSandbox() (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("find the test binary to re-execute: %w", err)
	}
	// Pdeathsig fires when the creating thread exits, not the process; pin it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	// Root gets plain mount+network namespaces. A root without CAP_SYS_ADMIN (an unprivileged
	// container) gets EPERM there and may still create a user namespace, like everyone else.
	userns := os.Geteuid() != 0
	cmd := sandboxCommand(self, userns)
	err = cmd.Start()
	if err != nil && !userns && errors.Is(err, syscall.EPERM) {
		cmd = sandboxCommand(self, true)
		err = cmd.Start()
	}
	if err != nil {
		return 0, fmt.Errorf("create mount/network namespaces%s: %w", namespaceHint(userns, err), err)
	}

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGQUIT)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	signal.Stop(sigs)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			fmt.Fprintf(os.Stderr, "netlab: sandboxed test binary killed by %v\n", ws.Signal())
			return 2, nil
		}
		return exit.ExitCode(), nil
	default:
		fmt.Fprintf(os.Stderr, "netlab: sandboxed test binary: %v\n", err)
		return 2, nil
	}
}

// sandboxCommand is this binary, same arguments, marked as the sandboxed child, to be started
// in new mount and network namespaces (and a user namespace when userns).
func sandboxCommand(self string, userns bool) *exec.Cmd {
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), sandboxEnv+"="+namespaceIDs())
	attr := &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWNET,
		// The child must not outlive us (go test's own timeout kills only this process).
		Pdeathsig: syscall.SIGKILL,
	}
	if userns {
		// Map the caller to root inside a new user namespace: enough for ip, iptables and
		// conntrack in namespaces it owns (docs/sources.md#kernel-lab, `unshare -rnm`). setgroups must be
		// denied before an unprivileged gid_map write.
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
	cmd.SysProcAttr = attr
	return cmd
}

// namespaceHint turns the kernel's terse errno into the likely cause.
func namespaceHint(userns bool, err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return " (user namespace limit reached: sysctl user.max_user_namespaces)"
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		if userns {
			return " (unprivileged user namespaces are not allowed here: kernel.unprivileged_userns_clone, an AppArmor/seccomp policy, or a container runtime forbids them)"
		}
		return " (not permitted)"
	case errors.Is(err, syscall.EINVAL):
		return " (kernel without user or network namespaces)"
	}
	return ""
}

// namespaceIDs identifies this process's mount and network namespaces ("mnt:[…] net:[…]").
func namespaceIDs() string {
	var ids []string
	for _, ns := range []string{"mnt", "net"} {
		id, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			id = ns + ":unknown"
		}
		ids = append(ids, id)
	}
	return strings.Join(ids, " ")
}

// checkNewNamespaces accepts only a marker that names both of the parent's namespaces and a
// process whose mount and network namespaces both differ from them. Anything else (a marker
// like "1", an unreadable namespace) is refused: the cost of a wrong yes is the host's /run.
func checkNewNamespaces(parent, mine string) error {
	ids := func(s string) map[string]string {
		m := map[string]string{}
		for _, f := range strings.Fields(s) {
			kind, _, ok := strings.Cut(f, ":[")
			if ok && strings.HasSuffix(f, "]") && (kind == "mnt" || kind == "net") {
				m[kind] = f
			}
		}
		return m
	}
	p, m := ids(parent), ids(mine)
	for _, kind := range []string{"mnt", "net"} {
		if p[kind] == "" || m[kind] == "" || p[kind] == m[kind] {
			return fmt.Errorf("%s=%q is set, but this process (%s) cannot be shown to be in new mount and network namespaces: refusing to mount over %s", sandboxEnv, parent, mine, runDir)
		}
	}
	return nil
}

// enterSandbox finishes the sandbox from inside the new namespaces: private mounts, a tmpfs on
// /run, a directory for namespace pins, and a working iptables. parent is the re-executing
// process's namespaceIDs.
func enterSandbox(parent string) error {
	// Mounting over /run is only harmless in a mount namespace of our own. Should the marker
	// leak into a process that shares its namespaces with the host (an exported variable, a
	// test binary started by hand), refuse rather than shadow the host's /run.
	if err := checkNewNamespaces(parent, namespaceIDs()); err != nil {
		return err
	}
	// Without this, a shared / (systemd's default) would propagate the /run tmpfs and every
	// namespace pin back to the host's mount namespace.
	if err := syscall.Mount("none", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := syscall.Mount("netlab", runDir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", runDir, err)
	}
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		return err
	}
	// Prove iptables works here (nf_tables or legacy backend) before any test relies on it.
	probe := exec.Command("iptables-restore", "--test")
	probe.Stdin = strings.NewReader("*nat\nCOMMIT\n")
	if out, err := probe.CombinedOutput(); err != nil {
		return fmt.Errorf("iptables-restore does not work in the sandbox: %v: %s", err, out)
	}
	return nil
}
