#!/usr/bin/env bash
# opentofu.sh builds a real OpenTofu CLI from the Go module proxy and caches the binary, so the
# Terraform provider example (examples/terraform-provider) is tested by a real Terraform-
# compatible CLI; no prebuilt binary can be downloaded where loopguard is built (the cache
# and the throwaway module are hack/lib/binary-cache.sh's). It prints the binary's path last:
#
#   export TF_ACC_TERRAFORM_PATH="$(hack/opentofu.sh)"
#   go test ./examples/terraform-provider/...
#
# Logs go to stderr. A cache hit runs nothing but `go env`. A cold build takes about 4 minutes
# on two idle cores (16 min wall, 6 min of CPU, when measured on two cores shared with other
# builds), a ~115 MB binary; with the Go build cache warm, ~20 s. It happens in a throwaway
# module under $TMPDIR, never in the project's go.mod, and the binary is moved into place in
# one rename.
#
# Environment (all optional):
#   OPENTOFU_VERSION  OpenTofu release to build (default 1.12.6)
#   LOOPGUARD_OPENTOFU_CACHE  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/loopguard/opentofu)
#   GO                go command to use (default go)
set -euo pipefail

# One function, called on the last line, so bash parses the whole file before running any of it.
main() {
	TOFU_VERSION="${OPENTOFU_VERSION:-1.12.6}"
	LOG_NAME=opentofu
	# shellcheck source=hack/lib/binary-cache.sh
	source "$(dirname "${BASH_SOURCE[0]}")/lib/binary-cache.sh"
	cache_env
	CACHE_ROOT="${LOOPGUARD_OPENTOFU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/loopguard/opentofu}"
	DEST="$CACHE_ROOT/${TOFU_VERSION}-${GO_VERSION}"
	RESULT="$DEST/tofu"
	cache_hit() { [[ -x "$DEST/tofu" ]]; }
	cache_lookup

	cache_stage opentofu
	log "cache miss: building OpenTofu v$TOFU_VERSION with $GO_VERSION (work dir $WORK)"

	cd "$WORK"
	"$GO" mod init loopguard.invalid/opentofu >/dev/null 2>&1
	# OpenTofu's go.mod replaces hashicorp/hcl/v2 with its own fork; replaces do not apply to a
	# dependent module, so each one is repeated here, read from the release's own go.mod so a
	# future release's set is not missed (v1.12.6 has exactly one).
	local gomod
	gomod="$(gomod_of "github.com/opentofu/opentofu@v$TOFU_VERSION")"
	local -a replaces
	# Lines like "replace a v1 => b v2" or, inside a replace block, "a v1 => b v2" (or without
	# the left version). Local-path replaces (=> ./...) cannot be repeated and are refused.
	mapfile -t replaces < <(awk '
		/^replace[ \t]*\(/ { inblock = 1; next }
		inblock && /^\)/ { inblock = 0; next }
		/^replace[ \t]/ { sub(/^replace[ \t]+/, ""); print; next }
		inblock && /=>/ { print }
	' "$gomod" | sed 's#//.*##; s/[[:space:]]*$//; s/^[[:space:]]*//' | grep '=>' || true)
	local -a edits=("-require=github.com/opentofu/opentofu@v$TOFU_VERSION")
	local r left right
	for r in "${replaces[@]}"; do
		left="${r%%=>*}"
		right="${r#*=>}"
		left="$(echo $left | tr ' ' '@')"
		right="$(echo $right | tr ' ' '@')"
		[[ "$right" == .* || "$right" == /* ]] && die "local replace in OpenTofu's go.mod cannot be repeated: $r"
		edits+=("-replace=$left=$right")
	done
	log "${#replaces[@]} replace(s) from OpenTofu's go.mod: ${replaces[*]:-none}"
	"$GO" mod edit "${edits[@]}"

	log "resolving modules"
	"$GO" get "github.com/opentofu/opentofu/cmd/tofu@v$TOFU_VERSION" >&2

	log "building (the slow part)"
	# The remote-state backends' clients (S3, GCS, Azure, OSS, COS, Kubernetes, Consul,
	# PostgreSQL), the OCI registry client, telemetry exporters and gRPC's xDS are about half of
	# what OpenTofu compiles, and examples/terraform-provider's tests run none of them (local
	# state, the provider attached in-process by terraform-plugin-testing, no tracing). They are
	# compiled without optimizations or inlining, as Envoy Gateway is (hack/envoy-gateway.sh),
	# which saves their optimization passes; everything the tests run (OpenTofu itself, HCL,
	# cty, gRPC's core, protobuf, the standard library) keeps the compiler's defaults: the
	# provider's tests took 35.6 s of CPU with this build and 39.3 s with the optimized one,
	# where all of OpenTofu built with -N -l had cost them 21 s more.
	# (-gcflags takes one pattern per flag; a package matching none keeps the defaults.)
	local -a gcflags=() p
	for p in k8s.io/... sigs.k8s.io/... github.com/aws/... github.com/hashicorp/aws-sdk-go-base/... \
		cloud.google.com/go/... google.golang.org/api/... github.com/googleapis/... github.com/google/s2a-go/... \
		github.com/Azure/... github.com/AzureAD/... github.com/aliyun/... github.com/tencentcloud/... \
		github.com/hashicorp/consul/... github.com/lib/pq/... oras.land/... go.opentelemetry.io/... \
		google.golang.org/grpc/xds/... google.golang.org/grpc/internal/xds/... github.com/envoyproxy/... \
		github.com/cncf/... github.com/spiffe/...; do
		gcflags+=("-gcflags=$p=-N -l")
	done
	# OpenTofu marks a build as a release through version.dev; without "no" it reports itself
	# as v<version>-dev, which providers do not care about but people reading logs do.
	"$GO" build "${gcflags[@]}" \
		-ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" \
		-o "$STAGE/tofu" github.com/opentofu/opentofu/cmd/tofu >&2

	local got
	# A caller's CLI configuration (TF_CLI_CONFIG_FILE naming a missing file, a broken
	# ~/.tofurc) makes `tofu version` print its complaints first; the check is about the binary.
	# Not "| sed ...q": with pipefail, tofu's SIGPIPE would end the script without a word.
	got="$(cd "$WORK" && env -u TF_CLI_ARGS HOME="$WORK" TF_CLI_CONFIG_FILE=/dev/null "$STAGE/tofu" version 2>&1)" || die "built tofu does not run: $got"
	got="$(grep -m1 '^OpenTofu v' <<<"$got" || true)"
	[[ "$got" == "OpenTofu v$TOFU_VERSION" ]] || die "built tofu reports '$got', want v$TOFU_VERSION"
	log "$got"

	cache_publish
}

main "$@"
