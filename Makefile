# loopguard's development commands. The README's test command is `make test`; .ci/run runs
# `make lint test` on a fresh machine.

GO      ?= go
BIN     ?= bin/loopguard
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)

# The module builds without cgo, like the real components hack/ builds for the tests
# (kube-apiserver, etcd, kube-proxy, OpenTofu: static, as their releases are). With the same
# setting go vet and go test reuse the packages those builds left in the Go build cache
# instead of compiling them again (hack/lib/binary-cache.sh has the figures); nothing in the
# module needs cgo. make race sets CGO_ENABLED=1 for itself.
export CGO_ENABLED ?= 0

# -trimpath: no build records the checkout's folder, so a fresh clone anywhere on the machine
# (CI's way) reuses the Go build cache for loopguard's own packages and go test's cache for
# packages whose code and inputs did not change ("(cached)" in the output; make test counts
# them). The binaries hack/ builds use it too, for the same compiled packages.
# -ldflags=-w: test binaries are linked without DWARF, which go test never reads (stack traces
# come from the binary's own line tables) and which was more than half of each link: a test
# binary of cmd/loopguard, providers/tencent or internal/campaign took 8-8.7 s of CPU to link
# with it and 3.7-4.2 s without, and make test, fuzz-short and hosts link about 45 of them on a
# cold machine. A command line's own -ldflags (make build's version stamp) replaces it, and a
# debugger wants `go test -c` without make.
export GOFLAGS := -trimpath -ldflags=-w $(GOFLAGS)

# The root go.mod requires the floor of the Kubernetes support window (1.35), so a host that
# adds loopguard keeps its k8s.io/* versions; loopguard's own builds and tests run on the
# newest release through hack/newest's workspace (its go.mod has the versions).
export GOWORK ?= $(CURDIR)/hack/newest/go.work

# Packages core must never reach, directly or not (core imports k8s.io/api,
# apimachinery, go-hclog and the standard library only). cmd/loopguard's
# TestCoreImportsNoCloudSDKOrClient checks the same list under `go test`.
CORE_FORBIDDEN := k8s.io/client-go|sigs.k8s.io/controller-runtime|k8s.io/cloud-provider|github.com/tencentcloud|github.com/volcengine|github.com/aws|cloud.google.com|google.golang.org/api|github.com/Azure|github.com/aliyun|github.com/hashicorp/terraform-plugin-framework|github.com/loopguard/loopguard/(providers|adapters)

# loopguard's nested modules (hack/modules.sh reads them from go.work): what only
# they need stays out of the root go.mod, which every host inherits. providers/gateway requires
# Gateway API (which requires fatih/color v1.18.0 and go-openapi/jsonreference v0.21.0, above
# what a CCM fork on Kubernetes 1.36 builds with), and adapters/controller, cmd/loopguard and
# the examples import it; the Terraform example requires terraform-plugin-framework and the
# gRPC it requires. hack/newest/go.work uses every one, so make builds, vets and tests them with
# everything else at the same versions; `./...` names the root module's packages only, even in
# the workspace.
NESTED_MODULES := $(shell hack/modules.sh)

.PHONY: test hosts apidiff go-next race build lint bench bench-converge bench-scale fuzz fuzz-short fuzz-guided envoy-gateway cluster cluster-down cluster-test update help

# test pipes go test -json through hack/testsummary; pipefail keeps go test's own exit status.
SHELL := bash
.SHELLFLAGS := -o pipefail -c

## test: run every package's tests (the README's test command), printing what go test prints
## plus one line counting the skipped tests and why; the dataplane agreement test prints its
## "dataplane: N scenarios, N agree" summary
## (TESTFLAGS: more go test flags; .ci/run sets -vet=off because make lint ran go vet, with every
## analyzer, over the same packages just before: go test's own vet pass would compute its
## analyzers' facts for every dependency once more, 90 s of CPU on a cold machine)
## The packages whose tests take longest come first (over 45 s each on two cores: OpenTofu runs,
## the labs' real kube-proxies, controllers against a real API server): go test gives the test
## binaries it may run at once (-p) to packages in the order it is given them, and one of these
## named last ran on its own for minutes at the end while the other cores had nothing to do.
## go test runs a package named twice once, where it is first named.
SLOW_TESTS := ./examples/terraform-provider/... ./internal/dataplane ./adapters/controller/... \
	./cmd/loopguard/... ./internal/verifylab ./internal/proxylab ./internal/campaign
