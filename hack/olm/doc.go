// Package olm pins what an install through OLM needs here: OLM's binaries
// (v0.38.0: the olm and catalog operators, package-server, copy-content and
// cpb, the content of OLM's own image), operator-registry's opm (the
// version OLM requires) and grpc_health_probe (v0.4.42, the last built
// against the gRPC version OLM uses; a catalog pod's probes exec it). A
// module of its own, so that their dependencies do not mix with the
// operator's; `make olm-tools` builds them into bin/tools (opm with the
// containers_image_openpgp tag: without cgo, its default signature
// library, gpgme, does not build). `make olm-e2e` (./e2e) installs the
// bundle through them on the local cluster. Not in CI (docs/install.md,
// "OLM bundle").
package olm
