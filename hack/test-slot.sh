#!/usr/bin/env bash
# test-slot.sh runs a command once it holds one of a run's test slots, and frees the slot when
# the command ends. .ci/run runs its test jobs (make test, the floor's go test, Envoy Gateway's
# tests, the cluster's) this way, one slot per core, so that however the builds before them
# end, no more of them run at once than there are cores:
#
#   TEST_SLOTS_DIR=/tmp/run TEST_SLOTS=2 hack/test-slot.sh make test
#
# Why: each of them starts real components (kube-apiservers, kube-proxies, Envoy Gateway, a
# cluster) and waits on them with deadlines. Run all at once beside the builds on two cores,
# each got a fraction of a core (the kernel's autogroup scheduling shares the cores out per
# session), and a kube-apiserver with Gateway API's and Envoy Gateway's CRDs took 111 s to be
# ready, after 118 s waiting to start, which left the test 11 s of its four minutes. Builds,
# make hosts and the fuzzing take no slot: they compile most of their time, and fill the gaps
# the test jobs leave while they wait. hack/testslot tests this script.
#
# A slot is a flock(1) lock (util-linux) on $TEST_SLOTS_DIR/test-slot-N, held by this script
# while the command runs; the command gets no descriptor of it, so nothing the command leaves
# running can keep a slot. The kernel frees the lock when this script exits, however it exits.
# The wait is logged to stderr with the command's name.
#
# Which job goes first is the run's to say: a job may wait for a file (TEST_SLOT_AFTER) that
# another job writes when it ends (TEST_SLOT_DONE), whatever its result.
#
# Environment:
#   TEST_SLOTS_DIR   directory of the lock files (required; the run's own temporary directory)
#   TEST_SLOTS       how many slots (default: the number of cores, nproc)
#   TEST_SLOT_AFTER  a file to wait for before asking for a slot (optional)
#   TEST_SLOT_DONE   a file to write when the command has ended (optional)
#   TEST_SLOT_NAME   the job's name in the log (default: the command line)
set -euo pipefail

main() {
	local dir="${TEST_SLOTS_DIR:?TEST_SLOTS_DIR: the directory of the slot lock files}"
	local n="${TEST_SLOTS:-$(nproc)}" i start=$SECONDS said="" what="${TEST_SLOT_NAME:-$*}"
	(($# > 0)) || { echo "usage: TEST_SLOTS_DIR=DIR $0 CMD [ARG...]" >&2; exit 2; }
	if [[ -n "${TEST_SLOT_AFTER:-}" && ! -e "$TEST_SLOT_AFTER" ]]; then
		echo "test-slot: $what waits for $TEST_SLOT_AFTER" >&2
		until [[ -e "$TEST_SLOT_AFTER" ]]; do sleep 2; done
		start=$SECONDS
	fi
	while :; do
		for ((i = 0; i < n; i++)); do
			exec 9>"$dir/test-slot-$i"
			if flock -n 9; then
				if [[ -n "$said" ]]; then
					echo "test-slot: $what waited $((SECONDS - start)) s for test slot $i of $n" >&2
				fi
				# 9>&-: the command and what it starts never hold the lock.
				local rc=0
				"$@" 9>&- || rc=$?
				if [[ -n "${TEST_SLOT_DONE:-}" ]]; then : >"$TEST_SLOT_DONE"; fi
				exit "$rc"
			fi
			exec 9>&-
		done
		if [[ -z "$said" ]]; then
			echo "test-slot: $what waits: all $n test slots are held" >&2
			said=1
		fi
		sleep 2
	done
}

main "$@"