TESTFLAGS ?=
test:
	$(GO) build -o bin/testsummary ./hack/testsummary
	$(GO) test -json $(TESTFLAGS) $(SLOW_TESTS) ./... $(NESTED_MODULES) | bin/testsummary
	# deploy/ as kustomize renders it: its own module, so kustomize stays out of go.mod.
	cd deploy/test && GOWORK=off $(GO) test -json $(TESTFLAGS) ./... | ../../bin/testsummary
	# hack/typecheck (make hosts type-checks the 1.36 hosts with it): its own module too.
	cd hack/typecheck && GOWORK=off $(GO) test -json $(TESTFLAGS) ./... | ../../bin/testsummary
	# The Helm chart against deploy/: its own module, so Helm stays out of go.mod.
	cd hack/helmchart && GOWORK=off $(GO) test -json $(TESTFLAGS) ./... | ../../bin/testsummary

## hosts: a CCM fork, a platform SDK and an operator on each supported Kubernetes minor (1.35,
## 1.36, 1.37) add loopguard: no k8s.io/sigs.k8s.io module of theirs moves, they build (1.36:
## type-check from source, hack/typecheck), and the decorator's, adapters/kube's and the
## controller's tests pass in their build lists (hack/hosts.sh); then forks shaped like real
## ones (hack/hosts/forks/: Hetzner's, DigitalOcean's vendored, kube-vip's below the floor) run
## docs/ccm.md's fork steps, and every module of their build lists that moves is printed with
## the binary-size change; a moved module their binary compiles fails it (hack/forks.sh)
hosts:
	GOWORK=off hack/hosts.sh
	GOWORK=off hack/forks.sh

## apidiff: incompatible changes of the exported API hosts embed since the previous commit
## (hack/apidiff.sh; fails unless declared with an API-Break: line and in CHANGELOG.md)
apidiff:
	GOWORK=off hack/apidiff.sh

## go-next: the next supported Go release (GO_NEXT, from the module proxy) builds everything and
## passes core's and the providers' tests
GO_NEXT ?= go1.27.3
go-next:
	GOTOOLCHAIN=$(GO_NEXT) $(GO) version
	GOTOOLCHAIN=$(GO_NEXT) $(GO) build ./... $(NESTED_MODULES)
	GOTOOLCHAIN=$(GO_NEXT) $(GO) test ./core/... ./providers/...

## race: the CLI's and the manifest reader's tests under the race detector (needs cgo)
race:
	CGO_ENABLED=1 $(GO) test -race ./cmd/loopguard ./adapters/manifest

## build: build the CLI into bin/loopguard
build:
	$(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/loopguard

## lint: gofmt check, go vet, core's dependency rule, the modules pinned as Kubernetes pins them,
## the repository's rules (hack/repo-lint.sh: no file over 1 MB outside testdata, build outputs
## ignored, the layering (internal/ and providers/ import no adapters/), commit subjects of at most
## 72 characters), and the upstream notices (LICENSE, NOTICE, the headers of files adapted from
## Kubernetes)
lint:
	@unformatted="$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*' -not -path './bin/*'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt -w needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./... $(NESTED_MODULES)
	cd deploy/test && GOWORK=off $(GO) vet ./...
	cd hack/typecheck && GOWORK=off $(GO) vet ./...
	cd hack/helmchart && GOWORK=off $(GO) vet ./...
	@bad="$$($(GO) list -deps ./core | grep -E '^($(CORE_FORBIDDEN))(/|$$)' || true)"; \
	if [ -n "$$bad" ]; then echo "core depends on forbidden packages:"; echo "$$bad"; exit 1; fi; \
	echo "core imports no cloud SDK, client-go or controller-runtime"
	hack/k8s-pins.sh
	hack/repo-lint.sh
	$(GO) test -count=1 -run '^TestRepositoryKeepsUpstreamNotices$$' ./internal/notice

## bench: the performance benchmarks of issue 2 (10,000 Services end to end, decoding)
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./cmd/loopguard ./adapters/manifest

## bench-converge: 1,000 LoadBalancer Services on 200 CLBs through the controller's workqueue in
## TKE direct mode, against clbtest (20 requests/s per action, 1-3 s tasks) on a clock running
## LOOPGUARD_CONVERGE_SCALE (5) times faster; prints one "converge:" line (about 2 min; builds
## the envtest binaries on first use)
bench-converge:
	KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh)" $(GO) test -run '^$$' -bench '^BenchmarkConverge$$' -benchtime 1x -timeout 30m ./adapters/controller

