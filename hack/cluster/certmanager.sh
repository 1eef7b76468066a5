# shellcheck shell=bash
# Sourced by hack/cluster/cluster.sh (after settings.sh); not run on its own.
#
# cert-manager on the cluster (issue 47), for CERT_MODE=cert-manager: its
# controller and cainjector, built from the released module by
# hack/certmanager/build.sh (make cert-manager-tools; cached), packed into
# images and run as Deployments in namespace cert-manager
# (hack/cluster/cert-manager/install.yaml), with the module's CRDs.

# cert_mode is the operator's webhook certificate mode on this cluster: the
# one a deploy recorded (a redeploy from a test keeps it), else CERT_MODE.
cert_mode() {
  local m=${CERT_MODE:-}
  if [ -z "$m" ] && [ -e "$work/cert-mode" ]; then m=$(cat "$work/cert-mode"); fi
  m=${m:-self-signed}
  case $m in cert-manager | self-signed) echo "$m" ;; *) die "CERT_MODE=$m: give cert-manager or self-signed" ;; esac
}

build_cert_manager() {
  say "cert-manager $CERT_MANAGER_VERSION controller and cainjector (make cert-manager-tools; cold: several minutes; cached: instant)"
  "$root/hack/certmanager/build.sh"
  say "writing cert-manager image tarballs to $images"
  "$root/bin/cluster/images" -out "$images" -busybox /usr/bin/busybox \
    "$IMG_CM_CONTROLLER=$root/bin/tools/cert-manager-controller,user=65532:65532" \
    "$IMG_CM_CAINJECTOR=$root/bin/tools/cert-manager-cainjector,user=65532:65532" | sed 's/^/   /' >&2
}

# deploy_cert_manager installs cert-manager's CRDs, controller and cainjector
# and waits until they run. Pods that ran already are restarted when their
# image was rebuilt.
deploy_cert_manager() {
  build_cert_manager
  import_images_running
  say "installing cert-manager $CERT_MANAGER_VERSION (CRDs, controller, cainjector) in namespace cert-manager"
  apply_crds "$root/bin/cert-manager-crds"
  sed -e "s|IMAGE_CONTROLLER|$IMG_CM_CONTROLLER|" -e "s|IMAGE_CAINJECTOR|$IMG_CM_CAINJECTOR|" \
    "$root/hack/cluster/cert-manager/install.yaml" | kc apply --server-side --force-conflicts -f - >/dev/null
  local d
  for d in cert-manager cert-manager-cainjector; do
    kc -n cert-manager rollout status "deployment/$d" --timeout=180s >/dev/null || {
      kc -n cert-manager get pods -o wide >&2; die "cert-manager deployment $d did not become ready"; }
  done
}

# show_webhook_certificate prints who issued the operator's webhook serving
# certificate and until when it is valid (make demo).
show_webhook_certificate() {
  local secret
  if [ "$(cert_mode)" = cert-manager ]; then
    secret=listener-operator-webhook-tls
    echo "== The webhook's serving certificate (issued by cert-manager $CERT_MANAGER_VERSION; Secret $OPERATOR_NS/$secret)"
    kc -n "$OPERATOR_NS" get certificate listener-operator-serving-cert \
      -o custom-columns='CERTIFICATE:.metadata.name,READY:.status.conditions[?(@.type=="Ready")].status,ISSUER:.spec.issuerRef.name,NOT AFTER:.status.notAfter,RENEWAL:.status.renewalTime'
  else
    secret=listener-operator-webhook-cert
    echo "== The webhook's serving certificate (self-signed mode: the operator issues it; Secret $OPERATOR_NS/$secret)"
  fi
  kc -n "$OPERATOR_NS" get secret "$secret" -o jsonpath='{.data.tls\.crt}' | base64 -d |
    openssl x509 -noout -issuer -enddate -ext subjectAltName | sed 's/^/   /'
}
