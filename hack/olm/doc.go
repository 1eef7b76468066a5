// Package olm pins what an install through OLM needs here: OLM's olm and
// catalog operators (v0.38.0) and operator-registry's opm (the version OLM
// requires). A module of its own, so that their dependencies do not mix
// with the operator's; `make olm-tools` builds them into bin/tools (opm with
// the containers_image_openpgp tag: without cgo, its default signature
// library, gpgme, does not build). Not in CI (docs/install.md, "OLM bundle").
package olm
