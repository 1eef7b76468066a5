// Package e2e tests the whole product the way a user meets it, against the
// local single-node cluster of hack/cluster (real kubelet, containerd,
// kube-proxy; the operator installed from the project's manifests): pods read
// their addresses from /stackable/listener and are reachable there.
//
// The tests carry the build tag e2e so `go test ./...` never needs a cluster.
// Run them with `make e2e`, which brings the cluster up, deploys the operator
// and sets E2E_KUBECONFIG.
package e2e
