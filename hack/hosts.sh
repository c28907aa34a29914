#!/usr/bin/env bash
# hack/hosts.sh: proves that a host on any supported Kubernetes minor can add loopguard without
# moving its own Kubernetes modules, and that the decorator and the controller work there.
#
# hack/hosts/ holds three hosts, each as a module with one go.mod per supported minor
# (go.mod is the newest minor, go.<minor>.mod the older ones, read with go's -modfile):
#   ccm         a cloud-controller-manager fork (k8s.io/cloud-provider's sample main) that wraps
#               its cloud with adapters/cloudprovider;
#   sdk         a platform SDK on client-go that imports core, every provider, adapters/kube and
#               adapters/terraform;
#   controller  an operator on controller-runtime that registers adapters/controller.
# doc.go and host.go are the host before loopguard, loopguard.go what adding loopguard means.
#
# For each host and minor, from scratch in a throwaway folder:
#   1. the host without loopguard: `go mod init`, the minor's pins (the .0 patch of 1.35 and
#      1.36, the strictest case; on 1.37 the patch make test builds), `go mod tidy`;
#   2. loopguard added (require + replace to this checkout: the root module and the nested ones
#      its loopguard.go imports, see nested below), `go mod tidy`;
#   3. every k8s.io/* and sigs.k8s.io/* module of (1) must be at the same version in (2), the
#      go directive must stay `go 1.26.0` with no toolchain line, and the result must equal the
#      committed go.mod of that minor (hack/hosts.sh --update rewrites them);
#   4. it builds (not vetted: go vet would first compute its analyzers' facts for each of the
#      host's ~1,400 dependencies, minutes of CPU on a cold machine for three files of host code;
#      make lint vets loopguard itself); on the oldest minor the host first moves to the patch of the
#      kube-apiserver its tests run against (1.35.4, whose build compiled the same Kubernetes
#      packages), and loopguard's own tests of what the host embeds then run inside the
#      host's build list against that kube-apiserver (K8S_VERSION=1.35.4
#      hack/envtest-assets.sh): adapters/cloudprovider (the decorator, with
#      the upstream service controller's suite wrapped) in the ccm host, adapters/kube in the
#      sdk host, adapters/controller in the controller host. make test runs the same tests on
#      the newest release. On the middle minor (1.36) the host and every dependency are
#      type-checked from source (hack/typecheck, golang.org/x/tools/go/packages, as gopls does)
#      instead of compiled: nothing else in CI compiles that release's ~1,400 packages, the
#      type checker reports every error the compiler would for loopguard's code and the
#      host's (go/types and the compiler's types2 are one checker), and the CCM host took 19 s of
#      CPU in a cold CI run, 268 s when it was compiled; what it cannot see, code generation and
#      linking, the oldest and the newest minor cover. Compiling a third release's tests would
#      cost CI minutes its cold-run budget does not have.
#
# It prints one line per host and minor, e.g.
#   hosts: ccm on Kubernetes 1.35 (pins ...): 173 -> 226 modules in the graph, 1164 -> 1371
#   packages compiled, no k8s.io/sigs.k8s.io version moved, $others_n other modules moved ($others_compiled compiled), go 1.26.0 kept; added: ...; tests
#
# Environment: KUBEBUILDER_ASSETS_1_35 (default: built or found by hack/envtest-assets.sh), HOSTS_MINORS (default "1.35 1.36 1.37"), HOSTS_KINDS (default
# "ccm sdk controller"), HOSTS_TESTS=0 to only check and build.
set -euo pipefail

main() {
	ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
	LOG_NAME=hosts
	# shellcheck source=hack/lib/binary-cache.sh
	source "$ROOT/hack/lib/binary-cache.sh"
	# -trimpath as the Makefile builds: the packages make test compiled, and the results of tests
	# whose code and build list did not change, come from the Go caches.
	# -ldflags=-w: the tests' binaries are linked without DWARF, as make's are (Makefile).
	export GOTOOLCHAIN=local GOWORK=off GOFLAGS="-mod=mod -trimpath -ldflags=-w" LC_ALL=C
	GO="${GO:-go}"
	UPDATE=0
	[[ "${1:-}" == "--update" ]] && UPDATE=1

	local minors kinds
	read -r -a minors <<<"${HOSTS_MINORS:-1.35 1.36 1.37}"
	read -r -a kinds <<<"${HOSTS_KINDS:-ccm sdk controller}"
	OLDEST=1.35 NEWEST=1.37

	WORK="$(mktemp -d "${TMPDIR:-/tmp}/loopguard-hosts.XXXXXX")"
	trap 'rm -rf "$WORK"' EXIT
	# hack/typecheck for the middle minors (its own module: golang.org/x/tools stays out of
	# loopguard's go.mod).
	TYPECHECK="$WORK/typecheck"
	(cd "$ROOT/hack/typecheck" && "$GO" build -o "$TYPECHECK" .)

	local failed=0 minor kind TIMEFORMAT
	for minor in "${minors[@]}"; do
		for kind in "${kinds[@]}"; do
			# The CPU each host costs (a cold CI run is CPU-bound; .ci/run times the steps).
			TIMEFORMAT="hosts: $kind on Kubernetes $minor took %0R s (CPU: %0U s user, %0S s system)"
			time check "$kind" "$minor" || failed=1
		done
	done
	((failed == 0)) || die "a host moved, failed to build or failed its tests (above)"
}

