// Package csi is the listener operator's CSI driver. A listener volume holds
// no data: provisioning it resolves which ListenerClass the claim uses (and,
// for pinned NodePort classes, ties the volume to the node the scheduler
// picked), and publishing it writes the addresses the pod is reachable on
// into the pod's volume, a small tmpfs of its own that the node plugin
// mounts (a sealed volume: tmpfs.go; see package addresstree for the tree).
//
// One small struct serves each CSI service (identity, controller, node);
// Server puts the ones a process needs on one gRPC server, with a logging
// and metrics interceptor. All Kubernetes reads go through a client.Reader
// (a cache scoped to what the process needs, falling back to a live read
// for objects the cache has not seen yet: see FallbackReader). A node
// plugin reads Listeners through a ListenerScope, which watches only the
// Listeners its own volumes publish, so that its memory and watch traffic
// do not grow with the cluster's Listeners times its nodes.
package csi
