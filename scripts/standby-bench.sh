#!/usr/bin/env bash
# standby-bench.sh: what the disaster-recovery standby costs the primary
# (issue #34). In one run, alternated (a, b, c, a, b, c) so that the drift of
# a shared machine hits each alike, a fresh 3-node ticketd cluster of the
# built binary (--dev, fsync on) is loaded through its leader by
# `ticketd-bench load` (range size 1000, 16 and 64 clients, 2 s warm-up +
# 6 s measured per level: more short rounds rather than fewer long ones, as
# runs next to each other differ by up to 30% on this shared 2-core VM) with
#   (a) no standby,
#   (b) a standby on loopback (serve --join ... --standby),
#   (c) a standby in a network namespace of its own whose every packet sent
#       is held STANDBY_DELAY (20ms) by the fault suite's NFQUEUE delayer
#       (jepsen/netfault: this kernel has no sch_netem), so each round trip
#       primary<->standby, and nothing else, grows by it.
# A standby run counts only if the leader recorded the standby in sync before
# the load and still after, never out of sync. The target: (c) at ≥ 0.9× (a).
# The driver is jepsen/cmd/standbybench (its doc says more); the results are
# in bench/standby.md.
#
#   flock /tmp/ticketd-heavy.lock scripts/standby-bench.sh
#
# Needs root (namespaces, iptables). About 4 minutes; bounded at 7.
# Environment (optional): OUT=bench-results/<timestamp>-standby,
# STANDBY_ROUNDS=4, STANDBY_DELAY=20ms, STANDBY_DURATION=6s,
# STANDBY_WARMUP=2s, STANDBY_CONCURRENCY=16,64, STANDBY_TIMEOUT=420 (s),
# STANDBY_CONFIGS=a,b,c (add d: as c with the delayer holding 0 s, which
# tells the delayer's own CPU cost from the delay's).
# Outputs in $OUT: summary.md (the tables), summary.json, and per run
# run<round>-<config>/ with load.json, load.txt, the leader's /metrics and
# every node's log.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$root/bench-results/$(date -u +%Y%m%dT%H%M%SZ)-standby}
BIN=$(mktemp -d /tmp/standby-bench-bin.XXXXXX)
trap 'rm -rf "$BIN"' EXIT

log() { echo "$(date -u +%H:%M:%S) standby-bench: $*" >&2; }

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

log "building ticketd, ticketd-bench and standbybench into $BIN"
(cd "$root" && go build -ldflags "$(scripts/version-ldflags.sh)" -o "$BIN/ticketd" ./cmd/ticketd)
(cd "$root/cmd/ticketd-bench" && go build -o "$BIN/ticketd-bench" .)
(cd "$root/jepsen" && go build -o "$BIN/standbybench" ./cmd/standbybench)

mkdir -p "$OUT"
log "results in $OUT"
# timeout sends SIGTERM: standbybench stops its nodes and removes its
# namespace on the way out (and its nodes die with it: Pdeathsig).
timeout -k 15 "${STANDBY_TIMEOUT:-420}" "$BIN/standbybench" \
	--ticketd "$BIN/ticketd" --bench "$BIN/ticketd-bench" --out "$OUT" \
	--configs "${STANDBY_CONFIGS:-a,b,c}" --rounds "${STANDBY_ROUNDS:-4}" --delay "${STANDBY_DELAY:-20ms}" \
	--concurrency "${STANDBY_CONCURRENCY:-16,64}" \
	--duration "${STANDBY_DURATION:-6s}" --warmup "${STANDBY_WARMUP:-2s}"
