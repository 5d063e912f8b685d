#!/usr/bin/env bash
# scale.sh: what the state of many sequences costs (issue 17, "Scale of the
# state"). For each size N it starts a fresh 3-node ticketd cluster on
# 127.0.0.1 (fsync on, --dev as scripts/bench.sh runs it: no auth, no TLS;
# --pprof so the tool can run a GC before it reads a heap), runs
# `ticketd-bench scale` against it and stops it again, so every size starts
# from an empty cluster and none pays for the one before.
#
#   scripts/scale.sh                        sizes 10000 100000 1000000
#   SCALE_SIZES="10000" scripts/scale.sh    one size
#
# What each figure means (all through the HTTP API of real processes):
#   creation rate   N PUT /v1/sequences/NAME sent to the leader by
#                   SCALE_CONCURRENCY workers (64), divided by the wall time;
#                   each request retried (at most 20 times) on 503/429 or no
#                   answer; p99 is per request
#   log entries     the leader's commit index once all exist
#   memory per sequence
#                   (VmRSS after − VmRSS before) / N from /proc/PID/status, on
#                   the leader and on a follower once it has applied every
#                   creation; and the Go heap in use (go_memstats_heap_inuse_bytes
#                   of /metrics) the same way, each read right after a GC
#                   (GET /debug/pprof/heap?gc=1). Read again after one
#                   reservation (count 1) on every sequence, which gives the
#                   leader per-sequence issuing state as far as its bound allows
#                   (its evictions are reported too)
#   snapshot        POST /v1/cluster/snapshot on the leader, then on the
#                   follower, after one fresh log entry: the call's time
#                   (capture, write and fsync, log compaction), the node's own
#                   persist time (ticketd_raft_snapshot_duration_seconds) and
#                   the size of snapshots/<term-index-ms>/state.bin
#   restart         the follower is stopped with SIGTERM, then (second
#                   figure) with SIGKILL, and started again with its own
#                   command line; times from the new process's start to
#                   /livez, to /readyz 200 (a leader known and everything
#                   committed applied) and to having applied the leader's
#                   commit index of before the stop; plus the stop itself
#   new member      a 4th node (n4) starts empty and is added with POST
#                   /v1/cluster/members on the leader; the time from that POST
#                   until n4 has applied the leader's commit index. Its
#                   ticketd_raft_snapshot_restores_total must be ≥ 1 (it
#                   installed the leader's snapshot); the JSON says whether the
#                   leader's log still reached back to entry 1 (snapshot index
#                   ≤ --trailing-logs, 10240), in which case it could have
#                   caught up from the log. n4 is then removed and stopped.
#
# Outputs in $OUT: scale-N.json and scale-N.txt per size, scale.md (the
# table, one column per size), logs/. Everything it started is stopped on
# exit, Ctrl-C or SIGTERM.
#
# Environment (all optional):
#   OUT=bench-results/<timestamp>-scale
#   SCALE_SIZES="10000 100000 1000000"
#   SCALE_CONCURRENCY=64
#   SCALE_TIMEOUT=<s>      bound on one size (default 300 + 3 ms per sequence)
#   SCALE_LOCK=<file>      hold flock on this file while a cluster runs (one
#                          size at a time), e.g. a lock shared with tests
#   READY_TIMEOUT=30       seconds for a cluster to become ready
#
# Ports, all on 127.0.0.1: HTTP 18681-18684, Raft 18691-18694 (n4 is the
# 4th); scripts/bench.sh and the tests use others.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
for arg in "$@"; do
	case $arg in
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "scale.sh: unknown argument $arg (try --help)" >&2
		exit 2
		;;
	esac
done

SCALE_SIZES=${SCALE_SIZES:-10000 100000 1000000}
SCALE_CONCURRENCY=${SCALE_CONCURRENCY:-64}
SCALE_LOCK=${SCALE_LOCK:-}
READY_TIMEOUT=${READY_TIMEOUT:-30}
OUT=${OUT:-$ROOT/bench-results/$(date +%Y%m%d-%H%M%S)-scale}
HTTP_BASE=18680 RAFT_BASE=18690

mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ticketd-scale.XXXXXX")
BIN=$WORK/bin
D=$WORK/data
PIDFILE=$WORK/pids # "<id> <pid>" of every node ticketd-bench scale starts
mkdir -p "$D"
: >"$PIDFILE"

declare -A NODE_PID=() # node id -> pid, the nodes this script started
LOCKED=0

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# shellcheck source=scripts/proc-lib.sh
. "$ROOT/scripts/proc-lib.sh"

