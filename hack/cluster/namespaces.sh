# shellcheck shell=bash
# Sourced by hack/cluster/cluster.sh (after settings.sh); not run on its own.
#
# Nodes by index, their names and addresses, and what isolates a node
# i >= 2 on this machine: its network namespace (a veth into the cluster
# bridge), its mount namespace and its cgroups.
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
# The IPv6 twins of node_ip and node_pod_cidr (settings.sh); node i's index
# is written as hex digits, which keeps them distinct for i <= 50.
node_ip6() { if [ "$1" = 1 ]; then echo "$HOST_IP6"; else echo "fd00:88:0:1::$1"; fi; }
node_pod_cidr6() { if [ "$1" = 1 ]; then echo fd00:88::/64; else echo "fd00:88:0:$1::/64"; fi; }
# node_pod_gw and node_pod_gw6 are the gateways of node i's pods (its pod
# bridge's addresses; node 1: the host on the cluster bridge).
node_pod_gw() { if [ "$1" = 1 ]; then echo "$HOST_IP"; else echo "10.88.$1.1"; fi; }
node_pod_gw6() { if [ "$1" = 1 ]; then echo "$HOST_IP6"; else echo "fd00:88:0:$1::1"; fi; }
# node_ips is node i's addresses, comma-separated, IPv4 first (kubelet's
# --node-ip: the node lists them in that order).
node_ips() { both "$(node_ip "$1")" "$(node_ip6 "$1")"; }
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
  if dual; then
    # nodad: the address is usable at once (duplicate address detection
    # would hold it tentative for a second or two; nothing else has it).
    ip -n "$n" -6 addr replace "$(node_ip6 "$i")/64" dev eth0 nodad
    ip -n "$n" -6 route replace default via "$NODES_GW6"
  fi
  # The node's pod bridge, made before the CNI bridge plugin (which uses an
  # existing one) so that its address is set and stays (see setup_network).
  if ! ip -n "$n" link show pods0 >/dev/null 2>&1; then
    ip -n "$n" link add pods0 type bridge
  fi
  ip -n "$n" link set pods0 address "$(bridge_mac "$i")"
  # Its IPv6 gateway set here with nodad: the CNI bridge plugin finds it
  # and keeps it, and pods never wait for it to leave the tentative state.
  ! dual || ip -n "$n" -6 addr replace "$(node_pod_gw6 "$i")/64" dev pods0 nodad
  ip -n "$n" link set pods0 up
  ip route replace "$(node_pod_cidr "$i")" via "$ip"
  ! dual || ip -6 route replace "$(node_pod_cidr6 "$i")" via "$(node_ip6 "$i")"
  # Forwarding for its pods; bridged pod traffic through its iptables
  # (kube-proxy); no shortcuts learnt from ICMP redirects.
  nsenter --net="/run/netns/$n" sh -c 'sysctl -qw net.ipv4.ip_forward=1
    sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null
    sysctl -qw net.ipv4.conf.all.accept_redirects=0 net.ipv4.conf.default.accept_redirects=0' || true
  if dual; then
    nsenter --net="/run/netns/$n" sh -c 'sysctl -qw net.ipv6.conf.all.forwarding=1
      sysctl -qw net.bridge.bridge-nf-call-ip6tables=1 2>/dev/null
      sysctl -qw net.ipv6.conf.all.accept_redirects=0 net.ipv6.conf.default.accept_redirects=0' || true
  fi
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
