#!/usr/bin/env bash
# hack/fuzz-short.sh: a short run of every fuzz target in the module (FUZZTIME each, default
# 3s), so each parser of user input meets new inputs on every CI run, not only its committed
# corpus (testdata/fuzz/<Target>/, which plain `go test` replays). A crash fails the run and
# leaves the input under testdata/fuzz/ to commit with its fix. Prints one line per target and
# a closing count.
#
# Each package's test binary is built once and run once per target, with the corpus cache
# `go test -fuzz` would use ($GOCACHE/fuzz/<import path>): `go test -fuzz` per target links the
# binary again for every target, 4-8 s each for the larger packages.
#
# Coverage guidance: `go test -c -fuzz` instruments every package the test binary links, the
# standard library and all dependencies included (cmd/go marks each FuzzInstrument, which adds
# the compiler's -d=libfuzzer), and those instrumented packages are compiled apart from the
# ones make test compiled. Measured on two cores with an empty build cache (2026-12-04): core,
# adapters/manifest and internal/jsonstr 75 s; the providers' test binaries (client-go, the
# in-process cloud servers, the API-server harness) 165 s more, adapters/controller and
# cmd/loopguard 77 s more. So by default only the module's own packages are compiled with
# -d=libfuzzer (-gcflags=<module>/...=-d=libfuzzer): every target is fuzzed with coverage
# guidance over loopguard's code, where its parsers are, and the dependencies come from make
# test's build cache. FUZZ_GUIDED=all (make fuzz-guided) instruments every package as
# `go test -fuzz` does, for guidance inside the dependencies too (the YAML and JSON decoders).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-3s}"
module="$(go list -f "{{.Module.Path}}" ./core)"
guided="loopguard's packages"
[[ "${FUZZ_GUIDED:-}" == all ]] && guided="every package"
retrytime="${FUZZ_RETRYTIME:-15s}"
cache="$(go env GOCACHE)/fuzz"
work="$(mktemp -d "${TMPDIR:-/tmp}/loopguard-fuzz.XXXXXX")"
trap 'rm -rf "$work"' EXIT
out="$work/out"

# run PKG DIR BIN TARGET TIME: one target for TIME from the package's folder (as go test runs
# it, so testdata/ resolves and a crash is written under DIR/testdata/fuzz/TARGET/).
# FUZZPARALLEL: fuzzing workers per target (go test's -parallel; default GOMAXPROCS, as go test
# has it). .ci/run sets 1: it runs fuzz-short beside make test, where a second worker takes its
# core from the tests.
run() {
	(cd "$2" && "$3" -test.run '^$' -test.fuzz "^$4\$" -test.fuzztime "$5" -test.fuzzcachedir "$cache/$1" ${FUZZPARALLEL:+-test.parallel "$FUZZPARALLEL"}) >"$out" 2>&1
}

# outcome: what a failed run in $out was.
#   crash     an input failed the target: go test wrote it under testdata/fuzz/ ("Failing input
#             written to ..."), or something else went wrong. The run fails.
#   raced     fuzzing had begun (the baseline was done, or the corpus was empty) and the run
#             ended with "context deadline exceeded" and no input: Go's fuzzing coordinator
#             reports its own -fuzztime deadline as a failure when the deadline's cancellation
#             has not yet reached the workers' context (go.dev/issue/75804; the check in
#             internal/fuzz/fuzz.go's stop compares against fuzzCtx.Err() only in Go 1.26, and
#             Go 1.27 fixes it). The target was fuzzed for its time; not a failure.
#   baseline  the deadline came during the baseline pass over the corpus (the committed one and
#             what earlier runs cached), which -fuzztime also bounds and which on a busy machine
#             can outlast a few seconds: no input was fuzzed, so run once more with time to spare.
outcome() {
	if grep -q 'Failing input written' "$out" || ! grep -q 'context deadline exceeded' "$out"; then
		echo crash
	elif grep -q -e 'now fuzzing with' -e 'starting with empty corpus' "$out"; then
		echo raced
	else
		echo baseline
	fi
}

n=0
while read -r pkg dir; do
	targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u || true)
	[ -n "$targets" ] || continue
	bin="$work/$(basename "$dir").test"
	# -vet=off: go test -c runs go vet on the package first (a stream of vet processes under
	# each go test -c in a cold CI run); vetting is make lint's job, not fuzzing's. Cold, this
	# script took 309 s of CPU with the vet pass and 152 s without (2026-12-06).
	if [[ "${FUZZ_GUIDED:-}" == all ]]; then
		# -fuzz with every target of the package: go test -c instruments the build when -fuzz
		# is set and takes no further notice of the pattern.
		go test -c -vet=off -o "$bin" -fuzz "^($(echo $targets | tr ' ' '|'))\$" "$pkg"
	else
		go test -c -vet=off -o "$bin" -gcflags="$module/...=-d=libfuzzer" "$pkg"
	fi
	for t in $targets; do
		failed=0
		raced=""
		if ! run "$pkg" "$dir" "$bin" "$t" "$fuzztime"; then
			case "$(outcome)" in
			raced) raced=" (ended by Go's fuzztime race, not a crash)" ;;
			baseline)
				echo "fuzz: $pkg $t: the baseline over its corpus took longer than $fuzztime; once more with ${retrytime}"
				if ! run "$pkg" "$dir" "$bin" "$t" "$retrytime"; then
					case "$(outcome)" in
					raced) raced=" (ended by Go's fuzztime race, not a crash)" ;;
					*) failed=1 ;;
					esac
				fi
				;;
			*) failed=1 ;;
			esac
			if [ "$failed" = 1 ]; then
				cat "$out"
				echo "fuzz: $pkg $t FAILED (the input is under $dir/testdata/fuzz/$t/)"
				exit 1
			fi
		fi
		# Without coverage counters in the binary, go test fuzzes at random and says so.
		if grep -q 'not built with coverage instrumentation' "$out"; then
			cat "$out"
			echo "fuzz: $pkg $t: the test binary has no coverage instrumentation"
			exit 1
		fi
		echo "fuzz: $pkg $t: $(grep -o 'execs: [0-9]*' "$out" | tail -1), $(grep -o 'new interesting: [0-9]*' "$out" | tail -1)$raced"
		n=$((n + 1))
	done
done < <(go list -f '{{.ImportPath}} {{.Dir}}' ./... $(hack/modules.sh))
echo "fuzz: $n targets, $fuzztime each, ${FUZZPARALLEL:-$(nproc)} worker(s), coverage guidance over $guided, no crash"
