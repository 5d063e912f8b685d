#!/usr/bin/env bash
# Real clients of the Redis-protocol front (ticketd serve --resp-addr), as
# real processes against a real 3-node cluster of the built binary, with
# authentication on (an admin and a reserve token):
#
#   scripts/resp-clients.sh
#
#   1. redis-cli (Debian's redis-tools): AUTH, scopes and every error code,
#      INCR / INCRBY / TICKETD.RESERVE / GET through the leader and both
#      followers, RESP3 HELLO, 1,000 pipelined INCRBY with --pipe, and
#      TICKETD.SNOWFLAKE (server-made Snowflake IDs) from every node.
#   2. scripts/resp_clients.py with Python's redis module (Debian's
#      python3-redis, redis-py 4.3.4 on bookworm): the same through a
#      library's error mapping and pipelines, TICKETD.SNOWFLAKE as
#      docs/snowflake.md shows it (execute_command), then 6 threads reserving
#      through all three nodes while the leader is SIGKILLed; every range
#      issued must be disjoint from every other.
#
# Installs redis-tools and python3-redis with apt-get when they are missing.
# Ports 18571-18573 (RESP), 18581-18583 (HTTP) and 18591-18593 (Raft) are
# this script's. Other cluster tests share the machine: run it under
#   flock /tmp/ticketd-cluster-tests.lock bash scripts/resp-clients.sh
# Takes about 10 s. Every wait is bounded; every process and temp dir it
# made is gone when it exits.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

PY=/usr/bin/python3 # Debian's, with Debian's modules (python3 on PATH may be pyenv's)
start_s=$SECONDS

log() { echo "resp-clients: $*" >&2; }
fail() {
	echo "resp-clients: FAIL: $*" >&2
	exit 1
}
# shellcheck source=scripts/proc-lib.sh
source "$root/scripts/proc-lib.sh"

# ---- the clients, installed only when missing
need_install=0
command -v redis-cli >/dev/null 2>&1 || need_install=1
if [[ ! -x $PY ]] || ! (cd / && "$PY" -I -c 'import redis') >/dev/null 2>&1; then
	need_install=1
fi
if ((need_install)); then
	log "installing redis-tools and python3-redis"
	sudo=()
	if [[ $(id -u) != 0 ]]; then
		command -v sudo >/dev/null 2>&1 || fail "redis-tools/python3-redis missing and not root (no sudo) to install them"
		sudo=(sudo)
	fi
	"${sudo[@]}" apt-get update -qq
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-tools python3-redis >/dev/null
	command -v redis-cli >/dev/null 2>&1 || fail "redis-cli still missing after installing redis-tools"
	(cd / && "$PY" -I -c 'import redis') || fail "$PY cannot import redis after installing python3-redis"
fi
cli_version=$(redis-cli --version)
py_redis_version=$(cd / && "$PY" -I -c 'import redis; print(redis.__version__)')

