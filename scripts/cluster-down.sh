#!/usr/bin/env bash
# Stops the local cluster started by scripts/cluster-up.sh (SIGTERM, then
# SIGKILL after 10s). --purge also deletes its data and logs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
local_dir=${TICKETD_LOCAL:-$root/.ticketd}
if [[ -s "$local_dir/pids" ]]; then
  pids=$(cat "$local_dir/pids")
  kill -TERM $pids 2>/dev/null || true
  for _ in $(seq 1 50); do
    kill -0 $pids 2>/dev/null || break
    sleep 0.2
  done
  kill -KILL $pids 2>/dev/null || true
  : > "$local_dir/pids"
  echo "stopped"
else
  echo "no local cluster is running"
fi
if [[ "${1:-}" == "--purge" ]]; then
  rm -rf "$local_dir/data" "$local_dir/logs" "$local_dir/addrs"
  echo "purged $local_dir"
fi
