#!/usr/bin/env bash
# Installs the peers `npm run bench -- <scenario> --compare` measures against, from Debian's packages:
#   redis-server  (Redis, started by the bench on a free loopback port with appendfsync always)
#   redis-tools   (redis-benchmark, Redis's own C load generator, and redis-cli)
#   wrk           (a C HTTP load generator, run beside the bench's own client on produce-single)
# Idempotent: packages already installed are left as they are, and apt-get is not called at all then.
# Needs root (or sudo). Exits non-zero with a message when apt-get fails.
set -euo pipefail

packages=(redis-server redis-tools wrk)
commands=(redis-server redis-benchmark wrk)

missing=()
for i in "${!packages[@]}"; do
  if ! command -v "${commands[$i]}" >/dev/null 2>&1; then missing+=("${packages[$i]}"); fi
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-peers: redis-server, redis-benchmark and wrk are already installed"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-peers: apt-get not found; install ${missing[*]} with this system's package manager" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
    echo "install-peers: needs root (or sudo) to apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-peers: apt-get install ${missing[*]}"
if ! "${sudo[@]}" apt-get update -q; then
  echo "install-peers: apt-get update failed (network or sources.list?); nothing installed" >&2
  exit 1
fi
if ! "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"; then
  echo "install-peers: apt-get install ${missing[*]} failed; see the messages above" >&2
  exit 1
fi
# Debian's redis-server package starts a system Redis on port 6379; the bench starts its own on a free port and
# does not use it. It is left running (stopping it would change the system's services behind the user's back).
for cmd in "${commands[@]}"; do
  if ! command -v "$cmd" >/dev/null 2>&1; then
    echo "install-peers: $cmd still not on PATH after installing ${missing[*]}" >&2
    exit 1
  fi
done
echo "install-peers: installed; $(redis-server --version | head -n 1); $(wrk --version 2>&1 | head -n 1)"
