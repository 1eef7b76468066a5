# One image for every subcommand of listener-operator: the manager
# (`controller`: reconcilers and admission webhooks), the CSI controller and
# the CSI node plugin (`csi --mode=controller|node`).
#
#   docker build -t listener-operator:dev --build-arg VERSION=$(git describe --tags --always) .
#
# Build stage: a static binary (no cgo), so the runtime image needs no libc;
# the tags are the Makefile's GO_TAGS (why: there).
FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first: this layer is reused until go.mod/go.sum change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -buildvcs=false -tags grpcnotrace \
      -ldflags "-s -w -X github.com/listener-operator/listener-operator/internal/version.Version=${VERSION}" \
      -o /out/listener-operator ./cmd/listener-operator

# Runtime stage: distroless, no shell, non-root by default (uid 65532).
# The manager and the CSI controller run as that user. The CSI node plugin
# is the exception: it writes address trees into the pods' volume
# directories under kubelet's directory, which belong to root, so its
# DaemonSet sets runAsUser: 0 (with every capability dropped and a
# read-only root filesystem).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/listener-operator /listener-operator
USER 65532:65532
ENTRYPOINT ["/listener-operator"]
