#!/usr/bin/env bash
# cluster-bin.sh builds one part of the real cluster that hack/cluster brings up, from the
# Go module proxy, and caches it under ~/.cache/loopguard/<part>/<version>-<go version> (the
# cache and the throwaway modules are hack/lib/binary-cache.sh's). It prints the folder holding
# the binaries as the last line of stdout:
#
#   hack/cluster-bin.sh kubernetes   # kubelet, kube-controller-manager, kube-scheduler
#   hack/cluster-bin.sh containerd   # containerd, containerd-shim-runc-v2, ctr
#   hack/cluster-bin.sh runc         # runc with seccomp (cgo, libseccomp linked statically)
#   hack/cluster-bin.sh cni          # the bridge, host-local, loopback and portmap plugins
#   hack/cluster-bin.sh coredns      # coredns, with the plugins the cluster's Corefiles use
#
# kube-apiserver and etcd come from hack/envtest-assets.sh and kube-proxy from
# hack/kube-proxy.sh, the builds the tests already use. Logs go to stderr; a cache hit runs
# nothing but `go env`.
#
# Versions: Kubernetes is K8S_RELEASE (hack/lib/binary-cache.sh). The others are what that
# release's own tooling names: CoreDNS v1.14.6 is kubeadm's CoreDNSVersion
# (cmd/kubeadm/app/constants/constants.go at v1.37.2), the CNI plugins v1.9.1 are
# build/dependencies.yaml's "cni" at v1.37.2; containerd 2.4.2 and runc 1.5.3 are the newest
# patch releases the module proxy serves.
#
# Environment (all optional): CONTAINERD_VERSION, RUNC_VERSION, CNI_PLUGINS_VERSION,
# COREDNS_VERSION, GO, and LOOPGUARD_CLUSTER_CACHE (the cache root, default
# ${XDG_CACHE_HOME:-$HOME/.cache}/loopguard).
set -euo pipefail

# One function, called on the last line, so bash parses the whole file before running any of it.
main() {
	local part="${1:-}"
	LOG_NAME="cluster-bin $part"
	# shellcheck source=hack/lib/binary-cache.sh
	source "$(dirname "${BASH_SOURCE[0]}")/lib/binary-cache.sh"
	cache_env
	local root="${LOOPGUARD_CLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/loopguard}"
	case "$part" in
	kubernetes) build_kubernetes "$root" ;;
	containerd) build_containerd "$root" ;;
	runc) build_runc "$root" ;;
	cni) build_cni "$root" ;;
	coredns) build_coredns "$root" ;;
	*) die "usage: $0 kubernetes|containerd|runc|cni|coredns" ;;
	esac
}

# has_all DIR NAME...: every NAME is an executable in DIR.
has_all() {
	local dir=$1 n
	shift
	for n in "$@"; do
		[[ -x "$dir/$n" ]] || return 1
	done
}

# The node and control-plane binaries kube-apiserver's build does not give: built in a module
# made exactly as hack/envtest-assets.sh makes kube-apiserver's (the same requirements, the same
# staging replaces, the same flags), so every package they share with it (client-go,
# apiserver, component-base, most of pkg/) comes compiled from the Go build cache.
build_kubernetes() {
	local version="$K8S_RELEASE"
	CACHE_ROOT="$1/kubernetes"
	DEST="$CACHE_ROOT/k8s-$version-$GO_VERSION"
	RESULT="$DEST"
	local bins=(kubelet kube-controller-manager kube-scheduler)
	cache_hit() { has_all "$DEST" "${bins[@]}"; }
	cache_lookup
	cache_stage kubernetes
	log "cache miss: building ${bins[*]} v$version with $GO_VERSION (work dir $WORK)"
	k8s_module "$WORK/kube-apiserver" "$version"
	local b
	for b in "${bins[@]}"; do
		k8s_build "$WORK/kube-apiserver" "$version" "$b" "$STAGE/$b"
	done
	cache_publish
}

