#!/usr/bin/env bash
# Installs what test/proxy/*.test.ts runs, from Debian's packages; `npm test` runs it first (so does CI):
#   nginx    (the deploy/nginx/broker.conf example, started by the test with its own prefix, config and pid file)
#   haproxy  (the deploy/haproxy/haproxy.cfg example, started by the test in the foreground)
#   openssl  (the test makes a throwaway CA and server certificate with it; so do the node-to-node TLS tests,
#             test/unit/transport_tls and test/cluster/tls, through test/helpers/tls_certs.ts)
#   prometheus (test/deploy: promtool checks deploy/prometheus/*, and a Prometheus started by the test on a free
#              loopback port with a temp config and data dir scrapes a node; the package ships promtool too)
# Debian's nginx, haproxy and prometheus packages may start system services (nginx on port 80, prometheus on 9090).
# The tests start their own instances on free loopback ports and never use those; they are left as they are.
# It also runs scripts/install-peers.sh (redis-server, redis-benchmark, wrk): test/bench/bench_smoke*.test.ts run
# the bench's --compare turns with them, and a suite on a clean machine would otherwise skip those cases.
set -euo pipefail
source "$(dirname "$0")/apt_install.sh"
apt_install_missing install-proxies nginx:nginx haproxy:haproxy openssl:openssl prometheus:prometheus prometheus:promtool
bash "$(dirname "$0")/install-peers.sh"
# The web console's browser test needs chromium; one entry point keeps `npm test` and CI the same.
bash "$(dirname "$0")/install-browser.sh"
