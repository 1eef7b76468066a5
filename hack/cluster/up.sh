# shellcheck shell=bash
# Sourced by hack/cluster/cluster.sh (after settings.sh); not run on its own.
#
# Bringing the cluster up: the control plane (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler) and then every node; status, and
# starting one node of a running cluster again.

start_control_plane() {
  say "starting etcd and kube-apiserver (about 10 s)"
  start etcd "$k8sbin/etcd" --name default --data-dir "$work/etcd" \
    --listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
    --listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
    --initial-cluster default=http://127.0.0.1:23800 --unsafe-no-fsync --log-level warn
  start kube-apiserver "$k8sbin/kube-apiserver" --etcd-servers "$ETCD_URL" \
    --bind-address "$HOST_IP" --advertise-address "$HOST_IP" --secure-port 6443 \
    --service-cluster-ip-range "$(both "$SERVICE_CIDR" "$SERVICE_CIDR6")" --service-node-port-range "$NODE_PORT_RANGE" \
    --client-ca-file "$pki/ca.crt" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --allow-privileged=true --kubelet-preferred-address-types InternalIP \
    --requestheader-client-ca-file "$pki/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --proxy-client-cert-file "$pki/front-proxy-client.crt" --proxy-client-key-file "$pki/front-proxy-client.key"
  wait_for kube-apiserver 90 kc get --raw /readyz
  say "starting kube-controller-manager and kube-scheduler"
  start kube-controller-manager "$k8sbin/kube-controller-manager" --kubeconfig "$KUBECONFIG_OUT" \
    --authentication-kubeconfig "$KUBECONFIG_OUT" --authorization-kubeconfig "$KUBECONFIG_OUT" \
    --bind-address 127.0.0.1 --secure-port 10357 --leader-elect=false \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --use-service-account-credentials --controllers '*' --flex-volume-plugin-dir "$work/volume-plugins" \
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
    "${control_plane_qps[@]}"
  start kube-scheduler "$k8sbin/kube-scheduler" --kubeconfig "$KUBECONFIG_OUT" \
    --authentication-kubeconfig "$KUBECONFIG_OUT" --authorization-kubeconfig "$KUBECONFIG_OUT" \
    --bind-address 127.0.0.1 --secure-port 10359 --leader-elect=false "${control_plane_qps[@]}"
}

# install_gateway_crds installs the Gateway API CRDs of the Experimental
# channel (bin/gateway-crds/experimental, make gateway-tools), when they were
# copied: TCPRoute classes need TCPRoute, which Traefik reads only as
# v1alpha2, served by the Experimental CRD alone (issue 52, docs/gateway.md).
# Experimental only, on a fresh cluster: the Standard bundle's safe-upgrades
# ValidatingAdmissionPolicy refuses Experimental CRDs over Standard ones.
# The directory also holds that policy (Experimental's), which is no CRD:
# only the CRDs are waited for.
install_gateway_crds() {
  local dir=$root/bin/gateway-crds/experimental crds
  if [ ! -d "$dir" ]; then
    say "no $dir: the cluster gets no Gateway API CRDs (make gateway-tools copies them; make e2e does)"
    return 0
  fi
  say "installing the Gateway API CRDs (Experimental channel)"
  kc apply --server-side --force-conflicts -f "$dir/" >/dev/null
  mapfile -t crds < <(kc get crd -o name | grep '\.gateway\.networking\.')
  kc wait --for=condition=Established --timeout=60s "${crds[@]}" >/dev/null
}

up() {
  [ "$(id -u)" = 0 ] || die "must run as root (containerd, kubelet and iptables need it)"
  [[ $NODES =~ ^[1-9][0-9]?$ ]] && [ "$NODES" -le 50 ] || die "NODES=$NODES: give a number of nodes from 1 to 50"
  case $IP_FAMILIES in ipv4 | dual) ;; *) die "IP_FAMILIES=$IP_FAMILIES: give ipv4 or dual" ;; esac
  # A running cluster's families cannot change under its nodes.
  if [ -e "$work/ip-families" ] && [ "$(cat "$work/ip-families")" != "$IP_FAMILIES" ]; then
    die "the cluster runs with IP_FAMILIES=$(cat "$work/ip-families"): run 'make cluster-down' first"
  fi
  if dual && [ "$(cat /proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null || echo 1)" != 0 ]; then
    die "the cluster is dual-stack by default and needs IPv6: net.ipv6.conf.all.disable_ipv6 is not 0 (or IPv6 is not in this kernel); enable it, or run with IP_FAMILIES=ipv4"
  fi
  ensure_packages
  build_cluster_binaries
  build_images cluster
  record_host
  echo "$IP_FAMILIES" >"$work/ip-families"
  setup_network
  make_pki
  start_control_plane
  local i
  install_gateway_crds
  for i in $(seq 1 "$NODES"); do start_node "$i"; done
  say "waiting for $NODES node(s) to be Ready (about 20 s for one, 60 s for three)"
  for i in $(seq 1 "$NODES"); do wait_node_ready "$i"; done
  say "cluster ($IP_FAMILIES) is up in $((SECONDS - t0))s"
  cat >&2 <<EOF

   export KUBECONFIG=$KUBECONFIG_OUT
   export PATH=$k8sbin:\$PATH
   kubectl get nodes,pods -A -o wide
   make cluster-down    # stops everything and restores the host

EOF
}

status() {
  local n i
  echo "IP families: $IP_FAMILIES"
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
