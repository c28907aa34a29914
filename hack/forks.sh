#!/usr/bin/env bash
# hack/forks.sh: what a real cloud-controller-manager fork sees when it adds loopguard, for
# every module of its build list (not only k8s.io/*), measured on fixtures shaped like real
# forks' go.mod files (hack/hosts/forks/<name>/go.mod says which release each copies):
#   hetzner       k8s.io v0.36.3, in the support window;
#   digitalocean  k8s.io v0.36.2, in the support window, vendored (go mod vendor, -mod=vendor);
#   kubevip       k8s.io v0.33.1, below the floor (v0.35): what moves is reported, not refused.
#
# For each fixture, in a throwaway folder: the fork is its go.mod and go.sum as released plus
# hack/hosts/ccm's main (k8s.io/cloud-provider's sample); it builds. Then loopguard.go is added
# and the commands of docs/ccm.md's fork section run as written (go get of core.Version, go mod
# tidy, go mod vendor and go build; a replace points loopguard at this checkout); it builds
# again. A module "moves" when its version in the build list (go list -m all) changes;
# it is "compiled" when the fork's binary links one of its packages (go list -deps). Both are
# read right after go get: go mod tidy would then drop the requirements that only the real
# fork's own code uses.
#
# Below the floor (kubevip), loopguard's own tests of what the fork embeds (core,
# providers/kubernetes, adapters/cloudprovider: the decorator, with the upstream service
# controller's suite wrapped) then run in the fork's build list, against the kube-apiserver
# make test uses (KUBEBUILDER_ASSETS, or hack/envtest-assets.sh): the fork still builds and
# passes. Its Kubernetes modules move to the floor (v0.35.0), so that build list is nearly the
# root module's own floor, which .ci/run's floor step compiles: 976 of its 1,145 packages are the
# same compiled packages (2026-12-06).
#
# It prints one line per fixture, e.g.
#   forks: hetzner: 0 modules moved (0 compiled); go 1.26.0 kept; binary 61234 KB -> 62890 KB (+1656 KB)
# and fails when a fixture in the support window moves a module its binary compiles. (Gateway
# API v1.3.0 requires fatih/color v1.18.0 and go-openapi/jsonreference v0.21.0, above what these
# forks build with; providers/gateway is a module of its own, so a fork does not inherit them.)
#
# Environment: FORKS (default "hetzner digitalocean kubevip"), FORKS_BUILD=0 to list what moves
# without building (no binary sizes, no tests), FORKS_BELOW_FLOOR_BEFORE=0 to leave out the
# build of a fork below the floor as released when it is not cached yet (see released_cache and
# below_floor_size), LOOPGUARD_SRC (default: this checkout) to measure another checkout of
# loopguard, KUBEBUILDER_ASSETS for the tests.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# CGO_ENABLED=0 as make builds (Makefile): a fork's binary, and so its size, would otherwise
# depend on whether the machine has a C compiler (cgo's net and os/user).
export GOTOOLCHAIN=local GOWORK=off GOFLAGS="-mod=mod -trimpath -ldflags=-w" CGO_ENABLED=0 LC_ALL=C
GO="${GO:-go}"

log() { echo "forks: $*" >&2; }

