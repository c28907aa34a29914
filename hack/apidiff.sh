#!/usr/bin/env bash
# hack/apidiff.sh: reports incompatible changes of the exported API that hosts embed, between
# the previous commit on main (HEAD~1, or BASE) and the checkout, with golang.org/x/exp's
# apidiff, so that breaking a host is a decision and not an accident.
#
# Checked packages: core (every host's API) and what the hosts of hack/hosts.sh import: the
# providers, adapters/cloudprovider, adapters/kube, adapters/controller, adapters/terraform.
# An incompatible change fails unless the checkout's last commit message has a line
#   API-Break: <why, and what a host changes>
# and CHANGELOG.md's Unreleased section says it under "### Changed" or "### Removed" (Keep a
# Changelog). Compatible changes (additions) are printed and never fail.
#
# apidiff is built once from the Go module proxy and cached under ~/.cache/loopguard/apidiff.
#
# Environment: BASE (default HEAD~1), APIDIFF_VERSION (golang.org/x/exp version).
set -euo pipefail

main() {
	ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
	LOG_NAME=apidiff
	# shellcheck source=hack/lib/binary-cache.sh
	source "$ROOT/hack/lib/binary-cache.sh"
	local version="${APIDIFF_VERSION:-v0.0.0-20261113113407-e3970619a1a4}"
	local base="${BASE:-HEAD~1}"
	local -a pkgs=(core providers/kubernetes providers/tencent providers/volcengine providers/gateway
		adapters/cloudprovider adapters/kube adapters/controller adapters/terraform)

	# The tool, cached like the other binaries.
	local tool
	tool="$(
		cache_env
		CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/loopguard/apidiff"
		DEST="$CACHE_ROOT/${version}-${GO_VERSION}"
		RESULT="$DEST/apidiff"
		cache_hit() { [[ -x "$DEST/apidiff" ]]; }
		cache_lookup
		cache_stage apidiff
		log "cache miss: building apidiff (golang.org/x/exp@$version)"
		GOBIN="$STAGE" "$GO" install "golang.org/x/exp/cmd/apidiff@$version" >&2
		cache_publish
	)"
	tool="$(tail -n1 <<<"$tool")"

	cd "$ROOT"
	# Both trees are loaded as make builds them: on the newest release (hack/newest/go.work,
	# where a tree has one) with -trimpath and CGO_ENABLED=0. apidiff reads its packages'
	# dependencies from export data that go list -export compiles; with make's settings those
	# are the packages make lint and make test compiled, while the floor's versions or other
	# flags would compile every dependency again (minutes of CPU on a cold machine). The API
	# compared is loopguard's own, which does not depend on the release it is built with.
	export CGO_ENABLED=0
	# with_go TREE CMD...: CMD with the Go settings for TREE (a workspace refuses -mod=mod).
	with_go() {
		local tree="$1"
		shift
		if [[ -f "$tree/hack/newest/go.work" ]]; then
			GOWORK="$tree/hack/newest/go.work" GOFLAGS=-trimpath "$@"
		else
			GOWORK=off GOFLAGS="-mod=mod -trimpath" "$@"
		fi
	}
	if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
		log "no $base to compare with (a shallow or first commit): nothing to check"
		return 0
	fi
	# global: the EXIT trap runs after main returns
	work="$(mktemp -d "${TMPDIR:-/tmp}/loopguard-apidiff.XXXXXX")"
	trap 'git -C "$ROOT" worktree remove --force "$work/old" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
	git worktree add -q --detach "$work/old" "$base"

	local incompatible="" pkg report
	for pkg in "${pkgs[@]}"; do
		[[ -d "$work/old/$pkg" ]] || { log "$pkg is new since $base"; continue; }
		(cd "$work/old" && with_go "$work/old" "$tool" -w "$work/old.export" "./$pkg")
		# One run; apidiff prints "Incompatible changes:" and "Compatible changes:" sections of
		# "- name: what" lines.
		local full added
		full="$(with_go "$ROOT" "$tool" "$work/old.export" "./$pkg")"
		report="$(awk '/^Incompatible changes:/ { on = 1; next } /^Compatible changes:/ { on = 0 } on && /^- /' <<<"$full")"
		added="$(awk '/^Compatible changes:/ { on = 1; next } /^Incompatible changes:/ { on = 0 } on && /^- /' <<<"$full" | wc -l)"
		if [[ -n "$report" ]]; then
			incompatible+="$pkg:"$'\n'"$report"$'\n'
		fi
		log "$pkg: $([[ -n "$report" ]] && echo "INCOMPATIBLE changes" || echo "compatible") since $(git rev-parse --short "$base") ($added compatible changes)"
	done
	[[ -z "$incompatible" ]] && { echo "apidiff: no incompatible change of the exported API since $(git rev-parse --short "$base")"; return 0; }

	echo "apidiff: incompatible changes since $(git rev-parse --short "$base"):"
	printf '%s' "$incompatible" | sed 's/^/  /'
	local msg unreleased
	msg="$(git log -1 --format=%B HEAD)"
	unreleased="$(awk '/^## \[Unreleased\]/ { on = 1; next } /^## / { on = 0 } on' CHANGELOG.md)"
	if grep -q '^API-Break: .\+' <<<"$msg" && grep -q '^### \(Changed\|Removed\)' <<<"$unreleased"; then
		echo "apidiff: declared in the commit (API-Break:) and in CHANGELOG.md's Unreleased section: accepted"
		return 0
	fi
	echo "apidiff: a host built against $(git rev-parse --short "$base") may not compile now. If that is the decision, add an"
	echo "apidiff: 'API-Break: ...' line to the commit message and say it under ### Changed or ### Removed in CHANGELOG.md's Unreleased section"
	return 1
}

main "$@"
