#!/usr/bin/env bash
# Builds ticketd and starts a local 3-node cluster on loopback, creates a
# sequence and reserves a demo range. Stop it with scripts/cluster-down.sh.
#
#   NODES=5 scripts/cluster-up.sh      # a 5-node cluster instead
#   TICKETD_LOCAL=/tmp/tk scripts/cluster-up.sh   # where binaries, data and logs go
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
local_dir=${TICKETD_LOCAL:-$root/.ticketd}
nodes=${NODES:-3}
http_base=${HTTP_BASE_PORT:-8080}
raft_base=${RAFT_BASE_PORT:-8090}
resp_base=${RESP_BASE_PORT:-6379} # the Redis-protocol front: 6380, 6381, ...

if [[ "$nodes" != 3 && "$nodes" != 5 ]]; then
  echo "NODES must be 3 or 5" >&2; exit 2
fi
if [[ -s "$local_dir/pids" ]] && kill -0 $(cat "$local_dir/pids") 2>/dev/null; then
  echo "a local cluster is already running (pids in $local_dir/pids); stop it with scripts/cluster-down.sh" >&2
  exit 1
fi

mkdir -p "$local_dir/bin" "$local_dir/logs"
echo "building ticketd..."
(cd "$root" && CGO_ENABLED=0 go build -ldflags "$(scripts/version-ldflags.sh)" -o "$local_dir/bin/ticketd" ./cmd/ticketd)
bin=$local_dir/bin/ticketd

# Authentication is on, as in production: an admin and a reserve token,
# readable by the owner only.
newtoken() { od -An -tx1 -N24 /dev/urandom | tr -d ' \n'; }
if [[ ! -s "$local_dir/tokens" ]]; then
  umask 077
  admin=$(newtoken); reserve=$(newtoken)
  printf 'admin %s\nreserve %s\n' "$admin" "$reserve" > "$local_dir/tokens"
  printf '%s\n' "$admin" > "$local_dir/admin.token"
  printf '%s\n' "$reserve" > "$local_dir/reserve.token"
  umask 022
fi

# TLS, as in production: a cluster CA, and a certificate per node for mutual
# TLS on the Raft port and HTTPS on the API (ticketd tls; files 0600). The
# CA key stays in $local_dir/tls too: on a real cluster keep it off the nodes.
tls=$local_dir/tls
if [[ ! -s "$tls/ca.pem" ]]; then
  "$bin" tls ca create --dir "$tls" >/dev/null
fi
for i in $(seq 1 "$nodes"); do
  [[ -s "$tls/n$i.pem" ]] || "$bin" tls cert create --dir "$tls" --node "n$i" >/dev/null
done
[[ -s "$tls/client.pem" ]] || "$bin" tls cert create --dir "$tls" --client client >/dev/null

initial=""
for i in $(seq 1 "$nodes"); do
  initial+="${initial:+,}n$i=127.0.0.1:$((raft_base + i))"
done

: > "$local_dir/pids"
addrs=""
for i in $(seq 1 "$nodes"); do
  "$bin" serve --id "n$i" --data-dir "$local_dir/data/n$i" --tokens-file "$local_dir/tokens" \
    --http-addr "127.0.0.1:$((http_base + i))" --raft-addr "127.0.0.1:$((raft_base + i))" \
    --resp-addr "127.0.0.1:$((resp_base + i))" \
    --raft-tls-cert "$tls/n$i.pem" --raft-tls-key "$tls/n$i-key.pem" --raft-tls-ca "$tls/ca.pem" \
    --tls-cert "$tls/n$i.pem" --tls-key "$tls/n$i-key.pem" --tls-ca "$tls/ca.pem" \
    --initial-cluster "$initial" >"$local_dir/logs/n$i.log" 2>&1 &
  echo $! >> "$local_dir/pids"
  addrs+="${addrs:+,}https://127.0.0.1:$((http_base + i))"
done
echo "$addrs" > "$local_dir/addrs"

echo -n "waiting for the cluster"
ready=0
for _ in $(seq 1 150); do
  ready=0
  for i in $(seq 1 "$nodes"); do
    if curl -fsS --cacert "$tls/ca.pem" "https://127.0.0.1:$((http_base + i))/readyz" >/dev/null 2>&1; then ready=$((ready + 1)); fi
  done
  [[ $ready == "$nodes" ]] && break
  echo -n .
  sleep 0.2
done
echo
if [[ $ready != "$nodes" ]]; then
  echo "cluster did not become ready in 30s; logs in $local_dir/logs" >&2
  exit 1
fi

export TICKETD_ADDR=$addrs TICKETD_CA=$tls/ca.pem
TICKETD_TOKEN=$(cat "$local_dir/admin.token")
export TICKETD_TOKEN
echo "== ticketd status"
"$bin" status
echo "== ticketd create demo"
"$bin" create demo
echo "== ticketd reserve demo 1000"
"$bin" reserve demo 1000
if command -v redis-cli >/dev/null; then
  echo "== redis-cli INCRBY demo 1000 (the Redis-protocol front, TLS, through a follower or the leader)"
  redis-cli --tls --cacert "$tls/ca.pem" -h 127.0.0.1 -p $((resp_base + 2)) --no-auth-warning \
    -a "$(cat "$local_dir/reserve.token")" INCRBY demo 1000
fi

cat <<TXT

A $nodes-node ticketd cluster is running (logs in $local_dir/logs), with mutual TLS
on the Raft port and HTTPS on the API (CA and certificates in $tls; rotate a
node's files and send it SIGHUP, or wait 10 s). Tokens are in $local_dir/tokens
(admin.token can do everything, reserve.token only reserve and read). Try:
  export TICKETD_ADDR=$addrs TICKETD_CA=$tls/ca.pem TICKETD_TOKEN=\$(cat $local_dir/reserve.token)
  $bin reserve demo 10
  curl -s --cacert $tls/ca.pem -H "Authorization: Bearer \$TICKETD_TOKEN" -XPOST https://localhost:$((http_base + 2))/v1/sequences/demo/ranges -d '{"count":5}'   # via a follower
  curl -s --cacert $tls/ca.pem https://localhost:$((http_base + 1))/metrics -H "Authorization: Bearer \$TICKETD_TOKEN" | grep -e ^ticketd_reservations -e ^ticketd_raft_tls
  redis-cli --tls --cacert $tls/ca.pem -p $((resp_base + 1)) --no-auth-warning -a \$TICKETD_TOKEN INCRBY demo 1000   # any Redis client (apt-get install redis-tools)
  $bin sequences demo
  $bin status
Status page (any node; paste the token from reserve.token; the browser must trust
$tls/ca.pem, or accept its warning once): https://localhost:$((http_base + 1))/ui/
Stop it with: scripts/cluster-down.sh   (add --purge to delete its data)
TXT
