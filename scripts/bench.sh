#!/usr/bin/env bash
# bench.sh: ticketd side by side with what users would pick instead, on this
# machine, in one run (issue 5). See bench/README.md for the latest results.
#
#   scripts/bench.sh            full run: ~26 minutes; installs what is missing
#                               (etcd-server, redis-server, redis-tools,
#                               postgresql, mariadb-server) with apt-get when
#                               run as root
#   scripts/bench.sh --smoke    CI: a few seconds of ticketd and the bare Echo
#   BENCH_SMOKE=1 scripts/bench.sh   handler, one small many-sequences run
#                               (100 sequences, 16 clients), one small
#                               RESP round (redis-benchmark and redis-server
#                               only if installed) and one small Snowflake
#                               round (100 IDs a request, 16 clients: bare
#                               Echo, one node, three nodes; the RESP front
#                               if it serves TICKETD.SNOWFLAKE; Redis only
#                               if installed), no installs,
#                               exits 1 only on a correctness failure or an
#                               unexpected error (never on a missed target)
#   BENCH_PEERS= BENCH_SCALING=0 BENCH_SDK=0 BENCH_PROFILE=0 BENCH_MICRO=0 BENCH_RESP=0 scripts/bench.sh
#                               ticketd against the bare Echo handler, many
#                               sequences, and its leader failovers (a few
#                               minutes)
#   BENCH_MAIN=0 BENCH_PEERS= BENCH_SCALING=0 BENCH_SDK=0 BENCH_PROFILE=0 BENCH_MICRO=0 FAILOVER_KILLS=0 BENCH_RESP=0 scripts/bench.sh
#                               the many-sequences section alone (~3 minutes)
#   BENCH_ONLY=resp scripts/bench.sh
#                               the RESP section alone (~5 minutes; the same
#                               as BENCH_MAIN=0 BENCH_MANYSEQ=0 BENCH_PEERS=
#                               BENCH_SCALING=0 BENCH_SDK=0 BENCH_PROFILE=0
#                               BENCH_MICRO=0 FAILOVER_KILLS=0)
#   BENCH_ONLY=snowflake scripts/bench.sh
#                               the Snowflake section alone (~4 minutes
#                               with the defaults)
#   BENCH_ONLY=lease scripts/bench.sh
#                               leader leases off and on side by side
#                               (issue 44) alone (~6 minutes); the same
#                               with 2 ms between the nodes (root):
#                               scripts/lease-bench.sh
#
# What the full run does, every step bounded in time:
#   1. builds ticketd and ticketd-bench; waits (bounded) for a quiet machine
#   2. the bare Echo baseline, then a 3-node ticketd cluster (fsync on,
#      --dev), each driven by the same closed-loop generator (ticketd-bench
#      load) at every concurrency and range size; ticketd also through any
#      node (followers forward), with range size 100000, under a CPU profile,
#      through leader SIGKILLs (failover), and through the Go SDK at a steady
#      1 M IDs/s while its leader is SIGKILLed; and, on the same cluster,
#      many sequences (issue 17): 16 and 64 clients, range size 1000, each
#      request on one of N sequences picked at random, for N in
#      BENCH_MANYSEQ_COUNTS; each N is its own run on its own fresh
#      sequences (created in the run's setup), N=1 the reference; and the
#      Redis-protocol front (issue 14, every node runs with --resp-addr):
#      redis-benchmark (INCRBY <seq> <count>, --csv) against the leader's
#      RESP port and against a redis-server (appendonly yes, appendfsync
#      always) started beside the cluster, at every range size x clients
#      x pipeline depth of BENCH_RESP_*, each run's request count
#      calibrated to last ~BENCH_RESP_SECONDS, BENCH_RESP_ROUNDS runs of
#      each in ABBA order (ticketd, redis, redis, ticketd: fsync latency
#      drifts on a VM); then the load generator (--kind resp / --kind
#      redis, no pipelining) against both at every range size and number
#      of clients, alternating; rows ticketd ÷ redis-server, target
#      >= 1.0x in req/s (--smoke: one small round, redis-benchmark and
#      redis-server only if already installed); and server-made Snowflake
#      IDs (issue 32), BENCH_SNOWFLAKE_COUNTS IDs a request at
#      BENCH_SNOWFLAKE_CLIENTS: POST /v1/namespaces/<ns>/ids on the bare
#      Echo handler (its same route), on one node (n1) and spread over the
#      three; TICKETD.SNOWFLAKE <ns> <count> on one node's and on all three
#      RESP ports, beside redis-server (--save '' --appendonly no) INCRBY
#      <key> <count>; rows each ÷ its peer, target >= 0.9x in req/s; every
#      ID answered checked unique within its run
#   2b. leader leases (issue 44), per setting of BENCH_LEASES: the bare
#      Echo handler alone, then a fresh 3-node cluster (--lease-reads on
#      every node when on) through its leader at BENCH_LEASE_COUNTS x
#      BENCH_LEASE_CLIENTS (rows ticketd and ticketd-lease), its RESP
#      front's INCRBY <seq> 1 beside redis-server without persistence
#      (--save '' --appendonly no; rows ticketd-resp, ticketd-resp-lease,
#      redis-incr, ABBA), LEASE_FAILOVER_KILLS leader SIGKILLs; rows ÷
#      their peer, target >= 0.9x in req/s, p50 and p99 beside the probe
#      path's
#   3. ticketd on 5 nodes and on 1 node
#   4. the peers, one at a time, each a private instance on 127.0.0.1 with
#      its data in a temp dir: a 3-node etcd cluster (read + compare-and-swap
#      counter; also SIGKILLs of its leader), Redis (INCRBY, appendfsync
#      always), PostgreSQL (nextval), MariaDB (Flickr ticket table)
#   5. the Go micro-benchmarks (-count 6, benchstat-comparable)
#   6. ticketd-bench report: the table with ratios to ticketd, the
#      many-sequences table with ratios to one sequence, the RESP table
#      (ticketd ÷ redis-server, met/missed), the targets, results.json,
#      results.md and chart.svg in $OUT
# Everything it started is stopped on exit, Ctrl-C or SIGTERM.
#
# Environment (all optional):
#   OUT=bench-results/<timestamp>   where results and logs go
#   BENCH_DURATION=10s BENCH_WARMUP=2s BENCH_CONCURRENCY=1,16,64
#   BENCH_COUNTS="1 1000"           range sizes of the side-by-side table
#   BENCH_PEERS="etcd redis postgres mariadb"   which peers ("" for none)
#   BENCH_INSTALL=1                 apt-get install missing peers (root only)
#   FAILOVER_KILLS=3                leader SIGKILLs per system (0 skips)
#   BENCH_SCALING=1 BENCH_SDK=1 BENCH_PROFILE=1 BENCH_MICRO=1   (0 skips)
#   BENCH_TICKETD=1                 0 skips the baseline and ticketd (to
#                                   try the peers alone)
#   BENCH_MAIN=1                    0 skips the baseline and ticketd's
#                                   side-by-side loads (the 3-node cluster
#                                   still runs the other ticketd sections)
#   BENCH_MANYSEQ=1                 0 skips the many-sequences section
#   BENCH_MANYSEQ_COUNTS="1 100 2000 10000"   numbers of sequences ("100"
#                                   with --smoke); include 1: the reference
#   BENCH_MANYSEQ_CONCURRENCY=16,64 ("16" with --smoke)
#   BENCH_RESP=1                    0 skips the RESP section (issue 14);
#                                   needs redis-server and redis-tools
#                                   (redis-benchmark, redis-cli), installed
#                                   like the peers
#   BENCH_RESP_COUNTS="1 1000"      range sizes (INCRBY's count) ("1000" with --smoke)
#   BENCH_RESP_CLIENTS="16 64"      redis-benchmark -c, and the generator's
#                                   concurrency ("16" with --smoke)
#   BENCH_RESP_PIPELINES="1 16"     redis-benchmark -P ("1" with --smoke)
#   BENCH_RESP_SECONDS=5            length of each redis-benchmark run: its
#                                   -n is calibrated by a short run first
#                                   (1 with --smoke); the generator's runs
#                                   use BENCH_DURATION and BENCH_WARMUP
#   BENCH_RESP_ROUNDS=2             redis-benchmark runs of each system per
#                                   row, in ABBA order; the report takes
#                                   their mean (1 with --smoke)
#   BENCH_SNOWFLAKE=1               0 skips the Snowflake section (issue 32);
#                                   its RESP half needs redis-server, installed
#                                   like the peers, and a ticketd that serves
#                                   TICKETD.SNOWFLAKE
#   BENCH_SNOWFLAKE_COUNTS="1 100"  IDs a request ("100" with --smoke)
#   BENCH_SNOWFLAKE_CLIENTS=16,64   the generator's concurrency ("16" with --smoke)
#   BENCH_LEASE=1                   0 skips the leases section (issue 44)
#   BENCH_LEASES="off on"           its settings, each a fresh cluster ("on"
#                                   with --smoke; an "on" that the built
#                                   ticketd lacks --lease-reads for is
#                                   left out, a failure outside --smoke)
#   BENCH_LEASE_FLAGS=              more ticketd flags when on, e.g.
#                                   "--lease-duration 1s"
#   BENCH_LEASE_COUNTS="1 1000"     HTTP range sizes ("1000" with --smoke;
#                                   "" skips HTTP and the Echo runs)
#   BENCH_LEASE_CLIENTS=16,64       HTTP clients ("16" with --smoke)
#   BENCH_LEASE_RESP_COUNTS=1       RESP INCRBY counts ("" skips RESP; needs
#                                   redis-server, installed like the peers)
#   BENCH_LEASE_RESP_CLIENTS="16 64"   RESP clients ("16" with --smoke)
#   LEASE_FAILOVER_KILLS=2          leader SIGKILLs per setting (0 with --smoke)
#   BENCH_PROFILE=1                 also profiles each setting's leader at
#                                   64 clients (profile-top-c64-lease-on.txt)
#   BENCH_ONLY=resp|snowflake|lease run that section alone: every other
#                                   section's knob defaults to off
#   QUIET_WAIT=600                  seconds to wait for other benchmarks and
#                                   test runs on this machine to finish
#   READY_TIMEOUT=30                seconds for a cluster to become ready
#
# Ports, all on 127.0.0.1: baseline 18080 (also the Snowflake section's); ticketd HTTP 18081-18085, Raft
# 18091-18095, RESP 18371-18375; etcd clients 18201-18203, peers
# 18211-18213; Redis 18301 (the peer, and the RESP section's); PostgreSQL
# 18401; MariaDB 18501.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SMOKE=${BENCH_SMOKE:-0}
for arg in "$@"; do
	case $arg in
	--smoke) SMOKE=1 ;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "bench.sh: unknown argument $arg (try --help)" >&2
		exit 2
		;;
	esac
