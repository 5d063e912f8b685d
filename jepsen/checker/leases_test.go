package checker

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// acq is an acquire of request id req answered ok with worker w, token tok
// over [inv, cmp] ms; the lease expires ttl ms after wall 1e6+inv.
func acq(idx int64, cluster, ns, req string, inv, cmp float64, w int64, tok uint64) Op {
	wall := int64(1_000_000) + int64(inv)
	return Op{Type: "op", Index: idx, F: FAcquire, Cluster: cluster, Seq: ns, RequestID: req,
		Invoke: int64(inv * float64(msNs)), Complete: int64(cmp * float64(msNs)), Outcome: OK,
		LeaseWorker: &w, Token: tok, WallMs: wall, ExpiresMs: wall + 3000}
}

func unknownAcq(idx int64, ns, req string, inv, cmp float64) Op {
	return Op{Type: "op", Index: idx, F: FAcquire, Seq: ns, RequestID: req,
		Invoke: int64(inv * float64(msNs)), Complete: int64(cmp * float64(msNs)), Outcome: Unknown, WallMs: 1_000_000 + int64(inv)}
}

func resend(o Op, inv, cmp float64, w int64, tok uint64) Op {
	o.Resend = true
	o.Invoke, o.Complete = int64(inv*float64(msNs)), int64(cmp*float64(msNs))
	o.WallMs = 1_000_000 + int64(inv)
	o.LeaseWorker, o.Token = &w, tok
	return o
}

func TestLeases_ValidHistory(t *testing.T) {
	a := acq(1, "", "ns", "r1", 0, 5, 0, 10)
	ops := []Op{
		a,
		resend(a, 6, 8, 0, 10), // the same lease again: idempotent
		unknownAcq(2, "ns", "r2", 2, 2000),
		acq(3, "", "ns", "r2", 2001, 2005, 1, 9), // first sent at 2 ms, before r1 completed: may be lower
		acq(4, "", "ns", "r3", 3000, 3004, 0, 12),
		// r3 resent after its lease expired: another lease is allowed.
		resend(acq(4, "", "ns", "r3", 3000, 3004, 0, 12), 7000, 7001, 5, 40),
		// Another namespace and another cluster have their own tokens.
		acq(5, "", "other", "r4", 100, 101, 0, 1),
		acq(6, "B1", "ns", "r5", 9000, 9001, 0, 2),
		{Type: "op", F: FRelease, Seq: "ns", Outcome: OK},
	}
	r := CheckLeases(ops)
	if !r.Valid {
		t.Fatalf("valid history judged invalid: %+v", r.Examples)
	}
	if r.Grants != 5 || r.Acquires != 7 || r.Resends != 2 || r.Releases != 1 {
		t.Fatalf("counts: %+v", r)
	}
}

func TestLeases_PlantedNotIdempotent(t *testing.T) {
	a := acq(1, "", "ns", "r1", 0, 5, 0, 10)
	ops := []Op{a, resend(a, 6, 8, 1, 11)}
	r := CheckLeases(ops)
	if r.Valid || r.NotIdempotent != 1 {
		t.Fatalf("a resend answered with a second worker id was not caught: %+v", r)
	}
	if !strings.Contains(r.Examples[0].Detail, `request id "r1"`) || r.FirstSeenMs != 8 {
		t.Fatalf("example: %+v", r.Examples[0])
	}
	// A retry after an unknown attempt counts the same way.
	ops = []Op{unknownAcq(1, "ns", "r1", 0, 2000), acq(2, "", "ns", "r1", 2001, 2002, 3, 7), acq(3, "", "ns", "r1", 2003, 2004, 4, 8)}
	if r := CheckLeases(ops); r.Valid || r.NotIdempotent != 1 {
		t.Fatalf("two ok answers with different leases not caught: %+v", r)
	}
	// Same worker id but another token is not the same lease either.
	ops = []Op{a, resend(a, 6, 8, 0, 11)}
	if r := CheckLeases(ops); r.Valid {
		t.Fatal("same worker, different token not caught")
	}
}

