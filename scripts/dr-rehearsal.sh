#!/usr/bin/env bash
# Disaster-recovery rehearsal (issue #34): the whole procedure of
# docs/disaster-recovery.md on loopback, in a temporary directory, in
# about 30 s. It builds ticketd, starts a 3-node primary and a standby,
# creates a sequence and reserves from it, loses the primary (SIGKILL of
# every node at once), promotes the stopped standby with `ticketd promote`,
# starts it as a one-node cluster and reserves again: the new IDs must lie
# above every ID the primary handed out. Every step is printed with the
# command it runs; everything it started is stopped on exit.
#
#   scripts/dr-rehearsal.sh
#   DR_BASE_PORT=39000 scripts/dr-rehearsal.sh   # ports DR_BASE_PORT+1..+8 (default 28600)
#   DR_KEEP=1 scripts/dr-rehearsal.sh            # keep the temporary directory (data, logs)
#
# The nodes run with --dev (no authentication, plaintext Raft) to keep the
# rehearsal about the procedure; a production cluster adds its tokens and
# TLS flags to the same commands.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/proc-lib.sh
source "$root/scripts/proc-lib.sh"

base=${DR_BASE_PORT:-28600}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ticketd-dr-XXXXXX")
bin=$tmp/bin/ticketd
pids=()

