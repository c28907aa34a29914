#!/usr/bin/env bash
# kube-proxy.sh builds a real kube-proxy from the Go module proxy and caches the binary, so the
# dataplane lab's interception rules are programmed by kube-proxy itself rather than written by
# hand (the build mirrors hack/envtest-assets.sh). It
# prints the binary's path as the last line of stdout:
#
#   export LOOPGUARD_KUBE_PROXY="$(hack/kube-proxy.sh)"
#   KUBE_PROXY_VERSION=1.28.15 hack/kube-proxy.sh      # an older release, for the version-skew test
#
# The tests read the two paths from LOOPGUARD_KUBE_PROXY and LOOPGUARD_KUBE_PROXY_SKEW
# (internal/proxylab); .ci/run exports both.
#
# Logs go to stderr. A cache hit runs nothing but `go env`. A cold build takes about a minute
# of CPU when the Go build cache already holds kube-apiserver's packages (same versions, same
# flags), longer otherwise: v1.28.15, whose packages share nothing with v1.37's, took 476 s on
# two cores shared with other builds. It happens in a throwaway module under $TMPDIR, never in
# the project's go.mod, and the binary is moved into place in one rename.
#
# Environment (all optional):
#   KUBE_PROXY_VERSION  Kubernetes release to build (default 1.37.2)
#   LOOPGUARD_KUBE_PROXY_CACHE  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/loopguard/kube-proxy)
#   GO                  go command to use (default go)
set -euo pipefail

# One function, called on the last line, so bash parses the whole file before running any of it.
main() {
	K8S_VERSION="${KUBE_PROXY_VERSION:-1.37.2}"
	GO="${GO:-go}"

	log() { printf 'kube-proxy: %s\n' "$*" >&2; }
	die() { log "error: $*"; exit 1; }

	# The key names the compiler; a toolchain switch would build with another one.
	export GOTOOLCHAIN=local
	export GOWORK=off
	export GOFLAGS=-mod=mod

	command -v "$GO" >/dev/null 2>&1 || die "go command '$GO' not found"
	GO_VERSION="$("$GO" env GOVERSION)"
	GO_VERSION="${GO_VERSION//[^A-Za-z0-9._-]/_}"

	CACHE_ROOT="${LOOPGUARD_KUBE_PROXY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/loopguard/kube-proxy}"
	DEST="$CACHE_ROOT/k8s-${K8S_VERSION}-${GO_VERSION}"

	cache_hit() { [[ -x "$DEST/kube-proxy" ]]; }

	if cache_hit; then
		log "cache hit: $DEST/kube-proxy"
		printf '%s\n' "$DEST/kube-proxy"
		exit 0
	fi

	mkdir -p "$CACHE_ROOT"
	if command -v flock >/dev/null 2>&1; then
		exec 9>"$CACHE_ROOT/.lock"
		if ! flock -n 9; then
			log "another build holds $CACHE_ROOT/.lock; waiting"
			flock 9
		fi
		if cache_hit; then
			log "cache filled by another build: $DEST/kube-proxy"
			printf '%s\n' "$DEST/kube-proxy"
			exit 0
		fi
		rm -rf "$CACHE_ROOT"/.partial.*
	fi

	WORK="$(mktemp -d "${TMPDIR:-/tmp}/loopguard-kube-proxy.XXXXXX")"
	STAGE="$(mktemp -d "$CACHE_ROOT/.partial.XXXXXX")"
	chmod 755 "$STAGE"
	cleanup() { rm -rf "$WORK" "$STAGE"; }
	trap cleanup EXIT
	trap 'exit 130' INT TERM

	log "cache miss: building kube-proxy v$K8S_VERSION with $GO_VERSION (work dir $WORK)"
	STAGING_VERSION="v0.${K8S_VERSION#*.}"
	start=$SECONDS

	cd "$WORK"
	"$GO" mod init loopguard.invalid/kube-proxy >/dev/null 2>&1
	# k8s.io/kubernetes replaces its staging modules with ./staging/src/...; a dependent module
	# must repeat every one, pointing at the published v0.<minor>.<patch> tag. The list comes
	# from the release's own go.mod, so each release gets its own set.
	local gomod
	gomod="$("$GO" mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
	[[ -n "$gomod" && -f "$gomod" ]] || die "could not download go.mod of k8s.io/kubernetes@v$K8S_VERSION"
	local -a staging
	mapfile -t staging < <(sed -n 's#^[[:space:]]*\(replace[[:space:]]\{1,\}\)\{0,1\}\(k8s\.io/[^[:space:]]*\)[[:space:]]*=>[[:space:]]*\./staging/src/.*#\2#p' "$gomod" | sort -u)
	((${#staging[@]} > 0)) || die "no staging replaces found in $gomod"
	log "${#staging[@]} staging modules replaced with $STAGING_VERSION"
	local -a edits=("-require=k8s.io/kubernetes@v$K8S_VERSION")
	local m
	for m in "${staging[@]}"; do
		edits+=("-replace=$m=$m@$STAGING_VERSION")
	done
	"$GO" mod edit "${edits[@]}"

	log "resolving modules"
	"$GO" get "k8s.io/kubernetes/cmd/kube-proxy@v$K8S_VERSION" >&2

	local minor="${K8S_VERSION#*.}"
	minor="${minor%%.*}"
	local major="${K8S_VERSION%%.*}"
	log "building"
	CGO_ENABLED=0 "$GO" build -trimpath \
		-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor" \
		-o "$STAGE/kube-proxy" k8s.io/kubernetes/cmd/kube-proxy >&2

	local got
	got="$("$STAGE/kube-proxy" --version 2>&1)"
	[[ "$got" == "Kubernetes v$K8S_VERSION" ]] || die "built kube-proxy reports '$got', want 'Kubernetes v$K8S_VERSION'"
	log "$got"

	if ! mv -T "$STAGE" "$DEST" 2>/dev/null; then
		cache_hit || die "could not move $STAGE to $DEST"
		log "another build filled $DEST first; using it"
	fi
	log "done in $((SECONDS - start)) s: $DEST/kube-proxy"
	printf '%s\n' "$DEST/kube-proxy"
}

main "$@"
