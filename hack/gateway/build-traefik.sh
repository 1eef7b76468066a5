#!/usr/bin/env bash
# Builds Traefik, the Gateway API implementation of the gateway tests (issue
# 39), from the Go module proxy only, and copies the Gateway API CRDs of the
# version Traefik's go.mod requires. Versions are pinned in
# hack/gateway/versions; docs/gateway.md has the recipe and what it costs.
#
#   bin/tools/traefik                  the binary (cached; rebuilt when the pins or this script change)
#   bin/src/traefik-<version>/         the writable copy of the module it is built in
#   bin/gateway-crds/{standard,experimental}/   the CRDs of sigs.k8s.io/gateway-api@<version>
#
# `go install github.com/traefik/traefik/v3/cmd/traefik@<version>` refuses: the
# module's go.mod has replace directives. So the build runs inside a copy of
# the downloaded module, with one replace repointed (see versions).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/hack/gateway
# shellcheck source=versions
. "$here/versions"

bin=${GATEWAY_BIN_DIR:-$root/bin}
out=$bin/tools/traefik
src=$bin/src/traefik-$TRAEFIK_VERSION
crds=$bin/gateway-crds

# The whole build cache is keyed on CGO_ENABLED: keep it fixed for every build.
export CGO_ENABLED=0

stamp() { cat "$here/versions" "$here/build-traefik.sh" "$here/traefik-no-dns-providers.patch" | sha256sum | cut -c1-16; }

module_dir() { # module@version: the read-only directory in the module cache
  go mod download -json "$1" | jq -r 'if .Error then error(.Error) else .Dir end'
}

traefik_dir=$(module_dir "github.com/traefik/traefik/v3@$TRAEFIK_VERSION")

# The CRDs must be those of the gateway-api Traefik is built against.
required=$(cd "$traefik_dir" && go mod edit -json | jq -r '.Require[] | select(.Path == "sigs.k8s.io/gateway-api") | .Version')
if [ "$required" != "$GATEWAY_API_VERSION" ]; then
  echo "Traefik $TRAEFIK_VERSION requires sigs.k8s.io/gateway-api $required, hack/gateway/versions pins $GATEWAY_API_VERSION" >&2
  exit 1
fi

if [ ! -f "$crds/.stamp" ] || [ "$(cat "$crds/.stamp")" != "$(stamp)" ]; then
  gw_dir=$(module_dir "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION")
  rm -rf "$crds"
  mkdir -p "$crds"
  for channel in standard experimental; do
    mkdir -p "$crds/$channel"
    cp "$gw_dir/config/crd/$channel"/gateway.networking.*.yaml "$crds/$channel/"
  done
  chmod -R u+w "$crds"
  stamp > "$crds/.stamp"
  echo ">> Gateway API $GATEWAY_API_VERSION CRDs in $crds" >&2
fi

if [ -x "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$(stamp)" ]; then
  echo "$out"
  exit 0
fi

echo ">> building Traefik $TRAEFIK_VERSION from the module proxy (cold: see docs/gateway.md; warm: seconds)" >&2
start=$SECONDS
rm -rf "$src"
mkdir -p "$(dirname "$src")" "$(dirname "$out")"
cp -r "$traefik_dir" "$src"
chmod -R u+w "$src"
cd "$src"

# The proxy refuses the fork revision Traefik pins for abbot/go-http-auth.
go mod edit -replace "github.com/abbot/go-http-auth=$GO_HTTP_AUTH_REPLACE"

# go.mod replaces github.com/traefik/traefik/dynamic/ext with the directory
# ./pkg/config/dynamic/ext, a nested module (its own go.mod), which the
# module zip leaves out; the proxy does not serve it either. It is an
# extension point whose types are empty structs; Traefik uses ext.HTTP and
# ext.Router.
mkdir -p pkg/config/dynamic/ext
printf 'module github.com/traefik/traefik/dynamic/ext\n\ngo 1.24.0\n' > pkg/config/dynamic/ext/go.mod
printf '// Package ext: the empty extension types of dynamic.HTTPConfiguration and dynamic.Router.\npackage ext\n\ntype HTTP struct{}\n\ntype Router struct{}\n' > pkg/config/dynamic/ext/ext.go

# lego's DNS provider registry (providers/dns) imports SDKs the proxy refuses
# (403: 14 modules, docs/gateway.md); Traefik imports it only to name an ACME
# DNS-challenge provider. The patch leaves it out: ACME's DNS challenge
# fails with a message, everything else is Traefik as released.
patch -p1 --forward --quiet < "$here/traefik-no-dns-providers.patch"

# Every other replace must be served as pinned (or be a local directory).
go mod edit -json | jq -r '.Replace[] | select(.New.Version != null) | "\(.New.Path)@\(.New.Version)"' |
  while read -r target; do
    module_dir "$target" >/dev/null || { echo "replace target $target is not served by the proxy" >&2; exit 1; }
  done

# -mod=mod: go.sum gains the repointed fork's sums (checked against the
# checksum database); nothing else changes.
go build -mod=mod -trimpath \
  -ldflags "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$TRAEFIK_VERSION" \
  -o "$out.new" github.com/traefik/traefik/v3/cmd/traefik
mv "$out.new" "$out"
stamp > "$out.stamp"
echo ">> Traefik built in $((SECONDS - start))s" >&2
echo "$out"
