# shellcheck shell=bash
# Sourced by hack/cluster/cluster.sh (after settings.sh); not run on its own.
#
# Building: the Debian packages the nodes need (containerd, runc, CNI
# plugins, iptables, ...), the control plane and the cluster's helpers, the
# operator and its sidecars, and the image tarballs every node imports.

ensure_packages() {
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v conntrack >/dev/null || missing+=(conntrack)
  [ -x /usr/bin/busybox ] || missing+=(busybox-static)
  command -v openssl >/dev/null || missing+=(openssl)
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing Debian packages: ${missing[*]} (about 30 s)"
  local marker=$root/.work/.apt-updated
  if [ ! -e "$marker" ]; then
    apt-get update -q >/dev/null
    mkdir -p "$(dirname "$marker")" && touch "$marker"
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
}

build_cluster_binaries() {
  say "Kubernetes binaries $K8S_VERSION (cold: ~17 min on 2 cores for all of them; cached: instant)"
  "$root/hack/build-k8s.sh" etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy >/dev/null
  say "building the cluster helpers (pause, registrar, demo-server, images; cold: about 1 min)"
  (cd "$root/hack/cluster" && go build -trimpath -ldflags "-s -w" -o "$root/bin/cluster/" \
    ./pause ./registrar ./demo-server ./images)
}

build_operator_binaries() {
  if [ ! -x "$root/bin/sidecars/csi-provisioner" ] || [ "$root/hack/sidecars/go.sum" -nt "$root/bin/sidecars/csi-provisioner" ]; then
    say "building csi-provisioner v6.3.0 (cold: about 3.5 min)"
    (cd "$root/hack/sidecars" && go build -trimpath -ldflags "-s -w" -o "$root/bin/sidecars/" \
      github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner)
  fi
  say "building the operator (make build; cold: about 3 min)"
  make -s -C "$root" build >/dev/null
}

# build_images writes the tarballs of the named image groups: cluster (pause,
# demo server, and Traefik when bin/tools/traefik exists) and operator
# (operator, sidecars).
build_images() {
  local specs=()
  for g in "$@"; do
    case $g in
      cluster)
        specs+=("$IMG_PAUSE=$root/bin/cluster/pause" "$IMG_DEMO=$root/bin/cluster/demo-server,busybox")
        # Only when built: `up` must not cost a cluster that runs no gateway
        # Traefik's 5-minute cold build. `make e2e` builds it first
        # (gateway-tools); a 144 MB binary packs in about 3 s (46 MB gzipped).
        # It runs as a non-root user: its ports are above 1024.
        if [ -x "$TRAEFIK_BIN" ]; then
          specs+=("$IMG_TRAEFIK=$TRAEFIK_BIN,user=65532:65532")
        else
          say "no $TRAEFIK_BIN: the cluster gets no Traefik image (make gateway-tools builds it; make e2e does)"
        fi ;;
      operator) specs+=("$IMG_OPERATOR=$root/bin/listener-operator,busybox,user=65532:65532"
        "$IMG_PROVISIONER=$root/bin/sidecars/csi-provisioner"
        "$IMG_REGISTRAR=$root/bin/cluster/registrar") ;;
    esac
  done
  say "writing image tarballs to $images"
  "$root/bin/cluster/images" -out "$images" -busybox /usr/bin/busybox "${specs[@]}" | sed 's/^/   /' >&2
}
