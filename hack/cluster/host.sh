# shellcheck shell=bash
# Sourced by hack/cluster/cluster.sh (after settings.sh); not run on its own.
#
# The host: what `up` records before it changes anything (sysctls, host
# paths, iptables and nftables), the cluster bridge and its isolation chain,
# the /etc/hosts lines of the nodes, and how `down` puts all of it back.

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
  local ipt=(iptables)
  if dual; then
    say "adding IPv6 to $BRIDGE ($HOST_IP6/64, $NODES_GW6/64)"
    # nodad: usable at once, and the kubelet and kube-proxy started next
    # find their node address (nothing else on this bridge has it).
    ip -6 addr replace "$HOST_IP6/64" dev "$BRIDGE" nodad
    ip -6 addr replace "$NODES_GW6/64" dev "$BRIDGE" nodad
    ip -6 route replace "$SERVICE_CIDR6" dev "$BRIDGE" src "$HOST_IP6"
    sysctl -qw net.ipv6.conf.all.forwarding=1
    sysctl -qw net.bridge.bridge-nf-call-ip6tables=1 2>/dev/null || true
    ipt+=(ip6tables)
  fi
  # Pods talk to each other, to the node and to Services, never beyond
  # (in each family the cluster has).
  local bin
  for bin in "${ipt[@]}"; do
    if ! $bin -L "$ISOLATION_CHAIN" >/dev/null 2>&1; then
      $bin -N "$ISOLATION_CHAIN"
      $bin -A "$ISOLATION_CHAIN" -i "$BRIDGE" ! -o "$BRIDGE" -j DROP
      $bin -A "$ISOLATION_CHAIN" -o "$BRIDGE" ! -i "$BRIDGE" -j DROP
      $bin -I FORWARD 1 -j "$ISOLATION_CHAIN"
    fi
  done
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

# restore_host puts back the sysctls record_host saw and removes the host
# paths that did not exist before up.
restore_host() {
  [ -e "$work/host.before" ] || return 0
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
}
