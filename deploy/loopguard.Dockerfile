# syntax=docker/dockerfile:1
# The loopguard CLI, static, on a distroless base: the image `loopguard verify` runs its probe
# Pods from (/loopguard probe ...), and the CLI itself for whoever runs it in a Pod.
#   docker build -f deploy/loopguard.Dockerfile --build-arg VERSION=v0.1.0 -t ghcr.io/loopguard/loopguard:v0.1.0 .
#
# Built on the newest Kubernetes release through hack/newest's workspace, as make build builds
# the CLI and make test tests it (go.mod holds the floor for hosts that embed the library).
FROM golang:1.26 AS build
ARG VERSION=""
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
	GOWORK=/src/hack/newest/go.work CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /loopguard ./cmd/loopguard

FROM gcr.io/distroless/static:nonroot
COPY --from=build /loopguard /loopguard
USER 65532:65532
ENTRYPOINT ["/loopguard"]
