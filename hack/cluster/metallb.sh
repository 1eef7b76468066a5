# shellcheck shell=bash
# Sourced by hack/cluster/cluster.sh (after settings.sh); not run on its own.
#
# MetalLB on the cluster (issue 51), the load balancer of LoadBalancer
# classes: its controller and speaker, built from the module proxy by
# hack/metallb/build.sh (make metallb-tools; cached), packed into images and
# run in namespace metallb-system (hack/cluster/metallb/install.yaml) in L2
# mode, with its CRDs and pools (hack/cluster/metallb/config.yaml). Only
# when the binaries exist: a cluster that runs no load balancer does not
# pay MetalLB's cold build.

metallb_built() { [ -x "$METALLB_CONTROLLER_BIN" ] && [ -x "$METALLB_SPEAKER_BIN" ]; }

# deploy_metallb installs MetalLB when it was built and waits until its
# controller and every speaker run and the pools are accepted.
deploy_metallb() {
  if ! metallb_built; then
    say "no $METALLB_CONTROLLER_BIN: the cluster gets no load balancer (make metallb-tools builds it; make e2e does)"
    return 0
  fi
  # Cached: copies the CRDs into bin/metallb-crds when they are missing.
  "$root/hack/metallb/build.sh" >/dev/null
  say "writing MetalLB $METALLB_VERSION image tarballs to $images"
  local out
  out=$("$root/bin/cluster/images" -out "$images" -busybox /usr/bin/busybox \
    "$IMG_METALLB_CONTROLLER=$METALLB_CONTROLLER_BIN,user=65534:65534" \
    "$IMG_METALLB_SPEAKER=$METALLB_SPEAKER_BIN")
  printf '%s\n' "$out" | sed 's/^/   /' >&2
  import_images_running
  say "installing MetalLB $METALLB_VERSION (L2, lb-class $METALLB_LB_CLASS, pool $METALLB_POOL) in namespace $METALLB_NS"
  apply_crds "$root/bin/metallb-crds"
  sed -e "s|IMAGE_CONTROLLER|$IMG_METALLB_CONTROLLER|" -e "s|IMAGE_SPEAKER|$IMG_METALLB_SPEAKER|" \
    -e "s|LB_CLASS|$METALLB_LB_CLASS|" "$root/hack/cluster/metallb/install.yaml" |
    kc apply --server-side --force-conflicts -f - >/dev/null
  # The speakers' memberlist key: written once, kept across deploys.
  kc -n "$METALLB_NS" get secret memberlist >/dev/null 2>&1 ||
    kc -n "$METALLB_NS" create secret generic memberlist --from-literal=secretkey="$(openssl rand -base64 128 | tr -d '\n')" >/dev/null
  local pool=\"$METALLB_POOL\" tiny=\"$METALLB_TINY\"
  if dual; then pool+=", \"$METALLB_POOL6\"" tiny+=", \"$METALLB_TINY6\""; fi
  sed -e "s|POOL|$pool|" -e "s|TINY|$tiny|" -e "s|BRIDGE|$BRIDGE|" -e "s|NODE_1|$(node_name 1)|" \
    "$root/hack/cluster/metallb/config.yaml" | kc apply --server-side --force-conflicts -f - >/dev/null
  # Pods that ran already keep the old content of a rebuilt tag.
  if grep -q 'built$' <<<"$out"; then
    kc -n "$METALLB_NS" rollout restart deployment/controller daemonset/speaker >/dev/null
  fi
  local w
  for w in deployment/controller daemonset/speaker; do
    kc -n "$METALLB_NS" rollout status "$w" --timeout=180s >/dev/null || {
      kc -n "$METALLB_NS" get pods -o wide >&2; die "MetalLB $w did not become ready"; }
  done
}
