#!/usr/bin/env bash
# Installs what test/proxy/*.test.ts runs, from Debian's packages; `npm test` runs it first (so does CI):
#   nginx    (the deploy/nginx/broker.conf example, started by the test with its own prefix, config and pid file)
#   haproxy  (the deploy/haproxy/haproxy.cfg example, started by the test in the foreground)
#   openssl  (the test makes a throwaway CA and server certificate with it)
# Debian's nginx and haproxy packages may start system services (nginx on port 80). The tests start their own
# instances on free loopback ports and never use those; they are left as they are.
set -euo pipefail
source "$(dirname "$0")/apt_install.sh"
apt_install_missing install-proxies nginx:nginx haproxy:haproxy openssl:openssl
# The web console's browser test needs chromium; one entry point keeps `npm test` and CI the same.
bash "$(dirname "$0")/install-browser.sh"