# pins KIND MINOR: the modules a host of that kind names in its go.mod before loopguard.
pins() {
	local kind="$1" minor="$2" k8s="v0.${2#1.}.0" cr
	# controller-runtime's release for each Kubernetes minor (its README's compatibility table).
	# The newest minor is pinned at the patch make test builds (hack/newest): its packages are
	# then already compiled, and the .0 patch is the stricter case the older minors cover.
	case "$minor" in
	1.35) cr=v0.23.0 ;;
	1.36) cr=v0.24.0 ;;
	1.37) cr=v0.25.3 k8s=v0.37.2 ;;
	*) die "no pins for Kubernetes $minor" ;;
	esac
	case "$kind" in
	ccm) echo "k8s.io/cloud-provider@$k8s k8s.io/apimachinery@$k8s k8s.io/component-base@$k8s k8s.io/client-go@$k8s k8s.io/api@$k8s" ;;
	sdk) echo "k8s.io/client-go@$k8s k8s.io/apimachinery@$k8s k8s.io/api@$k8s" ;;
	controller) echo "sigs.k8s.io/controller-runtime@$cr k8s.io/client-go@$k8s k8s.io/apimachinery@$k8s k8s.io/api@$k8s" ;;
	*) die "unknown host $kind" ;;
	esac
}

# assets MINOR: the KUBEBUILDER_ASSETS folder a minor's tests run against.
assets() {
	case "$1" in
	1.35) echo "${KUBEBUILDER_ASSETS_1_35:-$(K8S_VERSION=1.35.4 "$ROOT/hack/envtest-assets.sh")}" ;;
	*) die "no kube-apiserver chosen for Kubernetes $1" ;;
	esac
}

# kube_versions: "path version" of every k8s.io/* and sigs.k8s.io/* module in the build list.
kube_versions() { "$GO" list -m -f '{{.Path}} {{.Version}}' all | grep -E '^(k8s\.io|sigs\.k8s\.io)/' | sort; }

# all_versions: "path version" of every module in the build list.
all_versions() { "$GO" list -m -f '{{.Path}} {{.Version}}' all | sort; }

# nested KIND: loopguard's nested modules whose packages the host's loopguard.go imports (the
# root module, github.com/loopguard/loopguard, is required by every host). They are modules of
# their own so that a host that does not import them (a CCM fork) inherits none of their
# requirements (Gateway API and what it requires).
nested() {
	case "$1" in
	ccm) ;;
	sdk) echo providers/gateway ;;
	controller) echo adapters/controller providers/gateway ;;
	*) die "no such host: $1" ;;
	esac
}

# replace_loopguard KIND BASE: points loopguard's modules at the checkout under BASE.
replace_loopguard() {
	local -a edits=(-replace=github.com/loopguard/loopguard="$2") m
	for m in $(nested "$1"); do edits+=(-replace=github.com/loopguard/loopguard/$m="$2/$m"); done
	"$GO" mod edit "${edits[@]}"
}

