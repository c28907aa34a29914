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
# Guided or not: `go test -c -fuzz` instruments every package the test binary links for
# coverage guidance, the standard library and all dependencies included, and those instrumented
# packages are compiled apart from the ones make test compiled. Measured on two cores with an
# empty build cache (2026-12-04): core, adapters/manifest and internal/jsonstr (the readers of
# manifests, profiles and edits, whose tests link the Kubernetes API types and little else)
# 75 s; then the providers' test binaries (which link client-go, the in-process cloud servers
# and the API-server harness their other tests use) 165 s more, adapters/controller
# (controller-runtime) and cmd/loopguard 77 s more: 317 s of a cold CI run's 30 minutes. So
# the packages of FUZZ_GUIDED (default: those three) are built instrumented and fuzzed with
# coverage guidance; the others are fuzzed without it ("warning: the test binary was not built
# with coverage instrumentation"), from the test binary make test compiled: they mutate their
# committed corpus and what earlier runs cached, at random, and a crash fails the run all the
# same. FUZZ_GUIDED=all instruments every package (make fuzz-guided).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-3s}"
guided="${FUZZ_GUIDED:-core adapters/manifest internal/jsonstr}"
module="$(go list -f "{{.Module.Path}}" ./core)"
retrytime="${FUZZ_RETRYTIME:-15s}"
cache="$(go env GOCACHE)/fuzz"
work="$(mktemp -d "${TMPDIR:-/tmp}/loopguard-fuzz.XXXXXX")"
trap 'rm -rf "$work"' EXIT
out="$work/out"

# run PKG DIR BIN TARGET TIME: one target for TIME from the package's folder (as go test runs
# it, so testdata/ resolves and a crash is written under DIR/testdata/fuzz/TARGET/).
run() {
	(cd "$2" && "$3" -test.run '^$' -test.fuzz "^$4\$" -test.fuzztime "$5" -test.fuzzcachedir "$cache/$1") >"$out" 2>&1
}

n=0 g=0
while read -r pkg dir; do
	targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u || true)
	[ -n "$targets" ] || continue
	bin="$work/$(basename "$dir").test"
	how=unguided
	if [[ "$guided" == all || " $guided " == *" ${pkg#"$module"/} "* ]]; then
		how=guided
		# -fuzz with every target of the package: go test -c instruments the build when -fuzz
		# is set and takes no further notice of the pattern.
		go test -c -o "$bin" -fuzz "^($(echo $targets | tr ' ' '|'))\$" "$pkg"
	else
		go test -c -o "$bin" "$pkg"
	fi
	for t in $targets; do
		failed=0
		if ! run "$pkg" "$dir" "$bin" "$t" "$fuzztime"; then
			# -fuzztime also bounds the baseline pass over the corpus (the committed one and
			# what earlier runs cached), and on a busy machine that pass alone can outlast a
			# few seconds: the run then fails with "context deadline exceeded" and no input.
			# That is not a crash; run the target once more with time to spare. A crash says
			# "Failing input written to ..." and fails at once.
			if grep -q 'context deadline exceeded' "$out" && ! grep -q 'Failing input written' "$out"; then
				echo "fuzz: $pkg $t: the baseline over its corpus took longer than $fuzztime; once more with ${retrytime}"
				run "$pkg" "$dir" "$bin" "$t" "$retrytime" || failed=1
			else
				failed=1
			fi
			if [ "$failed" = 1 ]; then
				cat "$out"
				echo "fuzz: $pkg $t FAILED (the input is under $dir/testdata/fuzz/$t/)"
				exit 1
			fi
		fi
		echo "fuzz: $pkg $t ($how): $(grep -o 'execs: [0-9]*' "$out" | tail -1)"
		n=$((n + 1))
		[[ "$how" == guided ]] && g=$((g + 1))
	done
done < <(go list -f '{{.ImportPath}} {{.Dir}}' ./...)
echo "fuzz: $n targets ($g with coverage guidance: $guided), $fuzztime each, no crash"
