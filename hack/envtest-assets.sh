#!/usr/bin/env bash
# envtest-assets.sh builds a real kube-apiserver and etcd from the Go module proxy and caches
# the two binaries, because no prebuilt envtest binaries can be downloaded where loopguard is
# built. It prints the cache folder as the last line of stdout:
#
#   export KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"
#   go test ./...
#
# Logs go to stderr. A cache hit runs nothing but `go env`. A cold build takes ~6 min on two
# cores and ~2.4 GB of memory; it happens in throwaway modules under $TMPDIR, never in the
# project's go.mod, and the result is moved into place in one rename, so an interrupted build
# leaves no half-filled cache folder behind.
#
# Environment (all optional):
#   K8S_VERSION      Kubernetes version to build (default 1.37.2; staging modules use 0.<minor>.<patch>)
#   ETCD_VERSION     etcd version to build (default 3.7.3)
#   LOOPGUARD_ENVTEST_CACHE  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/loopguard/envtest)
#   GO               go command to use (default go)
set -euo pipefail

# The whole script is one function, called on the last line, so bash parses all of it before
# running any: editing or checking out this file during a six-minute build cannot change what
# the running build does next.
main() {
	K8S_VERSION="${K8S_VERSION:-1.37.2}"
	ETCD_VERSION="${ETCD_VERSION:-3.7.3}"
	GO="${GO:-go}"

	log() { printf 'envtest-assets: %s\n' "$*" >&2; }
	die() { log "error: $*"; exit 1; }

	# The project's own toolchain decides the Go version; a toolchain switch triggered by a
	# dependency's go directive would silently build with another compiler than the key says.
	export GOTOOLCHAIN=local
	# The throwaway modules must not be pulled into a go.work somewhere above $TMPDIR.
	export GOWORK=off
	# A caller's GOFLAGS (-mod=vendor, -mod=readonly) would break the throwaway modules.
	export GOFLAGS=-mod=mod

	command -v "$GO" >/dev/null 2>&1 || die "go command '$GO' not found"
	GO_VERSION="$("$GO" env GOVERSION)"
	# A toolchain with experiments reports e.g. "go1.26.8 X:boringcrypto"; keep the key a plain name.
	GO_VERSION="${GO_VERSION//[^A-Za-z0-9._-]/_}"

	CACHE_ROOT="${LOOPGUARD_ENVTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/loopguard/envtest}"
	DEST="$CACHE_ROOT/k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}-${GO_VERSION}"

	cache_hit() { [[ -x "$DEST/kube-apiserver" && -x "$DEST/etcd" ]]; }

	if cache_hit; then
		log "cache hit: $DEST"
		printf '%s\n' "$DEST"
		exit 0
	fi

	mkdir -p "$CACHE_ROOT"

	# Two CI jobs sharing a cache would otherwise both spend ~6 min and ~2.4 GB each; the second
	# waits and then finds the first one's result. flock is optional (util-linux), the atomic
	# rename below keeps the cache consistent without it.
	if command -v flock >/dev/null 2>&1; then
		exec 9>"$CACHE_ROOT/.lock"
		if ! flock -n 9; then
			log "another build holds $CACHE_ROOT/.lock; waiting"
			flock 9
		fi
		if cache_hit; then
			log "cache filled by another build: $DEST"
			printf '%s\n' "$DEST"
			exit 0
		fi
		# Holding the lock, any staging folder left is from a build killed too hard to clean
		# up after itself (SIGKILL, power loss).
		rm -rf "$CACHE_ROOT"/.partial.*
	fi

	WORK="$(mktemp -d "${TMPDIR:-/tmp}/loopguard-envtest.XXXXXX")"
	# The staging folder lives next to DEST so the final mv is a rename on one filesystem.
	STAGE="$(mktemp -d "$CACHE_ROOT/.partial.XXXXXX")"
	chmod 755 "$STAGE"
	cleanup() { rm -rf "$WORK" "$STAGE"; }
	trap cleanup EXIT
	trap 'exit 130' INT TERM

	log "cache miss: building kube-apiserver v$K8S_VERSION and etcd v$ETCD_VERSION with $GO_VERSION"
	log "work dir: $WORK"

	# Kubernetes tags its staging modules (k8s.io/api, k8s.io/apiserver, ...) v0.<minor>.<patch>
	# for release v1.<minor>.<patch>.
	STAGING_VERSION="v0.${K8S_VERSION#*.}"

	build_kube_apiserver() {
		local mod="$WORK/kube-apiserver"
		mkdir -p "$mod"
		cd "$mod"
		"$GO" mod init loopguard.invalid/envtest/kube-apiserver >/dev/null 2>&1

		# k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with
		# ./staging/src/...; those replaces do not apply to a dependent module, so every one must
		# be repeated here pointing at the published tag. The list comes from the release's own
		# go.mod so a new staging module in a future release is not missed.
		local gomod
		gomod="$("$GO" mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
		[[ -n "$gomod" && -f "$gomod" ]] || die "could not download go.mod of k8s.io/kubernetes@v$K8S_VERSION"

		local -a staging
		mapfile -t staging < <(sed -n 's#^[[:space:]]*\(replace[[:space:]]\{1,\}\)\{0,1\}\(k8s\.io/[^[:space:]]*\)[[:space:]]*=>[[:space:]]*\./staging/src/.*#\2#p' "$gomod" | sort -u)
		((${#staging[@]} > 0)) || die "no staging replaces found in $gomod"
		log "kube-apiserver: ${#staging[@]} staging modules replaced with $STAGING_VERSION"

		local -a edits=("-require=k8s.io/kubernetes@v$K8S_VERSION")
		local m
		for m in "${staging[@]}"; do
			edits+=("-replace=$m=$m@$STAGING_VERSION")
		done
		"$GO" mod edit "${edits[@]}"

		log "kube-apiserver: resolving modules"
		"$GO" get "k8s.io/kubernetes/cmd/kube-apiserver@v$K8S_VERSION" >&2

		local minor="${K8S_VERSION#*.}"
		minor="${minor%%.*}"
		local major="${K8S_VERSION%%.*}"
		# Without the -X flags the server reports v0.0.0-master, which breaks version checks in
		# clients and in our own version gates.
		log "kube-apiserver: building (the slow part)"
		CGO_ENABLED=0 "$GO" build -trimpath \
			-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor" \
			-o "$STAGE/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver >&2

		local got
		got="$("$STAGE/kube-apiserver" --version 2>&1)"
		[[ "$got" == "Kubernetes v$K8S_VERSION" ]] || die "built kube-apiserver reports '$got', want 'Kubernetes v$K8S_VERSION'"
		log "kube-apiserver: $got"
	}

	build_etcd() {
		local mod="$WORK/etcd"
		mkdir -p "$mod"
		cd "$mod"
		# `go install go.etcd.io/etcd/server/v3@v...` is refused because etcd's go.mod has replace
		# directives; requiring it from a throwaway module works.
		"$GO" mod init loopguard.invalid/envtest/etcd >/dev/null 2>&1
		log "etcd: resolving modules"
		"$GO" get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >&2
		log "etcd: building"
		CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-s -w" -o "$STAGE/etcd" go.etcd.io/etcd/server/v3 >&2

		local got
		# Not "| head -n1": with pipefail, etcd's SIGPIPE on its second line fails the build.
		got="$("$STAGE/etcd" --version 2>&1)"
		got="${got%%$'\n'*}"
		[[ "$got" == *"$ETCD_VERSION"* ]] || die "built etcd reports '$got', want version $ETCD_VERSION"
		log "etcd: $got"
	}

	start=$SECONDS
	(build_etcd)
	(build_kube_apiserver)

	# rename(2) of a folder onto an existing non-empty folder fails, so if another build without
	# flock won the race, keep its result and drop ours.
	if ! mv -T "$STAGE" "$DEST" 2>/dev/null; then
		cache_hit || die "could not move $STAGE to $DEST; if $DEST is left from something else, remove it and run again"
		log "another build filled $DEST first; using it"
	fi
	log "done in $((SECONDS - start)) s: $DEST"
	printf '%s\n' "$DEST"
}

main "$@"
