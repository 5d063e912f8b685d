#!/usr/bin/env bash
# Builds the image and starts a 3- (or NODES=5) node cluster in Docker, on a
# network of its own, with each node's API published on 127.0.0.1:1818N and
# its Redis-protocol front on 127.0.0.1:1638N.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
nodes=${NODES:-3}
case $nodes in 3) file=$root/deploy/docker-compose.yml ;; 5) file=$root/deploy/docker-compose.5.yml ;; *) echo "NODES must be 3 or 5" >&2; exit 2 ;; esac
"$root/scripts/docker-build.sh"
# Tokens for this cluster (authentication is on, as in production).
env_file=$root/build/docker/ticketd.env
if [[ ! -s $env_file ]]; then
  newtoken() { od -An -tx1 -N24 /dev/urandom | tr -d ' \n'; }
  admin=$(newtoken); reserve=$(newtoken)
  (umask 077; printf 'TICKETD_TOKENS=admin %s;reserve %s\n' "$admin" "$reserve" > "$env_file"
   printf '%s\n' "$admin" > "$root/build/docker/admin.token"; printf '%s\n' "$reserve" > "$root/build/docker/reserve.token")
fi
export TICKETD_TOKEN
TICKETD_TOKEN=$(cat "$root/build/docker/admin.token")
docker-compose -p ticketd -f "$file" up -d
echo -n "waiting for the cluster"
for _ in $(seq 1 150); do
  ready=0
  for i in $(seq 1 "$nodes"); do
    curl -fsS "http://127.0.0.1:1818$i/readyz" >/dev/null 2>&1 && ready=$((ready + 1))
  done
  [[ $ready == "$nodes" ]] && break
  echo -n .; sleep 0.2
done
echo
if [[ $ready != "$nodes" ]]; then
  docker-compose -p ticketd -f "$file" logs --tail 30 >&2; exit 1
fi
addrs=$(for i in $(seq 1 "$nodes"); do printf 'http://127.0.0.1:1818%s,' "$i"; done)
"$root/build/docker/ticketd" create demo --addr "${addrs%,}"
"$root/build/docker/ticketd" reserve demo 1000 --addr "${addrs%,}"
echo "running; tokens in build/docker/{admin,reserve}.token; Redis protocol on 127.0.0.1:1638N (redis-cli -p 16381 -a TOKEN INCRBY demo 10); stop with scripts/docker-down.sh (NODES=$nodes)"
