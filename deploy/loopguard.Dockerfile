# The loopguard CLI, static, on a distroless base: the image `loopguard verify` runs its probe
# Pods from (/loopguard probe ...), and the CLI itself for whoever runs it in a Pod.
#   docker build -f deploy/loopguard.Dockerfile --build-arg VERSION=v0.1.0 -t ghcr.io/loopguard/loopguard:v0.1.0 .
FROM golang:1.26 AS build
ARG VERSION=""
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /loopguard ./cmd/loopguard

FROM gcr.io/distroless/static:nonroot
COPY --from=build /loopguard /loopguard
USER 65532:65532
ENTRYPOINT ["/loopguard"]
