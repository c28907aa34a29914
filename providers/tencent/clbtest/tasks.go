package clbtest

import (
	"math/rand/v2"
	"slices"
	"time"
)

// task is one asynchronous write (docs/sources.md#tke-clb-api: writes return a RequestId that
// DescribeTaskStatus polls; while a task runs on an LB, other writes on it fail with
// FailedOperation.ResourceInOperating). Tasks complete lazily: whoever looks at the state
// after Due settles them, so no goroutine or timer is involved and a ManualClock drives
// them exactly.
type task struct {
	id      string
	action  string
	region  string
	lbIDs   []string
	started time.Time
	due     time.Time
	failMsg string
	apply   func()
	done    bool
	status  TaskStatus
}

func (t *task) public() Task {
	pt := Task{ID: t.id, Action: t.action, Region: t.region, LoadBalancerIDs: slices.Clone(t.lbIDs),
		Status: TaskRunning, Started: t.started, Due: t.due}
	if t.done {
		pt.Status = t.status
		if t.status == TaskFailed {
			pt.Message = t.failMsg
		}
	}
	return pt
}

// startTaskLocked registers a write whose effect (apply) becomes visible at now+duration,
// or which then fails with failMsg, leaving the state as it was.
func (s *Server) startTaskLocked(req *request, lbIDs []string, failMsg string, apply func()) {
	t := &task{id: req.requestID, action: req.action, region: req.region, lbIDs: lbIDs,
		started: req.now, due: req.now.Add(s.nextTaskDurationLocked()), failMsg: failMsg, apply: apply}
	s.tasks[t.id] = t
	s.taskOrder = append(s.taskOrder, t.id)
}

// nextTaskDurationLocked is how long a task started now runs: TaskDuration, or a uniform draw
// up to TaskDurationMax.
func (s *Server) nextTaskDurationLocked() time.Duration {
	if s.taskMax <= s.taskDuration {
		return s.taskDuration
	}
	return s.taskDuration + rand.N(s.taskMax-s.taskDuration+1)
}

// settleLocked completes, in start order, every task that is due.
func (s *Server) settleLocked() {
	now := s.now()
	for _, id := range s.taskOrder {
		t := s.tasks[id]
		if t.done || now.Before(t.due) {
			continue
		}
		t.done = true
		if t.failMsg != "" {
			t.status = TaskFailed
			continue
		}
		t.apply()
		t.status = TaskSucceeded
	}
}

// busyLocked reports whether a task is still running on the load balancer.
func (s *Server) busyLocked(lbID string) bool {
	for _, id := range s.taskOrder {
		t := s.tasks[id]
		if !t.done && slices.Contains(t.lbIDs, lbID) {
			return true
		}
	}
	return false
}