func TestLeases_PlantedTokenRegression(t *testing.T) {
	ops := []Op{
		acq(1, "", "ns", "r1", 0, 5, 0, 10),
		acq(2, "", "ns", "r2", 6, 9, 1, 10), // invoked after r1 completed: must be > 10
	}
	r := CheckLeases(ops)
	if r.Valid || r.TokenRegressions != 1 {
		t.Fatalf("equal token not caught: %+v", r)
	}
	// Lower, and detected against the highest earlier token, not the latest.
	ops = []Op{
		acq(1, "", "ns", "r1", 0, 5, 0, 50),
		acq(2, "", "ns", "r2", 1, 6, 1, 20),
		acq(3, "", "ns", "r3", 10, 11, 2, 30),
	}
	r = CheckLeases(ops)
	if r.Valid || r.TokenRegressions != 1 || !strings.Contains(r.Examples[0].Detail, "got token 50") {
		t.Fatalf("token below an earlier grant not caught: %+v", r)
	}
	// On a restored cluster too.
	ops = []Op{acq(1, "B1", "ns", "r1", 0, 5, 0, 10), acq(2, "B1", "ns", "r2", 6, 9, 1, 3)}
	if r := CheckLeases(ops); r.Valid {
		t.Fatal("regression on a restored cluster not caught")
	}
}

// sfOp is a burst of IDs of generator s under worker w at ticks ts..,
// sequence 0.. (layout 41/10/12).
func sfOp(idx int64, s string, inv, cmp float64, w int64, tok uint64, ticks ...int64) Op {
	o := Op{Type: "op", Index: idx, F: FSnowflake, Seq: "sf", Session: s, Outcome: OK, SeqBits: 12, WorkerBits: 10,
		Invoke: int64(inv * float64(msNs)), Complete: int64(cmp * float64(msNs)), LeaseWorker: &w, Token: tok}
	for i, tk := range ticks {
		o.IDs = append(o.IDs, tk<<22|w<<12|int64(i))
	}
	return o
}

func TestSnowflake_ValidHistory(t *testing.T) {
	ops := []Op{
		sfOp(1, "g1", 0, 5, 0, 3, 1000, 1001, 1002),
		sfOp(2, "g2", 0, 5, 1, 4, 1000, 1001, 1002), // same ticks, other worker
		sfOp(3, "g1", 6, 9, 0, 3, 1005),
		// g1 lost worker 0; g2 gets it after a recycle delay.
		sfOp(4, "g2", 7000, 7005, 0, 9, 8000, 8001),
		sfOp(5, "g1", 7000, 7005, 2, 10, 8000),
		{Type: "op", F: FSFLease, Session: "g1", Outcome: OK},
	}
	r := CheckSnowflake(ops)
	if !r.Valid {
		t.Fatalf("valid history judged invalid: %+v", r.Examples)
	}
	if r.IDs != 10 || r.Generators != 2 || r.Tenures != 4 || r.Leases != 1 {
		t.Fatalf("counts: %+v", r)
	}
}

func TestSnowflake_PlantedDuplicate(t *testing.T) {
	ops := []Op{
		sfOp(1, "g1", 0, 5, 0, 3, 1000),
		sfOp(2, "g2", 8000, 8005, 0, 4, 1000), // worker 0 again, same tick and sequence
	}
	r := CheckSnowflake(ops)
	if r.Valid || r.Duplicates != 1 || r.Overlaps != 1 {
		t.Fatalf("duplicate not caught: %+v", r)
	}
}

func TestSnowflake_PlantedOverlappingTenures(t *testing.T) {
	// No ID repeats (other sequence numbers), but two generators issued
	// under worker 5 over interleaving ticks: two holders at once.
	a := sfOp(1, "g1", 0, 50, 5, 3, 1000, 1010, 1020)
	b := sfOp(2, "g2", 10, 20, 5, 4, 1015)
	b.IDs[0] |= 7 // sequence 7
	r := CheckSnowflake([]Op{a, b})
	if r.Valid || r.Duplicates != 0 || r.Overlaps != 1 {
		t.Fatalf("overlapping tenures not caught: %+v", r)
	}
	if !strings.Contains(r.Examples[0].Detail, "worker 5 was used by g1") {
		t.Fatalf("example: %s", r.Examples[0].Detail)
	}
	// Touching at one tick is an overlap too.
	c := sfOp(3, "g2", 60, 70, 5, 4, 1020)
	c.IDs[0] |= 9
	if r := CheckSnowflake([]Op{a, c}); r.Valid {
		t.Fatal("tenures sharing a tick not caught")
	}
}

