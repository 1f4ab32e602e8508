#!/usr/bin/env bash
# Starts, stops or shows a 3-node broker cluster on loopback (issue 6), for trying the cluster by hand.
#
#   scripts/cluster.sh [start|stop|status]      (default: start)
#
# Node N (1..3) listens for the API on 127.0.0.1:(N+6)942 (7942, 8942, 9942) and node to node on 127.0.0.1:(N+6)943
# (7943, 8943, 9943; 7943 is also the default --internal-port, so no node uses 7942+1 for anything else). Everything
# lives under ./cluster-data (CLUSTER_DIR overrides it): the shared cluster secret (cluster-secret, 48 random bytes
# in base64, mode 0600), the data dirs nodeN/, the logs nodeN.log and the pid files nodeN.pid.
#
# start: builds when dist/src/main.js is missing, writes the secret on the first start, starts the 3 nodes as
#   founding voters (--bootstrap; the same flags on a restart, which reuses the data dirs), waits until every
#   /readyz answers 200 (at most READY_TIMEOUT seconds, 60 by default) and prints the URLs and how to log in (node 1,
#   the founding node with the lowest id, generates the root admin's password into cluster-data/node1/admin-password
#   on its first start). Exits non-zero with the tail of the logs when a node exits or is not ready in time, after
#   stopping the nodes it started.
# stop: SIGTERM to every node of a pid file, SIGKILL to any still running after 10 s; removes the pid files.
# status: per node its pid, whether it runs, its /readyz answer; then the members list as node 1 answers it.
#
# NODE overrides the node binary. Needs curl; openssl or /dev/urandom for the secret.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${CLUSTER_DIR:-$root/cluster-data}"
node_bin="${NODE:-node}"
ready_timeout="${READY_TIMEOUT:-60}"
ids=(1 2 3)
host=127.0.0.1

api_port() { echo "$(($1 + 6))942"; }
internal_port() { echo "$(($1 + 6))943"; }
pid_file() { echo "$dir/node$1.pid"; }
log_file() { echo "$dir/node$1.log"; }

# The pid in node N's pid file when that process is alive and is a broker node of this cluster, else nothing.
running_pid() {
  local file pid
  file="$(pid_file "$1")"
  [ -f "$file" ] || return 0
  pid="$(cat "$file")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  # A pid may be reused after a crash: only a process running our main.js on node N's data dir counts.
  if [ -r "/proc/$pid/cmdline" ] && ! tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "--data-dir $dir/node$1 "; then return 0; fi
  echo "$pid"
}

readyz() { curl -s -m 2 -o /dev/null -w '%{http_code}' "http://$host:$(api_port "$1")/readyz" || true; }

tail_logs() {
  for id in "${ids[@]}"; do
    echo "--- $(log_file "$id") (last 20 lines) ---" >&2
    tail -n 20 "$(log_file "$id")" >&2 2>/dev/null || echo "(no log)" >&2
  done
}

stop_nodes() {
  local pids=() id pid
  for id in "${ids[@]}"; do
    pid="$(running_pid "$id")"
    if [ -n "$pid" ]; then
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$id:$pid")
    fi
  done
  local deadline=$((SECONDS + 10))
  for entry in "${pids[@]}"; do
    id="${entry%%:*}"
    pid="${entry##*:}"
    while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "node $id (pid $pid) still running after 10 s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    else
      echo "node $id (pid $pid) stopped"
    fi
  done
  for id in "${ids[@]}"; do rm -f "$(pid_file "$id")"; done
  [ "${#pids[@]}" -gt 0 ] || echo "no node was running"
}

start() {
  for id in "${ids[@]}"; do
    if [ -n "$(running_pid "$id")" ]; then
      echo "node $id is already running (pid $(running_pid "$id")); run: $0 stop" >&2
      exit 1
    fi
  done
  command -v curl >/dev/null || { echo "cluster.sh needs curl" >&2; exit 1; }
  if [ ! -f "$root/dist/src/main.js" ]; then
    echo "building (dist/src/main.js is missing)..."
    (cd "$root" && npx tsc -p tsconfig.json)
  fi
  mkdir -p "$dir"
  # Keeps the whole directory out of git without touching the repository's .gitignore.
  [ -f "$dir/.gitignore" ] || echo '*' >"$dir/.gitignore"
  local secret="$dir/cluster-secret"
  if [ ! -f "$secret" ]; then
    (umask 077; if command -v openssl >/dev/null; then openssl rand -base64 48; else head -c 48 /dev/urandom | base64 -w0; echo; fi >"$secret")
    echo "wrote a new cluster secret to $secret"
  fi
  local bootstrap="" id
  for id in "${ids[@]}"; do bootstrap+="${bootstrap:+,}$id=$host:$(internal_port "$id")"; done
  for id in "${ids[@]}"; do
    mkdir -p "$dir/node$id"
    # --data-dir is followed by a space on purpose: running_pid matches "--data-dir <dir> ".
    nohup "$node_bin" "$root/dist/src/main.js" --node-id "$id" --host "$host" --port "$(api_port "$id")" \
      --internal-port "$(internal_port "$id")" --advertise "$host:$(api_port "$id"),$host:$(internal_port "$id")" \
      --data-dir "$dir/node$id" --bootstrap "$bootstrap" --cluster-secret-file "$secret" \
      >>"$(log_file "$id")" 2>&1 </dev/null &
    echo $! >"$(pid_file "$id")"
    echo "node $id started (pid $!): API http://$host:$(api_port "$id"), internal $host:$(internal_port "$id"), log $(log_file "$id")"
  done

  local deadline=$((SECONDS + ready_timeout)) not_ready
  while :; do
    not_ready=()
    for id in "${ids[@]}"; do
      if [ -z "$(running_pid "$id")" ]; then
        echo "node $id exited during startup" >&2
        tail_logs
        stop_nodes >&2
        exit 1
      fi
      [ "$(readyz "$id")" = 200 ] || not_ready+=("$id")
    done
    [ "${#not_ready[@]}" -eq 0 ] && break
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "nodes ${not_ready[*]} did not answer /readyz 200 within $ready_timeout s" >&2
      tail_logs
      stop_nodes >&2
      exit 1
    fi
    sleep 0.3
  done

  echo
  echo "cluster ready:"
  for id in "${ids[@]}"; do echo "  node $id  http://$host:$(api_port "$id")"; done
  local password_file="$dir/node1/admin-password"
  if [ -f "$password_file" ]; then
    echo "log in as user admin with the password in $password_file:"
    echo "  curl -u \"admin:\$(cat $password_file)\" http://$host:$(api_port 1)/v1/cluster/members"
  else
    echo "log in as user admin with the password node 1 was first given or generated (no $password_file found)"
  fi
  echo "stop with: $0 stop"
}

status() {
  local id pid
  for id in "${ids[@]}"; do
    pid="$(running_pid "$id")"
    if [ -n "$pid" ]; then
      echo "node $id: running (pid $pid), http://$host:$(api_port "$id") /readyz $(readyz "$id")"
    else
      echo "node $id: not running"
    fi
  done
  local password_file="$dir/node1/admin-password"
  if [ -n "$(running_pid 1)" ] && [ -f "$password_file" ]; then
    echo "members (as node 1 answers):"
    curl -s -m 5 -u "admin:$(cat "$password_file")" "http://$host:$(api_port 1)/v1/cluster/members" || true
    echo
  fi
}

case "${1:-start}" in
  start) start ;;
  stop) stop_nodes ;;
  status) status ;;
  *) echo "usage: $0 [start|stop|status]" >&2; exit 2 ;;
esac
