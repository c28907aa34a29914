#!/usr/bin/env bash
# hack/repo-lint.sh: the repository's own rules, checked by make lint.
#   - No tracked file outside a testdata/ folder is larger than 1 MB (MAX_FILE_BYTES): every
#     clone downloads every version of every file, and a 108 MB binary once slipped in.
#   - Every command's `go build` output at the root (a main package's folder name) is ignored,
#     so that binary cannot be committed by accident again.
#   - The layering points down: internal/ and providers/ import no adapters/, and nothing
#     outside cmd/ or examples/ imports them.
#   - Commit subjects after SUBJECT_BASE are at most 72 characters (CONTRIBUTING.md); the
#     history before it stays as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

MAX_FILE_BYTES="${MAX_FILE_BYTES:-1048576}"
# The main branch's head when the subject rule was adopted.
SUBJECT_BASE="${SUBJECT_BASE:-6b2a25f}"
MAX_SUBJECT="${MAX_SUBJECT:-72}"

fail=0
bad() {
	printf 'repo-lint: %s\n' "$*" >&2
	fail=1
}

if ! git rev-parse --git-dir >/dev/null 2>&1; then
	echo "repo-lint: not a git checkout: file sizes and commit subjects not checked" >&2
else
	# Sizes as the index holds them: a file staged and not yet committed counts too.
	while read -r size path; do
		bad "$path is $size bytes, over $MAX_FILE_BYTES: keep large files out of git (a build output belongs in .gitignore, test data under a testdata/ folder)"
	done < <(git ls-files -s -z | while IFS= read -r -d '' line; do
		path="${line#*$'\t'}"
		case "/$path" in */testdata/*) continue ;; esac
		printf '%s %s\n' "$(cut -d' ' -f2 <<<"$line")" "$path"
	done | git cat-file --batch-check='%(objectsize) %(rest)' --buffer 2>/dev/null |
		awk -v max="$MAX_FILE_BYTES" '$1 > max')
	# A shallow clone lacks the base; then there is nothing to compare with.
	if git cat-file -e "$SUBJECT_BASE^{commit}" 2>/dev/null; then
		while IFS= read -r line; do
			subject="${line#* }"
			((${#subject} <= MAX_SUBJECT)) && continue
			bad "commit ${line%% *}: subject of ${#subject} characters, more than $MAX_SUBJECT (CONTRIBUTING.md): $subject"
		done < <(git log --format='%h %s' "$SUBJECT_BASE..HEAD")
	else
		echo "repo-lint: commit $SUBJECT_BASE is not in this clone: commit subjects not checked" >&2
	fi
	while IFS= read -r dir; do
		git check-ignore -q --no-index "/$dir" 2>/dev/null || git check-ignore -q --no-index "$dir" ||
			bad "go build of the command $dir writes ./$dir, which .gitignore does not ignore: add /$dir"
	done < <(go list -f '{{if eq .Name "main"}}{{.Dir}}{{end}}' ./... $(hack/modules.sh) | xargs -r -n1 basename | sort -u)
fi

# The layering, on packages as compiled (tests excluded: a lab's test may drive an adapter, as
# any test may; what a package links may not): internal/ and providers/ reach no adapters/, and
# nothing outside cmd/ or examples/ imports them.
m=github.com/loopguard/loopguard
upward="$(go list -f '{{.ImportPath}} {{join .Deps " "}}' ./... $(hack/modules.sh) | awk -v m="$m" '
	{
		for (i = 2; i <= NF; i++) {
			if ($1 ~ "^" m "/(internal|providers)(/|$)" && $i ~ "^" m "/adapters(/|$)") print $1 " -> " $i
			if ($1 !~ "^" m "/cmd(/|$)" && $i ~ "^" m "/cmd(/|$)") print $1 " -> " $i
			if ($1 !~ "^" m "/examples(/|$)" && $i ~ "^" m "/examples(/|$)") print $1 " -> " $i
		}
	}')"
if [[ -n "$upward" ]]; then
	bad "an arrow points up (internal/ and providers/ import no adapters/; only cmd/ imports cmd/, only examples/ imports examples/):"
	sed "s/^/  /" <<<"$upward" >&2
fi

((fail == 0)) || exit 1
echo "repo-lint: no file over $MAX_FILE_BYTES bytes outside testdata, build outputs ignored, no arrow up, subjects since $SUBJECT_BASE within $MAX_SUBJECT characters"
