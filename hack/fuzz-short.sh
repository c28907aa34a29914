#!/usr/bin/env bash
# hack/fuzz-short.sh: a short run of every fuzz target in the module (FUZZTIME each, default
# 3s), so each parser of user input meets new inputs on every CI run, not only its committed
# corpus (testdata/fuzz/<Target>/, which plain `go test` replays). A crash fails the run and
# leaves the input under testdata/fuzz/ to commit with its fix. Prints one line per target and
# a closing count.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-3s}"
n=0
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u || true)
	for t in $targets; do
		go test "$pkg" -run '^$' -fuzz "^${t}\$" -fuzztime "$fuzztime" >/tmp/fuzz-short.$$ 2>&1 || {
			cat /tmp/fuzz-short.$$
			rm -f /tmp/fuzz-short.$$
			echo "fuzz: $pkg $t FAILED (the input is under $dir/testdata/fuzz/$t/)"
			exit 1
		}
		echo "fuzz: $pkg $t: $(grep -o 'execs: [0-9]*' /tmp/fuzz-short.$$ | tail -1)"
		n=$((n + 1))
	done
done
rm -f /tmp/fuzz-short.$$
echo "fuzz: $n targets, $fuzztime each, no crash"