check() {
	local kind="$1" minor="$2" src="$ROOT/hack/hosts/$1" dir="$WORK/$1-$2" modfile
	modfile="go.$minor.mod"
	[[ "$minor" == "$NEWEST" ]] && modfile=go.mod
	mkdir -p "$dir"
	cp "$src/doc.go" "$src/host.go" "$dir/"
	(
		cd "$dir"
		# 1. The host before loopguard.
		"$GO" mod init "loopguard.invalid/hosts/$kind" >/dev/null 2>&1
		"$GO" mod edit -go=1.26.0 -toolchain=none
		# shellcheck disable=SC2046
		"$GO" get $(pins "$kind" "$minor") >/dev/null 2>&1 || { "$GO" get $(pins "$kind" "$minor"); exit 1; }
		"$GO" mod tidy
		kube_versions >before.txt
		all_versions >before-all.txt
		local before_n before_p
		before_n="$("$GO" list -m all | wc -l)"
		before_p="$("$GO" list -deps ./... | wc -l)"

		# 2. loopguard added.
		cp "$src/loopguard.go" .
		local -a requires=(-require=github.com/loopguard/loopguard@v0.0.0) m
		for m in $(nested "$kind"); do requires+=(-require=github.com/loopguard/loopguard/$m@v0.0.0); done
		"$GO" mod edit "${requires[@]}"
		replace_loopguard "$kind" "$ROOT"
		"$GO" mod tidy
		kube_versions >after.txt
		all_versions >after-all.txt
		local after_n after_p moved added directive
		after_n="$("$GO" list -m all | wc -l)"
		after_p="$("$GO" list -deps ./... | wc -l)"

		# 3. Nothing of the host's moved; the go directive stayed.
		moved="$(join before.txt after.txt | awk '$2 != $3 { printf "  %s: %s -> %s\n", $1, $2, $3 }')"
		added="$(join -v2 before.txt after.txt | awk '{ printf " %s@%s", $1, $2 }')"
		# Every other module of the host's build list that moved, and how many of them the
		# host compiles (go list -deps): reported, not refused (hack/forks.sh holds real forks
		# to 0 compiled).
		local others others_n others_compiled
		others="$(join before-all.txt after-all.txt | awk '$2 != $3 && $1 !~ /^(k8s\.io|sigs\.k8s\.io)\// { print $1 }')"
		others_n="$(grep -c . <<<"$others" || true)"
		others_compiled="$(join <(printf '%s\n' "$others") <("$GO" list -deps -f '{{with .Module}}{{.Path}}{{end}}' ./... | sort -u) | grep -c . || true)"
		directive="$("$GO" mod edit -json | awk -F'"' '/"Go":/ { print $4 } /"Toolchain":/ { print "toolchain " $4 }' | tr '\n' ' ')"
		if [[ -n "$moved" ]]; then
			log "$kind on Kubernetes $minor: adding loopguard moved the host's modules:"
			printf '%s\n' "$moved" >&2
			exit 1
		fi
		[[ "$directive" == "1.26.0 " ]] || { log "$kind on Kubernetes $minor: go directive is now '$directive', want 1.26.0 and no toolchain line"; exit 1; }
		# The committed host is exactly this one (with the replace relative to its folder).
		replace_loopguard "$kind" ../../..
		if ((UPDATE)); then
			cp go.mod "$src/$modfile"
			cp go.sum "$src/${modfile%.mod}.sum"
		elif ! diff -u "$src/$modfile" go.mod >&2; then
			log "$kind on Kubernetes $minor: hack/hosts/$kind/$modfile is not what a fresh host gets (above); run hack/hosts.sh --update"
			exit 1
		fi
		replace_loopguard "$kind" "$ROOT"

		# 4. It builds, and loopguard's tests of what it embeds pass in its build list. On the
		#    oldest minor the host first takes the patch of the kube-apiserver its tests run
		#    against (1.35.4), as a host on a later patch would (most are): the checks above
		#    stay on the .0 patch, the strict case, and the Kubernetes packages the host
		#    compiles are then the ones that kube-apiserver's build compiled, so on a cold
		#    machine they come from the Go build cache instead of being compiled a second time
		#    (k8s.io/api, apimachinery, client-go, apiserver, component-base: most of a CCM's).
		local tests="tests skipped (HOSTS_TESTS=0)" kba="" patch=""
		if [[ "${HOSTS_TESTS:-1}" != 0 && "$minor" == "$OLDEST" ]]; then
			kba="$(assets "$minor")"
			patch="$(basename "$kba" | cut -d- -f2)"
			# shellcheck disable=SC2046
			"$GO" get $(pins "$kind" "$minor" | sed "s/@v0\.${minor#1.}\.0\b/@v0.${patch#1.}/g") >/dev/null 2>&1 ||
				{ log "$kind on Kubernetes $minor: could not move the host to v0.${patch#1.}"; exit 1; }
			"$GO" mod tidy
		fi
		local built="built"
		if [[ -z "$kba" && "$minor" != "$NEWEST" ]]; then
			# A middle minor (1.36) shares no compiled package with the rest of CI (its k8s.io/*
			# are other versions): type-checked from source, every dependency included (above).
			"$TYPECHECK" ./... >&2
			built="type-checked from source"
		else
			"$GO" build ./...
		fi
		if [[ -n "$kba" ]]; then
			local pkg
			case "$kind" in
			ccm) pkg=github.com/loopguard/loopguard/adapters/cloudprovider/... ;;
			sdk) pkg=github.com/loopguard/loopguard/adapters/kube ;;
			controller) pkg=github.com/loopguard/loopguard/adapters/controller ;;
			esac
			# -vet=off: make lint vets these packages with every analyzer; go test's own vet pass
			# would compute facts for the whole 1.35 build list once more.
			KUBEBUILDER_ASSETS="$kba" "$GO" test -vet=off "$pkg" >test.log 2>&1 || { cat test.log >&2; log "$kind on Kubernetes $minor: $pkg failed in the host's build list"; exit 1; }
			tests="built on k8s.io/* v0.${patch#1.}; $pkg ok against kube-apiserver $patch"
			grep -q "(cached)" test.log && tests+=" (cached: go test's cache holds a pass of the same code and build list)"
		elif [[ "$minor" == "$NEWEST" ]]; then
			tests="tests run by make test on the newest release"
		elif [[ "$minor" != "$OLDEST" ]]; then
			tests="$built (compiled and tested on the oldest and the newest minor)"
		fi
		log "$kind on Kubernetes $minor (pins $(pins "$kind" "$minor" | tr ' ' ',')): $before_n -> $after_n modules in the graph, $before_p -> $after_p packages $built, no k8s.io/sigs.k8s.io version moved, $others_n other modules moved ($others_compiled compiled), go 1.26.0 kept; added:${added:- none}; $tests"
	)
}

main "$@"