# containerd with its runc shim and ctr. The tags drop the snapshotters that need cgo and
# headers this machine lacks (btrfs, devmapper, zfs; BUILDING.md at v2.4.2); the cluster uses
# overlayfs. no_tracing drops the OpenTelemetry tracing plugin and its OTLP exporters
# (cmd/containerd/builtins/tracing.go at v2.4.2), 42 of the 806 packages the three commands
# compile, which the cluster never configures. Built in a module of its own: containerd 2.4.2
# requires newer gRPC, OpenTelemetry and golang.org/x/* than Kubernetes 1.37.2, so in kube's
# module it would share nothing and move kube's versions instead (go list -deps: 743 packages
# to compile there against 749 on its own).
build_containerd() {
	local version="${CONTAINERD_VERSION:-2.4.2}"
	CACHE_ROOT="$1/containerd"
	# The tags are part of the key: a build with other tags is another binary.
	local tags="no_btrfs no_devmapper no_zfs no_tracing"
	DEST="$CACHE_ROOT/$version-${tags// /-}-$GO_VERSION"
	RESULT="$DEST"
	local bins=(containerd containerd-shim-runc-v2 ctr)
	cache_hit() { has_all "$DEST" "${bins[@]}"; }
	cache_lookup
	cache_stage containerd
	log "cache miss: building containerd v$version with $GO_VERSION"
	local pkgs=() b
	for b in "${bins[@]}"; do
		pkgs+=("github.com/containerd/containerd/v2/cmd/$b@v$version")
	done
	# -X: without it `containerd --version` says v2.x.y+unknown; kubelet logs the runtime's version.
	GOBIN="$STAGE" "$GO" install -tags "$tags" \
		-ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=v$version" "${pkgs[@]}" >&2
	local got
	got="$("$STAGE/containerd" --version)"
	[[ "$got" == *"v$version"* ]] || die "built containerd reports '$got', want v$version"
	log "$got"
	cache_publish
}

# runc with seccomp. containerd 2.x gives the pause container the RuntimeDefault seccomp
# profile, and a runc built without the seccomp tag refuses any profile, so no Pod would start.
# libseccomp is Debian's libseccomp-dev, linked statically so the cached runc needs nothing at
# run time: the installed package (.ci/run installs it), or else the package downloaded and
# unpacked, not installed, with only its static archive left. Its version is part of the key.
build_runc() {
	local version="${RUNC_VERSION:-1.5.3}"
	CACHE_ROOT="$1/runc"
	local seccomp_version installed=""
	command -v gcc >/dev/null 2>&1 || die "runc needs cgo and a C compiler (Debian: gcc, libc6-dev)"
	command -v pkg-config >/dev/null 2>&1 || die "runc needs pkg-config to find libseccomp (Debian: pkg-config)"
	if seccomp_version="$(dpkg-query -W -f='${Version}' libseccomp-dev 2>/dev/null)" && [[ -n "$seccomp_version" ]]; then
		installed=1
	else
		command -v apt-get >/dev/null 2>&1 || die "runc needs Debian's libseccomp-dev (not installed, and no apt-get to fetch it)"
		seccomp_version="$(apt-cache policy libseccomp-dev 2>/dev/null | sed -n 's/^[[:space:]]*Candidate: //p')"
		[[ -n "$seccomp_version" && "$seccomp_version" != "(none)" ]] || die "libseccomp-dev is neither installed nor available (apt-get update?)"
	fi
	DEST="$CACHE_ROOT/$version-libseccomp-${seccomp_version//[^A-Za-z0-9._-]/_}-$GO_VERSION"
	RESULT="$DEST"
	cache_hit() { has_all "$DEST" runc; }
	cache_lookup
	cache_stage runc
	log "cache miss: building runc v$version with seccomp (libseccomp-dev $seccomp_version${installed:+, installed}) and $GO_VERSION"
	local pcpath=""
	if [[ -z "$installed" ]]; then
		# apt downloads as the _apt user when it can write the folder.
		chmod 755 "$WORK"
		(cd "$WORK" && apt-get download "libseccomp-dev=$seccomp_version" >&2)
		dpkg-deb -x "$WORK"/libseccomp-dev_*.deb "$WORK/seccomp"
		local pc
		pc="$(find "$WORK/seccomp" -name libseccomp.pc | head -n1)"
		[[ -f "$pc" ]] || die "libseccomp.pc not found in libseccomp-dev"
		# libseccomp.pc's libdir is ${prefix}/lib/<triplet>, which the prefix fix covers.
		sed -i "s#^prefix=.*#prefix=$WORK/seccomp/usr#" "$pc"
		# Only the static archive left: the linker then cannot pick the shared library.
		find "$WORK/seccomp" -name 'libseccomp.so*' -delete
		pcpath="${pc%/*}"
	fi
	# netgo and osusergo, as runc's own static build (its Makefile's EXTRA_TAGS for
	# `make static`): the Go resolvers instead of glibc's, which a static binary cannot load.
	PKG_CONFIG_PATH="$pcpath" CGO_ENABLED=1 GOBIN="$STAGE" "$GO" install -tags "seccomp netgo osusergo" \
		-ldflags "-s -w -X main.version=$version -extldflags -static" "github.com/opencontainers/runc@v$version" >&2
	local got
	got="$("$STAGE/runc" --version)"
	[[ "$got" == *"$version"* && "$got" == *"libseccomp"* ]] || die "built runc reports '$got', want $version with libseccomp"
	log "${got//$'\n'/; }"
	cache_publish
}

