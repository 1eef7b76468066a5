// Package cluster is the module of the local cluster of real nodes (make
// cluster-up, make demo, make e2e). Its commands are small static binaries that
// stand in for images the offline machine cannot pull, and the image builder
// that packs them:
//
//   - pause: the pod sandbox image.
//   - demo-server: the HTTP server of examples/, answering with its pod name
//     (HTTPS with -tls-dir: the backend of a TLS passthrough route).
//   - registrar: registers a CSI driver with kubelet (what node-driver-registrar
//     does; its module versions are refused by the module proxy).
//   - images: writes OCI image tarballs for `ctr images import`.
//
// cluster.sh starts and stops the cluster itself: a short dispatcher that
// sources one file per job (settings, processes, build, pki, host,
// namespaces, node, up, certmanager, metallb, operator, down; its header
// lists them).
package cluster
