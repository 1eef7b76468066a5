# shellcheck shell=bash disable=SC2034
# Sourced first by hack/cluster/cluster.sh: where the cluster lives, its
# addresses and images, every setting a user can change by environment
# variable (NODES, IP_FAMILIES, CLUSTER_DOMAIN, CLUSTER_DNS, CLUSTER_WORK,
# K8S_VERSION, CERT_MODE), and the helpers every other file uses (say, die, kc, dual).

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
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
# 10.88.0.0/24 is the host's and node 1's subnet on the bridge, split in
# three so that nothing is ever handed out twice:
#   .2–.223    node 1's pods (POD_RANGE_END; IPv6 twin fd00:88::2–::df);
#   .224–.239  hand-made addresses: tests that write a Service's
#              status.loadBalancer themselves, DNAT targets and the L2
#              client (test/e2e); nobody gives them out (twin ::e0–::ef);
#   .240–.254  MetalLB's pool (METALLB_POOL): on the bridge, so a client on
#              it resolves them by ARP/NDP to the announcing node, and in no
#              pod, node or Service range, so MetalLB never hands out an
#              address something else holds (twin fd00:88::f0–::fe).
POD_RANGE_END=10.88.0.223
POD_RANGE_END6=fd00:88::df
# Every pod and node address: kube-proxy's cluster CIDR.
CLUSTER_CIDR=10.88.0.0/17
SERVICE_CIDR=10.88.128.0/20
SERVICE_IP=10.88.128.1
# IP_FAMILIES: dual (the default) gives the cluster IPv6 next to IPv4
# (issue 40): every node, pod and Service range below has an IPv6 twin, and
# IPv4 stays first (the primary family: single-stack Services, and the one
# address a class without ipFamilies publishes, stay IPv4). The whole
# `make e2e` passes on it, so CI covers both families. ipv4 builds the
# cluster without IPv6 (for a host whose kernel has IPv6 off).
# A running cluster keeps the families it was started with (up records them
# in $work/ip-families): stop-node, start-node and status need no setting.
if [[ -z ${IP_FAMILIES:-} && -e $work/ip-families ]]; then IP_FAMILIES=$(cat "$work/ip-families"); fi
IP_FAMILIES=${IP_FAMILIES:-dual}
# The IPv6 twins, in the ULA prefix fd00:88::/48 (fd00::/64 is the
# machine's own eth0 network here): fd00:88::/64 is 10.88.0.0/24 (the
# host, node 1 and its pods), fd00:88:0:1::/64 is 10.88.1.0/24 (nodes
# 2..N), fd00:88:0:<i>::/64 is node i's pods, fd00:88:1::/112 the
# Services (outside the cluster CIDR, as 10.88.128.0/20 is).
HOST_IP6=fd00:88::1
NODES_GW6=fd00:88:0:1::1
CLUSTER_CIDR6=fd00:88::/56
SERVICE_CIDR6=fd00:88:1::/112
# The node ports Services get (kube-apiserver's default).
NODE_PORT_RANGE=30000-32767
# SERVICES_LARGE, when set (make scale-10x), gives Services 16,382
# addresses (/18, still outside CLUSTER_CIDR) and 10,000 node ports instead
# of 4,094 and 2,768: the 10x point's 6,000 Listeners need 6,000 Services,
# 3,000 of them NodePort.
if [[ -n ${SERVICES_LARGE:-} ]]; then
  SERVICE_CIDR=10.88.128.0/18
  NODE_PORT_RANGE=30000-39999
fi
# Every kubelet's cluster domain and DNS address (pods' resolv.conf: search
# <ns>.svc.$CLUSTER_DOMAIN svc.$CLUSTER_DOMAIN $CLUSTER_DOMAIN). No DNS server
# runs; the address is the one pods were given anyway. `make e2e` sets a
# domain other than cluster.local, which the operator must detect.
CLUSTER_DOMAIN=${CLUSTER_DOMAIN:-cluster.local}
CLUSTER_DNS=${CLUSTER_DNS:-$HOST_IP}
# CONTROL_PLANE_QPS, when set, is the client rate (requests/s; burst twice
# that) of kube-controller-manager and kube-scheduler instead of their
# defaults (20 and 50): `make bench-address` measures how much of a listener
# volume's time to address is the control plane's own rate limits.
control_plane_qps=()
if [[ -n ${CONTROL_PLANE_QPS:-} ]]; then
  control_plane_qps=(--kube-api-qps "$CONTROL_PLANE_QPS" --kube-api-burst "$((CONTROL_PLANE_QPS * 2))")
