#!/usr/bin/env bash
# hack/envoy-gateway.sh builds Envoy Gateway's controller (github.com/envoyproxy/gateway,
# cmd/envoy-gateway) from the Go module proxy in a throwaway module and caches it under
# ~/.cache/loopguard/envoy-gateway/<version>-<go version>; it prints the folder that holds
# bin/envoy-gateway and the CRDs the controller needs (crds/: the Gateway API CRDs of the
# sigs.k8s.io/gateway-api release Envoy Gateway requires, and Envoy Gateway's own CRDs, both
# copied from the modules). Envoy Gateway's requirements never enter loopguard's go.mod: the
# build happens in its own module.
#
# It is built without optimizations or inlining (-gcflags=all=-N -l) and without a symbol table
# or DWARF (-ldflags=-s -w). Its build list (k8s.io/* v0.36.3, controller-runtime v0.24.1,
# go-control-plane, grpc, ...) shares no compiled package with loopguard's or the other test
# components' builds, so nothing is lost in the Go build cache, and the test only needs the
# controller to behave as released, not fast (the Go specification does not change with the
# optimizer). Measured with an empty Go build cache on two shared cores (2026-12-04, 2,103
# packages): 433 s of CPU optimized with DWARF, 331 s this way; the tests pass the same.
#
#   ENVOY_GATEWAY_VERSION (default below) picks the release.
set -euo pipefail
LOG_NAME=envoy-gateway
# shellcheck source=lib/binary-cache.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/binary-cache.sh"

VERSION="${ENVOY_GATEWAY_VERSION:-1.9.1}"
cache_env
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/loopguard/envoy-gateway"
DEST="$CACHE_ROOT/v$VERSION-$GO_VERSION"
RESULT="$DEST"
cache_hit() { [[ -x "$DEST/bin/envoy-gateway" && -f "$DEST/crds/.complete" ]]; }
cache_lookup
cache_stage envoy-gateway

mkdir -p "$STAGE/bin" "$STAGE/crds"
log "building github.com/envoyproxy/gateway/cmd/envoy-gateway@v$VERSION"
GOBIN="$STAGE/bin" "$GO" install -gcflags="all=-N -l" -ldflags="-s -w" "github.com/envoyproxy/gateway/cmd/envoy-gateway@v$VERSION" >&2

# The CRDs come from the modules at the versions this release requires.
(cd "$WORK" && "$GO" mod init loopguard.invalid/envoy-gateway >/dev/null 2>&1 &&
	"$GO" mod edit -require="github.com/envoyproxy/gateway@v$VERSION" &&
	"$GO" mod download -json "github.com/envoyproxy/gateway@v$VERSION" >"$WORK/eg.json")
EG_DIR="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' "$WORK/eg.json")"
[[ -d "$EG_DIR" ]] || die "no module folder for envoy gateway v$VERSION"
GWAPI_VERSION="$(sed -n 's#^[[:space:]]*sigs\.k8s\.io/gateway-api[[:space:]]\{1,\}\(v[^[:space:]]*\).*#\1#p' "$EG_DIR/go.mod" | head -1)"
[[ -n "$GWAPI_VERSION" ]] || die "no sigs.k8s.io/gateway-api requirement in $EG_DIR/go.mod"
"$GO" mod download -json "sigs.k8s.io/gateway-api@$GWAPI_VERSION" >"$WORK/gw.json"
GW_DIR="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' "$WORK/gw.json")"
[[ -d "$GW_DIR/config/crd/standard" ]] || die "no config/crd/standard in sigs.k8s.io/gateway-api@$GWAPI_VERSION"
mkdir -p "$STAGE/crds/gateway-api" "$STAGE/crds/envoy-gateway"
cp "$GW_DIR"/config/crd/standard/*.yaml "$STAGE/crds/gateway-api/"
# Envoy Gateway's own CRDs (EnvoyProxy, ClientTrafficPolicy, ...): the plain copies in its
# helm chart's crds subchart (the gateway-crds-helm chart's copies are helm templates).
found=0
for f in "$EG_DIR"/charts/gateway-helm/charts/crds/crds/generated/gateway.envoyproxy.io_*.yaml; do
	[[ -f "$f" ]] || continue
	cp "$f" "$STAGE/crds/envoy-gateway/"
	found=1
done
((found)) || die "no gateway.envoyproxy.io CRDs found in $EG_DIR/charts"
chmod -R u+w "$STAGE/crds"
printf '%s\n' "$GWAPI_VERSION" >"$STAGE/crds/gateway-api-version"
touch "$STAGE/crds/.complete"
cache_publish