func TestSnowflake_PlantedNonIncreasing(t *testing.T) {
	ops := []Op{sfOp(1, "g1", 0, 5, 0, 3, 1000, 1001), sfOp(2, "g1", 6, 9, 0, 3, 999)}
	r := CheckSnowflake(ops)
	if r.Valid || r.NonIncreasing != 1 {
		t.Fatalf("decreasing IDs not caught: %+v", r)
	}
}

// migration history: main ranges of "s" up to 1000 before the backup at
// 100 ms, restore with advance 1e6 at 200 ms.
func migrationOps() []Op {
	return []Op{
		rng(1, "s", 0, 10, 1, 500),
		rng(2, "s", 20, 30, 501, 1000),
		{Type: "op", Index: 3, F: FBackup, Migration: "B1", Invoke: 100 * msNs, Complete: 110 * msNs, Outcome: OK, Bytes: 300},
		rng(4, "s", 120, 130, 1001, 1100), // after the backup: not in it
		{Type: "op", Index: 5, F: FRestore, Cluster: "B1", Invoke: 200 * msNs, Complete: 210 * msNs, Outcome: OK, Advance: 1_000_000},
		onCluster(rng(6, "s", 220, 230, 1_001_101, 1_001_200), "B1"),
		onCluster(rng(7, "s", 240, 250, 1_001_201, 1_001_300), "B1"),
		{Type: "op", Index: 8, F: FRestore, Cluster: "B1", Second: true, Invoke: 300 * msNs, Complete: 310 * msNs, Outcome: Fail, Status: 409, Advance: 1_000_000},
		acq(9, "", "ns", "m1", 40, 50, 0, 700),
		acq(10, "", "ns", "m2", 150, 160, 1, 900), // after the backup was invoked
		acq(11, "B1", "ns", "b1", 400, 410, 0, 701),
	}
}

func onCluster(o Op, c string) Op { o.Cluster = c; return o }

func TestMigration_ValidHistory(t *testing.T) {
	ops := migrationOps()
	r := CheckMigration(ops)
	if !r.Valid {
		t.Fatalf("valid history judged invalid: %+v", r.Examples)
	}
	if r.Migrations != 1 || r.Restores != 1 || len(r.Attempts) != 2 || r.Ranges != 2 || r.IDs != 200 || r.Leases != 1 {
		t.Fatalf("counts: %+v", r)
	}
	// The restored cluster's ranges are kept out of the main checks.
	a := Analyze(&History{Ops: append(ops, final(read(99, "s", 500, 501, 1101)))}, Options{SkipPorcupine: true})
	if !a.Valid {
		t.Fatalf("Analyze: %v", a.InvalidReasons)
	}
	if a.Counts["reserve@B1"][OK] != 2 || a.Counts[FReserve][OK] != 3 {
		t.Fatalf("counts: %v", a.Counts)
	}
}

func TestMigration_PlantedSecondRestoreAccepted(t *testing.T) {
	ops := migrationOps()
	ops[7].Outcome, ops[7].Status = OK, 204
	// The restore reset the marks: the same IDs again.
	ops = append(ops, onCluster(rng(12, "s", 320, 330, 1_001_101, 1_001_150), "B1"))
	r := CheckMigration(ops)
	if r.Valid || r.SecondAccepted != 1 || r.Duplicates != 50 {
		t.Fatalf("accepted second restore and its duplicates not caught: %+v", r)
	}
	if r.FirstSeenMs != 310 {
		t.Fatalf("first seen %v, want 310 (the accepted restore)", r.FirstSeenMs)
	}
}

func TestMigration_PlantedCrossDuplicateAndNotLifted(t *testing.T) {
	ops := migrationOps()
	ops = append(ops, onCluster(rng(12, "s", 320, 330, 1050, 1060), "B1"))
	r := CheckMigration(ops)
	if r.Valid || r.CrossDuplicates != 11 || r.NotLifted != 1 {
		t.Fatalf("IDs of both clusters not caught: %+v", r)
	}
}

