#!/usr/bin/env bash
# hack/modules.sh: the package patterns of loopguard's nested modules, one per line (for example
# ./providers/gateway/...), read from the repository's go.work: every module it uses but the
# root, whose packages `./...` names. `./...` names the root module's packages only, even in a
# workspace, so make and the scripts under hack/ that mean "all of loopguard" use ./... and
# these. hack/newest/go.work must use the same modules (hack/k8s-pins.sh checks it).
set -euo pipefail
cd "$(dirname "$0")/.."
GOWORK=off go work edit -json go.work |
	awk -F'"' '/"DiskPath":/ { print $4 }' |
	sed 's#^\./*##' |
	grep -v '^$' |
	sed 's#^#./#; s#$#/...#'
