#!/usr/bin/env bash
# Shows that the suite catches each planted bug (the server's
# --unsafe-fault switches, built with -tags ticketd_faults): one run per
# fault, with the nemeses that make it bite, stopped at the first violation.
# A fault counts as caught when the run exits 1 (invalid) within the bound.
#   scripts/jepsen-faults.sh                       # all twenty-one
#   scripts/jepsen-faults.sh skip-verify keep-blocks
#   JEPSEN_FAULT_LIMIT=5m scripts/jepsen-faults.sh skip-barrier
# Exit status: 0 if every fault run was caught, 1 otherwise.
set -euo pipefail
# shellcheck source=scripts/jepsen-lib.sh
source "$(dirname "$0")/jepsen-lib.sh"
jepsen_require_root
faults=("$@")
(( ${#faults[@]} )) || faults=(serve-uncommitted skip-verify keep-blocks raise-no-cut raise-cut-by-caller skip-barrier
  restore-skip-empty-check reuse-lease-tokens skip-acquire-idempotency lease-wall-clock-expiry
  grouped-blocks-ignore-level snowflake-serve-after-lease snowflake-ignore-floor promote-without-advance
  standby-trust-receipt promoted-refuse-recorded-only promote-keeps-leases
  lease-forget-promise lease-serve-past-expiry lease-kept-across-transfer lease-clock-drift)
limit=${JEPSEN_FAULT_LIMIT:-3m}
jepsen_build
cd "$jepsen_root"
dir=${JEPSEN_OUT:-jepsen-results/faults-$(date +%Y%m%dT%H%M%S)}
mkdir -p "$dir"
common=(--nodes 3 --stop-on-violation --time-limit "$limit" --quiet 1s --final-workload 2s)
failed=0
for f in "${faults[@]}"; do
  case $f in
    # A range served before its entry commits. Reads give it away at once:
    # `next` (the replicated high-water mark) lies at or below a range
    # already acknowledged. The duplicate itself needs a leader to die in the
    # few milliseconds between acknowledging such a range and its entry
    # reaching a follower: kill-leader makes it happen, but only now and then
    # (see jepsen/README.md); JEPSEN_SU_DUPLICATES=1 hunts for it alone.
    serve-uncommitted)
      prof=(--nemesis kill-leader --fault-min 1s --fault-max 2s)
      [[ -n ${JEPSEN_SU_DUPLICATES:-} ]] && prof=(--nemesis kill-leader --readers 0 --rw-workers 0 --fault-min 300ms --fault-max 600ms) ;;
    # No quorum check: a leader resumed after SIGSTOP serves from its old
    # blocks before it learns it was deposed.
    skip-verify) prof=(--nemesis pause-leader --fault-min 2s --fault-max 3s) ;;
    # Blocks kept across leaderships: leadership moves away and back to the
    # same process, which serves IDs below what its successor handed out.
    keep-blocks) prof=(--nemesis leader-bounce --fault-min 2s --fault-max 3s) ;;
    # A raise moves the state machine's mark but the leader keeps the IDs
    # it holds below the raised value and serves them after the raise has
    # returned. Raises aimed a little above the highest acknowledged ID
    # land in the leader's block; no nemesis is needed.
    raise-no-cut) prof=(--nemesis none --raise-workers 2) ;;
    # The leader is cut only once the raise's Apply returned to its
    # handler: a raise whose caller hung up first still commits, applies
    # and moves the mark, but the leader keeps serving the IDs it holds
    # below it. The raise workers abandon one raise in three, mostly aimed
    # just above the mark, and read the sequence again; the audit (read
    # every 2 s) shows which abandoned raises applied. No nemesis needed.
    raise-cut-by-caller) prof=(--nemesis none --raise-workers 2) ;;
    # No Barrier after an election: blocks are still granted in log order,
    # so no range is duplicated; what breaks is a read right after a
    # failover, served before the new leader applied its predecessor's last
    # commits. Read-after-write workers retry reads every 2 ms across the
    # failover to be the first the new leader serves.
    skip-barrier) prof=(--nemesis kill-leader --workers 2 --small-workers 2 --readers 2 --rw-workers 6 --fault-min 1s --fault-max 1s) ;;
    # A restore applies onto a cluster that is not empty, replacing its
    # state. The migration (2 s into the run) restores a backup into a
    # fresh cluster, reserves on it, then sends the same backup again: it
    # must be refused (409); accepted, the marks fall back and the IDs the
    # restored cluster issued since the first restore are issued again.
    restore-skip-empty-check) prof=(--nemesis none --migration-at 2s) ;;
    # Lease tokens are the grant's log index: they restart low on a
    # restored cluster, below tokens the main cluster granted before the
    # backup. The migration's lease workers on the restored cluster show it.
    reuse-lease-tokens) prof=(--nemesis none --migration-at 5s) ;;
    # A retried acquire with the same request id gets a second worker id.
    # The lease workers resend half of their successful acquires with the
    # same request id at once; no nemesis is needed.
    skip-acquire-idempotency) prof=(--nemesis none) ;;
    # Lease expiry decided by wall-clock stamps again (before issue #18):
    # the clock nemesis steps the leader's wall clock forward past a TTL
    # plus recycle delay, the next entry it stamps makes every lease look
    # expired, and the next acquires get worker ids that are still held.
    # Six raw lease workers holding each lease up to 2 s keep several ids
    # held at any moment; the Snowflake generators run beside them. Steps
    # of 10 s to 2 min only: the cluster's lease stamps never go back, so
    # after a step of hours only a still larger one could bite again; after
    # these, real time catches up within the run.
    lease-wall-clock-expiry) prof=(--nemesis clock --clock-steps 10s,30s,2m --lease-workers 6 --lease-hold 2s --snowflake-workers 2 --fault-min 2s --fault-max 3s) ;;
    # The leader proposes grouped block entries (type 11) whatever the
    # cluster's feature level. An upgrade run (five nodes of the release
    # jepsen/upgrade-from names, replaced one at a time) under the
    # many-sequences load: as soon as a node of the new binary leads while
    # an older one follows, the older one stops on an entry of a type it
    # does not know, and the upgrade check reports it. No nemesis needed.
    grouped-blocks-ignore-level) prof=(--nodes 5 --upgrade --nemesis none --many-workers 12) ;;
    # A node keeps making Snowflake IDs past its lease's deadline. The
    # leader cut off from its peers for longer than the TTL plus the recycle
    # delay (3 s + 6 s) cannot renew; clients still reach it. Its worker id
    # ends and rests on the majority's side, then raw lease workers on the
    # same namespace take it (4 worker ids for 3 nodes: a free id is taken
    # at once), while the old node still serves under it.
    snowflake-serve-after-lease) prof=(--nemesis partition-leader --fault-min 11s --fault-max 14s
      --server-snowflake-workers 4 --server-snowflake-max-workers 4 --server-snowflake-lease-workers 2) ;;
    # A node's new lease of a worker id ignores the id's timestamp floor.
    # The clock nemesis steps a node forward by minutes: its generator drops
    # its lease (the clock passed the deadline) and takes another, making
    # IDs minutes ahead; a kill or the step back ends that lease too. When
    # that worker id goes to a node whose clock reads the true time, its
    # IDs land below the old tenure's. 4 worker ids for 3 nodes, so that
    # ids are reused within the minutes the step is ahead.
    snowflake-ignore-floor) prof=(--nemesis clock,kill-random --clock-steps 30s,2m,10m --fault-min 2s --fault-max 3s
      --server-snowflake-workers 4 --server-snowflake-max-workers 4) ;;
    # ticketd promote raises no mark (a bug of the promote command, not of
    # the nodes: the harness passes it to promote only). A DR run: a
    # standby follows the primary under kills and partitions; the disaster
    # comes while the standby is cut off and its leader has recorded it out
    # of sync, the primary serving on for 2 s; then every primary node is
    # SIGKILLed, the standby promoted and started alone. It hands out again
    # what the primary served past it: duplicates within a second of its
    # first answer. (Lost while in sync, the gap is at most the block in
    # flight, usually none: that run is valid even with the plant.)
    promote-without-advance) prof=(--dr --dr-disaster out-of-sync --time-limit 40s --dr-after 10s --nemesis kill-leader,partition-leader,pause-leader
      --fault-min 2s --fault-max 3s --many-workers 4) ;;
    # The standby stamps a certificate with the time it read it, as the
    # rule before issue 42 did with standby-contact. A DR run whose
    # disaster pauses the standby (SIGSTOP) until its leader records it
    # out of sync, lets the primary serve two bounds (--dr-large 2) past
    # it, kills the primary and only then resumes the standby: it reads
    # the certificate queued in its socket and stamps it after the loss.
    # promote trusts its in-sync record for the time of the kill, and the
    # promoted node hands out again what the primary served past the bound.
    standby-trust-receipt) prof=(--dr --dr-disaster paused --dr-large 2 --time-limit 40s --dr-after 10s
      --nemesis kill-leader,partition-leader,pause-leader --fault-min 2s --fault-max 3s --many-workers 4) ;;
    # The promoted node refuses only the servers its promotion recorded
    # (the rule before issue 42). A DR run whose disaster cuts the standby
    # off, waits until its leader records it out of sync and has a new
    # voter join the primary; after the promotion the old region comes back
    # with that voter leading (the others campaign ten times slower). The
    # promoted node follows it instead of refusing it: no fence, the old
    # region serves, the promoted node's own history is cut back.
    promoted-refuse-recorded-only) prof=(--dr --dr-disaster joined --time-limit 40s --dr-after 10s
      --nemesis kill-leader,partition-leader,pause-leader --fault-min 2s --fault-max 3s --many-workers 4) ;;
    # ticketd promote --advance keeps the leases the standby holds and
    # rests no namespace (the rule before issue 42). A DR run whose
    # disaster cuts the standby off and at once has every Snowflake
    # generator take a new lease (6 s leases in a DR run), which the
    # standby never hears of; the primary serves on for 2 s and is killed,
    # and its generators go on issuing until their leases end. The
    # promoted node grants those worker ids at once to the promoted
    # region's generators: two tenures of one worker id at the same time,
    # and IDs issued twice.
    promote-keeps-leases) prof=(--dr --dr-disaster leases --time-limit 50s --dr-after 25s
      --nemesis kill-leader,partition-leader,pause-leader --fault-min 2s --fault-max 3s --many-workers 4) ;;
    # The four leader-lease bugs (issue 44) run with --lease-reads. A
    # restarted voter does not keep its lease promise and votes at once.
    # restart-promised pauses the leader, kills and restarts every follower
    # (each answered a lease probe within D/3) and resumes the leader 0.4 D
    # later: the forgetful followers elect one of themselves, which serves
    # while the resumed leader still serves from its lease (at least ~0.57 D
    # left). D = 4 s leaves the new leader 1.6 s to be elected and serve.
    lease-forget-promise) prof=(--lease-reads --lease-duration 4s --nemesis restart-promised) ;;
    # The leader ignores its lease's expiry. pause-leader-lease stops it
    # for 0.5 D to D + 4 election timeouts (1-3.2 s): past D plus an
    # election a new leader serves, and the resumed leader answers the
    # requests waiting in its sockets from its expired lease.
    lease-serve-past-expiry) prof=(--lease-reads --nemesis pause-leader-lease) ;;
    # The leader's lease clock runs at 0.25 of real time, beyond the drift
    # bound: a 1.8 s lease lasts 7.2 s. The same pauses: one that outlives
    # the followers' promises ends inside what the leader believes is its
    # lease.
    lease-clock-drift) prof=(--lease-reads --nemesis pause-leader-lease) ;;
    # The leader keeps its lease after handing leadership away.
    # transfer-under-load moves leadership by the API while the
    # transferee's packets to the old leader are delayed 20-50 ms: the new
    # leader serves, and the old one, not yet told of the new term, serves
    # from its kept lease.
    lease-kept-across-transfer) prof=(--lease-reads --nemesis transfer-under-load) ;;
    *) echo "unknown fault $f" >&2; exit 2 ;;
  esac
  JEPSEN_WAIT_IDLE=${JEPSEN_WAIT_IDLE:-300} jepsen_wait_idle
  echo "=== $f: ${prof[*]}"
  set +e
  build/jepsen/jepsen "${common[@]}" "${prof[@]}" --fault "$f" --out "$dir/$f" > "$dir/$f.log" 2>&1
  code=$?
  set -e
  tail -n 4 "$dir/$f.log"
  det=$(grep -o '"detected_at_ms": [0-9.]*' "$dir/$f/results.json" 2>/dev/null | awk '{print $2/1000 " s"}' || true)
  first=$(grep -o '"first_violation_ms": [0-9.]*' "$dir/$f/results.json" 2>/dev/null | awk '{print $2/1000 " s"}' || true)
  # A DR run's time to catch counts from the promoted node's first answer.
  catch=$(grep -o '"time_to_catch_ms": [0-9.]*' "$dir/$f/results.json" 2>/dev/null | awk '{print ", time to catch " $2/1000 " s after the promoted node served"}' || true)
  if [[ $code == 1 ]]; then
    printf '%-24s CAUGHT  first violation at %s, run stopped at %s%s\n' "$f" "${first:-?}" "${det:-?}" "$catch" | tee -a "$dir/summary.txt"
  else
    printf '%-24s NOT CAUGHT within %s (exit %s)\n' "$f" "$limit" "$code" | tee -a "$dir/summary.txt"
    failed=1
  fi
done
echo "summary: $dir/summary.txt"
exit "$failed"
