# shellcheck shell=bash
# Sourced by hack/cluster/cluster.sh (after settings.sh); not run on its own.
#
# Teardown: `down` stops every process of every node and of the control
# plane, kills the containers, unmounts what the runtime mounted, and
# restores the host as record_host found it (host.sh).

unmount_all() {
  local m
  # Deepest first; lazy unmount as a last resort for busy mounts.
  for m in $(awk -v w="$work" '$2 ~ "^"w || $2 ~ "^/run/containerd" || $2 ~ "^/run/netns/cni-" || $2 ~ "^/var/lib/kubelet" { print $2 }' /proc/self/mounts |
    awk '{ print length($0) " " $0 }' | sort -rn | cut -d' ' -f2-); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
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
  restore_host
  rm -f "$work/ip-families" "$work/cert-mode"
  # Runtime state goes; built images and certificates stay for a fast next up.
  rm -rf "$work/etcd" "$work/containerd" "$KUBELET_DIR" "$work/cni" "$work/pod-logs" "$work/pids" 2>/dev/null || true
  local left
  left=$(cgroup_dirs | head -3)
  [ -z "$left" ] || say "warning: cgroups still present: $left"
  say "cluster is down; the host is restored"
}
