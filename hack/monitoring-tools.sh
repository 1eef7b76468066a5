#!/usr/bin/env bash
# Installs what the monitoring checks use, from Debian's packages, once:
# promtool (package prometheus: `promtool test rules` in deploy/, and the
# Prometheus server the e2e test runs against the cluster) and, with
# CHROMIUM=1, chromium (the e2e test's screenshot of Prometheus's graph
# page). Without root or apt-get it says why and exits 0: the tests that
# need a missing tool are then skipped with that reason.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pkgs=()
command -v promtool >/dev/null && command -v prometheus >/dev/null || pkgs+=(prometheus)
if [ "${CHROMIUM:-0}" = 1 ] && ! command -v chromium >/dev/null; then pkgs+=(chromium); fi
[ ${#pkgs[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "monitoring-tools: cannot install ${pkgs[*]} (needs root and apt-get): the tests that need them are skipped" >&2
  exit 0
fi
echo "monitoring-tools: installing Debian packages: ${pkgs[*]} (about 1 min)" >&2
marker=$root/.work/.apt-updated
if [ ! -e "$marker" ]; then
  apt-get update -q >/dev/null && mkdir -p "$(dirname "$marker")" && touch "$marker" || true
fi
if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}" >/dev/null; then
  echo "monitoring-tools: apt-get install ${pkgs[*]} failed: the tests that need them are skipped" >&2
fi
