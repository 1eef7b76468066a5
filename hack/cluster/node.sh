# shellcheck shell=bash
# Sourced by hack/cluster/cluster.sh (after settings.sh); not run on its own.
#
# One node's runtime: containerd (with the CNI bridge of its pods and the
# imported images), kubelet and kube-proxy; starting a node, waiting for it
# to be Ready, and stopping node i >= 2 without a trace.

node_containerd() {
  local i=$1 d sock bridge range="" ranges routes='{"dst": "0.0.0.0/0"}'
  d=$(node_dir "$i") sock=$(node_sock "$i")
  if [ "$i" = 1 ]; then
    bridge=$BRIDGE range=", \"rangeEnd\": \"$POD_RANGE_END\""
  else
    bridge=pods0
  fi
  ranges="[{\"subnet\": \"$(node_pod_cidr "$i")\", \"gateway\": \"$(node_pod_gw "$i")\"$range}]"
  if dual; then
    # A second range set: host-local gives every pod one address of each,
    # the pod's IPs (status.podIPs) in this order, IPv4 first.
    local range6=""
    [ "$i" != 1 ] || range6=", \"rangeEnd\": \"$POD_RANGE_END6\""
    ranges+=", [{\"subnet\": \"$(node_pod_cidr6 "$i")\", \"gateway\": \"$(node_pod_gw6 "$i")\"$range6}]"
    routes+=', {"dst": "::/0"}'
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
               "ranges": [$ranges],
               "routes": [$routes]}
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

# import_images_running loads the image tarballs into every node whose
# containerd runs (a deploy onto a running cluster).
import_images_running() {
  local i
  for i in $(nodes_present); do
    ! running "$(node_pid "$i" containerd)" || import_images "$i"
  done
}

# apply_crds applies the CRDs of a directory and waits until the API
# server serves them.
apply_crds() {
  kc apply --server-side --force-conflicts -f "$1/" >/dev/null
  kc wait --for=condition=Established --timeout=60s -f "$1/" >/dev/null
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

# kubelet_config writes node i's kubelet configuration.
kubelet_config() {
  local i=$1 d ip cgroot=""
  d=$(node_dir "$i") ip=$(node_ip "$i")
  [ "$i" = 1 ] || cgroot="cgroupRoot: /$(node_cgroup "$i")"
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
}

# kube_proxy_config writes node i's kube-proxy configuration.
kube_proxy_config() {
  local i=$1 d n ip addrs
  d=$(node_dir "$i") n=$(node_name "$i") ip=$(node_ip "$i")
  addrs="\"$ip/32\""
  ! dual || addrs+=", \"$(node_ip6 "$i")/128\""
  put "$d/kube-proxy.yaml" <<EOS
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: $KUBECONFIG_OUT}
hostnameOverride: $n
# Each family's proxier (iptables, ip6tables) takes its own CIDR.
clusterCIDR: $(both "$CLUSTER_CIDR" "$CLUSTER_CIDR6")
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# NodePorts only on this node's own addresses, never on the host's interfaces.
nodePortAddresses: [$addrs]
iptables: {localhostNodePorts: false}
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOS
}

node_kubelet() {
  local i=$1 d n NS
  node_ns "$i"
  d=$(node_dir "$i") n=$(node_name "$i")
  cert "kubelet-$n" "system:node:$n" system:nodes
  kubeconfig "$d/kubelet.kubeconfig" "kubelet-$n"
  mkdir -p "$KUBELET_DIR" "$d/pod-logs" "$work/volume-plugins"
  echo "nameserver $HOST_IP" | put "$work/resolv.conf"
  kubelet_config "$i"
  kube_proxy_config "$i"
  start "$(node_pid "$i" kubelet)" "${NS[@]}" "$k8sbin/kubelet" --config "$d/kubelet.yaml" \
    --kubeconfig "$d/kubelet.kubeconfig" --root-dir "$KUBELET_DIR" --node-ip "$(node_ips "$i")" --hostname-override "$n" --v 1
  start "$(node_pid "$i" kube-proxy)" "${NS[@]}" "$k8sbin/kube-proxy" --config "$d/kube-proxy.yaml" --v 1
}

# start_node brings up node i: namespaces (i >= 2), containerd with the
# images, kubelet and kube-proxy. It does not wait for Ready.
start_node() {
  local i=$1
  say "starting $(node_name "$i") ($(node_ips "$i"), pods $(both "$(node_pod_cidr "$i")" "$(node_pod_cidr6 "$i")"))"
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
  ip -6 route del "$(node_pod_cidr6 "$i")" 2>/dev/null || true
  ip link del "$(node_veth "$i")" 2>/dev/null || true
  [ ! -e "/run/netns/$n" ] || ip netns del "$n"
  for f in $(cgroup_dirs "$(node_cgroup "$i")"); do rmdir "$f" 2>/dev/null || true; done
  hosts_line "$i" del
  # Runtime state goes; the imported images (containerd root) stay.
  rm -rf "$d/kubelet" "$d/containerd/state" "$d/cni/ipam" "$d/pod-logs" "$d/mounts.ready" 2>/dev/null || true
}
