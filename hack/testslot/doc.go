// Package testslot tests hack/test-slot.sh, the script .ci/run runs its test jobs through so
// that no more of them run at once than there are cores. The script is bash and flock(1); the
// tests run it as .ci/run does and watch what it lets run, and when.
package testslot
