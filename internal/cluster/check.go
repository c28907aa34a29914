package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrUnsupported marks what this machine lacks for a cluster: tests skip on it.
var ErrUnsupported = errors.New("cluster: cannot run here")

// v1Controllers are the cgroup v1 controllers kubelet (cgroupfs driver) and runc need, each
// mounted as a hierarchy of its own or with others.
var v1Controllers = []string{"cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "pids"}

// Supported says what this machine lacks to run a cluster, naming each missing piece, or nil.
func Supported(mode ProxyMode) error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (kubelet, containerd and runc need it)")
	}
	if err := cgroupsUsable(); err != nil {
		missing = append(missing, err.Error())
	}
	if !hasFilesystem("overlay") {
		missing = append(missing, "overlayfs (containerd's snapshotter; /proc/filesystems has no overlay: modprobe overlay)")
	}
	tools := map[string]string{"ip": "iproute2", "nsenter": "util-linux", "unshare": "util-linux", "mount": "mount",
		"iptables": "iptables", "iptables-restore": "iptables", "sh": "dash"}
	if mode == ProxyNFTables {
		tools["nft"] = "nftables"
	}
	for tool, pkg := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, fmt.Sprintf("%s (Debian: %s)", tool, pkg))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: missing %s", ErrUnsupported, strings.Join(missing, "; "))
	}
	return nil
}

func hasFilesystem(fs string) bool {
	f, err := os.Open("/proc/filesystems")
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 0 && fields[len(fields)-1] == fs {
			return true
		}
	}
	return false
}

// cgroupsUsable: either every v1 controller kubelet needs is mounted and writable here, or the
// unified hierarchy is the only one and this process may create a child in it with those
// controllers delegated (cpu, memory, pids in the parent's cgroup.subtree_control or
// enabled by us).
func cgroupsUsable() error {
	hs, err := hierarchies()
	if err != nil {
		return fmt.Errorf("cgroups (%v)", err)
	}
	have := map[string]string{}
	var unified string
	for _, h := range hs {
		if h.v2 {
			unified = h.mount
			continue
		}
		for _, c := range h.controllers {
			have[c] = h.mount
		}
	}
	var lacking []string
	for _, c := range v1Controllers {
		if have[c] == "" {
			lacking = append(lacking, c)
		}
	}
	if len(lacking) == 0 {
		for _, c := range v1Controllers {
			if err := writable(have[c]); err != nil {
				return fmt.Errorf("cgroup v1 %s hierarchy not writable (%v)", c, err)
			}
		}
		return nil
	}
	if len(lacking) < len(v1Controllers) || unified == "" {
		return fmt.Errorf("cgroup v1 controllers %s (and no usable unified hierarchy)", strings.Join(lacking, ", "))
	}
	// Only the unified hierarchy: it must offer the controllers and let us delegate them.
	ctrl, err := os.ReadFile(filepath.Join(unified, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("unified cgroups: %v", err)
	}
	for _, c := range []string{"cpu", "memory", "pids"} {
		if !strings.Contains(" "+strings.TrimSpace(string(ctrl))+" ", " "+c+" ") {
			return fmt.Errorf("unified cgroups without the %s controller delegated to %s", c, unified)
		}
	}
	if err := writable(unified); err != nil {
		return fmt.Errorf("unified cgroups without delegation (%s: %v)", unified, err)
	}
	return nil
}

// writable makes and removes a child cgroup.
func writable(dir string) error {
	probe := filepath.Join(dir, fmt.Sprintf("lgc-probe-%d", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return err
	}
	return os.Remove(probe)
}
