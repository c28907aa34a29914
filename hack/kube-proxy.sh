#!/usr/bin/env bash
# kube-proxy.sh builds a real kube-proxy from the Go module proxy and caches the binary, so the
# dataplane lab's interception rules are programmed by kube-proxy itself rather than written by
# hand (the cache and the throwaway module are hack/lib/binary-cache.sh's, shared with
# hack/envtest-assets.sh). It prints the binary's path as the last line of stdout:
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
#   KUBE_PROXY_VERSION  Kubernetes release to build (default K8S_RELEASE of hack/lib/binary-cache.sh, 1.37.2)
#   LOOPGUARD_KUBE_PROXY_CACHE  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/loopguard/kube-proxy)
#   GO                  go command to use (default go)
set -euo pipefail

# One function, called on the last line, so bash parses the whole file before running any of it.
main() {
	LOG_NAME=kube-proxy
	# shellcheck source=hack/lib/binary-cache.sh
	source "$(dirname "${BASH_SOURCE[0]}")/lib/binary-cache.sh"
	K8S_VERSION="${KUBE_PROXY_VERSION:-$K8S_RELEASE}"
	cache_env
	CACHE_ROOT="${LOOPGUARD_KUBE_PROXY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/loopguard/kube-proxy}"
	DEST="$CACHE_ROOT/k8s-${K8S_VERSION}-${GO_VERSION}"
	RESULT="$DEST/kube-proxy"
	cache_hit() { [[ -x "$DEST/kube-proxy" ]]; }
	cache_lookup

	cache_stage kube-proxy
	log "cache miss: building kube-proxy v$K8S_VERSION with $GO_VERSION (work dir $WORK)"
	k8s_module "$WORK/kube-proxy" "$K8S_VERSION"
	# A release other than K8S_RELEASE shares no compiled package with anything else CI builds
	# (its k8s.io/* are other versions), so, as Envoy Gateway (hack/envoy-gateway.sh), it is
	# built without optimizations or inlining: kube-proxy 1.28.15, for the version-skew test,
	# programs a few rules and needs to behave as released, not fast.
	local gcflags=""
	[[ "$K8S_VERSION" == "$K8S_RELEASE" ]] || gcflags="all=-N -l"
	k8s_build "$WORK/kube-proxy" "$K8S_VERSION" kube-proxy "$STAGE/kube-proxy" "$gcflags"
	cache_publish
}

main "$@"
