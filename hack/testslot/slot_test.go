package testslot

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// script is hack/test-slot.sh, from this package's folder.
var script, _ = filepath.Abs("../test-slot.sh")

// job is one run of the script.
type job struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  bytes.Buffer
	done chan error
}

func (j *job) Write(p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.log.Write(p)
}

func (j *job) logged() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.log.String()
}

// start runs the script with the slots in dir, env added, and the shell command sh.
func start(t *testing.T, dir string, env []string, sh string) *job {
	t.Helper()
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skipf("flock(1) (util-linux) is not on PATH: %v", err)
	}
	j := &job{done: make(chan error, 1)}
	j.cmd = exec.Command("bash", script, "sh", "-c", sh)
	j.cmd.Dir = dir
	j.cmd.Env = append(append(os.Environ(), "TEST_SLOTS_DIR="+dir), env...)
	j.cmd.Stdout, j.cmd.Stderr = j, j
	// A process the job leaves running keeps no test waiting on the job's output.
	j.cmd.WaitDelay = time.Second
	if err := j.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { j.done <- j.cmd.Wait() }()
	t.Cleanup(func() {
		_ = j.cmd.Process.Kill()
		<-j.done
	})
	return j
}

// wait waits for the job to end and returns its exit status.
func (j *job) wait(t *testing.T) int {
	t.Helper()
	select {
	case err := <-j.done:
		j.done <- err // for the cleanup
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(20 * time.Second):
		t.Fatalf("the job did not end within 20 s; its log:\n%s", j.logged())
		return -1
	}
}

// eventually polls cond until it holds, failing after 20 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// A job waits while every slot is held, says so, and runs once one is freed; its exit status
// is the command's.
func TestAJobWaitsForAFreeSlot(t *testing.T) {
	dir := t.TempDir()
	one := []string{"TEST_SLOTS=1"}
	a := start(t, dir, one, "touch a-runs; until [ -e release ]; do sleep 0.05; done")
	eventually(t, "the first job runs", func() bool { return exists(filepath.Join(dir, "a-runs")) })
	b := start(t, dir, append(one, "TEST_SLOT_NAME=job b"), "touch b-runs; exit 3")
	eventually(t, "the second job says it waits", func() bool {
		return strings.Contains(b.logged(), "test-slot: job b waits: all 1 test slots are held")
	})
	if exists(filepath.Join(dir, "b-runs")) {
		t.Fatal("the second job ran while the only slot was held")
	}
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if rc := a.wait(t); rc != 0 {
		t.Errorf("the first job exited %d, want 0", rc)
	}
	if rc := b.wait(t); rc != 3 {
		t.Errorf("the second job exited %d, want its command's 3", rc)
	}
	if !exists(filepath.Join(dir, "b-runs")) {
		t.Error("the second job never ran")
	}
	if !strings.Contains(b.logged(), "test-slot: job b waited") {
		t.Errorf("the second job did not log its wait: %q", b.logged())
	}
}

// As many jobs as slots run at once.
func TestJobsUpToTheSlotsRunAtOnce(t *testing.T) {
	dir := t.TempDir()
	two := []string{"TEST_SLOTS=2"}
	var jobs []*job
	for _, name := range []string{"a", "b"} {
		jobs = append(jobs, start(t, dir, two, "touch "+name+"-runs; until [ -e release ]; do sleep 0.05; done"))
	}
	eventually(t, "both jobs run at once", func() bool {
		return exists(filepath.Join(dir, "a-runs")) && exists(filepath.Join(dir, "b-runs"))
	})
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if rc := j.wait(t); rc != 0 {
			t.Errorf("a job exited %d:\n%s", rc, j.logged())
		}
	}
}

// What a job leaves running (a kube-apiserver a killed test binary orphaned) holds no slot.
func TestALeftoverProcessHoldsNoSlot(t *testing.T) {
	dir := t.TempDir()
	one := []string{"TEST_SLOTS=1"}
	a := start(t, dir, one, "sleep 300 >/dev/null 2>&1 & echo $! > leftover")
	if rc := a.wait(t); rc != 0 {
		t.Fatalf("the first job exited %d:\n%s", rc, a.logged())
	}
	pid := 0
	eventually(t, "the leftover's pid", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "leftover"))
		_, err := fmt.Sscan(strings.TrimSpace(string(b)), &pid)
		return err == nil && pid > 0
	})
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the leftover process is not running: %v", err)
	}
	b := start(t, dir, one, "touch b-runs")
	if rc := b.wait(t); rc != 0 || !exists(filepath.Join(dir, "b-runs")) {
		t.Fatalf("with the first job ended and its leftover running, the second exited %d and ran: %v\n%s",
			rc, exists(filepath.Join(dir, "b-runs")), b.logged())
	}
}

// A job may wait for another's end (TEST_SLOT_AFTER), which that one marks whatever its result
// (TEST_SLOT_DONE).
func TestAJobWaitsForAnotherToEnd(t *testing.T) {
	dir := t.TempDir()
	done := filepath.Join(dir, "floor-done")
	later := start(t, dir, []string{"TEST_SLOTS=2", "TEST_SLOT_AFTER=" + done}, "touch later-runs")
	eventually(t, "the later job says what it waits for", func() bool {
		return strings.Contains(later.logged(), "waits for "+done)
	})
	first := start(t, dir, []string{"TEST_SLOTS=2", "TEST_SLOT_DONE=" + done}, "test ! -e later-runs && touch first-ran; exit 1")
	if rc := first.wait(t); rc != 1 {
		t.Errorf("the first job exited %d, want 1", rc)
	}
	if !exists(filepath.Join(dir, "first-ran")) {
		t.Errorf("the later job ran before the first ended:\n%s", later.logged())
	}
	if !exists(done) {
		t.Error("a failed job did not write TEST_SLOT_DONE")
	}
	if rc := later.wait(t); rc != 0 || !exists(filepath.Join(dir, "later-runs")) {
		t.Errorf("the later job exited %d:\n%s", rc, later.logged())
	}
}

// Without TEST_SLOTS_DIR the script refuses to run, naming the variable.
func TestNoSlotsDirectory(t *testing.T) {
	cmd := exec.Command("bash", script, "true")
	cmd.Env = append(os.Environ(), "TEST_SLOTS_DIR=")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "TEST_SLOTS_DIR") {
		t.Errorf("without TEST_SLOTS_DIR: err %v, output %q; want a failure naming TEST_SLOTS_DIR", err, out)
	}
}
