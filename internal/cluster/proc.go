package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Proc is one process Up started, as state.json records it: Down finds it again by PID and
// checks the PID still names it (its start time, in clock ticks since boot).
type Proc struct {
	Name  string `json:"name"`
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
	Log   string `json:"log"`
	// done is closed when this process (a child of ours) has been reaped; nil for a process
	// another run of the program started (hack/cluster down).
	done chan struct{}
}

// where a process runs.
type where struct {
	netns  string // a network namespace pin to enter, or ""
	holder int    // a node's holder process whose network and mount namespaces to enter, or 0
}

// start runs argv in the cluster's cgroup rel (joined before it executes, by a shell that
// writes its own PID to cgroup.procs and then execs), inside w, with its output appended to
// logs/<name>.log, in a session of its own so no signal meant for the caller reaches it.
func (c *Cluster) start(name, rel string, w where, env []string, argv ...string) (*Proc, error) {
	logPath := filepath.Join(c.state.Dir, "logs", name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	var enter []string
	switch {
	case w.holder != 0:
		enter = []string{"nsenter", "--target", strconv.Itoa(w.holder), "--net", "--mount", "--"}
	case w.netns != "":
		enter = []string{"nsenter", "--net=" + w.netns, "--"}
	}
	// $0 is the cgroup.procs file; "$@" the command. exec keeps the PID: the PID recorded is
	// the component's own.
	args := append([]string{"-c", `echo $$ > "$0" && exec "$@"`, c.cg.procsFile(rel)}, enter...)
	args = append(args, argv...)
	cmd := exec.Command("/bin/sh", args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(baseEnv(c.cfg.Assets), env...)
	cmd.Dir = c.state.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, PID: cmd.Process.Pid, Log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	p.Start, _ = startTime(p.PID)
	c.state.Procs = append(c.state.Procs, p)
	c.saveState()
	return p, nil
}

// baseEnv is a minimal environment: PATH with the assets first (containerd finds its shim
// there), nothing from the caller that could point a component elsewhere (KUBECONFIG,
// proxies).
func baseEnv(a Assets) []string {
	return []string{
		"PATH=" + filepath.Join(a.Dir, "bin") + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root", "LC_ALL=C",
	}
}

// startTime is field 22 of /proc/PID/stat: when the process started, in clock ticks since boot.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses: fields count after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("unreadable /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	// f[0] is field 3 (state); field 22 is f[19].
	return strconv.ParseUint(f[19], 10, 64)
}

// procState is field 3 of /proc/PID/stat ("Z" for a zombie), "" when gone.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+3 > len(s) {
		return ""
	}
	return s[i+2 : i+3]
}

// alive says whether p still runs as the process Up started (not reaped, not a zombie, and the
// PID not reused by another process).
func (p *Proc) alive() bool {
	if p.done != nil {
		select {
		case <-p.done:
			return false
		default:
		}
	}
	st := procState(p.PID)
	if st == "" || st == "Z" || st == "X" {
		return false
	}
	if p.Start != 0 {
		if now, err := startTime(p.PID); err != nil || now != p.Start {
			return false
		}
	}
	return true
}

// stop sends SIGTERM, waits up to grace, then SIGKILL, and waits until it is gone.
func (p *Proc) stop(grace time.Duration) error {
	if !p.alive() {
		return nil
	}
	_ = syscall.Kill(p.PID, syscall.SIGTERM)
	if p.wait(grace) {
		return nil
	}
	_ = syscall.Kill(p.PID, syscall.SIGKILL)
	if p.wait(10 * time.Second) {
		return nil
	}
	return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.Name, p.PID)
}

func (p *Proc) wait(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for p.alive() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// exited reports a process that should run but does not, with the end of its log.
func (p *Proc) exited() error {
	if p.alive() {
		return nil
	}
	return fmt.Errorf("%s exited; the end of %s:\n%s", p.Name, p.Log, tailFile(p.Log, 25))
}

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// killTree kills every process left in the cluster's cgroups (shims, containers, anything a
// component started and left), by PID: they are the cluster's because they are in its tree.
func (c *Cluster) killTree() error {
	for range 50 {
		pids, err := c.cg.pids()
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	pids, _ := c.cg.pids()
	return errors.New("processes left in the cluster's cgroups after SIGKILL: " + fmt.Sprint(pids))
}
