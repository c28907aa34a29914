package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Down takes the cluster down: the processes Up started, by PID, in reverse order (kubelets
// before their containers' runtime, the API server last); every process left in the cluster's
// cgroups (shims, containers); the cgroups; the network namespaces (and with them every link
// and every rule); and the state folder, once no mount is left under it. It goes on after a
// failed step and returns every error.
func (c *Cluster) Down() error {
	var errs []error
	start := time.Now()
	c.logf("taking down")
	procs := slices.Clone(c.state.Procs)
	slices.Reverse(procs)
	for _, p := range procs {
		// Short graces: nothing of this cluster needs to outlive it, and each component stops
		// within a second or two of SIGTERM.
		if err := p.stop(3 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if c.cg != nil {
		if err := c.killTree(); err != nil {
			errs = append(errs, err)
		}
		if err := c.cg.remove(); err != nil {
			errs = append(errs, err)
		}
		// Killed processes whose parent died first (a container under its shim) stay zombies
		// until the machine's init reaps them, still naming the cgroup they were in.
		deadline := time.Now().Add(10 * time.Second)
		for len(inCgroups(c.cg.Name)) > 0 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, ns := range c.state.Netns {
		if _, err := os.Stat(filepath.Join(netnsDir, ns)); err != nil {
			continue
		}
		if _, err := run(ctx, "", "ip", "netns", "delete", ns); err != nil {
			errs = append(errs, err)
		}
	}
	if c.state.Dir != "" {
		if m := mountsUnder(c.state.Dir); len(m) > 0 {
			// Removing a folder that still has something mounted below it would remove what
			// is mounted (a host path bound into a Pod): refuse.
			errs = append(errs, fmt.Errorf("not removing %s: still mounted below it: %v", c.state.Dir, m))
		} else if err := os.RemoveAll(c.state.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	c.logf("down in %s", time.Since(start).Round(100*time.Millisecond))
	return errors.Join(errs...)
}

// eachMount calls fn with every line of /proc/<pid>/mountinfo in every mount namespace on the
// machine (one process per namespace), with the namespace and the pid read.
func eachMount(fn func(line, ns, pid string)) {
	seen := map[string]bool{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		ns, err := os.Readlink(filepath.Join(p, "ns", "mnt"))
		if err != nil || seen[ns] {
			continue
		}
		seen[ns] = true
		b, err := os.ReadFile(filepath.Join(p, "mountinfo"))
		if err != nil {
			continue
		}
		s := bufio.NewScanner(bytes.NewReader(b))
		for s.Scan() {
			fn(s.Text(), ns, filepath.Base(p))
		}
	}
}

// mountsUnder lists the mount points at or below dir in any mount namespace on the machine.
func mountsUnder(dir string) []string {
	var found []string
	eachMount(func(line, ns, pid string) {
		f := strings.Fields(line)
		if len(f) < 5 {
			return
		}
		if mp := unescapeMount(f[4]); mp == dir || strings.HasPrefix(mp, dir+"/") {
			found = append(found, fmt.Sprintf("%s (mount namespace %s, seen by pid %s)", mp, ns, pid))
		}
	})
	return found
}

// Leftovers reports everything of a cluster named name with state folder dir that is still
// on the machine after Down: processes (started by it, in its cgroups, or naming its folder),
// cgroups, network namespaces, links carrying its alias, mounts under its folder or from its
// tmpfs mounts (in any mount namespace), and the folder itself. nil means nothing is left.
// procs are the processes the cluster's state listed (their PIDs and start times).
func Leftovers(name, dir string, procs []*Proc) error {
	var left []string
	for _, p := range procs {
		if p.alive() {
			left = append(left, fmt.Sprintf("process %s (pid %d) still runs", p.Name, p.PID))
		}
	}
	tag := "lgc-" + name
	all, _ := filepath.Glob("/proc/[0-9]*")
	self := strconv.Itoa(os.Getpid())
	for _, p := range all {
		pid := filepath.Base(p)
		if pid == self {
			continue
		}
		if cmd, err := os.ReadFile(filepath.Join(p, "cmdline")); err == nil && bytes.Contains(cmd, []byte(dir+"/")) {
			left = append(left, fmt.Sprintf("process %s names %s: %q", pid, dir, strings.ReplaceAll(string(cmd), "\x00", " ")))
		}
	}
	for _, pid := range inCgroups(tag) {
		left = append(left, fmt.Sprintf("process %d (state %s) is in the cluster's cgroups", pid, procState(pid)))
	}
	for _, d := range leftoverCgroups(tag) {
		left = append(left, "cgroup "+d)
	}
	pins, _ := filepath.Glob(filepath.Join(netnsDir, tag+"-*"))
	for _, p := range pins {
		left = append(left, "network namespace "+filepath.Base(p))
	}
	if out, err := exec.Command("ip", "-o", "-d", "link", "show").CombinedOutput(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "alias "+tag+" ") || strings.HasSuffix(strings.TrimSpace(line), "alias "+tag) {
				left = append(left, "link: "+strings.TrimSpace(line))
			}
		}
	}
	for _, m := range mountsUnder(dir) {
		left = append(left, "mount "+m)
	}
	for _, m := range mountsFrom(tag) {
		left = append(left, "mount "+m)
	}
	if _, err := os.Stat(dir); err == nil {
		left = append(left, "folder "+dir)
	}
	if len(left) > 0 {
		return fmt.Errorf("cluster %s left %d things behind:\n  %s", name, len(left), strings.Join(left, "\n  "))
	}
	return nil
}

// inCgroups lists the processes on the machine (zombies too) whose /proc/PID/cgroup names a
// cgroup of the tree tag, in any hierarchy.
func inCgroups(tag string) []int {
	var pids []int
	all, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range all {
		cg, err := os.ReadFile(filepath.Join(p, "cgroup"))
		if err != nil || !inTree(cg, tag) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// inTree says whether a /proc/PID/cgroup (hierarchy-ID:controllers:path lines) places the
// process in the cgroup tag or below it, in any hierarchy.
func inTree(procCgroup []byte, tag string) bool {
	for _, line := range bytes.Split(procCgroup, []byte("\n")) {
		f := bytes.SplitN(line, []byte(":"), 3)
		if len(f) == 3 && bytes.Contains(append(f[2], '/'), []byte("/"+tag+"/")) {
			return true
		}
	}
	return false
}

// mountsFrom lists mounts whose source is tag (the nodes' private tmpfs mounts), in any mount
// namespace.
func mountsFrom(tag string) []string {
	var found []string
	eachMount(func(line, ns, _ string) {
		_, post, ok := strings.Cut(line, " - ")
		if f := strings.Fields(post); ok && len(f) >= 2 && f[1] == tag {
			if pre := strings.Fields(line); len(pre) >= 5 {
				found = append(found, fmt.Sprintf("%s (mount namespace %s)", pre[4], ns))
			}
		}
	})
	return found
}

// Procs are the processes Up started, for Leftovers.
func (c *Cluster) Procs() []*Proc { return slices.Clone(c.state.Procs) }

// Enter is nsenter's arguments (without the command) that enter where: "router" (the router
// namespace: the control plane and the load balancers) or a node's name (its network and mount
// namespaces).
func (c *Cluster) Enter(where string) []string {
	if where == "router" {
		return []string{"--net=" + c.RouterNetns(), "--"}
	}
	pid, ok := c.state.Holders[where]
	if !ok {
		pid = -1 // nsenter refuses it
	}
	return []string{"--target", strconv.Itoa(pid), "--net", "--mount", "--"}
}

// Exec runs argv where (see Enter) and returns the combined output.
func (c *Cluster) Exec(ctx context.Context, where string, argv ...string) (string, error) {
	if _, ok := c.state.Holders[where]; where != "router" && !ok {
		return "", fmt.Errorf("cluster %s: no node %q", c.state.Name, where)
	}
	return run(ctx, "", "nsenter", append(c.Enter(where), argv...)...)
}
