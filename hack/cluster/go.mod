module github.com/listener-operator/listener-operator/hack/cluster

go 1.26.0

require (
	github.com/container-storage-interface/spec v1.13.0
	github.com/google/go-containerregistry v0.22.1
	google.golang.org/grpc v1.85.0
	k8s.io/kubelet v0.36.3
)

require (
	github.com/klauspost/compress v1.19.2 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