func TestMigration_PlantedTokenNotAbove(t *testing.T) {
	ops := migrationOps()
	ops[10].Token = 700 // equal to a main token granted before the backup
	r := CheckMigration(ops)
	if r.Valid || r.TokensNotAbove != 1 {
		t.Fatalf("low token on the restored cluster not caught: %+v", r)
	}
	// Main tokens granted after the backup was invoked do not count.
	ops[10].Token = 800
	if r := CheckMigration(ops); !r.Valid {
		t.Fatalf("token above every pre-backup grant judged invalid: %+v", r.Examples)
	}
	// Tokens the Snowflake generators were seen holding count too.
	w := int64(3)
	ops = append(ops, Op{Type: "op", F: FSFLease, Seq: "ns", Session: "g1", Outcome: OK, LeaseWorker: &w, Token: 850, Invoke: 60 * msNs, Complete: 60 * msNs})
	if r := CheckMigration(ops); r.Valid {
		t.Fatal("token below a generator's pre-backup lease not caught")
	}
}

func TestQuickCheck_NewCheckers(t *testing.T) {
	a := acq(1, "", "ns", "r1", 0, 5, 0, 10)
	if why := QuickCheck([]Op{a, resend(a, 6, 8, 1, 11)}); !strings.Contains(why, "lease:") {
		t.Fatalf("QuickCheck: %q", why)
	}
	if why := QuickCheck([]Op{sfOp(1, "g1", 0, 5, 0, 3, 1000), sfOp(2, "g2", 8000, 8005, 0, 4, 1000)}); !strings.Contains(why, "snowflake:") {
		t.Fatalf("QuickCheck: %q", why)
	}
	ops := migrationOps()
	ops[7].Outcome = OK
	if why := QuickCheck(ops); !strings.Contains(why, "migration:") {
		t.Fatalf("QuickCheck: %q", why)
	}
	if why := QuickCheck(migrationOps()); why != "" {
		t.Fatalf("QuickCheck of a valid history: %q", why)
	}
}

func TestRead_RoundTripLeaseAndSnowflakeFields(t *testing.T) {
	ops := append(migrationOps(), sfOp(20, "g1", 0, 5, 0, 3, 1000, 1001))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, o := range ops {
		if err := enc.Encode(o); err != nil {
			t.Fatal(err)
		}
	}
	h, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Ops) != len(ops) {
		t.Fatalf("%d ops read back, want %d", len(h.Ops), len(ops))
	}
	last := h.Ops[len(h.Ops)-1]
	if len(last.IDs) != 2 || last.worker() != 0 || last.SeqBits != 12 {
		t.Fatalf("snowflake op read back as %+v", last)
	}
	if w := h.Ops[8].worker(); w != 0 || h.Ops[8].LeaseWorker == nil {
		t.Fatalf("worker 0 lost in the round trip: %+v", h.Ops[8])
	}
	a := Analyze(h, Options{SkipPorcupine: true})
	if a.Snowflake.IDs != 2 || a.Migration.Restores != 1 || a.Leases.Grants != 3 {
		t.Fatalf("Analyze: %+v %+v %+v", a.Snowflake, a.Migration, a.Leases)
	}
}