build_cni() {
	local version="${CNI_PLUGINS_VERSION:-1.9.1}"
	CACHE_ROOT="$1/cni-plugins"
	DEST="$CACHE_ROOT/$version-$GO_VERSION"
	RESULT="$DEST"
	local bins=(bridge host-local loopback portmap)
	cache_hit() { has_all "$DEST" "${bins[@]}"; }
	cache_lookup
	cache_stage cni
	log "cache miss: building CNI plugins v$version with $GO_VERSION"
	local m=github.com/containernetworking/plugins/plugins
	GOBIN="$STAGE" "$GO" install -ldflags "-s -w" \
		"$m/main/bridge@v$version" "$m/ipam/host-local@v$version" "$m/main/loopback@v$version" "$m/meta/portmap@v$version" >&2
	cache_publish
}

# CoreDNS with the plugins the cluster's two Corefiles use (kubeadm's, with loopguard's
# rewrite rules, and the cloud DNS's hosts file) and a few for debugging, built the way
# CoreDNS documents for a custom plugin set: a main that imports coremain and only those
# plugins (the release's own main imports core/plugin, every plugin, the cloud SDKs of
# route53, azure and clouddns among them). The plugins' code is the release's; the cache key
# names the set and the Kubernetes release.
# It is built in a module made as kube-apiserver's is (k8s_module, the same flags), so its
# shared dependencies (client-go, k8s.io/api and apimachinery for the kubernetes plugin, gRPC,
# protobuf, Prometheus, OpenTelemetry) resolve to the versions kube-apiserver was built with
# and come compiled from the Go build cache, as etcd's do (hack/envtest-assets.sh): go list
# -deps counts 110 packages to compile after kube-apiserver, kubelet and the controllers,
# against 539 in a module of its own (CoreDNS v1.14.6, Kubernetes 1.37.2). CoreDNS's own
# dependencies move up to kube's where those are newer (53 modules: k8s.io/client-go v0.35.4 to
# the cluster's own v0.37.2, gRPC v1.82.0 to v1.82.1, patch and minor moves of protobuf,
# OpenTelemetry, Prometheus and golang.org/x/*), as a `go get` of it in any module would do;
# kube's move only where CoreDNS needs more (coredns/caddy, google/gofuzz), which nothing kube
# builds compiles. The binary must report the release it was asked for.
COREDNS_PLUGINS=(bind cache errors forward health hosts kubernetes loadbalance log loop metrics ready reload rewrite template whoami)
build_coredns() {
	local version="${COREDNS_VERSION:-1.14.6}"
	CACHE_ROOT="$1/coredns"
	local set
	set="$(printf '%s\n' "${COREDNS_PLUGINS[@]}" | sha256sum | cut -c1-8)"
	DEST="$CACHE_ROOT/$version-plugins-$set-k8s-$K8S_RELEASE-$GO_VERSION"
	RESULT="$DEST"
	cache_hit() { has_all "$DEST" coredns; }
	cache_lookup
	cache_stage coredns
	log "cache miss: building CoreDNS v$version (plugins: ${COREDNS_PLUGINS[*]}) in Kubernetes $K8S_RELEASE's module with $GO_VERSION"
	k8s_module "$WORK/coredns" "$K8S_RELEASE"
	cd "$WORK/coredns"
	{
		printf '// CoreDNS v%s with the plugins hack/cluster-bin.sh names.\npackage main\n\nimport (\n' "$version"
		printf '\t"github.com/coredns/coredns/coremain"\n'
		local p
		for p in "${COREDNS_PLUGINS[@]}"; do printf '\t_ "github.com/coredns/coredns/plugin/%s"\n' "$p"; done
		printf ')\n\nfunc main() { coremain.Run() }\n'
	} >main.go
	"$GO" get "github.com/coredns/coredns@v$version" >&2
	"$GO" build -ldflags "-s -w" -o "$STAGE/coredns" . >&2
	local got
	got="$("$STAGE/coredns" -version)"
	[[ "$got" == *"$version"* ]] || die "built coredns reports '$got', want $version"
	local plugins
	plugins="$("$STAGE/coredns" -plugins)"
	for p in "${COREDNS_PLUGINS[@]}"; do
		[[ "$p" == metrics ]] && p=prometheus # the directive plugin/metrics registers
		grep -Eq "^[[:space:]]*(dns\.)?$p\$" <<<"$plugins" || die "built coredns lacks plugin $p: $plugins"
	done
	log "${got%%$'\n'*}"
	cache_publish
}

main "$@"