# stop_cluster: the nodes we started, then those ticketd-bench scale started
# (restarted follower, new member), each by its pid and only if it still runs
# a binary from this run's private directory.
stop_cluster() {
	local id pid
	for id in "${!NODE_PID[@]}"; do
		stop_pid "${NODE_PID[$id]}"
		unset "NODE_PID[$id]"
	done
	while read -r id pid; do
		[[ -n ${pid:-} ]] || continue
		if { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -qF -- "$WORK/"; then
			stop_pid "$pid"
		fi
	done <"$PIDFILE"
	: >"$PIDFILE"
}

unlock() {
	if [[ $LOCKED == 1 ]]; then
		flock -u 9
		LOCKED=0
	fi
}

# shellcheck disable=SC2317 # reached through the traps
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	[[ $rc == 0 ]] || log "stopping everything (exit status $rc)"
	stop_cluster
	# Safety net: anything still running from this run's private temp dir
	# is ours; stop it by pid.
	local pid
	for pid in $(pgrep -f -- "$WORK/" || true); do
		[[ $pid != "$$" ]] || continue
		log "leftover pid $pid; stopping it"
		stop_pid "$pid" 10
	done
	unlock
	rm -rf "$WORK"
	log "results in $OUT"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ALL_URLS="" INITIAL_CLUSTER="" PIDS=""
for i in 1 2 3; do
	ALL_URLS+="${ALL_URLS:+,}http://127.0.0.1:$((HTTP_BASE + i))"
	INITIAL_CLUSTER+="${INITIAL_CLUSTER:+,}n$i=127.0.0.1:$((RAFT_BASE + i))"
done

# start_node ID SIZE: one node of the 3-node cluster for this size.
start_node() {
	local id=$1 n=$2 i=${1#n}
	mkdir -p "$D/$n/$id"
	echo "=== start $(date +%H:%M:%S.%N)" >>"$OUT/logs/scale$n-$id.log"
	"$BIN/ticketd" serve --dev --pprof --id "$id" --data-dir "$D/$n/$id" \
		--http-addr "127.0.0.1:$((HTTP_BASE + i))" --raft-addr "127.0.0.1:$((RAFT_BASE + i))" \
		--initial-cluster "$INITIAL_CLUSTER" >>"$OUT/logs/scale$n-$id.log" 2>&1 &
	NODE_PID[$id]=$!
}

log "building into $BIN"
(cd "$ROOT" && go build -ldflags "$(scripts/version-ldflags.sh)" -o "$BIN/ticketd" ./cmd/ticketd && cd cmd/ticketd-bench && go build -o "$BIN/ticketd-bench" .)
{
	echo "# ticketd scale of the state, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/machine.txt"

STATUS=0
for n in $SCALE_SIZES; do
	timeout_s=${SCALE_TIMEOUT:-$((300 + n * 3 / 1000))}
	if [[ -n $SCALE_LOCK ]]; then
		exec 9>"$SCALE_LOCK"
		log "size $n: waiting for $SCALE_LOCK"
		flock 9
		LOCKED=1
	fi
	log "size $n: starting a fresh 3-node cluster (bound ${timeout_s}s)"
	mkdir -p "$OUT/logs/$n"
	rm -rf "${D:?}/$n"
	for id in n1 n2 n3; do start_node "$id" "$n"; done
	PIDS="${NODE_PID[n1]},${NODE_PID[n2]},${NODE_PID[n3]}"
	if ! "$BIN/ticketd-bench" leader --targets "$ALL_URLS" --timeout "${READY_TIMEOUT}s" >/dev/null; then
		log "size $n: cluster not ready"
		STATUS=1
	elif ! timeout --foreground -k 10 "$timeout_s" "$BIN/ticketd-bench" scale --pids "$PIDS" --sequences "$n" \
		--concurrency "$SCALE_CONCURRENCY" --join-data-dir "$D/$n/n4" \
		--join-http "127.0.0.1:$((HTTP_BASE + 4))" --join-raft "127.0.0.1:$((RAFT_BASE + 4))" \
		--log-dir "$OUT/logs/$n" --pid-file "$PIDFILE" --json "$OUT/scale-$n.json" 2>&1 | tee "$OUT/scale-$n.txt" >&2; then
		log "size $n: FAILED (see $OUT/scale-$n.txt)"
		STATUS=1
	fi
	du -sb "$D/$n"/n? >"$OUT/logs/scale$n-du.txt" 2>/dev/null || true
	stop_cluster
	rm -rf "${D:?}/$n"
	unlock
done

shopt -s nullglob
reports=("$OUT"/scale-*.json)
if ((${#reports[@]} > 0)); then
	{
		cat "$OUT/machine.txt"
		echo
		"$BIN/ticketd-bench" scale table "${reports[@]}"
	} >"$OUT/scale.md"
	cat "$OUT/scale.md"
fi
exit "$STATUS"
