#!/usr/bin/env bash
# A real single-node Kubernetes cluster built from source, on loopback and a
# private bridge only: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, containerd (Debian), kubelet and kube-proxy (iptables mode).
# No Docker engine, no registry, no internet: images are built locally
# (hack/cluster/images) and imported into containerd.
#
# usage: hack/cluster/cluster.sh up|down|status|images|deploy|undeploy|demo
#
# State lives under .work/cluster (git-ignored). `down` restores the host: it
# stops the processes it started (by pid), kills the containers (by the pids in
# their cgroups), unmounts what the runtime mounted, restores iptables and the
# sysctls it or kubelet/kube-proxy changed, removes the bridge, the cgroups and
# the host directories that did not exist before `up`.
#
# Network: pods on 10.88.0.0/24 behind bridge listener0 (10.88.0.1, also the
# node's InternalIP and the API server address), Services on 10.88.128.0/20 (4,096 addresses:
# the scale and fault tests create hundreds of ClusterIP Services).
# Traffic between the bridge and any other interface is dropped.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
K8S_VERSION=${K8S_VERSION:-v1.36.3}
k8sbin=$root/bin/k8s/$K8S_VERSION
work=${CLUSTER_WORK:-$root/.work/cluster}
pki=$work/pki
logs=$work/logs
pids=$work/pids
images=$work/images
export CGO_ENABLED=0
export PATH=$k8sbin:$PATH

BRIDGE=listener0
NODE_IP=10.88.0.1
POD_CIDR=10.88.0.0/24
# Pods get .2–.239; .240–.254 are never given out, so tests can play a load
# balancer with those addresses (test/e2e).
POD_RANGE_END=10.88.0.239
SERVICE_CIDR=10.88.128.0/20
SERVICE_IP=10.88.128.1
APISERVER=https://$NODE_IP:6443
ETCD_URL=http://127.0.0.1:23790
NODE_NAME=$(hostname | tr '[:upper:]' '[:lower:]')
KUBECONFIG_OUT=$work/kubeconfig
SOCK=$work/containerd/containerd.sock
KUBELET_DIR=$work/kubelet
ISOLATION_CHAIN=LISTENER-LOCAL-ISOLATION

# Images the cluster runs, all built here. The operator's manifests are pointed
# at these names by the overlay in hack/cluster/deploy.
IMG_PAUSE=localhost/pause:dev
IMG_OPERATOR=docker.io/library/listener-operator:dev
IMG_PROVISIONER=localhost/csi-provisioner:v6.3.0
IMG_REGISTRAR=localhost/csi-node-driver-registrar:dev
IMG_DEMO=localhost/listener-demo:dev

# sysctls changed by this script, kubelet or kube-proxy; restored by `down`.
SYSCTLS=(net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables
  vm.overcommit_memory kernel.panic kernel.panic_on_oops net.ipv4.conf.all.route_localnet
  net.netfilter.nf_conntrack_max net.netfilter.nf_conntrack_tcp_timeout_established
  net.netfilter.nf_conntrack_tcp_timeout_close_wait)
# Host paths containerd/kubelet create outside the work dir; removed by `down`
# only if they did not exist before `up`.
HOST_PATHS=(/run/containerd /var/lib/kubelet /var/log/containers /var/log/pods /var/lib/cni /run/netns
  /var/lib/containerd /opt/containerd /usr/libexec/kubernetes)

t0=$SECONDS
say() { printf '>> [%3ds] %s\n' $((SECONDS - t0)) "$*" >&2; }
die() { printf 'cluster: %s\n' "$*" >&2; exit 1; }

kc() { kubectl --kubeconfig "$KUBECONFIG_OUT" "$@"; }

# ---------------------------------------------------------------- building

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
# demo server) and operator (operator, sidecars).
build_images() {
  local specs=()
  for g in "$@"; do
    case $g in
      cluster) specs+=("$IMG_PAUSE=$root/bin/cluster/pause" "$IMG_DEMO=$root/bin/cluster/demo-server,busybox") ;;
      operator) specs+=("$IMG_OPERATOR=$root/bin/listener-operator,busybox,user=65532:65532"
        "$IMG_PROVISIONER=$root/bin/sidecars/csi-provisioner"
        "$IMG_REGISTRAR=$root/bin/cluster/registrar") ;;
    esac
  done
  say "writing image tarballs to $images"
  "$root/bin/cluster/images" -out "$images" -busybox /usr/bin/busybox "${specs[@]}" | sed 's/^/   /' >&2
}