done

case ${BENCH_ONLY:-} in
"") ;;
resp)
	# Each knob still wins when it is set.
	BENCH_MAIN=${BENCH_MAIN:-0} BENCH_MANYSEQ=${BENCH_MANYSEQ:-0} BENCH_PEERS=${BENCH_PEERS-}
	BENCH_SCALING=${BENCH_SCALING:-0} BENCH_SDK=${BENCH_SDK:-0} BENCH_PROFILE=${BENCH_PROFILE:-0}
	BENCH_MICRO=${BENCH_MICRO:-0} FAILOVER_KILLS=${FAILOVER_KILLS:-0} BENCH_RESP=${BENCH_RESP:-1}
	BENCH_SNOWFLAKE=${BENCH_SNOWFLAKE:-0}
	;;
snowflake)
	BENCH_MAIN=${BENCH_MAIN:-0} BENCH_MANYSEQ=${BENCH_MANYSEQ:-0} BENCH_PEERS=${BENCH_PEERS-}
	BENCH_SCALING=${BENCH_SCALING:-0} BENCH_SDK=${BENCH_SDK:-0} BENCH_PROFILE=${BENCH_PROFILE:-0}
	BENCH_MICRO=${BENCH_MICRO:-0} FAILOVER_KILLS=${FAILOVER_KILLS:-0} BENCH_RESP=${BENCH_RESP:-0}
	BENCH_SNOWFLAKE=${BENCH_SNOWFLAKE:-1}
	;;
lease)
	BENCH_MAIN=${BENCH_MAIN:-0} BENCH_MANYSEQ=${BENCH_MANYSEQ:-0} BENCH_PEERS=${BENCH_PEERS-}
	BENCH_SCALING=${BENCH_SCALING:-0} BENCH_SDK=${BENCH_SDK:-0} BENCH_PROFILE=${BENCH_PROFILE:-0}
	BENCH_MICRO=${BENCH_MICRO:-0} FAILOVER_KILLS=${FAILOVER_KILLS:-0} BENCH_RESP=${BENCH_RESP:-0}
	BENCH_SNOWFLAKE=${BENCH_SNOWFLAKE:-0} BENCH_LEASE=${BENCH_LEASE:-1}
	;;
*)
	echo "bench.sh: BENCH_ONLY=$BENCH_ONLY: only resp, snowflake and lease are known" >&2
	exit 2
	;;
esac

if [[ $SMOKE == 1 ]]; then
	BENCH_DURATION=${BENCH_DURATION:-1s}
	BENCH_WARMUP=${BENCH_WARMUP:-300ms}
	BENCH_PEERS=${BENCH_PEERS-}
	FAILOVER_KILLS=${FAILOVER_KILLS:-0}
	BENCH_SCALING=${BENCH_SCALING:-0}
	BENCH_SDK=${BENCH_SDK:-0}
	BENCH_PROFILE=${BENCH_PROFILE:-0}
	BENCH_MICRO=${BENCH_MICRO:-0}
	BENCH_INSTALL=0
	QUIET_WAIT=${QUIET_WAIT:-0}
	BENCH_MANYSEQ_COUNTS=${BENCH_MANYSEQ_COUNTS:-100}
	BENCH_MANYSEQ_CONCURRENCY=${BENCH_MANYSEQ_CONCURRENCY:-16}
	BENCH_RESP_COUNTS=${BENCH_RESP_COUNTS:-1000}
	BENCH_RESP_CLIENTS=${BENCH_RESP_CLIENTS:-16}
	BENCH_RESP_PIPELINES=${BENCH_RESP_PIPELINES:-1}
	BENCH_RESP_SECONDS=${BENCH_RESP_SECONDS:-1}
	BENCH_RESP_ROUNDS=${BENCH_RESP_ROUNDS:-1}
	BENCH_SNOWFLAKE_COUNTS=${BENCH_SNOWFLAKE_COUNTS:-100}
	BENCH_SNOWFLAKE_CLIENTS=${BENCH_SNOWFLAKE_CLIENTS:-16}
	BENCH_LEASES=${BENCH_LEASES:-on}
	BENCH_LEASE_COUNTS=${BENCH_LEASE_COUNTS-1000}
	BENCH_LEASE_CLIENTS=${BENCH_LEASE_CLIENTS:-16}
	BENCH_LEASE_RESP_CLIENTS=${BENCH_LEASE_RESP_CLIENTS:-16}
	LEASE_FAILOVER_KILLS=${LEASE_FAILOVER_KILLS:-0}
	GROUP=smoke
else
	BENCH_DURATION=${BENCH_DURATION:-10s}
	BENCH_WARMUP=${BENCH_WARMUP:-2s}
	BENCH_PEERS=${BENCH_PEERS-etcd redis postgres mariadb}
	FAILOVER_KILLS=${FAILOVER_KILLS:-3}
	BENCH_SCALING=${BENCH_SCALING:-1}
	BENCH_SDK=${BENCH_SDK:-1}
	BENCH_PROFILE=${BENCH_PROFILE:-1}
	BENCH_MICRO=${BENCH_MICRO:-1}
	BENCH_INSTALL=${BENCH_INSTALL:-1}
	QUIET_WAIT=${QUIET_WAIT:-600}
	BENCH_MANYSEQ_COUNTS=${BENCH_MANYSEQ_COUNTS:-1 100 2000 10000}
	BENCH_MANYSEQ_CONCURRENCY=${BENCH_MANYSEQ_CONCURRENCY:-16,64}
	BENCH_RESP_COUNTS=${BENCH_RESP_COUNTS:-1 1000}
	BENCH_RESP_CLIENTS=${BENCH_RESP_CLIENTS:-16 64}
	BENCH_RESP_PIPELINES=${BENCH_RESP_PIPELINES:-1 16}
	BENCH_RESP_SECONDS=${BENCH_RESP_SECONDS:-5}
	BENCH_RESP_ROUNDS=${BENCH_RESP_ROUNDS:-2}
	BENCH_SNOWFLAKE_COUNTS=${BENCH_SNOWFLAKE_COUNTS:-1 100}
	BENCH_SNOWFLAKE_CLIENTS=${BENCH_SNOWFLAKE_CLIENTS:-16,64}
	BENCH_LEASES=${BENCH_LEASES:-off on}
	BENCH_LEASE_COUNTS=${BENCH_LEASE_COUNTS-${BENCH_COUNTS:-1 1000}}
	BENCH_LEASE_CLIENTS=${BENCH_LEASE_CLIENTS:-16,64}
	BENCH_LEASE_RESP_CLIENTS=${BENCH_LEASE_RESP_CLIENTS:-16 64}
	LEASE_FAILOVER_KILLS=${LEASE_FAILOVER_KILLS:-2}
	GROUP=main
fi
BENCH_CONCURRENCY=${BENCH_CONCURRENCY:-1,16,64}
BENCH_TICKETD=${BENCH_TICKETD:-1}
BENCH_MAIN=${BENCH_MAIN:-1}
BENCH_MANYSEQ=${BENCH_MANYSEQ:-1}
BENCH_RESP=${BENCH_RESP:-1}
BENCH_SNOWFLAKE=${BENCH_SNOWFLAKE:-1}
BENCH_LEASE=${BENCH_LEASE:-1}
BENCH_LEASE_RESP_COUNTS=${BENCH_LEASE_RESP_COUNTS-1}
BENCH_COUNTS=${BENCH_COUNTS:-1 1000}
if [[ -n ${LEASEBENCH_NS:-} && ${BENCH_ONLY:-} != lease ]]; then
	echo "bench.sh: under leasebench (LEASEBENCH_NS) only BENCH_ONLY=lease runs" >&2
	exit 2
fi
READY_TIMEOUT=${READY_TIMEOUT:-30}
MODE=full
if [[ $SMOKE == 1 ]]; then MODE=smoke; fi
OUT=${OUT:-$ROOT/bench-results/$(date +%Y%m%d-%H%M%S)-$MODE}

BASELINE_ADDR=127.0.0.1:18080
ETCD_CLIENTS=127.0.0.1:18201,127.0.0.1:18202,127.0.0.1:18203
REDIS_ADDR=127.0.0.1:18301
PG_PORT=18401
MYSQL_PORT=18501
BENCH_USER=ticketd-bench # runs PostgreSQL and MariaDB when we are root

mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ticketd-bench.XXXXXX")
BIN=$WORK/bin
D=$WORK/data
mkdir -p "$D"

declare -A NODE_PID=() # ticketd node id -> pid
declare -A ETCD_PID=() # etcd member name -> pid
BASELINE_PID="" REDIS_PID="" PG_PID="" MYSQL_PID="" BG_PID=""
POLICY_RC_CREATED=0
STATUS=0 # 1 once any step failed; the run still goes on and reports

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
fail() {
	log "FAILED: $*"
	echo "failed: $*" >>"$OUT/failures.txt"
	STATUS=1
}

# shellcheck source=scripts/proc-lib.sh
. "$ROOT/scripts/proc-lib.sh"

stop_ticketd() {
	local id
	for id in "${!NODE_PID[@]}"; do
		stop_pid "${NODE_PID[$id]}"
		unset "NODE_PID[$id]"
	done
}

stop_etcd() {
	local n
	for n in "${!ETCD_PID[@]}"; do
		stop_pid "${ETCD_PID[$n]}"
		unset "ETCD_PID[$n]"
	done
}

# shellcheck disable=SC2317 # reached through the traps
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	[[ $rc == 0 ]] || log "stopping everything (exit status $rc)"
	stop_pid "$BG_PID" 5
	stop_pid "$BASELINE_PID" 5
	stop_ticketd
	stop_etcd
	stop_pid "$REDIS_PID"
	stop_pid "$PG_PID" 30   # SIGTERM = smart shutdown; a fast one needs no more
	stop_pid "$MYSQL_PID" 30
	# Safety net: anything still running from this run's private temp dir
	# (its path is unique to this run) is ours; stop it by pid.
	local pid
	for pid in $(pgrep -f -- "$WORK/" || true); do
		[[ $pid != "$$" ]] || continue
		log "leftover pid $pid ($(tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null | cut -c1-80)); stopping it"
		stop_pid "$pid" 10
	done
	if [[ $POLICY_RC_CREATED == 1 ]]; then rm -f /usr/sbin/policy-rc.d; fi
	rm -rf "$WORK"
	log "results in $OUT"
	if [[ $rc == 0 && $STATUS != 0 ]]; then rc=1; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# port_busy PORT [HOST]: true when something accepts connections on
