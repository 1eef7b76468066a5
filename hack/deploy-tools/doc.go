// Package deploytools pins the tools that render the installable manifests:
// kustomize (config/) and helm (deploy/helm). It is a module of its own so
// that their dependencies do not mix with the operator's; `make
// deploy-tools` builds them into bin/tools from the `tool` directives.
package deploytools
