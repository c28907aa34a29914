// Command images is for the real cluster hack/cluster brings up (internal/cluster): it
// writes container images without docker, one docker-archive tarball that
// `ctr -n k8s.io images import` loads into every node's containerd.
//
// Each image is a single layer of static binaries over an empty base, described by a JSON spec:
//
//	[{"ref": "loopguard.invalid/pause:3.10.2", "entrypoint": ["/pause"], "user": "65535",
//	  "files": {"/pause": "/path/to/pause"}}]
//
//	go run . -spec images.json -o images.tar
//
// The programs the cluster's own Pods run live beside it: pause (the sandbox every Pod starts
// with) and backend (the test servers: plain, and requiring the PROXY protocol).
package main