import_images() {
  say "importing images into containerd"
  local f seen=$work/containerd/imported
  mkdir -p "$seen"
  for f in "$images"/*.tar; do
    # Skip what this containerd already has (same inputs as the tarball).
    cmp -s "$f.inputs" "$seen/$(basename "$f").inputs" && continue
    ctr --address "$SOCK" -n k8s.io images import "$f" >/dev/null
    [ ! -e "$f.inputs" ] || cp "$f.inputs" "$seen/$(basename "$f").inputs"
  done
}

# ---------------------------------------------------------------- host state

record_host() {
  [ -e "$work/host.before" ] && return 0
  mkdir -p "$work"
  {
    local s p
    for s in "${SYSCTLS[@]}"; do
      [ -e "/proc/sys/${s//.//}" ] && echo "sysctl $s $(cat "/proc/sys/${s//.//}")"
    done
    for p in "${HOST_PATHS[@]}"; do [ -e "$p" ] && echo "path $p"; done
    true
  } >"$work/host.before.tmp"
  iptables-save >"$work/iptables.before"
  ip6tables-save >"$work/ip6tables.before" 2>/dev/null || true
  { command -v nft >/dev/null && nft list tables; } >"$work/nft.before" 2>/dev/null || true
  mv "$work/host.before.tmp" "$work/host.before"
}

setup_network() {
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    say "creating bridge $BRIDGE ($NODE_IP/24)"
    ip link add "$BRIDGE" type bridge
    ip addr add "$NODE_IP/24" dev "$BRIDGE"
  fi
  ip link set "$BRIDGE" up
  # Service IPs go to the bridge, never to the default route, even before
  # kube-proxy has written its rules.
  ip route replace "$SERVICE_CIDR" dev "$BRIDGE" src "$NODE_IP"
  sysctl -qw net.ipv4.ip_forward=1
  sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || true
  # Pods talk to each other, to the node and to Services, never beyond.
  if ! iptables -L "$ISOLATION_CHAIN" >/dev/null 2>&1; then
    iptables -N "$ISOLATION_CHAIN"
    iptables -A "$ISOLATION_CHAIN" -i "$BRIDGE" ! -o "$BRIDGE" -j DROP
    iptables -A "$ISOLATION_CHAIN" -o "$BRIDGE" ! -i "$BRIDGE" -j DROP
    iptables -I FORWARD 1 -j "$ISOLATION_CHAIN"
  fi
}

# ---------------------------------------------------------------- PKI

cert() { # name CN O [SANs]
  local name=$1 cn=$2 o=$3 san=${4:-}
  [ -e "$pki/$name.crt" ] && return 0
  local subj="/CN=$cn"; [ -n "$o" ] && subj="/O=$o$subj"
  openssl genrsa -out "$pki/$name.key" 2048 2>/dev/null
  openssl req -new -key "$pki/$name.key" -subj "$subj" -out "$pki/$name.csr" 2>/dev/null
  local ext="$pki/$name.ext"
  { echo "basicConstraints=CA:FALSE"; echo "keyUsage=digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=serverAuth,clientAuth"; [ -n "$san" ] && echo "subjectAltName=$san"; } >"$ext"
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 365 -extfile "$ext" -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.csr" "$ext"
}

kubeconfig() { # file certname
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    certificate-authority: $pki/ca.crt
    server: $APISERVER
users:
- name: $2
  user:
    client-certificate: $pki/$2.crt
    client-key: $pki/$2.key
contexts:
- name: local
  context: {cluster: local, user: $2}
current-context: local
EOF
}

make_pki() {
  mkdir -p "$pki"
  if [ ! -e "$pki/ca.crt" ]; then
    say "creating certificates"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -out "$pki/ca.crt" \
      -days 365 -subj "/CN=listener-local-ca" 2>/dev/null
  fi
  cert apiserver kube-apiserver "" \
    "IP:$NODE_IP,IP:$SERVICE_IP,IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert admin admin system:masters
  cert kubelet "system:node:$NODE_NAME" system:nodes
  cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
  [ -e "$pki/sa.key" ] || { openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null; openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null; }
  kubeconfig "$KUBECONFIG_OUT" admin
  kubeconfig "$work/kubelet.kubeconfig" kubelet
}

# ---------------------------------------------------------------- processes

# put writes stdin to a file only when the content differs: kube-proxy exits
# when its configuration file changes under it.
put() {
  local tmp
  tmp=$(mktemp "$1.XXXX")
  cat >"$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv "$tmp" "$1"; fi
}

running() { local p; p=$(cat "$pids/$1" 2>/dev/null) && kill -0 "$p" 2>/dev/null; }

start() { # name cmd...
  local name=$1; shift
  if running "$name"; then return 0; fi
  mkdir -p "$pids" "$logs"
  setsid "$@" >>"$logs/$name.log" 2>&1 </dev/null &
  echo $! >"$pids/$name"
}

wait_for() { # what seconds cmd...
  local what=$1 secs=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || die "timed out after ${secs}s waiting for $what (logs: $logs)"
    sleep 0.5
  done
}

start_control_plane() {
  say "starting etcd and kube-apiserver (about 10 s)"
  start etcd "$k8sbin/etcd" --name default --data-dir "$work/etcd" \
    --listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
    --listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
    --initial-cluster default=http://127.0.0.1:23800 --unsafe-no-fsync --log-level warn
  start kube-apiserver "$k8sbin/kube-apiserver" --etcd-servers "$ETCD_URL" \
    --bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port 6443 \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --client-ca-file "$pki/ca.crt" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --allow-privileged=true --kubelet-preferred-address-types InternalIP
  wait_for kube-apiserver 90 kc get --raw /readyz
  say "starting kube-controller-manager and kube-scheduler"
  start kube-controller-manager "$k8sbin/kube-controller-manager" --kubeconfig "$KUBECONFIG_OUT" \
    --authentication-kubeconfig "$KUBECONFIG_OUT" --authorization-kubeconfig "$KUBECONFIG_OUT" \
    --bind-address 127.0.0.1 --secure-port 10357 --leader-elect=false \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --use-service-account-credentials --controllers '*' --flex-volume-plugin-dir "$work/volume-plugins" \
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key"
  start kube-scheduler "$k8sbin/kube-scheduler" --kubeconfig "$KUBECONFIG_OUT" \
    --authentication-kubeconfig "$KUBECONFIG_OUT" --authorization-kubeconfig "$KUBECONFIG_OUT" \
    --bind-address 127.0.0.1 --secure-port 10359 --leader-elect=false
}

start_containerd() {
  mkdir -p "$work/containerd" "$work/cni/net.d" "$work/cni/ipam"
  put "$work/containerd/config.toml" <<EOF
version = 2
root = "$work/containerd/root"
state = "$work/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$SOCK"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$IMG_PAUSE"
  # root lacks CAP_SYS_RESOURCE here: without this runc fails to raise oom_score_adj.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$work/cni/net.d"
EOF
  put "$work/cni/net.d/10-listener-local.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "listener-local",
  "plugins": [
    {
      "type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": {"type": "host-local", "dataDir": "$work/cni/ipam",
               "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP", "rangeEnd": "$POD_RANGE_END"}]],
               "routes": [{"dst": "0.0.0.0/0"}]}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
  say "starting containerd"
  start containerd containerd --config "$work/containerd/config.toml"
  wait_for containerd 30 ctr --address "$SOCK" version
}

start_node() {
  mkdir -p "$KUBELET_DIR" "$work/pod-logs" "$work/volume-plugins"
  echo "nameserver $NODE_IP" | put "$work/resolv.conf"
  put "$work/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 host, no systemd, no CAP_SYS_RESOURCE
failCgroupV1: false
cgroupDriver: cgroupfs
oomScoreAdj: 0
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$SOCK
podLogsDir: $work/pod-logs
volumePluginDir: $work/volume-plugins
resolvConf: $work/resolv.conf
clusterDomain: cluster.local
registerNode: true
maxPods: 60
serializeImagePulls: false
# Nothing can be pulled here; never garbage-collect the imported images.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
EOF
  put "$work/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: $KUBECONFIG_OUT}
hostnameOverride: $NODE_NAME
clusterCIDR: $POD_CIDR
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# NodePorts only on the bridge address, never on the host's own interfaces.
nodePortAddresses: ["$NODE_IP/32"]
iptables: {localhostNodePorts: false}
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
  say "starting kubelet and kube-proxy; waiting for node $NODE_NAME to be Ready (about 20 s)"
  start kubelet "$k8sbin/kubelet" --config "$work/kubelet.yaml" --kubeconfig "$work/kubelet.kubeconfig" \
    --root-dir "$KUBELET_DIR" --node-ip "$NODE_IP" --hostname-override "$NODE_NAME" --v 1
  start kube-proxy "$k8sbin/kube-proxy" --config "$work/kube-proxy.yaml" --v 1
  wait_for "node $NODE_NAME" 120 kc get node "$NODE_NAME"
  wait_for "node $NODE_NAME Ready" 120 kc wait --for=condition=Ready "node/$NODE_NAME" --timeout=2s
}

up() {
  [ "$(id -u)" = 0 ] || die "must run as root (containerd, kubelet and iptables need it)"
  ensure_packages
  build_cluster_binaries
  build_images cluster
  record_host
  setup_network
  make_pki
  start_control_plane
  start_containerd
  import_images
  start_node
  say "cluster is up in $((SECONDS - t0))s"
  cat >&2 <<EOF

   export KUBECONFIG=$KUBECONFIG_OUT
   export PATH=$k8sbin:\$PATH
   kubectl get nodes,pods -A
   make cluster-down    # stops everything and restores the host

EOF
}

# ---------------------------------------------------------------- operator

OPERATOR_NS=listener-operator

require_cluster() {
  running kube-apiserver && running kubelet || die "the cluster is not running: make cluster-up"
}

# deploy installs the operator with the project's own manifests (the
# config/selfsigned install through the overlay in hack/cluster/deploy), as
# images, not as host processes, so the install itself is tested.
deploy() {
  require_cluster
  build_operator_binaries
  local out built
  out=$(build_images operator 2>&1)
  printf '%s\n' "$out" >&2
  built=$(grep -c 'built$' <<<"$out" || true)
  import_images
  say "rendering hack/cluster/deploy (config/selfsigned for this cluster) into $work/deploy.yaml"
  # kubelet's directory depends on where the repository is: an overlay of the
  # committed one, written here, moves the CSI node's paths there (docs/csi.md).
  mkdir -p "$work/deploy"
  local base
  base=$(realpath -m --relative-to="$work/deploy" "$root/hack/cluster/deploy") # kustomize wants it relative
  put "$work/deploy/kustomization.yaml" <<EOF
# Generated by hack/cluster/cluster.sh deploy: kubelet's directory of this cluster.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- $base
patches:
- target: {kind: DaemonSet, name: listener-operator-csi-node}
  patch: |-
    - {op: replace, path: /spec/template/spec/volumes/0/hostPath/path, value: $KUBELET_DIR/plugins/listeners.stackable.tech}
    - {op: replace, path: /spec/template/spec/volumes/1/hostPath/path, value: $KUBELET_DIR/plugins_registry}
    - {op: replace, path: /spec/template/spec/volumes/2/hostPath/path, value: $KUBELET_DIR/pods}
    - {op: replace, path: /spec/template/spec/containers/1/volumeMounts/1/mountPath, value: $KUBELET_DIR/pods}
    - {op: replace, path: /spec/template/spec/containers/0/args/1, value: --kubelet-registration-path=$KUBELET_DIR/plugins/listeners.stackable.tech/csi.sock}
EOF
  kubectl kustomize "$work/deploy" >"$work/deploy.yaml"
  if grep -n /var/lib/kubelet "$work/deploy.yaml" >&2; then
    die "the rendered install still names /var/lib/kubelet (above): config/csi changed shape; update the patch in cluster.sh deploy"
  fi
  say "applying the operator's manifests"
  kc apply --server-side --force-conflicts -f "$work/deploy.yaml" >/dev/null
  if [ "$built" -gt 0 ]; then
    # Same tags, new content: restart so the pods run what was just built.
    kc -n "$OPERATOR_NS" rollout restart deployment,daemonset >/dev/null 2>&1 || true
  fi
  say "waiting for the operator, the CSI driver and the webhooks (about 30 s)"
  local w
  for w in $(kc -n "$OPERATOR_NS" get deployment,daemonset -o name); do
    kc -n "$OPERATOR_NS" rollout status "$w" --timeout=300s >/dev/null || {
      kc -n "$OPERATOR_NS" get pods -o wide >&2; die "$w did not become ready"; }
  done
  wait_for "the preset ListenerClasses" 120 kc get listenerclass cluster-internal
  # The webhooks answer once the API server trusts their certificate.
  wait_for "the admission webhooks" 120 kc apply --dry-run=server -f "$root/hack/cluster/webhook-probe.yaml"
  say "operator deployed"
}

undeploy() {
  require_cluster
  [ -e "$work/deploy.yaml" ] || return 0
  kc delete --ignore-not-found --wait=false -f "$work/deploy.yaml" >/dev/null
}

# demo shows what a user sees: Listeners and, per pod, the tree it reads and
# the answer at that address.
demo() {
  up
  deploy
  say "applying examples/ (a StatefulSet with the opt-in label)"
  kc apply -f "$root/examples/statefulset.yaml" >/dev/null
  kc rollout status statefulset/hello --timeout=300s >/dev/null || { kc get pods -o wide >&2; die "the example did not start"; }
  echo
  echo "== ListenerClasses"
  kc get listenerclasses -o custom-columns='NAME:.metadata.name,SERVICE TYPE:.spec.serviceType,PINNED:.spec.pinnedNodePorts'
  echo
  echo "== Listeners (one per claim, so each pod keeps its address across restarts)"
  kc get listeners -o custom-columns='NAME:.metadata.name,CLASS:.spec.className,TYPE:.status.serviceType,ADDRESSES:.status.ingressAddresses[*].address,PORTS:.status.ingressAddresses[*].ports'
  local pod addr port
  for pod in $(kc get pods -l app=hello -o jsonpath='{.items[*].metadata.name}'); do
    echo
    echo "== $pod: what it reads under /stackable/listener (kubectl exec $pod -- ...)"
    kc exec "$pod" -- sh -c 'cd /stackable/listener && for f in $(find -L . -type f | grep -v "/\.\." | sort); do printf "   /stackable/listener/%s = %s\n" "${f#./}" "$(cat "$f")"; done'
    addr=$(kc exec "$pod" -- cat /stackable/listener/default-address/address)
    port=$(kc exec "$pod" -- cat /stackable/listener/default-address/ports/http)
    echo "   curl http://$addr:$port/  ->  $(curl -s --max-time 3 "http://$addr:$port/" || echo "(no answer)")"
  done
  cat <<EOF

== Explore
   export KUBECONFIG=$KUBECONFIG_OUT PATH=$k8sbin:\$PATH
   kubectl get listeners,podlisteners,svc
   kubectl delete pod hello-0      # it comes back with the same address
   kubectl get pods -n $OPERATOR_NS

== Tear down
   make cluster-down               # stops everything and restores the host
EOF
}

# ---------------------------------------------------------------- teardown

stop_pids() { # name... : SIGTERM to all at once, SIGKILL after 10 s
  local n p live=()
  for n in "$@"; do
    p=$(cat "$pids/$n" 2>/dev/null) || continue
    kill -0 "$p" 2>/dev/null && kill "$p" 2>/dev/null && live+=("$p")
  done
  for _ in $(seq 1 40); do
    local still=()
    for p in "${live[@]}"; do kill -0 "$p" 2>/dev/null && still+=("$p"); done
    live=("${still[@]}")
    [ ${#live[@]} -eq 0 ] && break
    sleep 0.25
  done
  for p in "${live[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for n in "$@"; do rm -f "$pids/$n"; done
}

cgroup_dirs() { # every cgroup dir the node created, deepest first
  local c
  for c in /sys/fs/cgroup/ /sys/fs/cgroup/*/; do
    for top in kubepods k8s.io; do # cgroup v1: per controller; v2: c is the root
      if [ -d "$c$top" ]; then find "$c$top" -type d; fi
    done
  done | awk '{ print length($0) " " $0 }' | sort -rn | cut -d' ' -f2-
}

