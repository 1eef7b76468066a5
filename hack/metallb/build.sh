#!/usr/bin/env bash
# Builds MetalLB's controller and speaker, the load balancer of the
# LoadBalancer tests (issue 51), from the Go module proxy only. Versions are
# pinned in hack/metallb/versions.
#
#   bin/tools/metallb-controller, bin/tools/metallb-speaker   the binaries (cached; rebuilt when the pins or this script change)
#   bin/src/metallb-<version>/                                the writable copy of the module they are built in
#   bin/metallb-crds/                                         MetalLB's CRDs (IPAddressPool, L2Advertisement, ...)
#
# `go install go.universe.tf/metallb/controller@<version>` refuses: a module
# it requires is not served (see versions). So the build runs inside a copy of
# the downloaded module with that one requirement replaced and one patch.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/hack/metallb
# shellcheck source=versions
. "$here/versions"

bin=${METALLB_BIN_DIR:-$root/bin}
out=$bin/tools/metallb
src=$bin/src/metallb-$METALLB_VERSION
crds=$bin/metallb-crds

# The whole build cache is keyed on CGO_ENABLED: keep it fixed for every build.
export CGO_ENABLED=0

stamp() { cat "$here/versions" "$here/build.sh" "$here/frrk8s-no-aspath-prepend.patch" | sha256sum | cut -c1-16; }

module_dir() { # module@version: the read-only directory in the module cache
  go mod download -json "$1" | jq -r 'if .Error then error(.Error) else .Dir end'
}

metallb_dir=$(module_dir "go.universe.tf/metallb@$METALLB_VERSION")

if [ "$(cat "$crds/.stamp" 2>/dev/null)" != "$(stamp)" ]; then
  rm -rf "$crds"
  mkdir -p "$crds"
  cp "$metallb_dir"/config/crd/bases/*.yaml "$crds/"
  chmod -R u+w "$crds"
  stamp > "$crds/.stamp"
  echo ">> MetalLB $METALLB_VERSION CRDs in $crds" >&2
fi

if [ -x "$out-controller" ] && [ -x "$out-speaker" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$(stamp)" ]; then
  echo "$out-controller $out-speaker"
  exit 0
fi

echo ">> building MetalLB $METALLB_VERSION from the module proxy (cold: ~10 min on 2 cores; warm: seconds)" >&2
start=$SECONDS
module_dir "$FRR_K8S_REPLACE" >/dev/null || { echo "replace target $FRR_K8S_REPLACE is not served by the proxy" >&2; exit 1; }

rm -rf "$src"
mkdir -p "$(dirname "$src")" "$(dirname "$out")"
cp -r "$metallb_dir" "$src"
chmod -R u+w "$src"
cd "$src"
go mod edit -replace "github.com/metallb/frr-k8s=$FRR_K8S_REPLACE"
patch -p1 --forward --quiet < "$here/frrk8s-no-aspath-prepend.patch"
# -mod=mod: go.sum gains the replacement's sums (checked against the
# checksum database); nothing else changes.
for main in controller speaker; do
  go build -mod=mod -trimpath -ldflags "-s -w" -o "$out-$main.new" "./$main"
  mv "$out-$main.new" "$out-$main"
done
stamp > "$out.stamp"
echo ">> MetalLB built in $((SECONDS - start))s" >&2
echo "$out-controller $out-speaker"
