# hack/lib/binary-cache.sh: what hack/envtest-assets.sh, hack/kube-proxy.sh and
# hack/opentofu.sh share. Each builds a real binary from the Go module proxy in a throwaway
# module and caches it under ~/.cache/loopguard/<tool>/<version>-<go version>, so a cache hit
# costs nothing and a cold build happens once per version. Sourced (bash reads the whole file
# before running it), never run.
#
# The caller sets LOG_NAME, then, in this order:
#   cache_env                         GO, GO_VERSION and the Go environment of a throwaway build
#   CACHE_ROOT=... DEST=... RESULT=...  and defines cache_hit (true when DEST is complete)
#   cache_lookup                      prints RESULT and exits on a hit (also after waiting for
#                                     another build of the same cache to finish)
#   cache_stage TOOL                  WORK (the module's folder) and STAGE (the result's), both
#                                     removed on exit
#   ... build into $STAGE ...
#   cache_publish                     moves STAGE to DEST in one rename and prints RESULT

# The Kubernetes release whose kube-apiserver and kube-proxy the tests run against by default.
# It matches go.mod's k8s.io/* v0.<minor>.<patch>, which hack/k8s-pins.sh checks: the module's
# packages then share their compiled dependencies with these builds.
K8S_RELEASE=1.37.2

