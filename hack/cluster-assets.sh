#!/usr/bin/env bash
# cluster-assets.sh gathers what the real cluster of internal/cluster needs into one folder and
# prints its path as the last line of stdout:
#
#   export LOOPGUARD_CLUSTER_ASSETS="$(hack/cluster-assets.sh)"
#
#   bin/     kube-apiserver, etcd (hack/envtest-assets.sh), kube-proxy (hack/kube-proxy.sh),
#            kubelet, kube-controller-manager, kube-scheduler, containerd, its shim, ctr, runc,
#            coredns (hack/cluster-bin.sh; each cached under ~/.cache/loopguard/<part>/), and
#            hack/images built: images (the image writer), pause, backend
#   cni/     the CNI plugins
#   images.tar  the base images every node imports: pause, backend, coredns (written without
#            docker by hack/images)
#
# The binaries are symbolic links into the caches. Every build is a cache hit after the first
# (hack/lib/binary-cache.sh); hack/images' three small programs are rebuilt by go build (a Go
# build cache hit) and images.tar rewritten only when one of its inputs changed.
#
# Environment (all optional): LOOPGUARD_CLUSTER_ASSETS_DIR (default bin/cluster in the checkout),
# GO, and what hack/cluster-bin.sh, hack/envtest-assets.sh and hack/kube-proxy.sh read.
set -euo pipefail

main() {
	local root
	root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
	local out="${LOOPGUARD_CLUSTER_ASSETS_DIR:-$root/bin/cluster}"
	local GO="${GO:-go}"
	log() { printf 'cluster-assets: %s\n' "$*" >&2; }

	local envtest kp k8s ctrd runc cni coredns
	envtest="$("$root/hack/envtest-assets.sh" | tail -n1)"
	kp="$("$root/hack/kube-proxy.sh" | tail -n1)"
	k8s="$("$root/hack/cluster-bin.sh" kubernetes | tail -n1)"
	ctrd="$("$root/hack/cluster-bin.sh" containerd | tail -n1)"
	runc="$("$root/hack/cluster-bin.sh" runc | tail -n1)"
	cni="$("$root/hack/cluster-bin.sh" cni | tail -n1)"
	coredns="$("$root/hack/cluster-bin.sh" coredns | tail -n1)"

	mkdir -p "$out/bin" "$out/cni"
	local b
	for b in kube-apiserver etcd; do ln -sfn "$envtest/$b" "$out/bin/$b"; done
	ln -sfn "$kp" "$out/bin/kube-proxy"
	for b in kubelet kube-controller-manager kube-scheduler; do ln -sfn "$k8s/$b" "$out/bin/$b"; done
	for b in containerd containerd-shim-runc-v2 ctr; do ln -sfn "$ctrd/$b" "$out/bin/$b"; done
	ln -sfn "$runc/runc" "$out/bin/runc"
	ln -sfn "$coredns/coredns" "$out/bin/coredns"
	for b in bridge host-local loopback portmap; do ln -sfn "$cni/$b" "$out/cni/$b"; done

	# hack/images is its own module (go-containerregistry stays out of loopguard's go.mod).
	log "building hack/images (images, pause, backend)"
	(cd "$root/hack/images" && GOWORK=off GOFLAGS=-trimpath CGO_ENABLED=0 "$GO" build -ldflags "-s -w" -o "$out/bin/images" . &&
		GOWORK=off GOFLAGS=-trimpath CGO_ENABLED=0 "$GO" build -ldflags "-s -w" -o "$out/bin/pause" ./pause &&
		GOWORK=off GOFLAGS=-trimpath CGO_ENABLED=0 "$GO" build -ldflags "-s -w" -o "$out/bin/backend" ./backend)

	# The image references are internal/cluster's (configs.go); the backend runs as a non-root
	# user (as the verify probe and the controller do), CoreDNS as root with NET_BIND_SERVICE,
	# as kubeadm's Deployment runs it.
	cat >"$out/images.json.new" <<EOF
[
  {"ref": "loopguard.invalid/pause:3.10.2", "entrypoint": ["/pause"], "user": "65535", "files": {"/pause": "$out/bin/pause"}},
  {"ref": "loopguard.invalid/backend:dev", "entrypoint": ["/backend"], "user": "65532", "files": {"/backend": "$out/bin/backend"}},
  {"ref": "loopguard.invalid/coredns:v1.14.6", "entrypoint": ["/coredns"], "files": {"/coredns": "$out/bin/coredns"}}
]
EOF
	# Rewritten only when the spec or a binary in it changed.
	local stamp
	stamp="$(sha256sum "$out/images.json.new" "$out/bin/pause" "$out/bin/backend" "$(readlink -f "$out/bin/coredns")" | sha256sum | cut -d' ' -f1)"
	if [[ -f "$out/images.tar" && "$(cat "$out/images.stamp" 2>/dev/null)" == "$stamp" ]]; then
		log "images.tar up to date"
	else
		log "writing images.tar"
		mv "$out/images.json.new" "$out/images.json"
		"$out/bin/images" -spec "$out/images.json" -o "$out/images.tar"
		printf '%s\n' "$stamp" >"$out/images.stamp"
	fi
	rm -f "$out/images.json.new"
	printf '%s\n' "$out"
}

main "$@"