## bench-scale: bench-converge, then the controller's memory with 10,000 Services and 50,000
## Pods in its informers and its no-op resync rate; prints a "memory:" line (filling the API
## server takes most of the 15-20 min)
bench-scale:
	KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh)" $(GO) test -run '^$$' -bench '^(BenchmarkConverge|BenchmarkInformerMemory)$$' -benchtime 1x -benchmem -timeout 60m ./adapters/controller

## fuzz: a short run of each manifest fuzz target (FUZZTIME=30s each by default)
FUZZTIME ?= 30s
fuzz:
	$(GO) test ./adapters/manifest -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./adapters/manifest -run '^$$' -fuzz '^FuzzFastYAML$$' -fuzztime $(FUZZTIME)
	$(GO) test ./adapters/manifest -run '^$$' -fuzz '^FuzzPeekTypeMeta$$' -fuzztime $(FUZZTIME)

## fuzz-short: every fuzz target of the module for FUZZTIME (3s by default), with coverage
## guidance over loopguard's own packages (hack/fuzz-short.sh says why not the dependencies too);
## .ci/run runs it
fuzz-short:
	FUZZTIME=$(or $(filter-out 30s,$(FUZZTIME)),3s) hack/fuzz-short.sh

## fuzz-guided: fuzz-short with every package instrumented for coverage guidance, the
## dependencies too, as go test -fuzz does (about 5 min more of compiling on an empty build
## cache, cached after)
fuzz-guided:
	FUZZ_GUIDED=all FUZZTIME=$(or $(filter-out 30s,$(FUZZTIME)),3s) hack/fuzz-short.sh

## envoy-gateway: the Gateway API proof against Envoy Gateway's real controller (docs/gateway.md;
## builds and caches Envoy Gateway once: 331 s of CPU cold, then the four tests take ~70 s;
## root); .ci/run runs it beside its other steps, and make test counts those tests as skipped
## (TESTSUMMARY: where to build hack/testsummary, so two makes at once do not share the file)
TESTSUMMARY ?= bin/testsummary
envoy-gateway:
	$(GO) build -o $(TESTSUMMARY) ./hack/testsummary
	KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh)" LOOPGUARD_ENVOY_GATEWAY="$$(hack/envoy-gateway.sh)" \
		$(GO) test -json -count=1 $(TESTFLAGS) -run '^TestEnvoyGateway' ./providers/gateway/ | $(TESTSUMMARY)

## cluster: bring up a real two-node Kubernetes v1.37.2 cluster on this machine (internal/cluster;
## docs/development.md): every binary built from source and cached (hack/cluster-assets.sh; about
## 20 min of CPU cold), the cloud-controller-manager with loopguard's decorator
## (hack/cluster/ccm), all of it inside network namespaces of its own; root. CLUSTER names it
## (default dev)
CLUSTER ?= dev
cluster:
	$(GO) build -o bin/loopguard-ccm ./hack/cluster/ccm
	$(GO) build -o bin/cluster-tool ./hack/cluster
	LOOPGUARD_CLUSTER_ASSETS="$$(hack/cluster-assets.sh)" bin/cluster-tool up -name $(CLUSTER) -ccm bin/loopguard-ccm

## cluster-down: take the cluster CLUSTER down, by the PIDs it recorded, and fail if anything was
## left behind (a process, cgroup, network namespace, link, mount or file)
cluster-down:
	$(GO) build -o bin/cluster-tool ./hack/cluster
	bin/cluster-tool down -name $(CLUSTER)

## cluster-test: deploy/test's TestCluster: a cluster of its own, the CCM, kube-proxy, verify,
## CoreDNS steering and deploy/ as Pods, then teardown (about 3 min warm; root); .ci/run runs it
## beside its other steps with LOOPGUARD_CLUSTER_REQUIRED=1, so a machine that cannot run it fails
cluster-test:
	$(GO) build -o $(TESTSUMMARY) ./hack/testsummary
	export LOOPGUARD_CLUSTER_ASSETS="$$(hack/cluster-assets.sh)" && \
		cd deploy/test && GOWORK=off $(GO) test -json -count=1 -timeout 30m $(TESTFLAGS) -run '^TestCluster$$' . | $(abspath $(TESTSUMMARY))

## update: rewrite the CLI's golden files and docs/reasons.md after an intended change
update:
	$(GO) test ./cmd/loopguard -update

help:
	@grep -E '^## ' Makefile | sed 's/^## /  make /'
