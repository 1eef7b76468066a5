#!/usr/bin/env bash
# A real Kubernetes cluster of NODES nodes (default 1) built from source, on
# loopback and a private bridge only: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, and per node containerd (Debian),
# kubelet and kube-proxy (iptables mode). No Docker engine, no registry, no
# internet: images are built locally (hack/cluster/images) and imported into
# every node's containerd.
#
# usage: [NODES=n] [CLUSTER_DOMAIN=d] hack/cluster/cluster.sh up|down|status|images|deploy|undeploy|demo
#        hack/cluster/cluster.sh stop-node|start-node <node name>
#
# State lives under .work/cluster (git-ignored). `down` restores the host: it
# stops the processes it started (by pid), kills the containers (by the pids in
# their cgroups), unmounts what the runtime mounted, restores iptables and the
# sysctls it or kubelet/kube-proxy changed, removes the bridge, the cgroups and
# the host directories that did not exist before `up`.
#
# Network: bridge listener0 is the cluster network. The host is 10.88.0.1 on
# it: the API server's address and node 1 (listener-node-1), whose pods get
# 10.88.0.0/24 on the same bridge. Node i >= 2 (listener-node-i) is a network
# namespace plus a mount namespace on this machine: address 10.88.1.i (a veth
# into the bridge; the host is 10.88.1.1 there and routes between nodes), pods
# 10.88.i.0/24 on its own bridge. Services on 10.88.128.0/20 (4,096 addresses:
# the scale and fault tests create hundreds of ClusterIP Services). Every node's
# name resolves to its address on the host (/etc/hosts lines added by up,
# removed by down). Traffic between the bridge and any other interface is
# dropped.
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

NODES=${NODES:-1}
BRIDGE=listener0
# The host on the cluster network: the API server's address, and node 1's.
HOST_IP=10.88.0.1
# The host's address on the subnet of nodes 2..N (10.88.1.i), their gateway.
NODES_GW=10.88.1.1
# Node 1's pods get .2–.239 of 10.88.0.0/24; .240–.254 are never given out, so
# tests can play a load balancer with those addresses (test/e2e).
POD_RANGE_END=10.88.0.239
# Every pod and node address: kube-proxy's cluster CIDR.
CLUSTER_CIDR=10.88.0.0/17
SERVICE_CIDR=10.88.128.0/20
SERVICE_IP=10.88.128.1
# Every kubelet's cluster domain and DNS address (pods' resolv.conf: search
# <ns>.svc.$CLUSTER_DOMAIN svc.$CLUSTER_DOMAIN $CLUSTER_DOMAIN). No DNS server
# runs; the address is the one pods were given anyway. `make e2e` sets a
# domain other than cluster.local, which the operator must detect.
CLUSTER_DOMAIN=${CLUSTER_DOMAIN:-cluster.local}
CLUSTER_DNS=${CLUSTER_DNS:-$HOST_IP}
APISERVER=https://$HOST_IP:6443
ETCD_URL=http://127.0.0.1:23790
KUBECONFIG_OUT=$work/kubeconfig
# Every kubelet's root directory has this path in its node's mount namespace:
# the CSI node DaemonSet's hostPaths are the same on every node.
KUBELET_DIR=$work/kubelet
ISOLATION_CHAIN=LISTENER-LOCAL-ISOLATION
# Lines of /etc/hosts this cluster adds end with this marker; down removes them.
HOSTS_MARK="# listener-operator local cluster"

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
    say "creating bridge $BRIDGE ($HOST_IP/24, $NODES_GW/24)"
    ip link add "$BRIDGE" type bridge
    ip addr add "$HOST_IP/24" dev "$BRIDGE"
  fi
  # The gateway of nodes 2..N, which live on 10.88.1.0/24.
  ip addr replace "$NODES_GW/24" dev "$BRIDGE"
  # A bridge whose address the kernel chose takes the lowest address of its
  # ports, so a pod starting or stopping can change it; pods and the other
  # nodes then send to the old address until their neighbour entries expire
  # (about a minute without answers: webhook calls time out, kubectl exec
  # into node 2 fails). A set address never changes.
  ip link set "$BRIDGE" address "$(bridge_mac 0)"
  ip link set "$BRIDGE" up
  # Service IPs go to the bridge, never to the default route, even before
  # kube-proxy has written its rules.
  ip route replace "$SERVICE_CIDR" dev "$BRIDGE" src "$HOST_IP"
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
    "IP:$HOST_IP,IP:$SERVICE_IP,IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert admin admin system:masters
  cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
  [ -e "$pki/sa.key" ] || { openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null; openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null; }
  kubeconfig "$KUBECONFIG_OUT" admin
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

