#!/usr/bin/env bash
# hack/fuzz-short.sh: a short run of every fuzz target in the module (FUZZTIME each, default
# 3s), so each parser of user input meets new inputs on every CI run, not only its committed
# corpus (testdata/fuzz/<Target>/, which plain `go test` replays). A crash fails the run and
# leaves the input under testdata/fuzz/ to commit with its fix. Prints one line per target and
# a closing count.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-3s}"
retrytime="${FUZZ_RETRYTIME:-15s}"
n=0
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u || true)
	for t in $targets; do
		failed=0
		if ! go test "$pkg" -run '^$' -fuzz "^${t}\$" -fuzztime "$fuzztime" >/tmp/fuzz-short.$$ 2>&1; then
			# -fuzztime also bounds the baseline pass over the corpus (the committed one and
			# what earlier runs cached), and on a busy machine that pass alone can outlast a
			# few seconds: go test then fails with "context deadline exceeded" and no input.
			# That is not a crash; run the target once more with time to spare. A crash says
			# "Failing input written to ..." and fails at once.
			if grep -q 'context deadline exceeded' /tmp/fuzz-short.$$ && ! grep -q 'Failing input written' /tmp/fuzz-short.$$; then
				echo "fuzz: $pkg $t: the baseline over its corpus took longer than $fuzztime; once more with ${retrytime}"
				go test "$pkg" -run '^$' -fuzz "^${t}\$" -fuzztime "$retrytime" >/tmp/fuzz-short.$$ 2>&1 || failed=1
			else
				failed=1
			fi
			if [ "$failed" = 1 ]; then
				cat /tmp/fuzz-short.$$
				rm -f /tmp/fuzz-short.$$
				echo "fuzz: $pkg $t FAILED (the input is under $dir/testdata/fuzz/$t/)"
				exit 1
			fi
		fi
		echo "fuzz: $pkg $t: $(grep -o 'execs: [0-9]*' /tmp/fuzz-short.$$ | tail -1)"
		n=$((n + 1))
	done
done
rm -f /tmp/fuzz-short.$$
echo "fuzz: $n targets, $fuzztime each, no crash"
