#!/usr/bin/env bash
# bench-core.sh: throughput/latency of a 3-node ticketd cluster on loopback,
# compared with a bare Echo server (the HTTP ceiling of this machine), plus
# failover gaps while SIGKILLing the leader. The full side-by-side comparison
# (etcd, Redis, PostgreSQL, MariaDB, scaling, SDK) is scripts/bench.sh.
#
# Usage: scripts/bench-core.sh
# Environment (all optional):
#   BENCH_DURATION=10s      measured time per concurrency level
#   BENCH_WARMUP=2s         discarded warmup per level
#   BENCH_CONCURRENCY=1,16,64
#   BENCH_COUNT=1000        IDs per reservation
#   FAILOVER_KILLS=3        how many times to kill the leader (0 skips)
#   FAILOVER_SECONDS=10     probe length per kill (leader killed after 1s)
#   READY_TIMEOUT=30        seconds to wait for the cluster to be ready
#   OUT=bench-results/<timestamp>   where results and node logs go
#
# Everything listens on 127.0.0.1 ports 18080-18083 and 18091-18093 only.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DURATION=${BENCH_DURATION:-10s}
BENCH_WARMUP=${BENCH_WARMUP:-2s}
BENCH_CONCURRENCY=${BENCH_CONCURRENCY:-1,16,64}
BENCH_COUNT=${BENCH_COUNT:-1000}
FAILOVER_KILLS=${FAILOVER_KILLS:-3}
FAILOVER_SECONDS=${FAILOVER_SECONDS:-10}
READY_TIMEOUT=${READY_TIMEOUT:-30}
OUT=${OUT:-bench-results/$(date +%Y%m%d-%H%M%S)}

BASELINE_ADDR=127.0.0.1:18080
NODES=(n1 n2 n3)
INITIAL_CLUSTER=n1=127.0.0.1:18091,n2=127.0.0.1:18092,n3=127.0.0.1:18093
ALL_URLS=http://127.0.0.1:18081,http://127.0.0.1:18082,http://127.0.0.1:18083

mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ticketd-bench.XXXXXX")
BIN=$WORK/bin
D=$WORK/data