# ---- cleanup: every process we start, then the temp dir
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ticketd-resp-clients.XXXXXX")
pids=()
py_pid=""
cleanup() {
	local rc=$? pid
	trap - EXIT INT TERM
	[[ -z $py_pid ]] || stop_pid "$py_pid" 3
	for pid in "${pids[@]}"; do
		stop_pid "$pid" 5
	done
	if ((rc != 0)) && [[ -d $tmp/logs ]]; then
		for f in "$tmp"/logs/*.log; do
			[[ -f $f ]] || continue
			echo "--- $(basename "$f") (last 40 lines) ---" >&2
			tail -n 40 "$f" >&2 || true
		done
	fi
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

resp_ports=(18571 18572 18573)
http_ports=(18581 18582 18583)
raft_ports=(18591 18592 18593)

# The ports must be free: a leftover of an earlier run would answer for us.
for p in "${resp_ports[@]}" "${http_ports[@]}" "${raft_ports[@]}"; do
	if timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$p" 2>/dev/null; then
		fail "port $p is already in use (a leftover ticketd? see: ss -ltnp 'sport = :$p')"
	fi
done

# ---- build
log "building ticketd"
mkdir -p "$tmp/bin" "$tmp/logs" "$tmp/data" "$tmp/run"
CGO_ENABLED=0 go build -ldflags "$(scripts/version-ldflags.sh)" -o "$tmp/bin/ticketd" ./cmd/ticketd
bin=$tmp/bin/ticketd

# ---- tokens
newtoken() { od -An -tx1 -N24 /dev/urandom | tr -d ' \n'; }
admin=$(newtoken)
reserve=$(newtoken)
(
	umask 077
	printf 'admin %s\nreserve %s\n' "$admin" "$reserve" >"$tmp/tokens"
)

# ---- three nodes
initial=""
for i in 1 2 3; do
	initial+="${initial:+,}n$i=127.0.0.1:${raft_ports[i - 1]}"
done
for i in 1 2 3; do
	"$bin" serve --id "n$i" --data-dir "$tmp/data/n$i" --tokens-file "$tmp/tokens" \
		--http-addr "127.0.0.1:${http_ports[i - 1]}" --raft-addr "127.0.0.1:${raft_ports[i - 1]}" \
		--resp-addr "127.0.0.1:${resp_ports[i - 1]}" --initial-cluster "$initial" \
		--insecure-plaintext-raft \
		--heartbeat-timeout 300ms --election-timeout 300ms --leader-lease-timeout 150ms \
		--shutdown-timeout 5s \
		>"$tmp/logs/n$i.log" 2>&1 &
	pids+=($!)
	echo "$!" >"$tmp/run/n$i.pid"
	# Out of the job table: bash would otherwise report the leader's
	# SIGKILL (resp_clients.py's) as "Killed". stop_pid needs no job.
	disown "$!"
done

http_get() { # http_get PORT PATH: the body, with the admin token
	curl -fsS --max-time 2 -H "Authorization: Bearer $admin" "http://127.0.0.1:$1$2"
}

log "waiting for /readyz on all three nodes"
deadline=$((SECONDS + 30))
while :; do
	ready=0
	for i in 0 1 2; do
		kill -0 "${pids[i]}" 2>/dev/null || fail "node n$((i + 1)) exited during startup"
		if http_get "${http_ports[i]}" /readyz >/dev/null 2>&1; then ready=$((ready + 1)); fi
	done
	((ready == 3)) && break
	((SECONDS < deadline)) || fail "the cluster was not ready in 30 s ($ready of 3 nodes)"
	sleep 0.2
done

# The leader, as all three nodes see it (GET /v1/cluster).
leader_id=""
deadline=$((SECONDS + 15))
while :; do
	ids=()
	for i in 0 1 2; do
		ids+=("$(http_get "${http_ports[i]}" /v1/cluster 2>/dev/null |
			"$PY" -I -c 'import json,sys; print(json.load(sys.stdin).get("leader",""))' 2>/dev/null || true)")
	done
	if [[ -n ${ids[0]} && ${ids[0]} == "${ids[1]}" && ${ids[1]} == "${ids[2]}" ]]; then
		leader_id=${ids[0]}
		break
	fi
	((SECONDS < deadline)) || fail "the nodes did not agree on a leader in 15 s (they say: ${ids[*]})"
	sleep 0.2
done
case $leader_id in
n1 | n2 | n3) ;;
*) fail "GET /v1/cluster names leader '$leader_id', not one of n1, n2, n3" ;;
esac
L=$((${leader_id#n} - 1))
F1=$(((L + 1) % 3))
F2=$(((L + 2) % 3))
leader_port=${resp_ports[L]}
f1_port=${resp_ports[F1]}
f2_port=${resp_ports[F2]}
log "leader n$((L + 1)) (RESP $leader_port), followers n$((F1 + 1)) (RESP $f1_port), n$((F2 + 1)) (RESP $f2_port)"

# ---- redis-cli
# rc PORT ARGS...: redis-cli's output against node PORT (errors included:
# redis-cli exits 1 on an error reply, which is what some checks want).
rc() {
	local port=$1
	shift
	timeout 10 redis-cli --no-auth-warning -h 127.0.0.1 -p "$port" "$@" 2>&1 || true
}
# expect WHAT WANT GOT: GOT must be exactly WANT.
expect() {
	[[ $3 == "$2" ]] || fail "$1: expected $(printf %q "$2"), got $(printf %q "$3")"
}
# expect_prefix WHAT PREFIX GOT: GOT must start with PREFIX.
expect_prefix() {
	[[ $3 == "$2"* ]] || fail "$1: expected output starting with $(printf %q "$2"), got $(printf %q "$3")"
}
# expect_int WHAT GOT: GOT must be one positive decimal integer.
expect_int() {
	[[ $2 =~ ^[1-9][0-9]*$ ]] || fail "$1: expected a positive integer, got $(printf %q "$2")"
}

# The leader serves (INFO's ticketd section says serving:1): a leader just
# elected answers TRYAGAIN until its Barrier has applied.
deadline=$((SECONDS + 10))
until [[ $(rc "$leader_port" -a "$admin" INFO ticketd) == *serving:1* ]]; do
	((SECONDS < deadline)) || fail "the leader's INFO never said serving:1 in 10 s: $(rc "$leader_port" -a "$admin" INFO ticketd)"
	sleep 0.1
done

log "redis-cli ($cli_version): auth, scopes and errors"
expect "PING without AUTH" "PONG" "$(rc "$f1_port" PING)"
expect "INCR without AUTH" "NOAUTH Authentication required." "$(rc "$f1_port" INCR orders)"
# redis-cli reports the failed AUTH, then sends the command anyway.
expect "INCR with -a WRONG" "AUTH failed: WRONGPASS invalid username-password pair or user is disabled."$'\n'"NOAUTH Authentication required." \
	"$(rc "$leader_port" -a WRONG INCR orders)"
expect_prefix "TICKETD.CREATE with the reserve token" "NOPERM this token may not run 'ticketd.create': it needs the admin scope" \
	"$(rc "$leader_port" -a "$reserve" TICKETD.CREATE orders)"
expect_prefix "INCR of orders before it exists (follower)" 'NOTFOUND sequence "orders" does not exist' \
	"$(rc "$f2_port" -a "$reserve" INCR orders)"
expect "TICKETD.CREATE orders with the admin token through a follower" "1" \
	"$(rc "$f1_port" -a "$admin" TICKETD.CREATE orders)"
expect "TICKETD.CREATE orders again (leader)" "0" "$(rc "$leader_port" -a "$admin" TICKETD.CREATE orders)"
expect_prefix "TICKETD.CREATE orders with other settings" "CONFLICT" \
	"$(rc "$f2_port" -a "$admin" TICKETD.CREATE orders MAX 99)"
expect "AUTH with a user name through the leader" "OK" "$(rc "$leader_port" AUTH ticketd "$reserve")"

log "redis-cli: INCR, INCRBY, TICKETD.RESERVE and GET through the leader and both followers"
last=0
for port in "$leader_port" "$f1_port" "$f2_port" "$f2_port" "$f1_port" "$leader_port"; do
	got=$(rc "$port" -a "$reserve" INCR orders)
	expect_int "INCR orders on $port" "$got"
	((got > last)) || fail "INCR orders on $port answered $got, not more than the previous answer $last"
	last=$got
	got=$(rc "$port" --user anyone --pass "$reserve" INCRBY orders 1000)
	expect_int "INCRBY orders 1000 on $port" "$got"
	((got >= last + 1000)) || fail "INCRBY orders 1000 on $port answered $got: its range would start at or below the previous answer $last"
	last=$got
done
for port in "$f1_port" "$leader_port"; do
	got=$(rc "$port" -a "$reserve" TICKETD.RESERVE orders 10)
	[[ $got =~ ^([0-9]+)$'\n'([0-9]+)$ ]] || fail "TICKETD.RESERVE orders 10 on $port: expected two lines first, last; got $(printf %q "$got")"
	first=${BASH_REMATCH[1]} rlast=${BASH_REMATCH[2]}
	((rlast == first + 9)) || fail "TICKETD.RESERVE orders 10 on $port answered [$first, $rlast]: not 10 IDs"
	((first > last)) || fail "TICKETD.RESERVE orders 10 on $port answered [$first, $rlast], not above the previous answer $last"
	last=$rlast
done
for port in "$leader_port" "$f1_port" "$f2_port"; do
	got=$(rc "$port" -a "$reserve" GET orders)
	expect_int "GET orders on $port" "$got"
	((got >= last)) || fail "GET orders on $port answered $got, less than the last ID issued ($last)"
	expect "GET of a missing sequence on $port" "" "$(rc "$port" -a "$reserve" GET missing)"
	expect_prefix "INCR of a missing sequence on $port" 'NOTFOUND sequence "missing" does not exist; create it first: TICKETD.CREATE missing' \
		"$(rc "$port" -a "$reserve" INCR missing)"
done
expect_prefix "an unknown command" "ERR unknown command 'FLUSHALL', with args beginning with: 'ASYNC'" \
	"$(rc "$f2_port" -a "$reserve" FLUSHALL ASYNC)"
expect_prefix "INCRBY orders -5" "ERR incrby orders: " "$(rc "$f1_port" -a "$reserve" INCRBY orders -5)"
expect "INCRBY orders x" "ERR value is not an integer or out of range" "$(rc "$leader_port" -a "$reserve" INCRBY orders x)"
expect "INCR with too many arguments" "ERR wrong number of arguments for 'incr' command" \
	"$(rc "$leader_port" -a "$reserve" INCR orders 2)"
expect "ECHO" "hello ticketd" "$(rc "$f1_port" -a "$reserve" ECHO "hello ticketd")"
expect "SELECT 0" "OK" "$(rc "$f1_port" -a "$reserve" SELECT 0)"
expect_prefix "SELECT 1" "ERR DB index is out of range" "$(rc "$f1_port" -a "$reserve" SELECT 1)"
expect_prefix "INFO replication on a follower" "# Replication"$'\r\n'"role:slave" "$(rc "$f1_port" -a "$reserve" INFO replication)"
expect_prefix "INFO replication on the leader" "# Replication"$'\r\n'"role:master" "$(rc "$leader_port" -a "$reserve" INFO replication)"

# RESP3: HELLO 3 answers a map (redis-cli -3 sends HELLO 3 itself first).
hello=$(rc "$f2_port" -3 -a "$reserve" HELLO 3 SETNAME resp-clients)
for want in 'server ticketd' 'proto 3' 'mode standalone' 'role replica'; do
	[[ $hello == *"$want"* ]] || fail "RESP3 HELLO 3 on a follower: expected $(printf %q "$want") in the answer, got $(printf %q "$hello")"
done
hello=$(rc "$leader_port" HELLO 3 AUTH default "$reserve")
[[ $hello == *'role master'* ]] || fail "HELLO 3 AUTH on the leader: expected role master, got $(printf %q "$hello")"
expect "HELLO 3 AUTH with a wrong token" "WRONGPASS invalid username-password pair or user is disabled." \
	"$(rc "$leader_port" HELLO 3 AUTH default WRONG)"
got=$(rc "$f1_port" -3 -a "$reserve" INCRBY orders 5)
expect_int "RESP3 INCRBY orders 5" "$got"
((got >= last + 5)) || fail "RESP3 INCRBY orders 5 answered $got, not above the previous answer $last"
last=$got
expect "RESP3 GET of a missing sequence (null)" "" "$(rc "$f1_port" -3 -a "$reserve" GET missing)"

log "redis-cli --pipe: 1000 pipelined INCRBY orders 7 through a follower"
get_before=$(rc "$f1_port" -a "$reserve" GET orders)
expect_int "GET orders before the pipe" "$get_before"
cmd=$'*3\r\n$6\r\nINCRBY\r\n$6\r\norders\r\n$1\r\n7\r\n'
for ((i = 0; i < 1000; i++)); do printf '%s' "$cmd"; done >"$tmp/pipe.resp"
pipe_out=$(timeout 30 redis-cli --no-auth-warning -h 127.0.0.1 -p "$f1_port" -a "$reserve" --pipe <"$tmp/pipe.resp" 2>&1) ||
	fail "redis-cli --pipe failed: $pipe_out"
[[ $pipe_out == *"errors: 0, replies: 1000"* ]] ||
	fail "redis-cli --pipe: expected 'errors: 0, replies: 1000' in its summary, got $(printf %q "$pipe_out")"
# The pipe issued 7,000 IDs above $last; an INCR after it is above all of them.
after=$(rc "$leader_port" -a "$reserve" INCR orders)
expect_int "INCR orders after the pipe" "$after"
((after >= last + 7001)) || fail "INCR orders after the pipe answered $after: 1000 x INCRBY 7 after $last should have put it at $((last + 7001)) or more"
get_after=$(rc "$f2_port" -a "$reserve" GET orders)
expect_int "GET orders after the pipe" "$get_after"
((get_after >= after && get_after >= get_before)) ||
	fail "GET orders after the pipe answered $get_after: less than the INCR before it ($after) or the GET before the pipe ($get_before)"
# GET need not move: the leader cuts the pipe's IDs from a block it already
# holds, below the high-water mark GET reads, when enough is left of it.
log "redis-cli OK: --pipe $(tail -n 1 <<<"$pipe_out"); INCR after it $after (>= $((last + 7001))); GET orders $get_before before, $get_after after"
cli_summary="redis-cli OK"

# ---- TICKETD.SNOWFLAKE (issue #32): server-made Snowflake IDs from every node
log "redis-cli: TICKETD.SNOWFLAKE through every node"
curl -fsS --max-time 5 -X PUT -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
	-d '{}' "http://127.0.0.1:${http_ports[L]}/v1/namespaces/flake" >/dev/null || fail "could not create the namespace flake"
flakes=()
for port in "$leader_port" "$f1_port" "$f2_port"; do
	out=$(rc "$port" -a "$reserve" TICKETD.SNOWFLAKE flake 3)
	mapfile -t got <<<"$out"
	((${#got[@]} == 3)) || fail "TICKETD.SNOWFLAKE flake 3 on $port answered $(printf %q "$out"), not 3 lines"
	for id in "${got[@]}"; do expect_int "TICKETD.SNOWFLAKE flake 3 on $port" "$id"; done
	((got[0] < got[1] && got[1] < got[2])) || fail "TICKETD.SNOWFLAKE flake 3 on $port: ${got[*]} do not increase"
	flakes+=("${got[@]}")
done
dups=$(printf '%s\n' "${flakes[@]}" | sort | uniq -d)
[[ -z $dups ]] || fail "TICKETD.SNOWFLAKE: served twice: $dups"
expect_prefix "TICKETD.SNOWFLAKE nope" "NOTFOUND" "$(rc "$f1_port" -a "$reserve" TICKETD.SNOWFLAKE nope 1)"
cli_summary+=", TICKETD.SNOWFLAKE from 3 nodes"

# ---- redis-py, then the leader's SIGKILL
log "python redis $py_redis_version (scripts/resp_clients.py)"
ports_csv=$(
	IFS=,
	echo "${resp_ports[*]}"
)
pidfiles_csv="$tmp/run/n1.pid,$tmp/run/n2.pid,$tmp/run/n3.pid"
# In the background, waited for: a signal to this script runs the cleanup
# at once (bash runs traps only after a foreground command ends).
timeout 60 "$PY" -I "$root/scripts/resp_clients.py" \
	--ports "$ports_csv" --leader-port "$leader_port" \
	--admin-token "$admin" --reserve-token "$reserve" \
	--leader-pid "${pids[L]}" --pid-files "$pidfiles_csv" \
	--summary-file "$tmp/py-summary" &
py_pid=$!
py_rc=0
wait "$py_pid" || py_rc=$?
py_pid=""
((py_rc == 0)) || fail "scripts/resp_clients.py failed (exit $py_rc$( ((py_rc == 124)) && echo ': timed out after 60 s'))"
py_summary=$(cat "$tmp/py-summary")

echo "resp-clients: $cli_summary, $py_summary; $((SECONDS - start_s)) s"
