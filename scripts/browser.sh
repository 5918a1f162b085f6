#!/usr/bin/env bash
# Install Debian's chromium and chromium-driver for the HTML report's browser test
# (tests/report/test_html_browser.py), only when either is missing. Quiet; sudo when not root.
# When they cannot be installed (no apt-get, no sudo, no network) it says why and goes on: the
# browser test then skips, saying so.
set -uo pipefail
[ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] && exit 0
cannot() { echo "browser: $1; the report's browser test will skip (install chromium and chromium-driver)" >&2; exit 0; }
command -v apt-get >/dev/null 2>&1 || cannot "no apt-get here"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || cannot "not root and no sudo"
  SUDO=sudo
fi
echo "browser: installing chromium and chromium-driver with apt-get (the report's browser test)" >&2
$SUDO apt-get update -qq || cannot "apt-get update failed"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null ||
  cannot "apt-get install chromium chromium-driver failed"
