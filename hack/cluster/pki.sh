# shellcheck shell=bash
# Sourced by hack/cluster/cluster.sh (after settings.sh); not run on its own.
#
# PKI: the cluster's CA, the API server's serving certificate, client
# certificates (admin, the API server's kubelet client, one per kubelet) and
# the kubeconfigs that use them. Kept across down/up for a fast next start.

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
  front_proxy_pki
  [ -e "$pki/sa.key" ] || { openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null; openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null; }
  kubeconfig "$KUBECONFIG_OUT" admin
}

# front_proxy_pki: the aggregation layer's CA and the client certificate the
# API server presents to extension API servers (OLM's packageserver, `make
# olm-e2e`); a CA of its own, as kubeadm does, so that no other certificate
# of the cluster's CA can pass user names in request headers.
front_proxy_pki() {
  [ -e "$pki/front-proxy-client.crt" ] && return 0
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$pki/front-proxy-ca.key" -out "$pki/front-proxy-ca.crt" \
    -days 365 -subj "/CN=listener-local-front-proxy-ca" 2>/dev/null
  openssl req -new -newkey rsa:2048 -nodes -keyout "$pki/front-proxy-client.key" -subj /CN=front-proxy-client \
    -out "$pki/front-proxy-client.csr" 2>/dev/null
  printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' >"$pki/front-proxy-client.ext"
  openssl x509 -req -in "$pki/front-proxy-client.csr" -CA "$pki/front-proxy-ca.crt" -CAkey "$pki/front-proxy-ca.key" \
    -CAcreateserial -days 365 -extfile "$pki/front-proxy-client.ext" -out "$pki/front-proxy-client.crt" 2>/dev/null
  rm -f "$pki/front-proxy-client.csr" "$pki/front-proxy-client.ext"
}