kill_containers() {
  # Container processes, found by the cgroups kubelet put them in.
  local d p n=0
  for d in $(cgroup_dirs); do
    for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null && n=$((n + 1)); done
  done
  # containerd's shims, found by the socket of this cluster's containerd.
  for d in /proc/[0-9]*; do
    if { tr '\0' ' ' <"$d/cmdline"; } 2>/dev/null | grep -q -- "containerd-shim.*-address $SOCK"; then
      kill -9 "${d#/proc/}" 2>/dev/null && n=$((n + 1))
    fi
  done
  [ $n -eq 0 ] || say "killed $n container and shim processes"
  sleep 0.5
}

unmount_all() {
  local m
  # Deepest first; lazy unmount as a last resort for busy mounts.
  for m in $(awk -v w="$work" '$2 ~ "^"w || $2 ~ "^/run/containerd" || $2 ~ "^/run/netns/cni-" || $2 ~ "^/var/lib/kubelet" { print $2 }' /proc/self/mounts |
    awk '{ print length($0) " " $0 }' | sort -rn | cut -d' ' -f2-); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
}

restore_iptables() {
  local bin tbl c
  for bin in iptables ip6tables; do
    [ -e "$work/$bin.before" ] || continue
    # Drop every chain the cluster added, then restore the saved rules.
    for tbl in filter nat mangle raw; do
      $bin -t "$tbl" -S >/dev/null 2>&1 || continue
      for c in INPUT OUTPUT FORWARD PREROUTING POSTROUTING; do $bin -t "$tbl" -F "$c" 2>/dev/null || true; done
      for c in $($bin -t "$tbl" -S 2>/dev/null | awk '$1 == "-N" && ($2 ~ /^KUBE-/ || $2 == "'"$ISOLATION_CHAIN"'" || $2 ~ /^CNI-/) { print $2 }'); do
        $bin -t "$tbl" -F "$c" 2>/dev/null || true
      done
      for c in $($bin -t "$tbl" -S 2>/dev/null | awk '$1 == "-N" && ($2 ~ /^KUBE-/ || $2 == "'"$ISOLATION_CHAIN"'" || $2 ~ /^CNI-/) { print $2 }'); do
        $bin -t "$tbl" -X "$c" 2>/dev/null || true
      done
    done
    $bin-restore <"$work/$bin.before"
  done
  # iptables-nft leaves the (now empty) tables it created: drop those too.
  if command -v nft >/dev/null && [ -e "$work/nft.before" ]; then
    local line
    nft list tables 2>/dev/null | while read -r line; do
      grep -qxF "$line" "$work/nft.before" || nft delete $line 2>/dev/null || true
    done
  fi
}

