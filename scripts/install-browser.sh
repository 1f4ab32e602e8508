#!/usr/bin/env bash
# Installs what test/console/*.test.ts drives, from Debian's packages; scripts/install-proxies.sh runs it, so
# `npm test` and CI do too:
#   chromium  (the headless browser puppeteer-core starts at /usr/bin/chromium to click through the web console)
set -euo pipefail
source "$(dirname "$0")/apt_install.sh"
apt_install_missing install-browser chromium:chromium