# The fixtures below loopguard's floor (k8s.io v0.35): what moves there is reported, not refused,
# and loopguard's tests run in their build list.
BELOW_FLOOR="kubevip"
below_floor() { [[ " $BELOW_FLOOR " == *" $1 "* ]]; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/loopguard-forks.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# build OUT: the fork's binary, through vendor/ when the fixture is vendored.
build() {
	if [[ -z "$BUILD_IT" ]]; then : >"$1"; return; fi
	if [[ -n "$VENDORED" ]]; then
		rm -rf vendor
		"$GO" mod vendor
		GOFLAGS="-trimpath -ldflags=-w" "$GO" build -mod=vendor -o "$1" .
	else
		"$GO" build -o "$1" .
	fi
}

# released_cache: the folder under ~/.cache/loopguard/forks that holds the binary of the fork in
# the current folder as released, keyed by everything that decides that binary: the fixture's
# go.mod and go.sum, the host's main, the Go version and the build settings. A fixture or Go
# update is a new key, so a stale binary is never measured.
released_cache() {
	local key
	key="$({ cat go.mod go.sum doc.go host.go; "$GO" env GOVERSION GOOS GOARCH CGO_ENABLED; printf '%s vendored=%s\n' "$GOFLAGS" "$VENDORED"; } | sha256sum | cut -c1-16)"
	printf '%s\n' "${XDG_CACHE_HOME:-$HOME/.cache}/loopguard/forks/$name-$key-$("$GO" env GOVERSION)"
}

# cache_released BIN DIR: DIR/fork becomes a copy of BIN in one rename, so an interrupted copy
# leaves no half-written binary that a later run would measure.
cache_released() {
	mkdir -p "$2"
	local tmp
	tmp="$(mktemp "$2/.partial.XXXXXX")"
	cp "$1" "$tmp"
	chmod 644 "$tmp"
	mv -f "$tmp" "$2/fork"
}

versions() { "$GO" list -m -f '{{.Path}} {{.Version}}' all | sort; }
compiled() { "$GO" list -deps -f '{{with .Module}}{{if not .Main}}{{.Path}}{{end}}{{end}}' . | sort -u; }
directive() { "$GO" mod edit -json | awk -F'"' '/"Go":/ { d = $4 } /"Toolchain":/ { t = " toolchain " $4 } END { print "go " d t }'; }

check() {
	local name="$1" src="$ROOT/hack/hosts/forks/$1" dir="$WORK/$1"
	VENDORED=""
	[[ "$name" == digitalocean ]] && VENDORED=1
	BUILD_IT=1
	[[ "${FORKS_BUILD:-1}" == 0 ]] && BUILD_IT=""
	mkdir -p "$dir"
	cp "$src/go.mod" "$src/go.sum" "$ROOT/hack/hosts/ccm/doc.go" "$ROOT/hack/hosts/ccm/host.go" "$dir/"
	cd "$dir"

	# The fork before loopguard. Below the floor its Kubernetes release is one nothing else in
	# CI compiles (1,034 packages of their own, about 450 s of CPU on a cold run), so its binary
	# is built once and cached (released_cache); FORKS_BELOW_FLOOR_BEFORE=0 leaves the build out
	# when the cache has none (.ci/run on a machine with empty caches), and below_floor_size
	# says what is measured instead.
	local before_go after_go released=1 cache="" from_cache=""
	before_go="$(directive)"
	versions >before.txt
	if below_floor "$name" && [[ -n "$BUILD_IT" ]]; then
		cache="$(released_cache)"
		if [[ -f "$cache/fork" ]]; then
			cp "$cache/fork" before.bin
			from_cache=1
		elif [[ "${FORKS_BELOW_FLOOR_BEFORE:-1}" == 0 ]]; then
			released=""
			: >before.bin
		else
			build before.bin
			cache_released before.bin "$cache"
		fi
	else
		build before.bin
	fi

	# loopguard added: loopguard.go, then the commands of docs/ccm.md's fork section, run as
	# they are written (a fixture that is not vendored skips the vendoring lines); the build
	# list is read right after go get, before go mod tidy drops what the tiny main does not use.
	# The lines a fork adds, the same in every fixture; without the constraint that keeps the
	# file out of the root module.
	grep -vx '//go:build ignore' "$ROOT/hack/hosts/forks/loopguard.go" >loopguard.go
	"$GO" mod edit -replace=github.com/loopguard/loopguard="${LOOPGUARD_SRC:-$ROOT}"
	local step
	while read -r step; do
		[[ -z "$VENDORED" && "$step" == *vendor* ]] && continue
		[[ "$step" == "go build"* && -z "$BUILD_IT" ]] && continue
		# shellcheck disable=SC2086
		GOFLAGS="-trimpath -ldflags=-w" "$GO" ${step#go } >step.log 2>&1 ||
			{ cat step.log >&2; log "$name: docs/ccm.md's '$step' failed"; return 1; }
		if [[ "$step" == "go get "* ]]; then
			after_go="$(directive)"
			versions >after.txt
			compiled >compiled.txt
		fi
	done <<<"$DOC_STEPS"
	[[ -s after.txt ]] || { log "docs/ccm.md's fork section has no go get line"; return 1; }
	build after.bin
	if below_floor "$name" && [[ -n "$BUILD_IT" ]]; then
		# below_floor_size: the same fork on the build list it has now, without loopguard.go
		# (its decorate then returns the cloud itself): the size of loopguard's code apart from
		# the move to the floor, every compiled package already in the build cache, so it
		# costs one link.
		mv loopguard.go loopguard.go.off
		build moved.bin
		mv loopguard.go.off loopguard.go
	fi

	local moved added moved_n compiled_moved compiled_n size_before size_after
	moved="$(join before.txt after.txt | awk '$2 != $3 { print $1, $2, $3 }')"
	added="$(join -v2 before.txt after.txt | wc -l)"
	moved_n="$(grep -c . <<<"$moved" || true)"
	compiled_moved="$(join <(printf '%s\n' "$moved") compiled.txt || true)"
	compiled_n="$(grep -c . <<<"$compiled_moved" || true)"
	size_before="$(($(stat -c %s before.bin) / 1024))"
	size_after="$(($(stat -c %s after.bin) / 1024))"

	local size_line="binary $size_before KB -> $size_after KB ($(printf '%+d' $((size_after - size_before))) KB)${from_cache:+, the fork as released from $cache}"
	if [[ -s moved.bin ]]; then
		local size_moved code_line
		size_moved="$(($(stat -c %s moved.bin) / 1024))"
		code_line="binary without loopguard.go on the same build list $size_moved KB -> $size_after KB ($(printf '%+d' $((size_after - size_moved))) KB, loopguard's code)"
		size_line+="; $code_line"
		[[ -z "$released" ]] && size_line="$code_line; the fork as released not built (FORKS_BELOW_FLOOR_BEFORE=0 and not cached)"
	fi
	[[ -z "$BUILD_IT" ]] && size_line="not built (FORKS_BUILD=0)"
	local go_line="$before_go kept"
	[[ "$before_go" != "$after_go" ]] && go_line="$before_go -> $after_go"
	log "$name: $moved_n modules moved ($compiled_n compiled into the binary), $added added; $go_line;${VENDORED:+ vendored, built with -mod=vendor;} $size_line"
	if [[ -n "$moved" ]]; then
		join -a1 <(printf '%s\n' "$moved") <(sed 's/$/ compiled/' compiled.txt) |
			awk '{ printf "  %s: %s -> %s%s\n", $1, $2, $3, ($4 == "compiled" ? " (compiled)" : "") }' >&2
	fi
	if ! below_floor "$name" && [[ -n "$compiled_moved" ]]; then
		log "$name: adding loopguard moved modules the fork's binary compiles (above)"
		return 1
	fi
	if below_floor "$name" && [[ -n "$BUILD_IT" ]]; then
		# Below the floor the fork still passes: loopguard's tests of what it embeds, in the
		# fork's build list (go adds their test-only requirements at the versions loopguard's
		# go.mod names). -vet=off: make lint vets these packages.
		local assets="${KUBEBUILDER_ASSETS:-}" pkgs="github.com/loopguard/loopguard/core/... github.com/loopguard/loopguard/providers/kubernetes/... github.com/loopguard/loopguard/adapters/cloudprovider/..."
		[[ -n "$assets" ]] || assets="$("$ROOT/hack/envtest-assets.sh")"
		# shellcheck disable=SC2086
		KUBEBUILDER_ASSETS="$assets" "$GO" test -vet=off $pkgs >test.log 2>&1 ||
			{ cat test.log >&2; log "$name: loopguard's tests failed in the fork's build list"; return 1; }
		log "$name: in the fork's build list (k8s.io/client-go $(awk '$1 == "k8s.io/client-go" { print $2 }' after.txt)), loopguard's tests pass against kube-apiserver $(basename "$assets" | cut -d- -f2): $(grep -c '^ok' test.log) packages ok ($(grep -c '^ok.*(cached)' test.log || true) of them cached: go test's cache holds a pass of the same code and build list), $(grep -c 'no test files' test.log || true) without tests"
	fi
}

# The commands docs/ccm.md's fork section gives, in order: the go lines of its first sh block,
# without their comments.
DOC_STEPS="$(awk '/^## Adding loopguard to a fork.s module/ { in_section = 1 }
	in_section && /^```sh$/ { in_block = 1; next }
	in_block && /^```$/ { exit }
	in_block && /^go / { sub(/[ \t]*#.*$/, ""); print }' "$ROOT/docs/ccm.md")"
[[ -n "$DOC_STEPS" ]] || { log "docs/ccm.md has no sh block under 'Adding loopguard to a fork's module'"; exit 1; }

failed=0
for name in ${FORKS:-hetzner digitalocean kubevip}; do
	TIMEFORMAT="forks: $name took %0R s (CPU: %0U s user, %0S s system)"
	time (check "$name") || failed=1
done
((failed == 0)) || { log "a fork moved a compiled module or failed to build (above)"; exit 1; }
