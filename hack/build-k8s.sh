#!/usr/bin/env bash
# Builds the Kubernetes and etcd binaries that tests and the local cluster run,
# from the Go module proxy only (no release downloads, no Docker). Binaries are
# cached under bin/k8s/<version>/ and rebuilt only when missing or when the
# pinning modules under hack/k8s and hack/etcd change.
#
# K8S_VERSION picks the pin: hack/k8s/go.mod pins the version the project runs
# on (the default); hack/k8s/v1.<minor>/go.mod pins an older supported minor for
# make test-compat. The pin must name exactly K8S_VERSION, so that the binaries'
# reported version is the code they contain.
#
# usage: hack/build-k8s.sh [binary ...]
#   binaries: etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy
#   default:  etcd kube-apiserver kube-controller-manager kube-scheduler kubectl
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
K8S_VERSION=${K8S_VERSION:-v1.36.3}
out=${K8S_BIN_DIR:-$root/bin/k8s/$K8S_VERSION}
mkdir -p "$out"

# The whole build cache is keyed on CGO_ENABLED: keep it fixed for every build.
export CGO_ENABLED=0

wanted=("$@")
[ ${#wanted[@]} -gt 0 ] || wanted=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl)

minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
pinned() { sed -n 's/^[[:space:]]*k8s.io\/kubernetes \(v[0-9.]*\).*/\1/p' "$root/hack/$1/go.mod" | head -1; }
k8s_mod=k8s
if [ "$(pinned k8s)" != "$K8S_VERSION" ]; then
  k8s_mod=k8s/v1.$minor
  if [ ! -f "$root/hack/$k8s_mod/go.mod" ] || [ "$(pinned "$k8s_mod")" != "$K8S_VERSION" ]; then
    echo "no pin for $K8S_VERSION: hack/k8s pins $(pinned k8s), hack/$k8s_mod pins $(pinned "$k8s_mod" 2>/dev/null || echo nothing)" >&2
    exit 2
  fi
fi

# stamp is what a cached binary was built from; a changed pin rebuilds it.
stamp() { cat "$root/hack/$1/go.mod" "$root/hack/$1/go.sum" | sha256sum | cut -c1-16; }

need_build() { # name module
  [ -x "$out/$1" ] && [ "$(cat "$out/.$1.stamp" 2>/dev/null)" = "$(stamp "$2")" ] && return 1
  return 0
}

ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="$ldflags -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done

k8s_pkgs=()
k8s_names=()
for b in "${wanted[@]}"; do
  case "$b" in
    etcd)
      if need_build etcd etcd; then
        echo ">> building etcd (about 1.5 minutes cold)" >&2
        start=$SECONDS
        (cd "$root/hack/etcd" && go build -trimpath -ldflags "-s -w" -o "$out/etcd" .)
        stamp etcd > "$out/.etcd.stamp"
        echo ">> etcd built in $((SECONDS - start))s" >&2
      fi ;;
    kube-apiserver|kube-controller-manager|kube-scheduler|kubectl|kubelet|kube-proxy)
      if need_build "$b" "$k8s_mod"; then k8s_pkgs+=("k8s.io/kubernetes/cmd/$b"); k8s_names+=("$b"); fi ;;
    *) echo "unknown binary $b" >&2; exit 2 ;;
  esac
done

if [ ${#k8s_pkgs[@]} -gt 0 ]; then
  echo ">> building ${k8s_names[*]} $K8S_VERSION from the module proxy (cold: ~8 min for kube-apiserver, ~3 min kube-controller-manager, ~5 min kubelet on 2 cores; warm: seconds)" >&2
  start=$SECONDS
  # One go build for all of them shares compiled packages between the binaries.
  (cd "$root/hack/$k8s_mod" && go build -trimpath -ldflags "$ldflags" -o "$out/" "${k8s_pkgs[@]}")
  for b in "${k8s_names[@]}"; do stamp "$k8s_mod" > "$out/.$b.stamp"; done
  echo ">> built ${k8s_names[*]} in $((SECONDS - start))s" >&2
fi
echo "$out"