func TestLeases_PlantedDoubleGrant(t *testing.T) {
	rel := func(req string, inv float64) Op {
		return Op{Type: "op", F: FRelease, Seq: "ns", RequestID: req, Invoke: int64(inv * float64(msNs)), Complete: int64((inv + 1) * float64(msNs)), Outcome: OK}
	}
	// Worker 3 granted to r2 while r1 holds it: not released, not expired.
	ops := []Op{acq(1, "", "ns", "r1", 0, 5, 3, 10), acq(2, "", "ns", "r2", 10, 15, 3, 11)}
	r := CheckLeases(ops)
	if r.Valid || r.DoubleGrants != 1 || !strings.Contains(r.Examples[0].Detail, `while request "r1" still held it`) {
		t.Fatalf("double grant not caught: %+v", r)
	}
	// Released first: a new grant of the same id is fine (the recycle
	// delay is the server's business, not a safety rule of the lease).
	if r := CheckLeases(append(ops, rel("r1", 8))); !r.Valid {
		t.Fatalf("grant after a release judged invalid: %+v", r.Examples)
	}
	// A release that released nothing does not count: one never sent
	// (its node was down: the primary lost in a DR run) and one refused
	// (409 from a node that does not know the lease, such as a promoted
	// standby that never saw the grant). An unknown one may have taken
	// effect, so it counts.
	notSent, refused, unknown := rel("r1", 8), rel("r1", 8), rel("r1", 8)
	notSent.Outcome, notSent.Err = Fail, "connection refused"
	refused.Outcome, refused.Status = Fail, 409
	unknown.Outcome, unknown.Err = Unknown, "timeout"
	for name, c := range map[string]struct {
		rel   Op
		valid bool
	}{"not sent": {notSent, false}, "refused": {refused, false}, "unknown": {unknown, true}} {
		if r := CheckLeases(append(slices.Clone(ops), c.rel)); r.Valid != c.valid {
			t.Errorf("release %s before the second grant: valid %v, want %v (%+v)", name, r.Valid, c.valid, r.Examples)
		}
	}
	// Expired first: fine too.
	ops = []Op{acq(1, "", "ns", "r1", 0, 5, 3, 10), acq(2, "", "ns", "r2", 4000, 4005, 3, 11)}
	if r := CheckLeases(ops); !r.Valid {
		t.Fatalf("grant after expiry judged invalid: %+v", r.Examples)
	}
	// Concurrent requests: not certainly held before the second was sent.
	ops = []Op{acq(1, "", "ns", "r1", 0, 5, 3, 10), acq(2, "", "ns", "r2", 4, 9, 3, 11)}
	if r := CheckLeases(ops); r.DoubleGrants != 0 {
		t.Fatalf("overlapping requests counted as a double grant: %+v", r)
	}
}

// TestLeases_HeldByTTLNotByServerClock: with the TTL recorded, whether a
// lease was still held is timed on the harness's clock from the request's
// first attempt, whatever the expires_ms a stepped server clock wrote.
func TestLeases_HeldByTTLNotByServerClock(t *testing.T) {
	withTTL := func(o Op, skewMs int64) Op {
		o.TTLMs = 3000
		o.ExpiresMs += skewMs
		return o
	}
	const hour = 3_600_000
	// The leader's clock an hour behind: its expires_ms lie in the past,
	// yet worker 3 was granted again 10 ms later, unreleased: caught.
	ops := []Op{withTTL(acq(1, "", "ns", "r1", 0, 5, 3, 10), -hour), withTTL(acq(2, "", "ns", "r2", 10, 15, 3, 11), -hour)}
	if r := CheckLeases(ops); r.Valid || r.DoubleGrants != 1 {
		t.Fatalf("double grant under a clock behind not caught: %+v", r)
	}
	a := withTTL(acq(1, "", "ns", "r1", 0, 5, 3, 10), -hour)
	if r := CheckLeases([]Op{a, resend(a, 6, 8, 4, 11)}); r.Valid || r.NotIdempotent != 1 {
		t.Fatalf("second lease for one request id under a clock behind not caught: %+v", r)
	}
	// An hour ahead: expires_ms far in the future, but the TTL has passed
	// on the harness's clock (3000 ms after the first attempt at 0 ms), so
	// a new grant of the same worker id and a new lease for a late resend
	// are allowed.
	a = withTTL(acq(1, "", "ns", "r1", 0, 5, 3, 10), hour)
	ops = []Op{a, withTTL(acq(2, "", "ns", "r2", 3200, 3205, 3, 11), hour), resend(a, 3300, 3310, 5, 12)}
	if r := CheckLeases(ops); !r.Valid {
		t.Fatalf("grants after the TTL judged invalid under a clock ahead: %+v", r.Examples)
	}
	// The TTL counts from the request id's first attempt, not from the
	// attempt that was answered: an unknown first attempt at 0 ms, the ok
	// retry at 2000 ms; a grant of the same worker at 3150 ms is allowed.
	retry := withTTL(acq(1, "", "ns", "r1", 2000, 2005, 3, 10), 0)
	ops = []Op{unknownAcq(0, "ns", "r1", 0, 1999), retry, withTTL(acq(2, "", "ns", "r2", 3100, 3150, 3, 11), 0)}
	if r := CheckLeases(ops); !r.Valid {
		t.Fatalf("grant after the TTL of the first attempt judged invalid: %+v", r.Examples)
	}
}