log() { printf '%s\n' "$*" >&2; }
step() { printf '\n== %s\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@"; }
fail() {
	log "dr-rehearsal: FAILED: $*"
	for f in "$tmp"/logs/*.log; do
		[[ -e $f ]] || continue
		log "--- $(basename "$f") (last 15 lines)"
		tail -n 15 "$f" >&2 || true
	done
	exit 1
}

cleanup() {
	local pid
	{
		for pid in "${pids[@]}"; do
			kill -KILL "$pid" || true
		done
		for pid in "${pids[@]}"; do
			wait_gone "$pid" 5 || true
			wait "$pid" || true
		done
	} 2>/dev/null
	if [[ -n ${DR_KEEP:-} ]]; then
		log "kept $tmp (data and logs)"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

http() { echo "127.0.0.1:$((base + $1))"; }
raft() { echo "127.0.0.1:$((base + 4 + $1))"; }
# Ports: n1..n3 and the standby (4): API base+1..+4, Raft base+5..+8.
for i in 1 2 3 4; do
	for addr in "$(http "$i")" "$(raft "$i")"; do
		if (exec 3<>"/dev/tcp/${addr%:*}/${addr#*:}") 2>/dev/null; then
			log "dr-rehearsal: $addr is in use; pick other ports with DR_BASE_PORT"
			exit 2
		fi
	done
done
timings=(--dev --heartbeat-timeout 300ms --election-timeout 300ms --leader-lease-timeout 150ms --shutdown-timeout 5s)

# start ID ARGS...: starts `ticketd serve` in the background, its output in
# $tmp/logs/ID.log; its PID is the last of pids.
start() {
	local id=$1
	shift
	"$bin" serve --id "$id" --data-dir "$tmp/data/$id" "${timings[@]}" "$@" >>"$tmp/logs/$id.log" 2>&1 &
	pids+=($!)
}

# wait_for SECONDS WHAT CMD...: runs CMD every 0.2 s until it succeeds.
wait_for() {
	local secs=$1 what=$2 i
	shift 2
	for ((i = 0; i < secs * 5; i++)); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.2
	done
	fail "$what: not within ${secs}s"
}

ready() { curl -fsS "http://$1/readyz"; }
standby_state() { curl -fsS "http://$1/v1/cluster" | sed -n 's/.*"standby":{"id":"[^"]*","state":"\([a-z-]*\)".*/\1/p'; }
in_sync() { [[ $(standby_state "$1") == in-sync ]]; }
# the certificate the standby holds (on its own /v1/cluster), one line
certificate() { curl -fsS "http://$1/v1/cluster" | sed -n 's/.*"certificate":\({[^}]*}\).*/\1/p'; }
certified() { [[ -n $(certificate "$1") ]]; }
# reserve_line N: one reservation of N IDs, its JSON answer on one line
reserve_line() { "$bin" reserve orders "$1" | tr -d ' \n' && echo; }
# the highest "last" of the ranges (JSON lines) in a file
highest() { sed -n 's/.*"last":\([0-9]*\).*/\1/p' "$1" | sort -n | tail -n 1; }
lowest_first() { sed -n 's/.*"first":\([0-9]*\).*/\1/p' "$1" | sort -n | head -n 1; }

mkdir -p "$tmp/bin" "$tmp/logs"
step "build ticketd into $tmp/bin"
(cd "$root" && CGO_ENABLED=0 go build -ldflags "$(scripts/version-ldflags.sh)" -o "$bin" ./cmd/ticketd)

step "start the primary: 3 nodes on $(http 1), $(http 2), $(http 3)"
initial="n1=$(raft 1),n2=$(raft 2),n3=$(raft 3)"
for i in 1 2 3; do
	start "n$i" --http-addr "$(http "$i")" --raft-addr "$(raft "$i")" --initial-cluster "$initial"
	primary_pids+=("${pids[-1]}")
done
for i in 1 2 3; do
	wait_for 20 "n$i ready" ready "$(http "$i")"
done
primary="http://$(http 1),http://$(http 2),http://$(http 3)"
echo "primary ready: $primary"

step "start the standby: ticketd serve --id dr ... --join http://$(http 1) --standby --standby-timeout 2s"
start dr --http-addr "$(http 4)" --raft-addr "$(raft 4)" --join "http://$(http 1)" --standby --standby-timeout 2s
standby_pid=${pids[-1]}
wait_for 20 "the standby to be recorded in sync" in_sync "$(http 1)"
echo "GET /v1/cluster on n1: standby dr is $(standby_state "$(http 1)")"

export TICKETD_ADDR=$primary
step "create a sequence and reserve through the primary"
show "$bin" create orders
: >"$tmp/before.jsonl"
for _ in $(seq 1 20); do
	reserve_line 1000 >>"$tmp/before.jsonl"
done
echo "20 reservations of 1000 IDs through the primary; the last one:"
tail -n 1 "$tmp/before.jsonl"
before=$(highest "$tmp/before.jsonl")
[[ -n $before ]] || fail "no range reserved through the primary"
echo "highest ID the primary handed out: $before"

step "the standby issues nothing: a reservation on it is refused"
code=$(curl -s -o /dev/null -w '%{http_code}' -XPOST "http://$(http 4)/v1/sequences/orders/ranges" -d '{"count":1}')
echo "POST /v1/sequences/orders/ranges on dr: $code"
[[ $code == 503 ]] || fail "the standby answered $code to a reservation, want 503"

step "the standby holds its leader's certificate: its trust horizon"
wait_for 20 "the standby to hold a certificate" certified "$(http 4)"
echo "GET /v1/cluster on dr: certificate $(certificate "$(http 4)")"

step "lose the primary: SIGKILL n1, n2 and n3 at once"
lost_at=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
{
	kill -KILL "${primary_pids[@]}"
	for pid in "${primary_pids[@]}"; do
		wait_gone "$pid" 10 || fail "pid $pid did not die"
		wait "$pid" || true # reaped; the shell's "Killed" notice goes to /dev/null
	done
} 2>/dev/null
echo "the primary is gone"

step "stop the standby (SIGTERM)"
stop_pid "$standby_pid" 10
echo "dr stopped"

step "promote it: ticketd promote --data-dir $tmp/data/dr --primary-lost-at $lost_at"
show "$bin" promote --data-dir "$tmp/data/dr" --primary-lost-at "$lost_at" || fail "ticketd promote refused"

step "a second promotion is refused, and changes nothing"
if out=$("$bin" promote --data-dir "$tmp/data/dr" 2>&1); then
	fail "a second promotion succeeded: $out"
fi
printf '%s\n' "$out"

step "start the promoted node: ticketd serve --id dr --data-dir ... --raft-addr $(raft 4) --http-addr $(http 4) (no --join, no --standby)"
start dr --http-addr "$(http 4)" --raft-addr "$(raft 4)"
wait_for 20 "the promoted node ready" ready "$(http 4)"
echo "dr serves as a one-node cluster"

export TICKETD_ADDR=http://$(http 4)
step "reserve through the promoted node"
: >"$tmp/after.jsonl"
for _ in $(seq 1 5); do
	reserve_line 1000 >>"$tmp/after.jsonl"
done
echo "the first one:"
head -n 1 "$tmp/after.jsonl"
after=$(lowest_first "$tmp/after.jsonl")
[[ -n $after ]] || fail "no range reserved through the promoted node"

step "check"
echo "highest ID the primary handed out: $before"
echo "lowest ID the promoted node handed out: $after"
echo "gap: $((after - before - 1)) IDs never handed out: the promotion raised the stored mark (which runs ahead of"
echo "what the primary handed out by the blocks it had reserved) by the standby's bound (10000000 by default)"
if ((after <= before)); then
	fail "the promoted node handed out $after, not above $before: IDs reissued"
fi
echo "dr-rehearsal: PASSED: every ID after the promotion lies above every ID before it"
