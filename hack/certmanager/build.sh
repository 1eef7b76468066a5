#!/usr/bin/env bash
# Builds cert-manager's controller and cainjector (issue 47) from the Go
# module proxy, with the mains in this directory, and copies cert-manager's
# CRDs from the same module. The version is the one go.mod here pins; `make
# verify` checks that it equals the cert-manager API types of the operator.
#
#   bin/tools/cert-manager-controller   the certificates controllers, approver, CA and self-signed issuers
#   bin/tools/cert-manager-cainjector   the CA injector (webhook configurations only)
#   bin/cert-manager-crds/*.yaml        the CRDs of the module's deploy/crds
#
# Cached: rebuilt only when go.mod, go.sum, a main or this script changes.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${CERT_MANAGER_BIN_DIR:-$root/bin}
tools=$bin/tools
crds=$bin/cert-manager-crds
# The whole build cache is keyed on CGO_ENABLED: keep it fixed for every build.
export CGO_ENABLED=0

cd "$here"
version=$(go list -m -f '{{.Version}}' github.com/cert-manager/cert-manager)
stamp() { cat go.mod go.sum build.sh controller/main.go cainjector/main.go | sha256sum | cut -c1-16; }

if [ ! -f "$crds/.stamp" ] || [ "$(cat "$crds/.stamp")" != "$(stamp)" ]; then
  dir=$(go mod download -json "github.com/cert-manager/cert-manager@$version" | jq -r 'if .Error then error(.Error) else .Dir end')
  rm -rf "$crds" && mkdir -p "$crds"
  cp "$dir"/deploy/crds/*.yaml "$crds/"
  rm -f "$crds/README.md"
  chmod -R u+w "$crds"
  stamp >"$crds/.stamp"
  echo ">> cert-manager $version CRDs in $crds" >&2
fi

out=$tools/cert-manager-controller
if [ -x "$out" ] && [ -x "$tools/cert-manager-cainjector" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$(stamp)" ]; then
  exit 0
fi
echo ">> building cert-manager $version (controller, cainjector) from the module proxy (cold: see docs/install.md; warm: seconds)" >&2
start=$SECONDS
mkdir -p "$tools"
go build -trimpath -ldflags "-s -w" -o "$tools/cert-manager-controller.new" ./controller
go build -trimpath -ldflags "-s -w" -o "$tools/cert-manager-cainjector.new" ./cainjector
mv "$tools/cert-manager-controller.new" "$tools/cert-manager-controller"
mv "$tools/cert-manager-cainjector.new" "$tools/cert-manager-cainjector"
stamp >"$out.stamp"
echo ">> cert-manager built in $((SECONDS - start))s" >&2