# HOST:PORT (HOST 127.0.0.1 unless given).
port_busy() { (exec 3<>"/dev/tcp/${2:-127.0.0.1}/$1") 2>/dev/null; }

# wait_port PORT SECONDS PID [HOST]: until the port accepts connections;
# fails early if PID (the server) died.
wait_port() {
	local port=$1 limit=$(($2 * 10)) pid=${3:-} host=${4:-127.0.0.1} i
	for ((i = 0; i < limit; i++)); do
		port_busy "$port" "$host" && return 0
		if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then return 1; fi
		sleep 0.1
	done
	return 1
}

# as_bench CMD...: run CMD as the dedicated user when we are root (the
# databases refuse to run as root), else as ourselves.
as_bench() {
	if [[ $EUID == 0 ]]; then
		HOME=$D setpriv --reuid="$BENCH_USER" --regid="$BENCH_USER" --init-groups -- "$@"
	else
		"$@"
	fi
}

# as_bench_exec CMD...: as_bench for a server started with `&`: the
# background subshell execs setpriv, which execs the server, so $! is the
# server's own pid and a signal to it reaches the server.
as_bench_exec() {
	if [[ $EUID == 0 ]]; then
		HOME=$D exec setpriv --reuid="$BENCH_USER" --regid="$BENCH_USER" --init-groups -- "$@"
	else
		exec "$@"
	fi
}

# joined ARRAY_VALUES...: comma-joined, for --pids.
joined() {
	local IFS=,
	echo "$*"
}

# load LABEL SYSTEM NODES COUNT TARGETS [extra flags...]: one load run;
# LOAD_PIDS names the server processes for the CPU figures, and
# LOAD_CONCURRENCY overrides BENCH_CONCURRENCY.
load() {
	local label=$1 system=$2 nodes=$3 count=$4 targets=$5 group=${GROUP_OVERRIDE:-$GROUP}
	local conc=${LOAD_CONCURRENCY:-$BENCH_CONCURRENCY}
	shift 5
	local f="$OUT/load-$group-$label-c$count"
	log "load: $label, range size $count, concurrency $conc${*:+ ($*)}"
	if ! "$BIN/ticketd-bench" load --target "$targets" --sequence "$group-$label-c$count" \
		--count "$count" --concurrency "$conc" \
		--duration "$BENCH_DURATION" --warmup "$BENCH_WARMUP" --setup-timeout 30s \
		--label "$label" --system "$system" --group "$group" --nodes "$nodes" \
		--pids "${LOAD_PIDS:-}" --json "$f.json" "$@" >"$f.txt" 2>"$f.err"; then
		fail "load $label count=$count (see $f.txt, $f.err)"
	fi
	cat "$f.txt"
}

# ---- ticketd ----------------------------------------------------------------

# cluster_vars N: the URLs and --initial-cluster of an N-node cluster.
cluster_vars() {
	local n=$1 i
	NODES=() ALL_URLS="" INITIAL_CLUSTER=""
	for ((i = 1; i <= n; i++)); do
		NODES+=("n$i")
		ALL_URLS+="${ALL_URLS:+,}http://$(node_ip "n$i"):$((18080 + i))"
		INITIAL_CLUSTER+="${INITIAL_CLUSTER:+,}n$i=$(node_ip "n$i"):$((18090 + i))"
	done
	CLUSTER_SIZE=$n
}

