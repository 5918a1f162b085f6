#!/usr/bin/env bash
# Install Debian's chromium and chromium-driver for the HTML report's browser test
# (tests/report/test_html_browser.py), only when either is missing. Quiet; sudo when not root.
# Without apt-get it says so and goes on: the browser test then skips, saying why.
set -euo pipefail
[ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "browser: no apt-get here; install chromium and chromedriver to run the report's browser test" >&2
  exit 0
fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "browser: installing chromium and chromium-driver with apt-get (the report's browser test)" >&2
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
