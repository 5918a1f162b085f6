#!/usr/bin/env bash
# Create .venv with a Python >= 3.11, installing the system packages it needs when missing.
set -euo pipefail
venv=${1:-.venv}
[ -x "$venv/bin/python" ] && exit 0

pick() {
  for py in python3.13 python3.12 python3.11 python3; do
    if command -v "$py" >/dev/null 2>&1 &&
       "$py" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$py"; return 0
    fi
  done
  return 1
}

if ! py=$(pick); then
  if command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: installing python3 and python3-venv with apt-get" >&2
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv python3-pip >/dev/null
  fi
  py=$(pick) || { echo "bootstrap: need Python >= 3.11 with the venv module" >&2; exit 1; }
fi
"$py" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