# alive: the process exists and is not a zombie. Processes started here are
# re-parented to this sandbox's pid 1, which may never reap them, so an exited
# one can stay a zombie that `kill -0` still finds.
alive() { kill -0 "$1" 2>/dev/null && [ "$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" != Z ]; }

running() { local p; p=$(cat "$pids/$1" 2>/dev/null) && alive "$p"; }

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
    --bind-address "$HOST_IP" --advertise-address "$HOST_IP" --secure-port 6443 \
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

# ---------------------------------------------------------------- nodes
#
# Node i is listener-node-i. Node 1 runs in the host's namespaces (its state
# keeps the single-node layout: .work/cluster/{containerd,cni,pod-logs,kubelet}).
# Node i >= 2 runs in a network namespace and a mount namespace of its own,
# with its state under .work/cluster/nodes/listener-node-i; its kubelet
# directory is bind-mounted at node 1's path inside its mount namespace.

node_name() { echo "listener-node-$1"; }
node_index() { # name -> i
  local i=${1##*-}
  [[ $i =~ ^[0-9]+$ ]] && [ "$1" = "$(node_name "$i")" ] || die "no node named '$1': nodes are listener-node-1 … listener-node-N"
  echo "$i"
}
node_ip() { if [ "$1" = 1 ]; then echo "$HOST_IP"; else echo "10.88.1.$1"; fi; }
node_pod_cidr() { if [ "$1" = 1 ]; then echo 10.88.0.0/24; else echo "10.88.$1.0/24"; fi; }
node_dir() { if [ "$1" = 1 ]; then echo "$work"; else echo "$work/nodes/$(node_name "$1")"; fi; }
node_sock() { echo "$(node_dir "$1")/containerd/containerd.sock"; }
# node_pid names the pid file of one of a node's processes (node 1: the
# single-node names, so down also stops clusters started before NODES existed).
node_pid() { if [ "$1" = 1 ]; then echo "$2"; else echo "$(node_name "$1").$2"; fi; }
node_veth() { echo "lnode$1"; }
# node_cgroup is the parent of everything kubelet and containerd create for
# node i >= 2 (kubelet's cgroupRoot); node 1 uses the root.
node_cgroup() { node_name "$1"; }

# nodes_present lists the indices of the nodes with state on this host.
nodes_present() {
  echo 1
  local d
  # `|| continue`, not `&&`: with no node directory the loop's status would
  # fail the pipeline (pipefail) and `down` with it.
  for d in "$work"/nodes/listener-node-*; do [ -d "$d" ] || continue; node_index "$(basename "$d")"; done | sort -n
}

# node_ns sets NS to the command prefix that enters node i's network and
# mount namespaces (node 1: the host's, no prefix). nsenter, not `ip netns
# exec`: that remounts /sys and hides the cgroup mounts kubelet needs. nsenter
# does not fork, so `start` records the real pid.
node_ns() {
  NS=()
  [ "$1" = 1 ] && return 0
  NS=(nsenter --net="/run/netns/$(node_name "$1")" --mount="/proc/$(cat "$pids/$(node_pid "$1" mounts)")/ns/mnt" --)
}

# node_exec runs a command in node i's namespaces.
node_exec() {
  local i=$1 NS; shift
  node_ns "$i"
  "${NS[@]}" "$@"
}

# bridge_mac is the fixed, locally administered address of node i's pod
# bridge (0: the cluster bridge).
bridge_mac() { printf '02:88:00:00:%02x:01' "$1"; }

# node_network gives node i >= 2 its network namespace: a veth into the
# cluster bridge with its address, a default route via the host, and on the
# host a route to its pods.
node_network() {
  local i=$1 n ip veth
  n=$(node_name "$i") ip=$(node_ip "$i") veth=$(node_veth "$i")
  [ -e "/run/netns/$n" ] || ip netns add "$n"
  if ! ip link show "$veth" >/dev/null 2>&1; then
    ip link add "$veth" type veth peer name eth0 netns "$n"
    ip link set "$veth" master "$BRIDGE" up
  fi
  ip -n "$n" link set lo up
  ip -n "$n" addr replace "$ip/24" dev eth0
  ip -n "$n" link set eth0 up
  ip -n "$n" route replace default via "$NODES_GW"
  # The node's pod bridge, made before the CNI bridge plugin (which uses an
  # existing one) so that its address is set and stays (see setup_network).
  if ! ip -n "$n" link show pods0 >/dev/null 2>&1; then
    ip -n "$n" link add pods0 type bridge
  fi
  ip -n "$n" link set pods0 address "$(bridge_mac "$i")"
  ip -n "$n" link set pods0 up
  ip route replace "$(node_pod_cidr "$i")" via "$ip"
  # Forwarding for its pods; bridged pod traffic through its iptables
  # (kube-proxy); no shortcuts learnt from ICMP redirects.
  nsenter --net="/run/netns/$n" sh -c 'sysctl -qw net.ipv4.ip_forward=1
    sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null
    sysctl -qw net.ipv4.conf.all.accept_redirects=0 net.ipv4.conf.default.accept_redirects=0' || true
}

# node_mounts starts the process that holds node i's mount namespace. In it,
# the host's cluster mounts (node 1's pods, containerd, netns files) are
# detached, so this node never keeps them busy, and the node's own kubelet
# directory is bind-mounted at $KUBELET_DIR, shared so that the CSI node
# plugin's Bidirectional mounts propagate, and its own /var/lib/kubelet.
node_mounts() {
  local i=$1 d
  d=$(node_dir "$i")
  running "$(node_pid "$i" mounts)" && return 0
  mkdir -p "$d/kubelet" "$KUBELET_DIR"
  rm -f "$d/mounts.ready"
  put "$d/mounts.sh" <<EOS
set -e
awk '\$2 ~ "^$work/" || \$2 ~ "^/run/containerd" || \$2 ~ "^/run/netns/" || \$2 ~ "^/var/lib/kubelet" { print \$2 }' /proc/self/mounts |
  awk '{ print length(\$0) " " \$0 }' | sort -rn | cut -d' ' -f2- | while read -r m; do umount -l "\$m" 2>/dev/null || true; done
mount --bind "$d/kubelet" "$KUBELET_DIR"
mount --make-rshared "$KUBELET_DIR"
# kubelet keeps its device plugin socket under /var/lib/kubelet whatever its
# root directory: one per node.
mkdir -p /var/lib/kubelet "$d/var-lib-kubelet"
mount --bind "$d/var-lib-kubelet" /var/lib/kubelet
touch "$d/mounts.ready"
exec sleep infinity
EOS
  start "$(node_pid "$i" mounts)" unshare --mount --propagation private -- bash "$d/mounts.sh"
  wait_for "the mount namespace of $(node_name "$i")" 10 test -e "$d/mounts.ready"
}

# node_cgroup_root creates kubelet's cgroupRoot for node i >= 2 in every
# hierarchy (cgroup v1: one per controller; kubelet refuses a missing one).
node_cgroup_root() {
  local c
  local c f g
  g=$(node_cgroup "$1")
  for c in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
    [ -e "${c}cgroup.procs" ] || continue
    mkdir -p "$c$g"
    # A new v1 cpuset has no CPUs and no memory nodes: give it the parent's.
    for f in cpuset.cpus cpuset.mems; do
      [ ! -e "$c$f" ] || [ -n "$(cat "$c$g/$f")" ] || cat "$c$f" >"$c$g/$f"
    done
  done
  return 0
}

node_containerd() {
  local i=$1 d sock bridge gw range=""
  d=$(node_dir "$i") sock=$(node_sock "$i")
  if [ "$i" = 1 ]; then
    bridge=$BRIDGE gw=$HOST_IP range=", \"rangeEnd\": \"$POD_RANGE_END\""
  else
    bridge=pods0 gw=10.88.$i.1
  fi
  mkdir -p "$d/containerd" "$d/cni/net.d" "$d/cni/ipam"
  put "$d/containerd/config.toml" <<EOS
version = 2
root = "$d/containerd/root"
state = "$d/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$sock"
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
    conf_dir = "$d/cni/net.d"
EOS
  put "$d/cni/net.d/10-listener-local.conflist" <<EOS
{
  "cniVersion": "1.0.0",
  "name": "listener-local",
  "plugins": [
    {
      "type": "bridge", "bridge": "$bridge", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": {"type": "host-local", "dataDir": "$d/cni/ipam",
               "ranges": [[{"subnet": "$(node_pod_cidr "$i")", "gateway": "$gw"$range}]],
               "routes": [{"dst": "0.0.0.0/0"}]}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOS
  local NS
  node_ns "$i"
  start "$(node_pid "$i" containerd)" "${NS[@]}" containerd --config "$d/containerd/config.toml"
  wait_for "containerd of $(node_name "$i")" 30 ctr --address "$sock" version
}

# import_images loads the image tarballs into node i's containerd.
import_images() {
  local i=$1 f sock seen
  sock=$(node_sock "$i") seen=$(node_dir "$i")/containerd/imported
  mkdir -p "$seen"
  for f in "$images"/*.tar; do
    # Skip what this containerd already has (same inputs as the tarball).
    cmp -s "$f.inputs" "$seen/$(basename "$f").inputs" && continue
    ctr --address "$sock" -n k8s.io images import "$f" >/dev/null
    [ ! -e "$f.inputs" ] || cp "$f.inputs" "$seen/$(basename "$f").inputs"
  done
}

node_kubelet() {
  local i=$1 d n ip cgroot="" NS
  node_ns "$i"
  d=$(node_dir "$i") n=$(node_name "$i") ip=$(node_ip "$i")
  [ "$i" = 1 ] || cgroot="cgroupRoot: /$(node_cgroup "$i")"
  cert "kubelet-$n" "system:node:$n" system:nodes
  kubeconfig "$d/kubelet.kubeconfig" "kubelet-$n"
  mkdir -p "$KUBELET_DIR" "$d/pod-logs" "$work/volume-plugins"
  echo "nameserver $HOST_IP" | put "$work/resolv.conf"
  put "$d/kubelet.yaml" <<EOS
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 host, no systemd, no CAP_SYS_RESOURCE
failCgroupV1: false
cgroupDriver: cgroupfs
$cgroot
oomScoreAdj: 0
address: $ip
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$(node_sock "$i")
podLogsDir: $d/pod-logs
volumePluginDir: $work/volume-plugins
resolvConf: $work/resolv.conf
clusterDomain: $CLUSTER_DOMAIN
clusterDNS: [$CLUSTER_DNS]
registerNode: true
maxPods: 60
serializeImagePulls: false
# Nothing can be pulled here; never garbage-collect the imported images.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
EOS
  put "$d/kube-proxy.yaml" <<EOS
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: $KUBECONFIG_OUT}
hostnameOverride: $n
clusterCIDR: $CLUSTER_CIDR
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# NodePorts only on this node's own address, never on the host's interfaces.
nodePortAddresses: ["$ip/32"]
iptables: {localhostNodePorts: false}
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOS
  start "$(node_pid "$i" kubelet)" "${NS[@]}" "$k8sbin/kubelet" --config "$d/kubelet.yaml" \
    --kubeconfig "$d/kubelet.kubeconfig" --root-dir "$KUBELET_DIR" --node-ip "$ip" --hostname-override "$n" --v 1
  start "$(node_pid "$i" kube-proxy)" "${NS[@]}" "$k8sbin/kube-proxy" --config "$d/kube-proxy.yaml" --v 1
}

# hosts_line makes node i's name resolve to its address on the host.
hosts_line() { # i add|del
  local n line tmp
  n=$(node_name "$1")
  line="$(node_ip "$1") $n $HOSTS_MARK"
  tmp=$(mktemp)
  grep -vF " $n $HOSTS_MARK" /etc/hosts >"$tmp" || true
  [ "$2" = del ] || echo "$line" >>"$tmp"
  # /etc/hosts may be a bind mount: rewrite it in place, never rename over it.
  cmp -s "$tmp" /etc/hosts || cat "$tmp" >/etc/hosts
  rm -f "$tmp"
}

# start_node brings up node i: namespaces (i >= 2), containerd with the
# images, kubelet and kube-proxy. It does not wait for Ready.
start_node() {
  local i=$1
  say "starting $(node_name "$i") ($(node_ip "$i"), pods $(node_pod_cidr "$i"))"
  if [ "$i" != 1 ]; then
    mkdir -p "$(node_dir "$i")"
    node_network "$i"
    node_cgroup_root "$i"
    node_mounts "$i"
  else
    # Node 1 is the host, whose / is private: its kubelet directory becomes a
    # shared mount of its own, so that the CSI node plugin's Bidirectional
    # mounts (sealed volumes) reach kubelet and the pods (containerd refuses
    # Bidirectional from a private mount). down unmounts it with the rest.
    mkdir -p "$KUBELET_DIR"
    mountpoint -q "$KUBELET_DIR" || mount --bind "$KUBELET_DIR" "$KUBELET_DIR"
    mount --make-rshared "$KUBELET_DIR"
  fi
  node_containerd "$i"
  import_images "$i"
  node_kubelet "$i"
  hosts_line "$i" add
}

wait_node_ready() {
  local n
  n=$(node_name "$1")
  wait_for "node $n" 120 kc get node "$n"
  wait_for "node $n Ready" 180 kc wait --for=condition=Ready "node/$n" --timeout=2s
}

# stop_node stops node i >= 2 and removes everything it left on the host:
# processes, containers, its namespaces (and with them its mounts and
# iptables), veth, route, cgroups, /etc/hosts line and runtime state. The
# Node object stays (as when a machine goes away); the images stay for a fast
# start-node.
stop_node() {
  local i=$1 n d f netns_files=""
  n=$(node_name "$i") d=$(node_dir "$i")
  [ "$i" != 1 ] || die "listener-node-1 is the host (it carries the API server): stop the cluster with down"
  if running "$(node_pid "$i" mounts)"; then
    # The pods' network namespace files this node mounted (empty files on the host).
    netns_files=$(node_exec "$i" awk '$2 ~ "^/run/netns/cni-" { print $2 }' /proc/self/mounts 2>/dev/null || true)
  fi
  stop_pids "$(node_pid "$i" kubelet)" "$(node_pid "$i" kube-proxy)"
  kill_containers "$(node_sock "$i")" "$(node_cgroup "$i")"
  stop_pids "$(node_pid "$i" containerd)"
  # The last process in the mount namespace: its mounts go with it.
  stop_pids "$(node_pid "$i" mounts)"
  for f in $netns_files; do rm -f "$f"; done
  ip route del "$(node_pod_cidr "$i")" 2>/dev/null || true
  ip link del "$(node_veth "$i")" 2>/dev/null || true
  [ ! -e "/run/netns/$n" ] || ip netns del "$n"
  for f in $(cgroup_dirs "$(node_cgroup "$i")"); do rmdir "$f" 2>/dev/null || true; done
  hosts_line "$i" del
  # Runtime state goes; the imported images (containerd root) stay.
  rm -rf "$d/kubelet" "$d/containerd/state" "$d/cni/ipam" "$d/pod-logs" "$d/mounts.ready" 2>/dev/null || true
}

up() {
  [ "$(id -u)" = 0 ] || die "must run as root (containerd, kubelet and iptables need it)"
  [[ $NODES =~ ^[1-9][0-9]?$ ]] && [ "$NODES" -le 50 ] || die "NODES=$NODES: give a number of nodes from 1 to 50"
  ensure_packages
  build_cluster_binaries
  build_images cluster
  record_host
  setup_network
  make_pki
  start_control_plane
  local i
  for i in $(seq 1 "$NODES"); do start_node "$i"; done
  say "waiting for $NODES node(s) to be Ready (about 20 s for one, 60 s for three)"
  for i in $(seq 1 "$NODES"); do wait_node_ready "$i"; done
  say "cluster is up in $((SECONDS - t0))s"
  cat >&2 <<EOF

   export KUBECONFIG=$KUBECONFIG_OUT
   export PATH=$k8sbin:\$PATH
   kubectl get nodes,pods -A -o wide
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
  local i
  say "importing images into the nodes' containerd"
  for i in $(nodes_present); do
    ! running "$(node_pid "$i" containerd)" || import_images "$i"
  done
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
    alive "$p" && kill "$p" 2>/dev/null && live+=("$p")
  done
  for _ in $(seq 1 40); do
    local still=()
    for p in "${live[@]}"; do alive "$p" && still+=("$p"); done
    live=("${still[@]}")
    [ ${#live[@]} -eq 0 ] && break
    sleep 0.25
  done
  for p in "${live[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for n in "$@"; do rm -f "$pids/$n"; done
}

# cgroup_dirs lists the cgroup dirs under the given top-level names (default:
# those of every node), deepest first.
cgroup_dirs() {
  local c top d tops=("$@")
  [ ${#tops[@]} -gt 0 ] || tops=(kubepods k8s.io 'listener-node-*')
  for c in /sys/fs/cgroup/ /sys/fs/cgroup/*/; do # cgroup v1: per controller; v2: c is the root
    for top in "${tops[@]}"; do
      for d in $c$top; do # a pattern, expanded under $c
        if [ -d "$d" ]; then find "$d" -type d; fi
      done
    done
  done | awk '{ print length($0) " " $0 }' | sort -rn | cut -d' ' -f2-
}

# kill_containers kills a node's container processes (by the cgroups kubelet
# put them in) and the shims of its containerd (by its socket).
kill_containers() { # socket cgroup-top...
  local sock=$1 d p n=0; shift
  for d in $(cgroup_dirs "$@"); do
    for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null && n=$((n + 1)); done
  done
  for p in $(pgrep -f -- "containerd-shim.* -address $sock( |\$)" || true); do
    kill -9 "$p" 2>/dev/null && n=$((n + 1))
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
  local i nodes
  nodes=$(nodes_present)
  say "stopping kubelet and kube-proxy of $(echo $nodes | wc -w) node(s), and the control plane"
  for i in $nodes; do stop_pids "$(node_pid "$i" kubelet)" "$(node_pid "$i" kube-proxy)"; done
  stop_pids kube-scheduler kube-controller-manager kube-apiserver
  stop_pids etcd
  for i in $nodes; do
    [ "$i" = 1 ] || { stop_node "$i"; rm -rf "$(node_dir "$i")"; }
  done
  rmdir "$work/nodes" 2>/dev/null || true
  kill_containers "$(node_sock 1)" kubepods k8s.io
  stop_pids containerd
  unmount_all
  rm -f /run/netns/cni-* 2>/dev/null || true
  hosts_line 1 del
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
      if ! grep -qx "path $a" "$work/host.before"; then
        # `ip netns add` makes /run/netns a mount point of itself.
        while mountpoint -q "$a" 2>/dev/null; do umount "$a" 2>/dev/null || umount -l "$a" || break; done
        rm -rf "$a" 2>/dev/null || true
      fi
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
  local n i
  for n in etcd kube-apiserver kube-controller-manager kube-scheduler; do
    if running "$n"; then echo "$n: running (pid $(cat "$pids/$n"))"; else echo "$n: stopped"; fi
  done
  for i in $(nodes_present); do
    for n in mounts containerd kubelet kube-proxy; do
      [ "$i" != 1 ] || [ "$n" != mounts ] || continue
      if running "$(node_pid "$i" "$n")"; then echo "$(node_name "$i") $n: running (pid $(cat "$pids/$(node_pid "$i" "$n")"))"
      else echo "$(node_name "$i") $n: stopped"; fi
    done
  done
  running kube-apiserver && kc get nodes -o wide || true
}

# start_one_node starts (again) one node i >= 2 of a running cluster.
start_one_node() {
  local i
  i=$(node_index "$1")
  [ "$i" != 1 ] || die "listener-node-1 is the host: start the cluster with up"
  require_cluster
  start_node "$i"
  wait_node_ready "$i"
  say "$1 is Ready"
}

# --- tag-image (chart-ops) ---------------------------------------------------
# tag_image gives an image every node's containerd has another name, so that
# a values file naming other registries (the existing chart's, in the Helm
# e2e test) runs the local images: nothing can be pulled here.
tag_image() {
  local src=$1 dst=$2 i
  require_cluster
  for i in $(nodes_present); do
    running "$(node_pid "$i" containerd)" || continue
    ctr --address "$(node_sock "$i")" -n k8s.io images tag --force "$src" "$dst" >/dev/null ||
      die "$(node_name "$i") has no image $src (cluster.sh deploy imports it)"
  done
}
# --- end tag-image ------------------------------------------------------------

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  images) build_cluster_binaries; build_operator_binaries; build_images cluster operator ;;
  deploy) deploy ;;
  undeploy) undeploy ;;
  demo) demo ;;
  stop-node) [ -n "${2:-}" ] || die "usage: $0 stop-node listener-node-<i>"; stop_node "$(node_index "$2")"; say "$2 stopped (its Node object stays)" ;;
  start-node) [ -n "${2:-}" ] || die "usage: $0 start-node listener-node-<i>"; start_one_node "$2" ;;
  tag-image) [ -n "${3:-}" ] || die "usage: $0 tag-image <image> <new name>"; tag_image "$2" "$3" ;;
  *) echo "usage: [NODES=n] $0 up|down|status|images|deploy|undeploy|demo|stop-node <node>|start-node <node>|tag-image <image> <new name>" >&2; exit 2 ;;
esac
