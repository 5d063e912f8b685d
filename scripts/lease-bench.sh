#!/usr/bin/env bash
# lease-bench.sh: leader leases on and off with a delay between the nodes
# (issue 44's "2 ms between the nodes" rows). bench.sh's lease section
# (BENCH_ONLY=lease: per setting of BENCH_LEASES, the bare Echo handler
# alone, then a fresh 3-node cluster, --lease-reads on every node when on,
# through its leader over HTTP and the Redis-protocol front beside
# redis-server without persistence) runs under jepsen/cmd/leasebench, which
# puts each node in a network namespace of its own on a host bridge and
# holds every packet a node sends to another node's address LEASE_DELAY
# (2ms) with the fault suite's NFQUEUE delayer (this kernel has no
# sch_netem): each round trip between nodes grows by twice that, nothing
# between the load generator and a node does, and the Echo handler and
# redis-server run in node n1's namespace, on the same undelayed client
# path as the leader. The loopback half of the table is plain bench.sh:
#
#   flock /tmp/ticketd-heavy.lock env BENCH_ONLY=lease scripts/bench.sh   # loopback (~6 min)
#   flock /tmp/ticketd-heavy.lock scripts/lease-bench.sh                  # 2 ms between nodes (~5 min)
#
# Needs root (namespaces, iptables, NFQUEUE). Environment (optional):
# OUT=bench-results/<timestamp>-lease-<delay>, LEASE_DELAY=2ms (0s: the
# namespaces without a delayer), LEASE_TIMEOUT=540 (s); bench.sh's own
# knobs pass through (BENCH_LEASES, BENCH_LEASE_*, BENCH_DURATION=6s and
# BENCH_WARMUP=2s here, LEASE_FAILOVER_KILLS=1 here, BENCH_PROFILE).
# Results: bench.sh's, in $OUT (results.md has the lease table; env.txt's
# "network:" line and the targets name the delay).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
delay=${LEASE_DELAY:-2ms}
OUT=${OUT:-$root/bench-results/$(date +%Y%m%d-%H%M%S)-lease-$delay}
BIN=$(mktemp -d /tmp/lease-bench-bin.XXXXXX)
trap 'rm -rf "$BIN"' EXIT

log() { echo "$(date -u +%H:%M:%S) lease-bench: $*" >&2; }

if [[ $(id -u) != 0 ]]; then
	log "must run as root (network namespaces, iptables)"
	exit 2
fi
for tool in ip iptables; do
	command -v "$tool" >/dev/null || {
		log "$tool is missing: apt-get install -y iproute2 iptables"
		exit 2
	}
done

log "building leasebench into $BIN"
(cd "$root/jepsen" && go build -o "$BIN/leasebench" ./cmd/leasebench)
log "results in $OUT"
# timeout sends SIGTERM: leasebench passes it to bench.sh (which stops
# what it started), then removes its namespaces, bridge and rules.
timeout -k 30 "${LEASE_TIMEOUT:-540}" "$BIN/leasebench" --delay "$delay" -- \
	env OUT="$OUT" BENCH_ONLY=lease BENCH_DURATION="${BENCH_DURATION:-6s}" BENCH_WARMUP="${BENCH_WARMUP:-2s}" \
	LEASE_FAILOVER_KILLS="${LEASE_FAILOVER_KILLS:-1}" QUIET_WAIT="${QUIET_WAIT:-60}" \
	"$root/scripts/bench.sh"