fi
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
# Traefik, the gateway of the gateway-class tests (issue 39), packed from
# bin/tools/traefik (make gateway-tools) when that binary exists; tagged with
# the pinned version so test/e2e/testdata/gateway says what it runs.
TRAEFIK_BIN=$root/bin/tools/traefik
IMG_TRAEFIK=localhost/traefik:$(sed -n 's/^TRAEFIK_VERSION=//p' "$root/hack/gateway/versions")

# MetalLB (metallb.sh), the load balancer of LoadBalancer classes (issue
# 51), packed from bin/tools (make metallb-tools) when those binaries exist
# and deployed by `deploy`, in L2 mode. It serves only Services of
# loadBalancerClass METALLB_LB_CLASS: tests that write a load balancer's
# status by hand use Services without that class, which it leaves alone.
METALLB_VERSION=$(sed -n 's/^METALLB_VERSION=//p' "$root/hack/metallb/versions")
METALLB_CONTROLLER_BIN=$root/bin/tools/metallb-controller
METALLB_SPEAKER_BIN=$root/bin/tools/metallb-speaker
IMG_METALLB_CONTROLLER=localhost/metallb-controller:$METALLB_VERSION
IMG_METALLB_SPEAKER=localhost/metallb-speaker:$METALLB_VERSION
METALLB_NS=metallb-system
METALLB_LB_CLASS=listeners.test/metallb
# The pool of every Service of that class, and a one-address pool only a
# Service that names it gets (metallb.io/address-pool: tiny), to see a full
# pool (test/e2e) without starving the others.
METALLB_POOL=10.88.0.240-10.88.0.253
METALLB_POOL6=fd00:88::f0-fd00:88::fd
METALLB_TINY=10.88.0.254/32
METALLB_TINY6=fd00:88::fe/128

# cert-manager (CERT_MODE=cert-manager: certmanager.sh), packed from
# bin/tools (make cert-manager-tools) and tagged with the version that
# hack/certmanager/go.mod pins.
CERT_MANAGER_VERSION=$(sed -n 's|^\s*github.com/cert-manager/cert-manager \(v[^ ]*\).*|\1|p' "$root/hack/certmanager/go.mod" | head -1)
IMG_CM_CONTROLLER=localhost/cert-manager-controller:$CERT_MANAGER_VERSION
IMG_CM_CAINJECTOR=localhost/cert-manager-cainjector:$CERT_MANAGER_VERSION

# sysctls changed by this script, kubelet or kube-proxy; restored by `down`.
SYSCTLS=(net.ipv4.ip_forward net.ipv6.conf.all.forwarding net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables
  vm.overcommit_memory kernel.panic kernel.panic_on_oops net.ipv4.conf.all.route_localnet
  net.netfilter.nf_conntrack_max net.netfilter.nf_conntrack_tcp_timeout_established
  net.netfilter.nf_conntrack_tcp_timeout_close_wait)
# Host paths containerd/kubelet create outside the work dir; removed by `down`
# only if they did not exist before `up`.
HOST_PATHS=(/run/containerd /var/lib/kubelet /var/log/containers /var/log/pods /var/lib/cni /run/netns
  /var/lib/containerd /opt/containerd /usr/libexec/kubernetes)

# The namespace of the operator this cluster deploys (hack/cluster/deploy).
OPERATOR_NS=listener-operator

t0=$SECONDS
say() { printf '>> [%3ds] %s\n' $((SECONDS - t0)) "$*" >&2; }
die() { printf 'cluster: %s\n' "$*" >&2; exit 1; }

kc() { kubectl --kubeconfig "$KUBECONFIG_OUT" "$@"; }
# dual: the cluster has IPv6 next to IPv4.
dual() { [ "$IP_FAMILIES" = dual ]; }
# both joins an IPv4 setting with its IPv6 twin when the cluster is dual-stack.
both() { if dual; then echo "$1,$2"; else echo "$1"; fi; }
