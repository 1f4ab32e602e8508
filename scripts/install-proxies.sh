#!/usr/bin/env bash
# Installs what test/proxy/*.test.ts runs, from Debian's packages; `npm test` runs it first (so does CI):
#   nginx    (the deploy/nginx/broker.conf example, started by the test with its own prefix, config and pid file)
#   haproxy  (the deploy/haproxy/haproxy.cfg example, started by the test in the foreground)
#   openssl  (the test makes a throwaway CA and server certificate with it)
# Idempotent: commands already on PATH are left as they are, and apt-get is not called at all then.
# Needs root (or sudo) when something is missing. Exits non-zero with a message when apt-get fails.
set -euo pipefail

packages=(nginx haproxy openssl)
commands=(nginx haproxy openssl)

# Debian installs nginx and haproxy in /usr/sbin, which a non-root PATH often lacks; the tests look there too.
PATH="$PATH:/usr/sbin:/sbin"
missing=()
for i in "${!packages[@]}"; do
  if ! command -v "${commands[$i]}" >/dev/null 2>&1; then missing+=("${packages[$i]}"); fi
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-proxies: nginx, haproxy and openssl are already installed"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-proxies: apt-get not found; install ${missing[*]} with this system's package manager" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
    echo "install-proxies: needs root (or sudo) to apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-proxies: apt-get install ${missing[*]}"
if ! "${sudo[@]}" apt-get update -q; then
  echo "install-proxies: apt-get update failed (network or sources.list?); nothing installed" >&2
  exit 1
fi
if ! "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"; then
  echo "install-proxies: apt-get install ${missing[*]} failed; see the messages above" >&2
  exit 1
fi
# Debian's nginx and haproxy packages may start system services (nginx on port 80). The tests start their own
# instances on free loopback ports with their own config, pid and temp files and never use those; they are left
# as they are (stopping them would change the system's services behind the user's back).
for cmd in "${commands[@]}"; do
  if ! command -v "$cmd" >/dev/null 2>&1; then
    echo "install-proxies: $cmd still not on PATH after installing ${missing[*]}" >&2
    exit 1
  fi
done
echo "install-proxies: installed; $(nginx -v 2>&1); $(haproxy -v | head -n 1); $(openssl version)"
