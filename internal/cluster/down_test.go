package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestLeftovers leaves one of each thing a cluster makes (a process it started, a process
// naming its folder, a cgroup with a process in it, a network namespace, a link carrying its
// alias, a mount under its folder and one from its tmpfs source, the folder) and checks that
// Leftovers names every one; then removes them and checks that it names none. Without it, the
// teardown check TestCluster ends with could pass on a machine where something was left.
func TestLeftovers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces, links, cgroups and mounts")
	}
	for _, tool := range []string{"ip", "mount", "umount", "sleep"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	name := fmt.Sprintf("lt%d", os.Getpid())
	tag := "lgc-" + name
	dir := filepath.Join(os.TempDir(), tag)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sh := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
	}

	// A process Up would have recorded, which also names the folder in its command line.
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	sleeper := &exec.Cmd{Path: sleep, Args: []string{filepath.Join(dir, "held"), "120"}}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	stopSleeper := func() {
		_ = sleeper.Process.Kill()
		_ = sleeper.Wait()
	}
	t.Cleanup(stopSleeper)
	start, err := startTime(sleeper.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	procs := []*Proc{{Name: "sleeper", PID: sleeper.Process.Pid, Start: start}}

	// A cgroup of the cluster's tree, with the process in it (cpuset's would need cpus and mems
	// written first).
	hs, err := hierarchies()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(hs, func(h hierarchy) bool { return !slices.Contains(h.controllers, "cpuset") })
	if i < 0 {
		t.Skip("no cgroup hierarchy mounted")
	}
	cg := filepath.Join(hs[i].mount, tag)
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopSleeper(); _ = os.Remove(cg) }) // only an empty cgroup is removed
	if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(sleeper.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}

	netns := tag + "-node1"
	sh("ip", "netns", "add", netns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", netns).Run() })
	// A bridge (the kernel may lack the dummy driver), down, with no address and no port: nothing
	// is sent.
	link := fmt.Sprintf("lgt%d", os.Getpid()%1_000_000)
	sh("ip", "link", "add", link, "type", "bridge")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "delete", link).Run() })
	sh("ip", "link", "set", link, "alias", tag)
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	sh("mount", "-t", "tmpfs", "-o", "size=1m", tag, mnt)
	t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })

	err = Leftovers(name, dir, procs)
	if err == nil {
		t.Fatal("Leftovers found nothing")
	}
	for _, want := range []string{
		fmt.Sprintf("process sleeper (pid %d) still runs", sleeper.Process.Pid),
		fmt.Sprintf("process %d names %s", sleeper.Process.Pid, dir),
		"cgroup " + cg,
		"network namespace " + netns,
		"link: ",
		"mount " + mnt,
		"folder " + dir,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Leftovers does not say %q:\n%v", want, err)
		}
	}
	// The state is the kernel's (/proc/PID/stat): a sleeper just started on a busy machine may
	// not be asleep yet (R instead of S; a cold CI run saw R).
	inCgroups := regexp.MustCompile(fmt.Sprintf(`process %d \(state [A-Z]\) is in the cluster's cgroups`, sleeper.Process.Pid))
	if !inCgroups.MatchString(err.Error()) {
		t.Errorf("Leftovers does not match %q:\n%v", inCgroups, err)
	}
	if n := strings.Count(err.Error(), "mount "+mnt); n != 2 {
		t.Errorf("Leftovers names the mount %d times, want 2 (under the folder, from the source %s):\n%v", n, tag, err)
	}

	stopSleeper()
	for _, args := range [][]string{{"umount", mnt}, {"ip", "link", "delete", link}, {"ip", "netns", "delete", netns}} {
		sh(args...)
	}
	if err := os.Remove(cg); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := Leftovers(name, dir, procs); err != nil {
		t.Errorf("after removing everything: %v", err)
	}
}
