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
#   K8S_VERSION      Kubernetes version to build (default K8S_RELEASE of hack/lib/binary-cache.sh, 1.37.2; staging modules use 0.<minor>.<patch>)
#   ETCD_VERSION     etcd version to build (default 3.7.0: the go.etcd.io/etcd/server/v3 that
#                    k8s.io/kubernetes v1.37.2's go.mod requires; see build_etcd)
#   LOOPGUARD_ENVTEST_CACHE  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/loopguard/envtest)
#   GO               go command to use (default go)
set -euo pipefail

# The whole script is one function, called on the last line, so bash parses all of it before
# running any: editing or checking out this file during a six-minute build cannot change what
# the running build does next.
main() {
	ETCD_VERSION="${ETCD_VERSION:-3.7.0}"
	LOG_NAME=envtest-assets
	# shellcheck source=hack/lib/binary-cache.sh
	source "$(dirname "${BASH_SOURCE[0]}")/lib/binary-cache.sh"
	K8S_VERSION="${K8S_VERSION:-$K8S_RELEASE}"
	cache_env
	CACHE_ROOT="${LOOPGUARD_ENVTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/loopguard/envtest}"
	DEST="$CACHE_ROOT/k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}-${GO_VERSION}"
	RESULT="$DEST"
	cache_hit() { [[ -x "$DEST/kube-apiserver" && -x "$DEST/etcd" ]]; }
	cache_lookup

	cache_stage envtest
	log "cache miss: building kube-apiserver v$K8S_VERSION and etcd v$ETCD_VERSION with $GO_VERSION"
	log "work dir: $WORK"

	# etcd_from_copy: etcd does not depend on the Kubernetes release, so another release's cache
	# folder with the same etcd and Go has it already (a copy, so each folder stays whole on
	# its own).
	etcd_from_copy() {
		local other
		for other in "$CACHE_ROOT"/k8s-*-etcd-"$ETCD_VERSION"-"$GO_VERSION"/etcd; do
			if [[ -x "$other" ]]; then
				cp "$other" "$STAGE/etcd"
				log "etcd: v$ETCD_VERSION copied from $other"
				return 0
			fi
		done
		return 1
	}

	# build_etcd DIR: builds etcd's server in the module DIR. In kube-apiserver's module when
	# that release's go.mod requires go.etcd.io/etcd/server/v3 at ETCD_VERSION (v3.7.0 for
	# 1.37.2: the etcd server Kubernetes' own integration tests embed, through that
	# requirement): etcd then compiles against the versions kube-apiserver was just built with
	# (gRPC, protobuf, golang.org/x/*, OpenTelemetry, Prometheus) and most of its packages come
	# from the Go build cache. In a module of its own, etcd's newer patch picks newer versions
	# of those and every one of them is compiled again (measured: see .ci/run). Any other
	# version is built on its own, as before.
	build_etcd() {
		local mod="$1"
		cd "$mod"
		log "etcd: resolving modules"
		# `go install go.etcd.io/etcd/server/v3@v...` is refused because etcd's go.mod has
		# replace directives; requiring it from a module works.
		"$GO" get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >&2
		log "etcd: building"
		"$GO" build -ldflags "-s -w" -o "$STAGE/etcd" go.etcd.io/etcd/server/v3 >&2

		local got
		# Not "| head -n1": with pipefail, etcd's SIGPIPE on its second line fails the build.
		got="$("$STAGE/etcd" --version 2>&1)"
		got="${got%%$'\n'*}"
		[[ "$got" == *"$ETCD_VERSION"* ]] || die "built etcd reports '$got', want version $ETCD_VERSION"
		log "etcd: $got"
	}

	k8s_module "$WORK/kube-apiserver" "$K8S_VERSION"
	k8s_build "$WORK/kube-apiserver" "$K8S_VERSION" kube-apiserver "$STAGE/kube-apiserver"
	if ! etcd_from_copy; then
		if grep -Eq "^[[:space:]]*go\.etcd\.io/etcd/server/v3 v$ETCD_VERSION([[:space:]]|$)" "$(gomod_of "k8s.io/kubernetes@v$K8S_VERSION")"; then
			log "etcd: v$ETCD_VERSION is the one k8s.io/kubernetes v$K8S_VERSION requires: built in kube-apiserver's module"
			(build_etcd "$WORK/kube-apiserver")
		else
			log "etcd: k8s.io/kubernetes v$K8S_VERSION does not require v$ETCD_VERSION: built in a module of its own"
			mkdir -p "$WORK/etcd"
			(cd "$WORK/etcd" && "$GO" mod init loopguard.invalid/envtest/etcd >/dev/null 2>&1)
			(build_etcd "$WORK/etcd")
		fi
	fi
	cache_publish
}

main "$@"
