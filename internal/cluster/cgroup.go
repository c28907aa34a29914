package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// hierarchy is one mounted cgroup hierarchy.
type hierarchy struct {
	mount       string
	v2          bool
	controllers []string // v1: its controllers (and name=...); v2: none listed here
}

// hierarchies lists the cgroup hierarchies mounted in this mount namespace.
func hierarchies() ([]hierarchy, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var hs []hierarchy
	s := bufio.NewScanner(f)
	for s.Scan() {
		// id parent major:minor root mount options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(s.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 {
			continue
		}
		switch b[0] {
		case "cgroup2":
			hs = append(hs, hierarchy{mount: unescapeMount(a[4]), v2: true})
		case "cgroup":
			var ctrls []string
			for _, o := range strings.Split(b[2], ",") {
				switch o {
				case "rw", "ro", "relatime", "noatime", "nosuid", "nodev", "noexec", "clone_children", "xattr":
				default:
					ctrls = append(ctrls, o)
				}
			}
			hs = append(hs, hierarchy{mount: unescapeMount(a[4]), controllers: ctrls})
		}
	}
	if len(hs) == 0 {
		return nil, errors.New("no cgroup hierarchy mounted")
	}
	return hs, s.Err()
}

func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// cgroupTree is the cluster's own cgroup, lgc-<name>, in every hierarchy.
type cgroupTree struct {
	Name string `json:"name"`
	// Track is the hierarchy whose cgroup.procs lists every process of the cluster (v1 pids,
	// or the unified hierarchy where there is no v1).
	Track string `json:"track"`
}

func newCgroupTree(name string) (*cgroupTree, error) {
	hs, err := hierarchies()
	if err != nil {
		return nil, err
	}
	t := &cgroupTree{Name: name}
	for _, h := range hs {
		if !h.v2 && slices.Contains(h.controllers, "pids") {
			t.Track = h.mount
		}
	}
	if t.Track == "" {
		for _, h := range hs {
			if h.v2 {
				t.Track = h.mount
			}
		}
	}
	if t.Track == "" {
		return nil, errors.New("no pids or unified cgroup hierarchy to track the cluster's processes in")
	}
	return t, nil
}

// create makes lgc-<name>/rel in every hierarchy (each level: cpuset's cpus and mems copied from
// its parent, which a new v1 cpuset cgroup lacks and a process cannot join without).
func (t *cgroupTree) create(rel string) error {
	hs, err := hierarchies()
	if err != nil {
		return err
	}
	parts := append([]string{t.Name}, strings.Split(strings.Trim(rel, "/"), "/")...)
	for _, h := range hs {
		dir := h.mount
		for _, p := range parts {
			if p == "" {
				continue
			}
			parent := dir
			if h.v2 && h.mount == t.Track {
				// Unified only (no v1 controllers): kubelet and runc need the controllers
				// delegated down to their cgroups. UNCONFIRMED here: the machine this was
				// written on has v1 controllers; Supported names what a unified one lacks.
				if err := delegate(parent); err != nil {
					return err
				}
			}
			dir = filepath.Join(dir, p)
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("cgroup %s: %w", dir, err)
			}
			if !h.v2 && slices.Contains(h.controllers, "cpuset") {
				for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
					cur, _ := os.ReadFile(filepath.Join(dir, f))
					if strings.TrimSpace(string(cur)) != "" {
						continue
					}
					v, err := os.ReadFile(filepath.Join(parent, f))
					if err != nil {
						return err
					}
					if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
						return fmt.Errorf("cgroup %s: %s: %w", dir, f, err)
					}
				}
			}
		}
	}
	return nil
}

// delegate enables, in dir's cgroup.subtree_control, every controller dir offers of those
// kubelet and runc use.
func delegate(dir string) error {
	have, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	var enable []string
	for _, c := range strings.Fields(string(have)) {
		switch c {
		case "cpu", "cpuset", "memory", "pids", "io", "hugetlb":
			enable = append(enable, "+"+c)
		}
	}
	if len(enable) == 0 {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(enable, " ")), 0o644); err != nil {
		return fmt.Errorf("cgroup %s: delegate %v: %w", dir, enable, err)
	}
	return nil
}

// procsFile is where a process writes its PID to join lgc-<name>/rel in the tracking hierarchy.
func (t *cgroupTree) procsFile(rel string) string {
	return filepath.Join(t.Track, t.Name, rel, "cgroup.procs")
}

// root is lgc-<name> in the tracking hierarchy, as kubelet's cgroupRoot names cgroups: from
// the hierarchy's root.
func (t *cgroupTree) path(rel string) string { return "/" + filepath.Join(t.Name, rel) }

// pids lists every process in the tree (the tracking hierarchy).
func (t *cgroupTree) pids() ([]int, error) {
	var pids []int
	root := filepath.Join(t.Track, t.Name)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids, err
}

// remove deletes the tree in every hierarchy, deepest first. A cgroup that still holds a
// process (or whose removal the kernel is still finishing) is retried for a few seconds.
func (t *cgroupTree) remove() error {
	hs, err := hierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range hs {
		root := filepath.Join(h.mount, t.Name)
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		// Deepest first: the walk lists parents before children.
		slices.Reverse(dirs)
		for _, d := range dirs {
			deadline := time.Now().Add(5 * time.Second)
			for {
				err := os.Remove(d)
				if err == nil || errors.Is(err, fs.ErrNotExist) {
					break
				}
				if time.Now().After(deadline) {
					errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	return errors.Join(errs...)
}

// leftoverCgroups lists the tree's folders still present in any hierarchy.
func leftoverCgroups(name string) []string {
	hs, err := hierarchies()
	if err != nil {
		return []string{err.Error()}
	}
	var left []string
	for _, h := range hs {
		d := filepath.Join(h.mount, name)
		if _, err := os.Stat(d); err == nil {
			left = append(left, d)
		}
	}
	return left
}