declare -A NODE_PID=() # node id -> pid of its ticketd process
BASELINE_PID=""
PROBE_PID=""
STATUS=0 # set to 1 by any failed measurement; the script still finishes

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# wait_gone PID SECONDS: wait for PID to exit, at most SECONDS; returns 1 on
# timeout. Polling kill -0 instead of a bare `wait` keeps every wait bounded.
wait_gone() {
	local pid=$1 limit=$(($2 * 10)) i
	for ((i = 0; i < limit; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}

# stop_pid PID: SIGTERM, up to 5s grace, then SIGKILL; then reap it.
stop_pid() {
	local pid=$1
	[[ -n $pid ]] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	if ! wait_gone "$pid" 5; then
		log "pid $pid ignored SIGTERM, killing"
		kill -KILL "$pid" 2>/dev/null || true
		wait_gone "$pid" 5 || true
	fi
	wait "$pid" 2>/dev/null || true
}

# shellcheck disable=SC2317 # cleanup is only reached via the traps below
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	stop_pid "$PROBE_PID"
	stop_pid "$BASELINE_PID"
	local id
	for id in "${!NODE_PID[@]}"; do
		stop_pid "${NODE_PID[$id]}"
	done
	rm -rf "$WORK"
	log "results in $OUT"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# port_busy PORT: true when something already accepts connections there.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_node() {
	local id=$1 i=${1#n}
	mkdir -p "$D/$id"
	echo "=== start $(date +%H:%M:%S.%N)" >>"$OUT/logs/$id.log"
	"$BIN/ticketd" serve --dev --id "$id" --data-dir "$D/$id" \
		--http-addr "127.0.0.1:$((18080 + i))" --raft-addr "127.0.0.1:$((18090 + i))" \
		--initial-cluster "$INITIAL_CLUSTER" >>"$OUT/logs/$id.log" 2>&1 &
	NODE_PID[$id]=$!
}

# wait_cluster: until all nodes are ready and agree on a leader (bounded by
# READY_TIMEOUT); sets LEADER_ID and LEADER_ADDR.
wait_cluster() {
	local line id
	if ! line=$("$BIN/ticketd-bench" leader --targets "$ALL_URLS" --timeout "${READY_TIMEOUT}s"); then
		for id in "${NODES[@]}"; do
			log "--- last lines of $id.log"
			tail -n 20 "$OUT/logs/$id.log" >&2 || true
		done
		return 1
	fi
	read -r LEADER_ID LEADER_ADDR <<<"$line"
}

# run_load LABEL SEQUENCE TARGETS: one load run, table + JSON into $OUT.
run_load() {
	local label=$1 seq=$2 targets=$3
	log "load: $label -> $targets"
	if ! "$BIN/ticketd-bench" load --target "$targets" --sequence "$seq" \
		--count "$BENCH_COUNT" --concurrency "$BENCH_CONCURRENCY" \
		--duration "$BENCH_DURATION" --warmup "$BENCH_WARMUP" \
		--label "$label" --json "$OUT/load-$label.json" | tee "$OUT/load-$label.txt"; then
		log "load $label FAILED (errors or overlapping ranges; see $OUT/load-$label.txt)"
		STATUS=1
	fi
}

# --- build -------------------------------------------------------------------
log "building into $BIN"
(cd "$ROOT" && go build -o "$BIN/ticketd" ./cmd/ticketd && go build -o "$BIN/ticketd-bench" ./cmd/ticketd-bench)

for port in 18080 18081 18082 18083 18091 18092 18093; do
	if port_busy "$port"; then
		log "127.0.0.1:$port is already in use; stop whatever holds it first"
		exit 1
	fi
done

{
	echo "date: $(date -Iseconds)"
	echo "host: $(uname -srm)  cpus: $(nproc)"
	echo "go: $(go version)"
	echo "commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "duration=$BENCH_DURATION warmup=$BENCH_WARMUP concurrency=$BENCH_CONCURRENCY count=$BENCH_COUNT"
} >"$OUT/env.txt"

# --- cluster -----------------------------------------------------------------
for id in "${NODES[@]}"; do start_node "$id"; done
log "waiting for the cluster (up to ${READY_TIMEOUT}s)"
wait_cluster
log "leader is $LEADER_ID at $LEADER_ADDR"
echo "leader at start: $LEADER_ID $LEADER_ADDR" >>"$OUT/env.txt"

# --- baseline ----------------------------------------------------------------
"$BIN/ticketd-bench" baseline --addr "$BASELINE_ADDR" >"$OUT/logs/baseline.log" 2>&1 &
BASELINE_PID=$!
for ((i = 0; i < 50; i++)); do
	grep -qs listening "$OUT/logs/baseline.log" && break
	kill -0 "$BASELINE_PID" 2>/dev/null || break
	sleep 0.1
done
grep -qs listening "$OUT/logs/baseline.log" || {
	log "baseline did not start"
	cat "$OUT/logs/baseline.log" >&2
	exit 1
}

# --- load --------------------------------------------------------------------
# The baseline runs first and is stopped before ticketd is measured so the
# two never compete for the CPU (the idle cluster only sends heartbeats).
run_load baseline bench "http://$BASELINE_ADDR"
stop_pid "$BASELINE_PID"
BASELINE_PID=""

run_load ticketd-leader bench-leader "http://$LEADER_ADDR"
# Round-robin over all nodes: two thirds of the workers hit followers, which
# forward to the leader, so this measures the forwarding path too.
run_load ticketd-all bench-all "$ALL_URLS"

compare_files=""
for f in "$OUT/load-ticketd-leader.json" "$OUT/load-ticketd-all.json"; do
	[[ -s $f ]] && compare_files+="${compare_files:+,}$f"
done
if [[ -s $OUT/load-baseline.json && -n $compare_files ]]; then
	# Printed with the failover lines in the final summary below.
	"$BIN/ticketd-bench" compare --ticketd "$compare_files" --baseline "$OUT/load-baseline.json" >"$OUT/summary.txt"
fi

# --- failover ----------------------------------------------------------------
: >"$OUT/failover.txt"
for ((k = 1; k <= FAILOVER_KILLS; k++)); do
	wait_cluster
	victim=$LEADER_ID
	log "failover $k/$FAILOVER_KILLS: probing ${FAILOVER_SECONDS}s, killing leader $victim after 1s"
	"$BIN/ticketd-bench" failover --targets "$ALL_URLS" --sequence fo --interval 1ms \
		--duration "${FAILOVER_SECONDS}s" --json "$OUT/failover-$k.json" >"$OUT/failover-$k.txt" 2>&1 &
	PROBE_PID=$!
	sleep 1
	kill -KILL "${NODE_PID[$victim]}"
	wait "${NODE_PID[$victim]}" 2>/dev/null || true # SIGKILLed: returns at once
	unset "NODE_PID[$victim]"

	# The probe ends by itself after FAILOVER_SECONDS (requests time out at
	# 200ms); the extra 30s only guards against a hung probe.
	if ! wait_gone "$PROBE_PID" $((FAILOVER_SECONDS + 30)); then
		log "probe hung; stopping it"
	fi
	stop_pid "$PROBE_PID"
	PROBE_PID=""
	gapline=$(grep '^longest_gap_ms=' "$OUT/failover-$k.txt" || echo "longest_gap_ms=? (probe failed, see failover-$k.txt)")
	echo "kill $k: leader $victim SIGKILLed  $gapline" | tee -a "$OUT/failover.txt"
	if grep -q 'overlaps=[1-9]' "$OUT/failover-$k.txt" || ! grep -q '^longest_gap_ms=' "$OUT/failover-$k.txt"; then
		STATUS=1
	fi

	log "restarting $victim"
	start_node "$victim"
	wait_cluster
done

if [[ -s $OUT/summary.txt || -s $OUT/failover.txt ]]; then
	echo
	echo "=== summary ($OUT)"
	cat "$OUT/summary.txt" 2>/dev/null || true
	if [[ -s $OUT/failover.txt ]]; then
		echo
		echo "failover (longest gap between successful count=1 reservations; probe every 1ms, 200ms timeout):"
		cat "$OUT/failover.txt"
	fi
fi
exit "$STATUS"
