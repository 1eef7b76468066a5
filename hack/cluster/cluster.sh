#!/usr/bin/env bash
# A real Kubernetes cluster of NODES nodes (default 1) built from source, on
# loopback and a private bridge only: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, and per node containerd (Debian),
# kubelet and kube-proxy (iptables mode). No Docker engine, no registry, no
# internet: images are built locally (hack/cluster/images) and imported into
# every node's containerd.
#
# usage: [NODES=n] [IP_FAMILIES=ipv4|dual] [CLUSTER_DOMAIN=d] [CERT_MODE=self-signed|cert-manager] hack/cluster/cluster.sh up|down|status|images|render|deploy|undeploy|demo
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
#
# IPv6 is added to all of it (IP_FAMILIES=dual, the default; ipv4 leaves it
# out: settings.sh): the host is also fd00:88::1 (node 1; its pods
# fd00:88::/64), node i >= 2 also fd00:88:0:1::i (pods fd00:88:0:i::/64),
# Services also fd00:88:1::/112. Every node and pod has an address of each
# family, IPv4 first; a Service is IPv4 unless it asks for both
# (ipFamilyPolicy).
#
# This file only dispatches; the work is done by one file per job, sourced
# here (each starts with what it does):
#   settings.sh    paths, addresses, images, environment variables; say/die/kc
#   processes.sh   starting, watching and stopping the processes (by pid)
#   build.sh       Debian packages, binaries, image tarballs
#   pki.sh         CA, certificates, kubeconfigs
#   host.sh        bridge, isolation chain, /etc/hosts; recording and restoring
#                  the host (iptables, sysctls, host paths)
#   namespaces.sh  node names and addresses; network and mount namespaces, cgroups
#   node.sh        per node containerd, kubelet and kube-proxy; start/stop a node
#   up.sh          control plane, up, status
#   certmanager.sh cert-manager (CERT_MODE=cert-manager): build, images, install
#   metallb.sh     MetalLB (when make metallb-tools built it): images, install, pools
#   operator.sh    deploy, undeploy, demo, tag-image
#   down.sh        teardown
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
for part in settings processes build pki host namespaces node up certmanager metallb operator down; do
  # shellcheck source=/dev/null
  source "$here/$part.sh"
done
unset part

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  images) build_cluster_binaries; build_operator_binaries; build_images cluster operator ;;
  deploy) deploy ;;
  render) render_install ;;
  undeploy) undeploy ;;
  demo) demo ;;
  stop-node)
    [ -n "${2:-}" ] || die "usage: $0 stop-node listener-node-<i>"
    i=$(node_index "$2") # not inside stop_node's arguments: a wrong name must stop here
    stop_node "$i"
    say "$2 stopped (its Node object stays)" ;;
  start-node) [ -n "${2:-}" ] || die "usage: $0 start-node listener-node-<i>"; start_one_node "$2" ;;
  tag-image) [ -n "${3:-}" ] || die "usage: $0 tag-image <image> <new name>"; tag_image "$2" "$3" ;;
  *) echo "usage: [NODES=n] $0 up|down|status|images|render|deploy|undeploy|demo|stop-node <node>|start-node <node>|tag-image <image> <new name>" >&2; exit 2 ;;
esac
