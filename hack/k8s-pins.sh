#!/usr/bin/env bash
# hack/k8s-pins.sh: fails when a module that the module's packages and tests use is at another
# version than k8s.io/kubernetes pins it in the release hack/ builds kube-apiserver and
# kube-proxy from (K8S_RELEASE in hack/lib/binary-cache.sh), or when go.mod's k8s.io/api is not
# that release's v0.<minor>.<patch>. Two reasons:
#   - k8s.io/client-go and the other k8s.io libraries are released and tested with those
#     versions;
#   - CI compiles each shared package once: a package is reused from the Go build cache only
#     when it and everything below it are at the same versions as in the kube-apiserver build.
#     One module raised by `go get -u` (golang.org/x/time, google.golang.org/protobuf were)
#     makes every package above it compile twice: about 4.5 minutes of a cold CI run.
# A module Kubernetes does not use (the cloud SDKs, controller-runtime, terraform-plugin-*) is
# free. A shared one moves with the Kubernetes release: raise K8S_RELEASE and k8s.io/* together.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

LOG_NAME=k8s-pins
# shellcheck source=hack/lib/binary-cache.sh
source hack/lib/binary-cache.sh
# The root go.mod holds the floor of the support window, so a host on it does not move.
K8S_FLOOR="${K8S_FLOOR:-v0.35.0}"
floor="$(GOWORK=off go list -m -f '{{.Version}}' k8s.io/api)"
[[ "$floor" == "$K8S_FLOOR" ]] || die "the root go.mod has k8s.io/api $floor, but the support window's floor is $K8S_FLOOR (README, Compatibility)"
# The rest checks what loopguard's own builds use: hack/newest's workspace (GOWORK).
release="v$K8S_RELEASE"
api="v0.${K8S_RELEASE#*.}" # the staging modules' tag: v1.37.2 -> v0.37.2
have="$(go list -m -f '{{.Version}}' k8s.io/api)"
[[ "$have" == "$api" ]] || die "go.mod has k8s.io/api $have, but hack/ builds Kubernetes $release (K8S_RELEASE in hack/lib/binary-cache.sh): move them together"
# Only the release's go.mod is fetched (go list -m reads .info and .mod, not the source).
gomod="$(go list -m -f '{{.GoMod}}' "k8s.io/kubernetes@$release")"
[[ -f "$gomod" ]] || die "could not read the go.mod of k8s.io/kubernetes@$release"

# path version, for every module k8s.io/kubernetes requires (its staging modules are at
# v0.0.0 there and replaced by ./staging; their published tag is $api).
pins="$(awk -v staging="$api" '
	/^require[[:space:]]*\(/ { inreq = 1; next }
	inreq && /^\)/ { inreq = 0; next }
	inreq && NF >= 2 { v = $2; if (v == "v0.0.0") v = staging; print $1, v }
	/^require[[:space:]]+[^(]/ { v = $3; if (v == "v0.0.0") v = staging; print $2, v }
' "$gomod" | sort -u)"

# The repository's go.work (the floor) and hack/newest/go.work (the newest release) are one
# workspace at two releases: they must use the same modules, or make would leave one untested.
# uses FILE: the folders FILE uses, relative to the repository's root.
uses() {
	GOWORK=off go work edit -json "$1" | awk -F'"' '/"DiskPath":/ { print $4 }' |
		while read -r d; do realpath -m --relative-to=. "$(dirname "$1")/$d"; done | sort
}
if ! diff <(uses go.work) <(uses hack/newest/go.work | grep -vx hack/newest) >/dev/null; then
	echo "k8s-pins: go.work and hack/newest/go.work use other modules (< go.work, > hack/newest/go.work):"
	diff <(uses go.work) <(uses hack/newest/go.work | grep -vx hack/newest) | grep '^[<>]'
	exit 1
fi

# path version, for every module that provides a package to a build or test of ours: the root
# module's and the nested ones' (hack/modules.sh), in the same workspace.
used="$(go list -deps -test -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}' ./... $(hack/modules.sh) | sort -u)"

shared="$(join <(printf '%s\n' "$used") <(printf '%s\n' "$pins"))"
bad="$(awk -v release="$release" '$2 != $3 { printf "  %s: %s here, %s in k8s.io/kubernetes@%s\n", $1, $2, $3, release }' <<<"$shared")"
if [[ -n "$bad" ]]; then
	echo "k8s-pins: modules shared with Kubernetes $release at other versions:"
	printf '%s\n' "$bad"
	echo "k8s-pins: pin them as Kubernetes does (go get MODULE@VERSION), or see hack/k8s-pins.sh"
	exit 1
fi
echo "k8s-pins: the $(wc -l <<<"$shared") modules shared with Kubernetes $release are at its versions"

# deploy/test and hack/helmchart are modules of their own (kustomize and Helm stay out of
# go.mod), built without the workspace. Every module they compile that loopguard's own builds
# compile too must be at the same version, or CI compiles everything above it twice: with
# kustomize/api v0.21.2 (which requires golang.org/x/sys v0.48.0, gnostic-models v0.7.1 and a
# newer protobuf) deploy/test's go vet and go test compiled client-go and controller-runtime a
# second time, minutes of a cold run, and Helm v4.3.2 (golang.org/x/net v0.62.0, logr v1.4.4 and
# ten more above hack/newest's) made hack/helmchart compile k8s.io/api, apimachinery
# and all of client-go's 289 packages again. A replace directive does not help: with -trimpath
# a package's cache key names the module version its build list requires, not the replacement.
for dir in deploy/test hack/helmchart; do
	mod_used="$(cd "$dir" && GOWORK=off go list -deps -test -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}' ./... | grep -v '^github.com/loopguard/loopguard ' | sort -u)"
	bad="$(join <(printf '%s\n' "$mod_used") <(printf '%s\n' "$used") | awk -v dir="$dir" '$2 != $3 { printf "  %s: %s in %s, %s in hack/newest\n", $1, $2, dir, $3 }')"
	if [[ -n "$bad" ]]; then
		echo "k8s-pins: $dir compiles modules at other versions than loopguard's own builds:"
		printf '%s\n' "$bad"
		echo "k8s-pins: in $dir, go get MODULE@VERSION (the hack/newest version; an older kustomize or Helm if it requires newer ones)"
		exit 1
	fi
	echo "k8s-pins: $dir compiles its $(wc -l <<<"$mod_used") modules at the versions loopguard's own builds use"
done
