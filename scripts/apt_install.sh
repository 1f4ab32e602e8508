#!/usr/bin/env bash
# Sourced by scripts/install-peers.sh and scripts/install-proxies.sh: installs, from Debian's packages, those whose
# command is not on PATH yet. Idempotent: with every command present apt-get is not called at all. Needs root (or
# sudo) when something is missing; exits non-zero with a message naming the step when apt-get fails.
#   apt_install_missing <script name> <package>:<command> [<package>:<command> ...]

apt_install_missing() {
  local name="$1"; shift
  local missing=() pair
  # Debian puts some servers in /usr/sbin, which a non-root PATH often lacks; the tests look there too.
  PATH="$PATH:/usr/sbin:/sbin"
  for pair in "$@"; do
    command -v "${pair#*:}" >/dev/null 2>&1 || missing+=("${pair%%:*}")
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    echo "$name: already installed: ${*#*:}"
    return 0
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "$name: apt-get not found; install ${missing[*]} with this system's package manager" >&2
    return 1
  fi
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
      echo "$name: needs root (or sudo) to apt-get install ${missing[*]}" >&2
      return 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  echo "$name: apt-get install ${missing[*]}"
  if ! "${sudo[@]}" apt-get update -q; then
    echo "$name: apt-get update failed (network or sources.list?); nothing installed" >&2
    return 1
  fi
  if ! "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"; then
    echo "$name: apt-get install ${missing[*]} failed; see the messages above" >&2
    return 1
  fi
  for pair in "$@"; do
    if ! command -v "${pair#*:}" >/dev/null 2>&1; then
      echo "$name: ${pair#*:} still not on PATH after installing ${missing[*]}" >&2
      return 1
    fi
  done
}
