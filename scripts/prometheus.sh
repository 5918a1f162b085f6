#!/usr/bin/env bash
# Put Debian's Prometheus server (the `prometheus` package) in VENV/prometheus for probesim lab
# --prometheus and the telemetry round-trip test, only when it is missing. The package is
# downloaded and unpacked (dpkg -x), not installed: installing it would start a system service
# on 0.0.0.0:9090. When it cannot be had (no apt-get, no network) it says why and goes on: the
# tests that need it then skip, saying so.
set -uo pipefail
VENV="${1:-.venv}"
DEST="$VENV/prometheus"
BIN="$DEST/usr/bin/prometheus"
[ -x "$BIN" ] && exit 0
command -v prometheus >/dev/null 2>&1 && exit 0
cannot() { echo "prometheus: $1; probesim lab --prometheus and its tests need it (Debian package prometheus)" >&2; exit 0; }
command -v apt-get >/dev/null 2>&1 || cannot "no apt-get here"
command -v dpkg >/dev/null 2>&1 || cannot "no dpkg here"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
echo "prometheus: fetching Debian's prometheus package into $DEST" >&2
(cd "$TMP" && apt-get download prometheus >/dev/null 2>&1) || {
  if [ "$(id -u)" -eq 0 ]; then apt-get update -qq >/dev/null 2>&1; fi
  (cd "$TMP" && apt-get download prometheus >/dev/null 2>&1) || cannot "apt-get download prometheus failed"
}
mkdir -p "$DEST"
dpkg -x "$TMP"/prometheus_*.deb "$DEST" || cannot "dpkg -x failed"
[ -x "$BIN" ] || cannot "the package holds no usr/bin/prometheus"