# resp_port ID: the Redis-protocol port of node ID (n1 -> 18371).
resp_port() { echo $((18370 + ${1#n})); }

# node_ip ID: the address node ID listens on: 127.0.0.1, or under
# jepsen/cmd/leasebench (scripts/lease-bench.sh) the address of its own
# network namespace (LEASEBENCH_IPS, one per node).
node_ip() {
	if [[ -z ${LEASEBENCH_IPS:-} ]]; then
		echo 127.0.0.1
		return
	fi
	local ips
	read -r -a ips <<<"$LEASEBENCH_IPS"
	echo "${ips[$((${1#n} - 1))]}"
}

# node_netns ID: the command prefix that runs a process in node ID's network
# namespace (nothing on loopback); `ip netns exec` execs, so $! stays the
# server's own pid.
node_netns() {
	[[ -n ${LEASEBENCH_NS:-} ]] || return 0
	local ns
	read -r -a ns <<<"$LEASEBENCH_NS"
	echo "ip netns exec ${ns[$((${1#n} - 1))]}"
}

start_node() {
	local id=$1 i=${1#n} boot
	mkdir -p "$D/ticketd$CLUSTER_SIZE/$id"
	if [[ $CLUSTER_SIZE == 1 ]]; then boot=(--bootstrap); else boot=(--initial-cluster "$INITIAL_CLUSTER"); fi
	echo "=== start $(date +%H:%M:%S.%N)" >>"$OUT/logs/ticketd$CLUSTER_SIZE-$id.log"
	# shellcheck disable=SC2046,SC2086 # word splitting wanted: a prefix, flags
	$(node_netns "$id") "$BIN/ticketd" serve --dev --id "$id" --data-dir "$D/ticketd$CLUSTER_SIZE/$id" \
		--http-addr "$(node_ip "$id"):$((18080 + i))" --raft-addr "$(node_ip "$id"):$((18090 + i))" \
		--resp-addr "$(node_ip "$id"):$(resp_port "$id")" "${boot[@]}" ${PPROF_FLAG:-} ${LEASE_FLAGS:-} >>"$OUT/logs/ticketd$CLUSTER_SIZE-$id.log" 2>&1 &
	NODE_PID[$id]=$!
}

# wait_cluster: until every node is ready and they agree on a leader;
# sets LEADER_ID and LEADER_ADDR.
wait_cluster() {
	local line id
	if ! line=$("$BIN/ticketd-bench" leader --targets "$ALL_URLS" --timeout "${READY_TIMEOUT}s"); then
		for id in "${NODES[@]}"; do
			log "--- last lines of ticketd$CLUSTER_SIZE-$id.log"
			tail -n 20 "$OUT/logs/ticketd$CLUSTER_SIZE-$id.log" >&2 || true
		done
		return 1
	fi
	read -r LEADER_ID LEADER_ADDR <<<"$line"
}

start_cluster() { # start_cluster N
	cluster_vars "$1"
	rm -rf "$D/ticketd$1"
	local id
	for id in "${NODES[@]}"; do start_node "$id"; done
	log "ticketd: waiting for $1 node(s) (up to ${READY_TIMEOUT}s)"
	wait_cluster
	log "ticketd: leader $LEADER_ID at $LEADER_ADDR"
}

# restart_victim ID: reap the SIGKILLed node, start it again, wait until the
# cluster is whole.
restart_victim() {
	local victim=$1
	wait_gone "${NODE_PID[$victim]}" 10 || kill -KILL "${NODE_PID[$victim]}" 2>/dev/null || true
	wait "${NODE_PID[$victim]}" 2>/dev/null || true
	start_node "$victim"
	wait_cluster
}

# ticketd_failover [SYSTEM]: FAILOVER_KILLS probes, each SIGKILLing the
# leader; SYSTEM (ticketd) names them in the report.
ticketd_failover() {
	local k victim sys=${1:-ticketd}
	for ((k = 1; k <= FAILOVER_KILLS; k++)); do
		wait_cluster || { fail "$sys not ready before kill $k"; return 1; }
		victim=$LEADER_ID
		log "failover $sys $k/$FAILOVER_KILLS: SIGKILL of leader $victim 1s into a 6s probe"
		if ! timeout --foreground -k 5 60 "$BIN/ticketd-bench" failover --targets "$ALL_URLS" --sequence fo \
			--system "$sys" --interval 1ms --duration 6s --kill-pid "${NODE_PID[$victim]}" --kill-after 1s \
			--json "$OUT/failover-$sys-$k.json" >"$OUT/failover-$sys-$k.txt" 2>&1; then
			fail "$sys failover probe $k (see $OUT/failover-$sys-$k.txt)"
		fi
		grep -h '^longest_gap_ms=' "$OUT/failover-$sys-$k.txt" >&2 || true
		restart_victim "$victim" || { fail "ticketd not whole again after kill $k"; return 1; }
	done
}

ticketd_sdk() {
	wait_cluster || { fail "ticketd not ready before the sdk run"; return 1; }
	local victim=$LEADER_ID
	log "sdk: Sequence.Next at 1M IDs/s for 3s + 10s, SIGKILL of leader $victim 3s into the window"
	if ! timeout --foreground -k 5 60 "$BIN/ticketd-bench" sdk --targets "$ALL_URLS" --sequence sdk \
		--rate 1000000 --warmup 3s --duration 10s --kill-pid "${NODE_PID[$victim]}" --kill-after 3s \
		--json "$OUT/sdk-failover.json" >"$OUT/sdk-failover.txt" 2>&1; then
		fail "sdk run (see $OUT/sdk-failover.txt)"
	fi
	cat "$OUT/sdk-failover.txt" >&2
	restart_victim "$victim" || { fail "ticketd not whole again after the sdk run"; return 1; }
}

# ticketd_manyseq: on the running 3-node cluster, range size 1000 through
# the leader over each number of sequences of BENCH_MANYSEQ_COUNTS (issue
# 17). Each run's sequences are its own (the prefix names the number), so
# every run starts on fresh sequences, created in its setup and primed (one
# reservation each, timed apart: the cold start) before the levels measure
# N active sequences.
ticketd_manyseq() {
	local n
	for n in $BENCH_MANYSEQ_COUNTS; do
		wait_cluster || { fail "ticketd not ready before the $n-sequence run"; return 1; }
		LOAD_PIDS=$(joined "${NODE_PID[@]}")
		GROUP_OVERRIDE=manyseq LOAD_CONCURRENCY=$BENCH_MANYSEQ_CONCURRENCY \
			load "ticketd-s$n" ticketd-manyseq 3 1000 "http://$LEADER_ADDR" --sequences "$n" --prime
	done
}

# scrape_metrics ADDR FILE: GET /metrics of a node (plain bash, no curl).
scrape_metrics() {
	# shellcheck disable=SC2016 # expanded by the inner bash
	timeout 10 bash -c 'exec 3<>"/dev/tcp/${1%:*}/${1#*:}" && printf "GET /metrics HTTP/1.0\r\nHost: %s\r\n\r\n" "$1" >&3 && cat <&3' _ "$1" >"$2" 2>/dev/null || true
	date +%s.%N >>"$2.time"
}

# metrics_delta BEFORE AFTER: quorum rounds, reservations and blocks between
# two scrapes of the leader's /metrics.
metrics_delta() {
	local t0 t1
	t0=$(head -n1 "$1.time") t1=$(head -n1 "$2.time")
	awk -v t0="$t0" -v t1="$t1" '
		function val(line) { n = split(line, f, " "); return f[n] + 0 }
		FNR == 1 { file++ }
		/^ticketd_leadership_check_seconds_count/ { rc[file] += val($0) }
		/^ticketd_leadership_check_seconds_sum/ { rs[file] += val($0) }
		/^ticketd_reservations_total/ && /outcome="ok"/ { res[file] += val($0) }
		/^ticketd_blocks_committed_total/ { blk[file] += val($0) }
		END {
			dt = t1 - t0; rounds = rc[2] - rc[1]; r = res[2] - res[1]
			if (dt <= 0 || rounds <= 0) { print "no leadership-check rounds seen (metrics unavailable?)"; exit }
			printf "over %.1f s: %.0f reservations/s, %.0f quorum rounds/s (mean round %.3f ms), %.1f reservations per round, %.1f blocks committed/s\n",
				dt, r / dt, rounds / dt, 1000 * (rs[2] - rs[1]) / rounds, r / rounds, (blk[2] - blk[1]) / dt
		}' "$1" "$2"
}

# profile_ticketd CONC [TAG]: a CPU profile of the leader under load (not
# part of the measured runs: profiling costs a little CPU), the leader's own
# CPU per reservation, and its quorum rounds from /metrics; TAG goes into
# the file names (profile-top-c<CONC><TAG>.txt).
profile_ticketd() {
	local conc=$1 tag=$1${2:-}
	local m="$OUT/logs/metrics-c$tag"
	log "profile: 5s CPU profile of leader $LEADER_ID at concurrency $conc, range size 1000"
	"$BIN/ticketd-bench" load --target "http://$LEADER_ADDR" --sequence profile --count 1000 \
		--concurrency "$conc" --duration 8s --warmup 1s --label "profile-c$tag" \
		--pids "${NODE_PID[$LEADER_ID]}" >"$OUT/profile-load-c$tag.txt" 2>&1 &
	BG_PID=$!
	sleep 1.5
	scrape_metrics "$LEADER_ADDR" "$m-before.txt"
	if PPROF_TMPDIR=$WORK timeout --foreground -k 5 60 "$BIN/pprof" -proto -output "$OUT/ticketd-cpu-c$tag.pprof" \
		"http://$LEADER_ADDR/debug/pprof/profile?seconds=5" >"$OUT/logs/pprof-c$tag.log" 2>&1; then
		scrape_metrics "$LEADER_ADDR" "$m-after.txt"
		"$BIN/pprof" -top -nodecount=35 "$BIN/ticketd" "$OUT/ticketd-cpu-c$tag.pprof" >"$OUT/profile-top-c$tag.txt" 2>&1 || true
		"$BIN/pprof" -top -cum -nodecount=60 "$BIN/ticketd" "$OUT/ticketd-cpu-c$tag.pprof" >"$OUT/profile-top-cum-c$tag.txt" 2>&1 || true
		metrics_delta "$m-before.txt" "$m-after.txt" >"$OUT/profile-metrics-c$tag.txt" 2>&1 || true
	else
		fail "pprof fetch (see $OUT/logs/pprof-c$tag.log)"
	fi
	wait_gone "$BG_PID" 30 || true
	stop_pid "$BG_PID" 5
	BG_PID=""
	{
		echo "leader $LEADER_ID under load (server cores = the leader alone):"
		sed -n '2,4p' "$OUT/profile-load-c$tag.txt"
		cat "$OUT/profile-metrics-c$tag.txt" 2>/dev/null
	} >&2
}

# ---- peers ------------------------------------------------------------------

# Debian package and binary of each peer.
initdb_bin() { printf '%s\n' /usr/lib/postgresql/*/bin/initdb | grep -v '\*' | sort -V | tail -n1; }
peer_present() {
	case $1 in
	etcd) command -v etcd >/dev/null ;;
	redis) command -v redis-server >/dev/null ;;
	postgres) [[ -n $(initdb_bin) ]] ;;
	mariadb) command -v mariadbd >/dev/null && command -v mariadb-install-db >/dev/null ;;
	esac
}
peer_package() {
	case $1 in
	etcd) echo etcd-server ;;
	redis) echo redis-server ;;
	postgres) echo postgresql ;;
	mariadb) echo mariadb-server ;;
	esac
}

# install_peers: apt-get install what is missing (the peers', and what the
# RESP section runs: redis-server, and redis-benchmark and redis-cli from
# redis-tools), without letting the packages start their system-wide
# services (policy-rc.d answers 101 while we install; one that already
# exists is left alone).
install_peers() {
	local p pkgs=()
	for p in $BENCH_PEERS; do
		peer_present "$p" || pkgs+=("$(peer_package "$p")")
	done
	if [[ ($BENCH_SNOWFLAKE == 1 || ($BENCH_LEASE == 1 && -n $BENCH_LEASE_RESP_COUNTS)) && $BENCH_TICKETD == 1 ]] && ! peer_present redis && [[ " ${pkgs[*]} " != *" redis-server "* ]]; then
		pkgs+=(redis-server)
	fi
	if [[ $BENCH_RESP == 1 && $BENCH_TICKETD == 1 ]]; then
		if ! peer_present redis && [[ " ${pkgs[*]} " != *" redis-server "* ]]; then pkgs+=(redis-server); fi
		command -v redis-benchmark >/dev/null && command -v redis-cli >/dev/null || pkgs+=(redis-tools)
	fi
	[[ ${#pkgs[@]} -gt 0 ]] || return 0
	if [[ $BENCH_INSTALL != 1 || $EUID != 0 ]]; then
		log "missing packages: ${pkgs[*]} (not installing: not root or BENCH_INSTALL=0); what needs them is skipped"
		return 0
	fi
	log "installing ${pkgs[*]} (apt-get, up to 15 minutes)"
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		POLICY_RC_CREATED=1
	fi
	timeout --foreground -k 10 300 apt-get update >"$OUT/logs/apt.log" 2>&1 || log "apt-get update failed (see logs/apt.log); trying the install anyway"
	if ! DEBIAN_FRONTEND=noninteractive timeout --foreground -k 10 600 apt-get install -y --no-install-recommends "${pkgs[@]}" >>"$OUT/logs/apt.log" 2>&1; then
		fail "apt-get install ${pkgs[*]} (see logs/apt.log)"
	fi
	if [[ $POLICY_RC_CREATED == 1 ]]; then
		rm -f /usr/sbin/policy-rc.d
		POLICY_RC_CREATED=0
	fi
}

ensure_bench_user() {
	[[ $EUID == 0 ]] || return 0
	id "$BENCH_USER" >/dev/null 2>&1 && return 0
	log "creating system user $BENCH_USER to run PostgreSQL and MariaDB"
	useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$BENCH_USER"
}

# etcd_member NAME: start (or restart, same flags and data dir: it rejoins)
# one member of the 3-node etcd cluster.
etcd_member() {
	local name=$1 i=${1#e} j cluster=""
	for j in 1 2 3; do cluster+="${cluster:+,}e$j=http://127.0.0.1:$((18210 + j))"; done
	mkdir -p "$D/etcd/$name"
	chmod 700 "$D/etcd/$name"
	# Defaults otherwise: 100 ms heartbeat, 1 s election timeout, fsync on.
	etcd --name "$name" --data-dir "$D/etcd/$name" \
		--listen-client-urls "http://127.0.0.1:$((18200 + i))" --advertise-client-urls "http://127.0.0.1:$((18200 + i))" \
		--listen-peer-urls "http://127.0.0.1:$((18210 + i))" --initial-advertise-peer-urls "http://127.0.0.1:$((18210 + i))" \
		--initial-cluster "$cluster" --initial-cluster-token ticketd-bench --initial-cluster-state new \
		--logger zap --log-level warn >>"$OUT/logs/etcd-$name.log" 2>&1 &
	ETCD_PID[$name]=$!
}

start_etcd() {
	local n
	for n in e1 e2 e3; do etcd_member "$n"; done
}

wait_etcd() { # sets ETCD_LEADER
	local line
	line=$("$BIN/ticketd-bench" leader --kind etcd --targets "$ETCD_CLIENTS" --timeout "${READY_TIMEOUT}s") || return 1
	read -r ETCD_LEADER _ <<<"$line"
}

etcd_failover() {
	local k victim
	for ((k = 1; k <= FAILOVER_KILLS; k++)); do
		wait_etcd || { fail "etcd not ready before kill $k"; return; }
		victim=$ETCD_LEADER
		log "failover etcd $k/$FAILOVER_KILLS: SIGKILL of leader $victim 1s into a 6s probe"
		if ! timeout --foreground -k 5 60 "$BIN/ticketd-bench" failover --kind etcd --targets "$ETCD_CLIENTS" --sequence fo \
			--system etcd --interval 1ms --duration 6s --kill-pid "${ETCD_PID[$victim]}" --kill-after 1s \
			--json "$OUT/failover-etcd-$k.json" >"$OUT/failover-etcd-$k.txt" 2>&1; then
			fail "etcd failover probe $k (see $OUT/failover-etcd-$k.txt)"
		fi
		grep -h '^longest_gap_ms=' "$OUT/failover-etcd-$k.txt" >&2 || true
		wait_gone "${ETCD_PID[$victim]}" 10 || true
		wait "${ETCD_PID[$victim]}" 2>/dev/null || true
		etcd_member "$victim"
	done
	wait_etcd || fail "etcd not whole again after the kills"
}

start_redis() {
	mkdir -p "$D/redis"
	redis-server --bind 127.0.0.1 --port "${REDIS_ADDR#*:}" --dir "$D/redis" \
		--appendonly yes --appendfsync always --save "" --daemonize no \
		--logfile "$OUT/logs/redis.log" &
	REDIS_PID=$!
	wait_port "${REDIS_ADDR#*:}" 20 "$REDIS_PID"
}

start_postgres() {
	local initdb bindir
	initdb=$(initdb_bin)
	bindir=$(dirname "$initdb")
	mkdir -p "$D/pg" "$D/pgsock"
	[[ $EUID != 0 ]] || chown "$BENCH_USER:" "$D/pg" "$D/pgsock"
	chmod 700 "$D/pg"
	# trust on a private loopback-only instance that lives for this run.
	if ! as_bench timeout --foreground -k 5 120 "$initdb" -D "$D/pg" -U bench --auth=trust -E UTF8 >"$OUT/logs/initdb.log" 2>&1; then
		cat "$OUT/logs/initdb.log" >&2
		return 1
	fi
	# Defaults otherwise: fsync on, synchronous_commit on, full_page_writes on.
	as_bench_exec "$bindir/postgres" -D "$D/pg" -p "$PG_PORT" -k "$D/pgsock" \
		-c listen_addresses=127.0.0.1 -c max_connections=200 >"$OUT/logs/postgres.log" 2>&1 &
	PG_PID=$!
	wait_port "$PG_PORT" 60 "$PG_PID"
}

start_mariadb() {
	mkdir -p "$D/mysql" "$D/mysqltmp" "$D/mysqlrun"
	[[ $EUID != 0 ]] || chown "$BENCH_USER:" "$D/mysql" "$D/mysqltmp" "$D/mysqlrun"
	if ! as_bench timeout --foreground -k 5 180 mariadb-install-db --no-defaults --datadir="$D/mysql" \
		--auth-root-authentication-method=normal --skip-test-db >"$OUT/logs/mariadb-install-db.log" 2>&1; then
		tail -n 30 "$OUT/logs/mariadb-install-db.log" >&2
		return 1
	fi
	# Durable defaults: innodb_flush_log_at_trx_commit=1 (fsync per commit).
	as_bench_exec mariadbd --no-defaults --datadir="$D/mysql" --tmpdir="$D/mysqltmp" \
		--socket="$D/mysqlrun/mysql.sock" --port="$MYSQL_PORT" --bind-address=127.0.0.1 --skip-name-resolve \
		--pid-file="$D/mysqlrun/mysql.pid" --innodb-flush-log-at-trx-commit=1 --max-connections=300 \
		>"$OUT/logs/mariadb.log" 2>&1 &
	MYSQL_PID=$!
	wait_port "$MYSQL_PORT" 60 "$MYSQL_PID" || return 1
	# The unix socket (used once, for the setup below) comes up just after
	# the TCP port.
	local i
	for ((i = 0; i < 100; i++)); do
		[[ -S $D/mysqlrun/mysql.sock ]] && break
		kill -0 "$MYSQL_PID" 2>/dev/null || return 1
		sleep 0.1
	done
	timeout --foreground -k 5 30 mariadb --no-defaults --socket="$D/mysqlrun/mysql.sock" -u root -e "
		CREATE DATABASE IF NOT EXISTS bench;
		CREATE USER IF NOT EXISTS 'bench'@'127.0.0.1' IDENTIFIED BY 'bench';
		GRANT ALL ON bench.* TO 'bench'@'127.0.0.1';" >>"$OUT/logs/mariadb.log" 2>&1
}

# run_peer NAME: start it, drive it at every range size, stop it.
run_peer() {
	local p=$1 c
	if ! peer_present "$p"; then
		fail "$p is not installed; skipped"
		return
	fi
	log "starting $p"
	case $p in
	etcd)
		start_etcd
		if ! wait_etcd; then
			fail "etcd did not become ready (see logs/etcd-*.log)"
			stop_etcd
			return
		fi
		LOAD_PIDS=$(joined "${ETCD_PID[@]}")
		for c in $BENCH_COUNTS; do load etcd etcd 3 "$c" "$ETCD_CLIENTS" --kind etcd; done
		if [[ $FAILOVER_KILLS -gt 0 ]]; then etcd_failover; fi
		stop_etcd
		;;
	redis)
		if start_redis; then
			LOAD_PIDS=$REDIS_PID
			for c in $BENCH_COUNTS; do load redis redis 1 "$c" "$REDIS_ADDR" --kind redis; done
		else
			fail "redis did not start (see logs/redis.log)"
		fi
		stop_pid "$REDIS_PID"
		REDIS_PID=""
		;;
	postgres)
		if start_postgres; then
			LOAD_PIDS=$PG_PID # and its children, the backends
			for c in $BENCH_COUNTS; do load postgres postgres 1 "$c" "127.0.0.1:$PG_PORT" --kind postgres --pg-user bench; done
		else
			fail "postgres did not start (see logs/initdb.log, logs/postgres.log)"
		fi
		stop_pid "$PG_PID" 30
		PG_PID=""
		;;
	mariadb)
		if start_mariadb; then
			LOAD_PIDS=$MYSQL_PID
			for c in $BENCH_COUNTS; do
				if ((c > 65535)); then
					log "mariadb: range size $c is above auto_increment_increment's maximum (65535); skipped"
					continue
				fi
				load mariadb mariadb 1 "$c" "127.0.0.1:$MYSQL_PORT" --kind mysql
			done
		else
			fail "mariadb did not start (see logs/mariadb*.log)"
		fi
		stop_pid "$MYSQL_PID" 30
		MYSQL_PID=""
		;;
	*) fail "unknown peer $p" ;;
	esac
}

# ---- RESP front (issue 14) ----------------------------------------------------

# The redis-benchmark rows, read by `ticketd-bench report`.
RESP_CSV=resp-redis-benchmark.csv
RESP_CSV_HEADER=system,count,clients,pipeline,round,requests,seconds,rps,avg_ms,min_ms,p50_ms,p95_ms,p99_ms,max_ms,server_cores,server_cpu_per_req_us
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)

# cpu_ticks PID...: their user + system CPU time so far, in clock ticks.
cpu_ticks() {
	local pid s fields t=0
	for pid; do
		s=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
		s=${s##*) } # after "pid (comm) ": state is [0], utime [11], stime [12]
		read -r -a fields <<<"$s"
		t=$((t + fields[11] + fields[12]))
	done
	echo "$t"
}

# resp_cli PORT ARGS...: one command, its answer on stdout (raw: no tty).
resp_cli() {
	local port=$1
	shift
	timeout --foreground -k 2 10 redis-cli -h 127.0.0.1 -p "$port" "$@" 2>&1
}

# resp_incr PORT KEY: INCR KEY, the new value (fails on anything else).
resp_incr() {
	local v
	v=$(resp_cli "$1" INCR "$2") || true
	if [[ ! $v =~ ^[0-9]+$ ]]; then
		log "INCR $2 on port $1 answered: $v"
		return 1
	fi
	echo "$v"
}

# resp_create PORT SEQ: TICKETD.CREATE on ticketd (1 created, 0 existed).
resp_create() {
	local v
	v=$(resp_cli "$1" TICKETD.CREATE "$2")
	[[ $v == 0 || $v == 1 ]] || {
		fail "RESP: TICKETD.CREATE $2 on port $1 answered: $v"
		return 1
	}
}

# resp_rb SYSTEM PORT KEY COUNT CLIENTS PIPELINE ROUND PID...: one redis-benchmark
# run of INCRBY KEY COUNT, appended to $RESP_CSV. A short run first (also
# the warm-up: connections, ticketd's first blocks) gives the rate that
# sizes -n to about BENCH_RESP_SECONDS; redis-benchmark has no duration and
# prints its CSV only at the end, so `timeout` is only the safety net.
# INCR before and after checks that the server really handed out the IDs
# (redis-benchmark exits non-zero on an error reply, but counts anything
# else as done): between the two, at least -n x COUNT IDs on ticketd (a
# leader may skip IDs, never reuse one), exactly that many on Redis (give
# or take the pipelined requests sent past -n).
resp_rb() {
	local sys=$1 port=$2 key=$3 count=$4 clients=$5 pipe=$6 round=$7
	shift 7 # the server's pids: every node of ticketd, or redis-server
	local f="$OUT/resp-rb-$sys-c$count-n$clients-p$pipe-r$round" ncal n rps before after t0 t1 c0 c1 row
	ncal=$((clients * pipe * 20))
	((ncal >= 5000)) || ncal=5000
	if ! timeout --foreground -k 5 120 redis-benchmark -h 127.0.0.1 -p "$port" -c "$clients" -n "$ncal" -P "$pipe" \
		--csv INCRBY "$key" "$count" >"$f.calibration.csv" 2>"$f.err"; then
		fail "redis-benchmark calibration, $sys count=$count c=$clients P=$pipe (see $f.err)"
		return 1
	fi
	rps=$(tail -n1 "$f.calibration.csv" | tr -d '"' | awk -F, '$2 + 0 > 0 { print $2 }')
	if [[ -z $rps ]]; then
		fail "redis-benchmark calibration, $sys count=$count c=$clients P=$pipe: no rate in $f.calibration.csv"
		return 1
	fi
	n=$(awk -v r="$rps" -v s="$BENCH_RESP_SECONDS" -v lo="$ncal" 'BEGIN { n = int(r * s); if (n < lo) n = lo; if (n > 50000000) n = 50000000; print n }')
	before=$(resp_incr "$port" "$key") || {
		fail "RESP $sys: INCR $key before the run"
		return 1
	}
	t0=$(date +%s.%N) c0=$(cpu_ticks "$@")
	if ! timeout --foreground -k 5 $((BENCH_RESP_SECONDS * 10 + 30)) redis-benchmark -h 127.0.0.1 -p "$port" \
		-c "$clients" -n "$n" -P "$pipe" --csv INCRBY "$key" "$count" >"$f.csv" 2>>"$f.err"; then
		fail "redis-benchmark, $sys count=$count c=$clients P=$pipe -n $n (see $f.err)"
		return 1
	fi
	c1=$(cpu_ticks "$@") t1=$(date +%s.%N)
	after=$(resp_incr "$port" "$key") || {
		fail "RESP $sys: INCR $key after the run"
		return 1
	}
	# With -P, redis-benchmark sends whole batches: up to a batch per
	# client more than -n.
	local ids=$((after - before - 1)) want=$((n * count)) over=$((clients * pipe * count))
	if ((ids < want)) || { [[ $sys == redis ]] && ((ids > want + over || ids % count != 0)); }; then
		fail "RESP $sys count=$count c=$clients P=$pipe: $ids IDs between INCR $before and $after for $n requests of $count"
	fi
	# "INCRBY key count",rps,avg,min,p50,p95,p99,max -> our row.
	row=$(tail -n1 "$f.csv" | tr -d '"' | awk -F, -v OFS=, -v sys="$sys" -v c="$count" -v cl="$clients" -v p="$pipe" -v r="$round" -v n="$n" \
		-v dt="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" -v ticks="$((c1 - c0))" -v hz="$CLK_TCK" '
		NF == 8 && $2 + 0 > 0 {
			cpu = ticks / hz
			printf "%s,%s,%s,%s,%s,%s,%.3f,%s,%s,%s,%s,%s,%s,%s,%.3f,%.2f\n", sys, c, cl, p, r, n, dt, $2, $3, $4, $5, $6, $7, $8, cpu / dt, 1e6 * cpu / n
		}')
	if [[ -z $row ]]; then
		fail "redis-benchmark, $sys count=$count c=$clients P=$pipe: no CSV row in $f.csv"
		return 1
	fi
	echo "$row" >>"$OUT/$RESP_CSV"
	log "redis-benchmark $sys INCRBY count=$count c=$clients P=$pipe round $round -n $n: $(cut -d, -f8 <<<"$row") req/s, p50 $(cut -d, -f11 <<<"$row") ms, p99 $(cut -d, -f13 <<<"$row") ms, server CPU $(cut -d, -f16 <<<"$row") µs/req"
}

# resp_order I: "ticketd redis" when I is even, else "redis ticketd".
resp_order() { if (($1 % 2 == 0)); then echo ticketd redis; else echo redis ticketd; fi; }

# ticketd_resp: on the running 3-node cluster, its leader's RESP port
# against a redis-server with appendfsync always started beside it, by
# redis-benchmark and by the load generator. The two run back to back, the
# first of them alternating, so that both see the same machine: fsync
# latency on a VM drifts over seconds, so each redis-benchmark row is
# BENCH_RESP_ROUNDS runs of each in ABBA order (their mean in the report).
ticketd_resp() {
	local have_rb=0 have_redis=0 c n p r i=0 sys seq tport
	command -v redis-benchmark >/dev/null && command -v redis-cli >/dev/null && have_rb=1
	peer_present redis && have_redis=1
	if ((!have_rb || !have_redis)); then
		local msg="RESP: redis-benchmark and redis-cli (redis-tools) or redis-server not installed"
		if [[ $SMOKE == 1 ]]; then
			log "$msg; only the load generator against ticketd's RESP front runs"
		else
			fail "$msg; only the load generator against ticketd's RESP front ran"
		fi
	fi
	if ((have_redis)) && ! start_redis; then
		fail "RESP: redis-server did not start (see logs/redis.log)"
		stop_pid "$REDIS_PID"
		REDIS_PID="" have_redis=0
	fi
	if ((have_rb && have_redis)); then
		echo "$RESP_CSV_HEADER" >"$OUT/$RESP_CSV"
		for c in $BENCH_RESP_COUNTS; do
			seq=resp-rb-c$c # the same name as ticketd's sequence and Redis's key
			wait_cluster || { fail "ticketd not ready before the RESP runs"; break; }
			resp_create "$(resp_port "$LEADER_ID")" "$seq" || continue
			for n in $BENCH_RESP_CLIENTS; do
				for p in $BENCH_RESP_PIPELINES; do
					for ((r = 1; r <= BENCH_RESP_ROUNDS; r++)); do
						wait_cluster || { fail "ticketd not ready before a RESP run"; continue; }
						tport=$(resp_port "$LEADER_ID")
						for sys in $(resp_order $((i + r - 1))); do
							case $sys in
							ticketd) resp_rb ticketd "$tport" "$seq" "$c" "$n" "$p" "$r" "${NODE_PID[@]}" || true ;;
							redis) resp_rb redis "${REDIS_ADDR#*:}" "$seq" "$c" "$n" "$p" "$r" "$REDIS_PID" || true ;;
							esac
						done
					done
					i=$((i + 1))
				done
			done
		done
	fi
	# The generator: one run per range size and number of clients (its
	# own fresh sequence or key), the two systems alternating.
	i=0
	for c in $BENCH_RESP_COUNTS; do
		for n in $BENCH_RESP_CLIENTS; do
			for sys in $(resp_order "$i"); do
				case $sys in
				ticketd)
					wait_cluster || { fail "ticketd not ready before the RESP load"; continue; }
					LOAD_PIDS=$(joined "${NODE_PID[@]}") GROUP_OVERRIDE=resp LOAD_CONCURRENCY=$n \
						load "ticketd-resp-n$n" ticketd-resp 3 "$c" "127.0.0.1:$(resp_port "$LEADER_ID")" --kind resp
					;;
				redis)
					((have_redis)) || continue
					LOAD_PIDS=$REDIS_PID GROUP_OVERRIDE=resp LOAD_CONCURRENCY=$n \
						load "redis-resp-n$n" redis-resp 1 "$c" "$REDIS_ADDR" --kind redis
					;;
				esac
			done
			i=$((i + 1))
		done
	done
	if [[ -n $REDIS_PID ]]; then
		stop_pid "$REDIS_PID"
		REDIS_PID=""
	fi
	rm -rf "$D/redis" # the peers section starts its Redis on an empty dir
}

# ---- Snowflake IDs made by the nodes (issue 32) -------------------------------

# start_redis_volatile: redis-server with persistence off, the peer of
# TICKETD.SNOWFLAKE (whose IDs touch no disk either).
start_redis_volatile() {
	mkdir -p "$D/redis-volatile"
	redis-server --bind 127.0.0.1 --port "${REDIS_ADDR#*:}" --dir "$D/redis-volatile" \
		--appendonly no --save "" --daemonize no \
		--logfile "$OUT/logs/redis-volatile.log" &
	REDIS_PID=$!
	wait_port "${REDIS_ADDR#*:}" 20 "$REDIS_PID"
}

# resp_serves_snowflake PORT: whether that RESP port knows TICKETD.SNOWFLAKE
# (any answer but "unknown command": the namespace asked for does not
# exist). Plain bash: redis-cli may not be installed.
resp_serves_snowflake() {
	local line
	# shellcheck disable=SC2016 # expanded by the inner bash
	line=$(timeout 5 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf "*3\r\n\$17\r\nTICKETD.SNOWFLAKE\r\n\$11\r\nbench-probe\r\n\$1\r\n1\r\n" >&3 && IFS= read -r -t 3 l <&3 && echo "$l"' _ "$1" 2>/dev/null) || true
	[[ -n $line && $line != "-ERR unknown command"* ]]
}

# ticketd_snowflake: on the running 3-node cluster, the load generator's
# --snowflake mode at each count of BENCH_SNOWFLAKE_COUNTS: the bare Echo
# handler (started here, the cluster idle), node n1 alone (its CPU alone)
# and all three nodes (worker i to node i%3, nothing forwarded); then the
# RESP front the same way beside redis-server without persistence. Every
# run has its own fresh namespace (created by the generator's setup); each
# node takes its worker-id lease on its first request, in the warm-up.
ticketd_snowflake() {
	local c sys n1 resp_ok=0 have_redis=0 resp_all="" id
	wait_cluster || { fail "ticketd not ready before the Snowflake runs"; return 1; }
	n1=${NODES[0]}
	"$BIN/ticketd-bench" baseline --addr "$BASELINE_ADDR" >"$OUT/logs/baseline-snowflake.log" 2>&1 &
	BASELINE_PID=$!
	if wait_port "${BASELINE_ADDR#*:}" 10 "$BASELINE_PID"; then
		for c in $BENCH_SNOWFLAKE_COUNTS; do
			LOAD_PIDS=$BASELINE_PID GROUP_OVERRIDE=snowflake LOAD_CONCURRENCY=$BENCH_SNOWFLAKE_CLIENTS \
				load echo-snowflake echo-snowflake 1 "$c" "http://$BASELINE_ADDR" --snowflake "sf-echo-c$c"
		done
	else
		fail "Snowflake: the baseline did not start"
	fi
	stop_pid "$BASELINE_PID"
	BASELINE_PID=""
	for c in $BENCH_SNOWFLAKE_COUNTS; do
		wait_cluster || { fail "ticketd not ready before a Snowflake run"; continue; }
		LOAD_PIDS=${NODE_PID[$n1]} GROUP_OVERRIDE=snowflake LOAD_CONCURRENCY=$BENCH_SNOWFLAKE_CLIENTS \
			load ticketd-snowflake ticketd-snowflake 3 "$c" "http://127.0.0.1:$((18080 + ${n1#n}))" --snowflake "sf-one-c$c"
		LOAD_PIDS=$(joined "${NODE_PID[@]}") GROUP_OVERRIDE=snowflake LOAD_CONCURRENCY=$BENCH_SNOWFLAKE_CLIENTS \
			load ticketd-snowflake-spread ticketd-snowflake-spread 3 "$c" "$ALL_URLS" --snowflake "sf-spread-c$c"
	done

	# The RESP half.
	if resp_serves_snowflake "$(resp_port "$n1")"; then
		resp_ok=1
	else
		local msg="Snowflake: this ticketd's RESP front does not serve TICKETD.SNOWFLAKE; its rows are left out"
		if [[ $SMOKE == 1 ]]; then log "$msg"; else fail "$msg"; fi
	fi
	if peer_present redis; then
		if start_redis_volatile; then
			have_redis=1
		else
			fail "Snowflake: redis-server did not start (see logs/redis-volatile.log)"
			stop_pid "$REDIS_PID"
			REDIS_PID=""
		fi
	elif [[ $SMOKE == 1 ]]; then
		log "Snowflake: redis-server not installed; no Redis rows"
	else
		fail "Snowflake: redis-server not installed; no Redis rows"
	fi
	for id in "${NODES[@]}"; do resp_all+="${resp_all:+,}127.0.0.1:$(resp_port "$id")"; done
	for c in $BENCH_SNOWFLAKE_COUNTS; do
		for sys in redis ticketd; do
			case $sys in
			redis)
				((have_redis)) || continue
				LOAD_PIDS=$REDIS_PID GROUP_OVERRIDE=snowflake LOAD_CONCURRENCY=$BENCH_SNOWFLAKE_CLIENTS \
					load redis-incr redis-incr 1 "$c" "$REDIS_ADDR" --kind redis
				;;
			ticketd)
				((resp_ok)) || continue
				wait_cluster || { fail "ticketd not ready before a Snowflake RESP run"; continue; }
				LOAD_PIDS=${NODE_PID[$n1]} GROUP_OVERRIDE=snowflake LOAD_CONCURRENCY=$BENCH_SNOWFLAKE_CLIENTS \
					load ticketd-snowflake-resp ticketd-snowflake-resp 3 "$c" "127.0.0.1:$(resp_port "$n1")" --kind resp \
					--snowflake "sf-resp-one-c$c" --snowflake-setup "$ALL_URLS"
				LOAD_PIDS=$(joined "${NODE_PID[@]}") GROUP_OVERRIDE=snowflake LOAD_CONCURRENCY=$BENCH_SNOWFLAKE_CLIENTS \
					load ticketd-snowflake-resp-spread ticketd-snowflake-resp-spread 3 "$c" "$resp_all" --kind resp \
					--snowflake "sf-resp-spread-c$c" --snowflake-setup "$ALL_URLS"
				;;
			esac
		done
	done
	if [[ -n $REDIS_PID ]]; then
		stop_pid "$REDIS_PID"
		REDIS_PID=""
	fi
	rm -rf "$D/redis-volatile"
}

# ---- leader leases (issue 44) ------------------------------------------------

# lease_supported: whether the built ticketd knows --lease-reads. (Not a
# pipe into grep -q: under pipefail the help's exit status would win.)
lease_supported() {
	local h
	h=$("$BIN/ticketd" serve --help 2>&1 || true)
	[[ $h == *--lease-reads* ]]
}

# lease_echo_start: the bare Echo handler in node n1's place (its address
# and, under leasebench, its network namespace: the same client path as the
# leader's), beside the running cluster, idle until lease_echo loads it.
lease_echo_start() {
	local ip
	ip=$(node_ip n1)
	# shellcheck disable=SC2046 # word splitting wanted: a command prefix
	$(node_netns n1) "$BIN/ticketd-bench" baseline --addr "$ip:18080" >>"$OUT/logs/baseline-lease.log" 2>&1 &
	BASELINE_PID=$!
	wait_port 18080 10 "$BASELINE_PID" "$ip"
}

# lease_echo SETTING WHEN COUNT: one load of the bare Echo handler at range
# size COUNT and BENCH_LEASE_CLIENTS, WHEN (before, after) the cluster's.
lease_echo() {
	local setting=$1 when=$2 c=$3
	[[ -n $BASELINE_PID ]] || return 0
	LOAD_PIDS=$BASELINE_PID GROUP_OVERRIDE=lease LOAD_CONCURRENCY=$BENCH_LEASE_CLIENTS \
		load "echo-$setting-$when" echo 1 "$c" "http://$(node_ip n1):18080"
}

# lease_redis_start: redis-server without persistence (--save ''
# --appendonly no), the peer of the RESP front's INCR, in n1's place.
lease_redis_start() {
	local ip
	ip=$(node_ip n1)
	mkdir -p "$D/redis-lease"
	# shellcheck disable=SC2046 # word splitting wanted: a command prefix
	# Off loopback (leasebench's namespace) Redis 7's protected mode would
	# refuse the generator: that address is private to this run.
	$(node_netns n1) redis-server --bind "$ip" --port "${REDIS_ADDR#*:}" --dir "$D/redis-lease" \
		${LEASEBENCH_NS:+--protected-mode no} --appendonly no --save "" --daemonize no --logfile "$OUT/logs/redis-lease.log" &
	REDIS_PID=$!
	wait_port "${REDIS_ADDR#*:}" 20 "$REDIS_PID" "$ip"
}

# lease_pass SETTING I: one fresh 3-node cluster, --lease-reads when SETTING
# is on, and its rows: HTTP through the leader at BENCH_LEASE_COUNTS x
# BENCH_LEASE_CLIENTS (system ticketd-probe or ticketd-lease), then the RESP
# front's INCRBY <seq> <count> at BENCH_LEASE_RESP_COUNTS, one run per
# number of clients, alternating with redis-server's in ABBA order from I;
# then its leader failovers (LEASE_FAILOVER_KILLS) and, with BENCH_PROFILE,
# a CPU profile of the leader. Echo runs alone first, before the cluster.
lease_pass() {
	local setting=$1 i=$2 sys=probe label=ticketd c n who
	if [[ $setting == on ]]; then
		sys=lease label=ticketd-lease
		LEASE_FLAGS="--lease-reads${BENCH_LEASE_FLAGS:+ $BENCH_LEASE_FLAGS}"
	else
		LEASE_FLAGS=""
	fi
	log "leases $setting: a fresh 3-node cluster${LEASE_FLAGS:+ with $LEASE_FLAGS}, the bare Echo handler beside it"
	if ! start_cluster 3; then
		fail "leases $setting: the cluster did not become ready"
		stop_ticketd
		return 1
	fi
	if [[ -n $BENCH_LEASE_COUNTS ]] && ! lease_echo_start; then
		fail "leases: the baseline did not start (see logs/baseline-lease.log)"
		stop_pid "$BASELINE_PID"
		BASELINE_PID=""
	fi
	# Echo just before and just after each of the cluster's loads: the peer
	# is their mean, which brackets the cluster's run in time. The machine
	# drifts by 20 % within a minute; a peer measured once, before the
	# cluster started, was up to 25 % off the one beside it.
	for c in $BENCH_LEASE_COUNTS; do
		lease_echo "$setting" before "$c"
		wait_cluster || { fail "leases $setting: not ready before count $c"; continue; }
		LOAD_PIDS=$(joined "${NODE_PID[@]}") GROUP_OVERRIDE=lease LOAD_CONCURRENCY=$BENCH_LEASE_CLIENTS \
			load "$label" "ticketd-$sys" 3 "$c" "http://$LEADER_ADDR"
		lease_echo "$setting" after "$c"
	done
	stop_pid "$BASELINE_PID"
	BASELINE_PID=""
	for c in $BENCH_LEASE_RESP_COUNTS; do
		for n in $BENCH_LEASE_RESP_CLIENTS; do
			for who in $(resp_order "$i"); do
				case $who in
				ticketd)
					wait_cluster || { fail "leases $setting: not ready before the RESP load"; continue; }
					LOAD_PIDS=$(joined "${NODE_PID[@]}") GROUP_OVERRIDE=lease LOAD_CONCURRENCY=$n \
						load "ticketd-resp-$sys-n$n" "ticketd-resp-$sys" 3 "$c" "$(node_ip "$LEADER_ID"):$(resp_port "$LEADER_ID")" --kind resp ${LEASEBENCH_NET:+--allow-net "$LEASEBENCH_NET"}
					;;
				redis)
					[[ -n $REDIS_PID ]] || continue
					LOAD_PIDS=$REDIS_PID GROUP_OVERRIDE=lease LOAD_CONCURRENCY=$n \
						load "redis-incr-$setting-n$n" redis-incr 1 "$c" "$(node_ip n1):${REDIS_ADDR#*:}" --kind redis ${LEASEBENCH_NET:+--allow-net "$LEASEBENCH_NET"}
					;;
				esac
			done
			i=$((i + 1))
		done
	done
	if [[ $BENCH_PROFILE == 1 ]]; then
		wait_cluster && profile_ticketd 64 "-lease-$setting"
	fi
	if ((LEASE_FAILOVER_KILLS > 0)); then
		FAILOVER_KILLS=$LEASE_FAILOVER_KILLS ticketd_failover "ticketd-$sys" || true
	fi
	stop_ticketd
	LEASE_FLAGS=""
}

# ticketd_leases: leader leases on and off side by side (issue 44), one
# lease_pass per setting of BENCH_LEASES, beside the bare Echo handler and
# redis-server without persistence (group "lease" of the report).
ticketd_leases() {
	local setting i=0 settings=""
	for setting in $BENCH_LEASES; do
		case $setting in
		off) settings+=" off" ;;
		on)
			if lease_supported; then
				settings+=" on"
			elif [[ $SMOKE == 1 ]]; then
				log "leases: this ticketd has no --lease-reads; the lease rows are left out"
			else
				fail "leases: this ticketd has no --lease-reads; the lease rows are left out"
			fi
			;;
		*) fail "BENCH_LEASES: unknown setting $setting (want off, on)" ;;
		esac
	done
	[[ -n $settings ]] || return 0
	if [[ -n $BENCH_LEASE_RESP_COUNTS ]]; then
		if ! peer_present redis; then
			if [[ $SMOKE == 1 ]]; then log "leases: redis-server not installed; no redis-incr rows"; else fail "leases: redis-server not installed; no redis-incr rows"; fi
		elif ! lease_redis_start; then
			fail "leases: redis-server did not start (see logs/redis-lease.log)"
			stop_pid "$REDIS_PID"
			REDIS_PID=""
		fi
	fi
	PPROF_FLAG=""
	if [[ $BENCH_PROFILE == 1 ]]; then PPROF_FLAG=--pprof; fi
	for setting in $settings; do
		lease_pass "$setting" "$i" || true
		i=$((i + 1))
	done
	PPROF_FLAG=""
	if [[ -n $REDIS_PID ]]; then
		stop_pid "$REDIS_PID"
		REDIS_PID=""
	fi
	rm -rf "$D/redis-lease"
}

# ---- run --------------------------------------------------------------------

log "building into $BIN"
(cd "$ROOT" && go build -ldflags "$(scripts/version-ldflags.sh)" -o "$BIN/ticketd" ./cmd/ticketd && go build -o "$BIN/ticketd-bench" ./cmd/ticketd-bench)
# pprof is built here, not run as `go tool pprof`: that builds it on first use,
# which took longer than the load it was meant to profile (the profile then
# caught an idle leader).
if [[ $BENCH_PROFILE == 1 ]]; then
	go build -o "$BIN/pprof" cmd/pprof
fi

ports=(18081 18082 18083 18091 18092 18093 18371 18372 18373)
[[ $BENCH_TICKETD == 1 && ($BENCH_MAIN == 1 || $BENCH_SNOWFLAKE == 1 || $BENCH_LEASE == 1) ]] && ports+=(18080) # the baseline
[[ $BENCH_TICKETD == 1 && $BENCH_LEASE == 1 && -n $BENCH_LEASE_RESP_COUNTS ]] && ports+=(18301)
[[ $BENCH_SCALING == 1 ]] && ports+=(18084 18085 18094 18095 18374 18375)
[[ ($BENCH_RESP == 1 || $BENCH_SNOWFLAKE == 1) && $BENCH_TICKETD == 1 && " $BENCH_PEERS " != *" redis "* ]] && ports+=(18301)
[[ " $BENCH_PEERS " == *" etcd "* ]] && ports+=(18201 18202 18203 18211 18212 18213)
[[ " $BENCH_PEERS " == *" redis "* ]] && ports+=(18301)
[[ " $BENCH_PEERS " == *" postgres "* ]] && ports+=("$PG_PORT")
[[ " $BENCH_PEERS " == *" mariadb "* ]] && ports+=("$MYSQL_PORT")
for port in "${ports[@]}"; do
	if port_busy "$port"; then
		log "127.0.0.1:$port is already in use; stop whatever holds it first"
		exit 1
	fi
done

# Other engineers' test runs share this machine: wait (bounded) for them.
busy() { pgrep -fa "go test|ticketd serve|jepsen" | grep -v -e pgrep -e "$$" || true; }
if ((QUIET_WAIT > 0)); then
	for ((i = 0; i < QUIET_WAIT / 10; i++)); do
		[[ -z $(busy) ]] && break
		((i % 6 == 0)) && log "waiting for other runs to finish (up to ${QUIET_WAIT}s): $(busy | head -n 3 | cut -c1-120 | tr '\n' ';')"
		sleep 10
	done
fi

{
	echo "date: $(date -Iseconds)"
	echo "command: ${BENCH_ONLY:+BENCH_ONLY=$BENCH_ONLY }scripts/bench.sh $* ($MODE run)"
	echo "host: $(uname -srm)"
	echo "cpus: $(nproc)  memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
	echo "cpu: $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
	echo "go: $(go version)"
	echo "commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (+ uncommitted changes)')"
	echo "settings: duration=$BENCH_DURATION warmup=$BENCH_WARMUP concurrency=$BENCH_CONCURRENCY range sizes=$BENCH_COUNTS peers=${BENCH_PEERS:-none}"
	[[ $BENCH_TICKETD == 1 && $BENCH_MANYSEQ == 1 ]] && echo "many sequences: ${BENCH_MANYSEQ_COUNTS// /, } at concurrency $BENCH_MANYSEQ_CONCURRENCY, range size 1000"
	[[ $BENCH_TICKETD == 1 && $BENCH_RESP == 1 ]] && echo "resp: range sizes ${BENCH_RESP_COUNTS// /, }, clients ${BENCH_RESP_CLIENTS// /, }, redis-benchmark pipelines ${BENCH_RESP_PIPELINES// /, }, ~${BENCH_RESP_SECONDS}s per redis-benchmark run"
	[[ $BENCH_TICKETD == 1 && $BENCH_SNOWFLAKE == 1 ]] && echo "snowflake: IDs a request ${BENCH_SNOWFLAKE_COUNTS// /, }, clients $BENCH_SNOWFLAKE_CLIENTS"
	[[ $BENCH_TICKETD == 1 && $BENCH_LEASE == 1 ]] && echo "lease: settings ${BENCH_LEASES// /, }; HTTP range sizes ${BENCH_LEASE_COUNTS// /, } at clients $BENCH_LEASE_CLIENTS; RESP INCRBY count ${BENCH_LEASE_RESP_COUNTS:-none} at clients ${BENCH_LEASE_RESP_CLIENTS// /, }; failover kills $LEASE_FAILOVER_KILLS per setting${BENCH_LEASE_FLAGS:+; extra flags $BENCH_LEASE_FLAGS}"
	if [[ -n ${LEASEBENCH_NS:-} ]]; then
		echo "network: leasebench, each node in a network namespace of its own ($LEASEBENCH_IPS on a bridge); packets between node addresses held ${LEASEBENCH_DELAY:-0s} each way; clients, Echo and redis-server undelayed"
	else
		echo "network: loopback"
	fi
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "other runs at start: $(busy | wc -l)$(busy | head -n 3 | cut -c1-100 | sed 's/^/\n  /' | tr -d '\r')"
	for p in etcd redis-server redis-benchmark mariadbd; do
		command -v "$p" >/dev/null && echo "$p: $("$p" --version 2>&1 | head -n1)"
	done
	[[ -n $(initdb_bin) ]] && echo "postgres: $("$(dirname "$(initdb_bin)")/postgres" --version)"
} >"$OUT/env.txt"
cat "$OUT/env.txt" >&2

if [[ -n $BENCH_PEERS ]]; then
	install_peers
	ensure_bench_user
	chmod 755 "$WORK" "$D" # the bench user must reach its data dirs
elif [[ ($BENCH_RESP == 1 || $BENCH_SNOWFLAKE == 1 || ($BENCH_LEASE == 1 && -n $BENCH_LEASE_RESP_COUNTS)) && $BENCH_TICKETD == 1 ]]; then
	install_peers # redis-server (and redis-tools for the RESP section)
fi

if [[ $BENCH_TICKETD == 1 ]]; then
	# Baseline first, alone.
	if [[ $BENCH_MAIN == 1 ]]; then
		"$BIN/ticketd-bench" baseline --addr "$BASELINE_ADDR" >"$OUT/logs/baseline.log" 2>&1 &
		BASELINE_PID=$!
		if wait_port 18080 10 "$BASELINE_PID"; then
			LOAD_PIDS=$BASELINE_PID
			for c in $BENCH_COUNTS; do load echo echo 1 "$c" "http://$BASELINE_ADDR"; done
		else
			fail "baseline did not start"
		fi
		stop_pid "$BASELINE_PID"
		BASELINE_PID=""
	fi

	# ticketd, 3 nodes (not when only the lease section runs: it starts
	# its own clusters).
	PPROF_FLAG=""
	if [[ $BENCH_PROFILE == 1 ]]; then PPROF_FLAG=--pprof; fi
	if [[ $BENCH_MAIN == 1 || $BENCH_SCALING == 1 || $BENCH_MANYSEQ == 1 || $BENCH_RESP == 1 || $BENCH_SNOWFLAKE == 1 ||
		($BENCH_PROFILE == 1 && $BENCH_LEASE == 0) || $FAILOVER_KILLS -gt 0 || $BENCH_SDK == 1 ]]; then
		start_cluster 3
	fi
	if [[ $BENCH_MAIN == 1 ]]; then
		for c in $BENCH_COUNTS; do
			wait_cluster
			LOAD_PIDS=$(joined "${NODE_PID[@]}")
			load ticketd ticketd 3 "$c" "http://$LEADER_ADDR"
			# Round-robin over every node: two thirds of the workers hit followers,
			# which forward every request to the leader...
			load ticketd-any ticketd-any 3 "$c" "$ALL_URLS" --follow-leader=false
			# ...or, as the SDK does, move to the leader the follower names.
			load ticketd-follow ticketd-follow 3 "$c" "$ALL_URLS" --follow-leader=true
		done
	fi
	if [[ $BENCH_SCALING == 1 ]]; then
		wait_cluster
		LOAD_PIDS=$(joined "${NODE_PID[@]}")
		GROUP_OVERRIDE=range load ticketd ticketd 3 100000 "http://$LEADER_ADDR"
	fi
	if [[ $BENCH_MANYSEQ == 1 ]]; then ticketd_manyseq || true; fi
	if [[ $BENCH_RESP == 1 ]]; then ticketd_resp || true; fi
	if [[ $BENCH_SNOWFLAKE == 1 ]]; then ticketd_snowflake || true; fi
	if [[ $BENCH_PROFILE == 1 && ${#NODE_PID[@]} -gt 0 ]]; then
		wait_cluster
		profile_ticketd 16
		profile_ticketd 64
	fi
	if [[ $FAILOVER_KILLS -gt 0 ]]; then ticketd_failover || true; fi
	if [[ $BENCH_SDK == 1 ]]; then ticketd_sdk || true; fi
	stop_ticketd
	PPROF_FLAG=""
	if [[ $BENCH_LEASE == 1 ]]; then ticketd_leases || true; fi

	if [[ $BENCH_SCALING == 1 ]]; then
		for n in 5 1; do
			start_cluster "$n"
			LOAD_PIDS=$(joined "${NODE_PID[@]}")
			GROUP_OVERRIDE=nodes load "ticketd-$n" ticketd "$n" 1000 "http://$LEADER_ADDR"
			stop_ticketd
		done
	fi
fi

for p in $BENCH_PEERS; do run_peer "$p"; done

if [[ $BENCH_MICRO == 1 ]]; then
	log "micro-benchmarks: go test -run XXX -bench . -count 6 ./fsm/ ./issuer/ ./httpapi/ ./cmd/ticketd-bench/ (a few minutes)"
	if (cd "$ROOT" && timeout --foreground -k 10 1500 go test -run XXX -bench . -count 6 ./fsm/ ./issuer/ ./httpapi/ ./cmd/ticketd-bench/) >"$OUT/micro.txt" 2>&1; then
		BENCHSTAT=$(command -v benchstat || echo "$(go env GOPATH)/bin/benchstat")
		if [[ ! -x $BENCHSTAT ]]; then
			log "installing benchstat (go install golang.org/x/perf/cmd/benchstat@latest)"
			timeout --foreground -k 5 300 go install golang.org/x/perf/cmd/benchstat@latest >"$OUT/logs/benchstat-install.log" 2>&1 || true
		fi
		if [[ -x $BENCHSTAT ]]; then (cd "$OUT" && "$BENCHSTAT" micro.txt) >"$OUT/micro-benchstat.txt" 2>&1 || true; fi
	else
		fail "micro-benchmarks (see $OUT/micro.txt)"
	fi
fi

{
	echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "other runs at end: $(busy | wc -l)"
	echo "finished: $(date -Iseconds)"
} >>"$OUT/env.txt"
echo
strict=()
[[ $SMOKE == 1 ]] && strict=(--strict)
if ! "$BIN/ticketd-bench" report --dir "$OUT" "${strict[@]}"; then
	STATUS=1
fi
if [[ -s $OUT/profile-top-c64.txt ]]; then
	echo
	echo "=== CPU profile of the leader at concurrency 64 ($OUT/profile-top-c64.txt)"
	sed -n '1,25p' "$OUT/profile-top-c64.txt"
fi
if [[ -s $OUT/micro-benchstat.txt ]]; then
	echo
	echo "=== micro-benchmarks ($OUT/micro-benchstat.txt)"
	cat "$OUT/micro-benchstat.txt"
fi
if [[ -s $OUT/failures.txt ]]; then
	echo
	cat "$OUT/failures.txt"
fi
exit "$STATUS"
