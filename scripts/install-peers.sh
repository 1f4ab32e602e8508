#!/usr/bin/env bash
# Installs the peers `npm run bench -- <scenario> --compare` measures against, from Debian's packages:
#   redis-server  (Redis, started by the bench on a free loopback port with appendfsync always)
#   redis-tools   (redis-benchmark, Redis's own C load generator, and redis-cli)
#   wrk           (a C HTTP load generator, run beside the bench's own client on produce-single)
# Debian's redis-server package starts a system Redis on port 6379; the bench starts its own on a free port and
# does not use it. It is left running (stopping it would change the system's services behind the user's back).
set -euo pipefail
source "$(dirname "$0")/apt_install.sh"
apt_install_missing install-peers redis-server:redis-server redis-tools:redis-benchmark wrk:wrk