log() { printf '%s: %s\n' "$LOG_NAME" "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

cache_env() {
	GO="${GO:-go}"
	# The key names the compiler; a toolchain switch triggered by a dependency's go directive
	# would silently build with another one than the key says.
	export GOTOOLCHAIN=local
	# The throwaway modules must not be pulled into a go.work somewhere above $TMPDIR.
	export GOWORK=off
	# A caller's GOFLAGS (-mod=vendor, -mod=readonly) would break the throwaway modules.
	# Static binaries, as Kubernetes and OpenTofu release them, with -trimpath because the
	# module's own builds use it (the Makefile sets GOFLAGS=-trimpath and CGO_ENABLED=0): with
	# the same compiler settings every package a component shares with the module at the same
	# version (the standard library, k8s.io/api, apimachinery, client-go: about 1,350 packages
	# for kube-apiserver and kube-proxy) is compiled once into the Go build cache and then
	# reused by make lint and make test; both flags are part of every compile's cache key.
	# Measured cold on two cores: go vet ./... took 369 s alone and 103 s after kube-apiserver
	# was built.
	export GOFLAGS="-mod=mod -trimpath"
	export CGO_ENABLED=0
	command -v "$GO" >/dev/null 2>&1 || die "go command '$GO' not found"
	GO_VERSION="$("$GO" env GOVERSION)"
	# A toolchain with experiments reports e.g. "go1.26.8 X:boringcrypto"; keep the key a plain name.
	GO_VERSION="${GO_VERSION//[^A-Za-z0-9._-]/_}"
}

cache_lookup() {
	if cache_hit; then
		log "cache hit: $RESULT"
		printf '%s\n' "$RESULT"
		exit 0
	fi
	mkdir -p "$CACHE_ROOT"
	# Two jobs sharing a cache would otherwise both spend minutes and gigabytes; the second
	# waits and then finds the first one's result. flock is optional (util-linux); the atomic
	# rename in cache_publish keeps the cache consistent without it.
	if command -v flock >/dev/null 2>&1; then
		exec 9>"$CACHE_ROOT/.lock"
		if ! flock -n 9; then
			log "another build holds $CACHE_ROOT/.lock; waiting"
			flock 9
		fi
		if cache_hit; then
			log "cache filled by another build: $RESULT"
			printf '%s\n' "$RESULT"
			exit 0
		fi
		# Holding the lock, any staging folder left is from a build killed too hard to clean
		# up after itself (SIGKILL, power loss).
		rm -rf "$CACHE_ROOT"/.partial.*
	fi
}

cache_stage() {
	WORK="$(mktemp -d "${TMPDIR:-/tmp}/loopguard-$1.XXXXXX")"
	# The staging folder lives next to DEST so the final mv is a rename on one filesystem.
	STAGE="$(mktemp -d "$CACHE_ROOT/.partial.XXXXXX")"
	chmod 755 "$STAGE"
	trap 'rm -rf "$WORK" "$STAGE"' EXIT
	trap 'exit 130' INT TERM
	CACHE_START=$SECONDS
}

cache_publish() {
	# rename(2) of a folder onto an existing non-empty folder fails, so if another build without
	# flock won the race, keep its result and drop ours.
	if ! mv -T "$STAGE" "$DEST" 2>/dev/null; then
		cache_hit || die "could not move $STAGE to $DEST; if $DEST is left from something else, remove it and run again"
		log "another build filled $DEST first; using it"
	fi
	log "done in $((SECONDS - CACHE_START)) s: $RESULT"
	printf '%s\n' "$RESULT"
}

# gomod_of MODULE@VERSION prints the path of that release's go.mod in the module cache.
gomod_of() {
	local gomod
	gomod="$("$GO" mod download -json "$1" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
	[[ -n "$gomod" && -f "$gomod" ]] || die "could not download go.mod of $1"
	printf '%s\n' "$gomod"
}

# k8s_module DIR VERSION makes DIR a throwaway module that requires k8s.io/kubernetes at
# vVERSION. k8s.io/kubernetes requires its staging modules (k8s.io/api, k8s.io/apiserver, ...)
# at v0.0.0 and replaces them with ./staging/src/...; those replaces do not apply to a
# dependent module, so every one is repeated, pointing at the published v0.<minor>.<patch>
# tag. The list comes from the release's own go.mod, so each release gets its own set.
k8s_module() {
	local dir=$1 version=$2
	local staging_version="v0.${version#*.}"
	mkdir -p "$dir"
	(cd "$dir" && "$GO" mod init "loopguard.invalid/${dir##*/}" >/dev/null 2>&1)
	local gomod
	gomod="$(gomod_of "k8s.io/kubernetes@v$version")"
	local -a staging
	mapfile -t staging < <(sed -n 's#^[[:space:]]*\(replace[[:space:]]\{1,\}\)\{0,1\}\(k8s\.io/[^[:space:]]*\)[[:space:]]*=>[[:space:]]*\./staging/src/.*#\2#p' "$gomod" | sort -u)
	((${#staging[@]} > 0)) || die "no staging replaces found in $gomod"
	log "${#staging[@]} staging modules replaced with $staging_version"
	local -a edits=("-require=k8s.io/kubernetes@v$version")
	local m
	for m in "${staging[@]}"; do
		edits+=("-replace=$m=$m@$staging_version")
	done
	(cd "$dir" && "$GO" mod edit "${edits[@]}")
}

# k8s_build DIR VERSION CMD OUT [GCFLAGS] builds k8s.io/kubernetes/cmd/CMD at vVERSION into OUT and
# checks it reports that version. Without the -X flags a Kubernetes binary reports
# v0.0.0-master, which breaks version checks in clients and in loopguard's own version gates.
k8s_build() {
	local dir=$1 version=$2 cmd=$3 out=$4
	local minor="${version#*.}"
	minor="${minor%%.*}"
	local major="${version%%.*}"
	local tag="$cmd: "
	[[ "$LOG_NAME" == "$cmd" ]] && tag=""
	log "${tag}resolving modules"
	(cd "$dir" && "$GO" get "k8s.io/kubernetes/cmd/$cmd@v$version" >&2)
	log "${tag}building"
	local -a gcflags=()
	[[ -n "${5:-}" ]] && gcflags=(-gcflags="$5")
	(cd "$dir" && "$GO" build "${gcflags[@]}" \
		-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v$version -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor" \
		-o "$out" "k8s.io/kubernetes/cmd/$cmd" >&2)
	local got
	got="$("$out" --version 2>&1)"
	[[ "$got" == "Kubernetes v$version" ]] || die "built $cmd reports '$got', want 'Kubernetes v$version'"
	log "${tag}$got"
}
