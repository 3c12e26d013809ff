#!/usr/bin/env bash
# Prometheus for the dashboard test (test/app/metrics/dashboards.test.ts): the test starts its own server on a
# free port with a generated configuration; this script only makes sure the binary is there.
#
#   scripts/prometheus.sh install   apt-get install prometheus (Debian's package) when missing
#   scripts/prometheus.sh bin       print the binary's path (export PROMETHEUS_BIN=$(… bin))
#
# Debian's package also starts a system service on :9090; `install` stops it, the test does not need it.
set -euo pipefail

find_bin() {
  command -v prometheus 2>/dev/null || { [ -x /usr/bin/prometheus ] && echo /usr/bin/prometheus; } || true
}

case "${1:-}" in
  install)
    if [ -z "$(find_bin)" ]; then
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
      # The package's own service (if an init system started it) is not ours: leave :9090 free.
      (command -v service >/dev/null 2>&1 && service prometheus stop >/dev/null 2>&1) || true
    fi
    [ -n "$(find_bin)" ] || { echo "prometheus.sh: prometheus is not installed" >&2; exit 1; }
    "$(find_bin)" --version 2>&1 | head -n1 >&2
    ;;
  bin)
    bin=$(find_bin)
    [ -n "$bin" ] || { echo "prometheus.sh: prometheus is not installed (scripts/prometheus.sh install)" >&2; exit 1; }
    echo "$bin"
    ;;
  *)
    echo "usage: scripts/prometheus.sh install|bin" >&2
    exit 2
    ;;
esac