down() {
  [ "$(id -u)" = 0 ] || die "must run as root"
  say "stopping kubelet, kube-proxy and the control plane"
  stop_pids kubelet kube-proxy
  stop_pids kube-scheduler kube-controller-manager kube-apiserver
  stop_pids etcd
  kill_containers
  stop_pids containerd
  unmount_all
  rm -f /run/netns/cni-* 2>/dev/null || true
  say "restoring iptables, bridge, cgroups and sysctls"
  restore_iptables
  ip link del "$BRIDGE" 2>/dev/null || true
  local d
  for d in $(cgroup_dirs); do rmdir "$d" 2>/dev/null || true; done
  if [ -e "$work/host.before" ]; then
    local kind a b
    while read -r kind a b; do
      [ "$kind" = sysctl ] && echo "$b" >"/proc/sys/${a//.//}" 2>/dev/null || true
    done <"$work/host.before"
    for a in "${HOST_PATHS[@]}"; do
      grep -qx "path $a" "$work/host.before" || rm -rf "$a" 2>/dev/null || true
    done
    rm -f "$work/host.before" "$work/iptables.before" "$work/ip6tables.before" "$work/nft.before"
  fi
  # Runtime state goes; built images and certificates stay for a fast next up.
  rm -rf "$work/etcd" "$work/containerd" "$KUBELET_DIR" "$work/cni" "$work/pod-logs" "$work/pids" 2>/dev/null || true
  local left
  left=$(cgroup_dirs | head -3)
  [ -z "$left" ] || say "warning: cgroups still present: $left"
  say "cluster is down; the host is restored"
}

status() {
  local n
  for n in etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy; do
    if running "$n"; then echo "$n: running (pid $(cat "$pids/$n"))"; else echo "$n: stopped"; fi
  done
  running kube-apiserver && kc get nodes -o wide || true
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  images) build_cluster_binaries; build_operator_binaries; build_images cluster operator ;;
  deploy) deploy ;;
  undeploy) undeploy ;;
  demo) demo ;;
  *) echo "usage: $0 up|down|status|images|deploy|undeploy|demo" >&2; exit 2 ;;
esac
