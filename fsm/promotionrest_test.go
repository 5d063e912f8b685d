package fsm_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/fsm"
)

const fixtureV8 = "testdata/snapshot-v8.bin"

// promotedWithAdvance is a standby's state that held a lease of worker 0
// (holder "old-a") and knew nothing of worker 1, promoted with an advance
// at t0+5000: what issue 42's second part starts from. prepare, if any,
// runs on the new FSM first (the faults build plants a bug with it).
func promotedWithAdvance(t *testing.T, prepare ...func(*fsm.FSM)) (*applier, fsm.Lease, fsm.PromoteResult) {
	t.Helper()
	a := newApplier(t)
	for _, p := range prepare {
		p(a.f)
	}
	a.mustCreate("s", 1, math.MaxInt64)
	if _, ok := a.apply(fsm.EncodeCreateNamespace(fsm.CreateNamespace{Namespace: testNamespace("flakes"), Stamp: fsm.Stamp{NowMs: t0}})).(fsm.NamespaceResult); !ok {
		t.Fatal("namespace")
	}
	old, ok := a.apply(fsm.EncodeLeaseOp(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "flakes", Holder: "old-a", ClientTimeMs: t0, Stamp: fsm.Stamp{NowMs: t0}})).(fsm.Lease)
	if !ok {
		t.Fatal("acquire")
	}
	addStandby(t, a, "dr1")
	a.standby(fsm.StandbyOp{Op: fsm.StandbyInSync, ID: "dr1"})
	a.standby(fsm.StandbyOp{Op: fsm.StandbyOutOfSync, ID: "dr1", Reason: "cut", Stamp: fsm.Stamp{NowMs: t0 + 100}})
	res, err := a.f.Promote("dr1", 5*fsm.DefaultStandbyBound, t0+5000, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a, old, res
}

// TestPromote_WithAdvance_EveryWorkerIDRests_OldTokensLost_FloorsCoverTheOldRegion
// (issue 42, part 2): a standby promoted with --advance may have missed any
// lease write of the primary. Before, its held leases stayed held (an old
// token renewed on the promoted node, though the primary may have
// re-granted its id) and an id it never saw leased was granted at once.
// Now every held lease ends, every worker id of the namespace rests until
// the leader's end-of-rest entry (its TTL plus recycle delay after it
// serves), and every later grant's timestamp floor is above the promotion's
// time plus the TTL.
func TestPromote_WithAdvance_EveryWorkerIDRests_OldTokensLost_FloorsCoverTheOldRegion(t *testing.T) {
	a, old, res := promotedWithAdvance(t)
	ns := testNamespace("flakes")
	if res.EndedLeases != 1 || res.HeldLeases != 0 || res.RestingNamespaces != 1 {
		t.Fatalf("promotion result %+v: want the held lease ended and the namespace resting", res)
	}
	if a.f.ClusterLevel() != fsm.LevelPromotionRest {
		t.Fatalf("cluster level %d after the promotion, want %d: no binary that would grant during the rest may join", a.f.ClusterLevel(), fsm.LevelPromotionRest)
	}
	// The old holder cannot renew.
	wantErr(t, a.apply(fsm.EncodeLeaseOp(fsm.LeaseOp{Op: fsm.LeaseOpRenew, Namespace: "flakes", WorkerID: old.WorkerID, Token: old.Token, Stamp: fsm.Stamp{NowMs: t0 + 6000}})), fsm.ErrLeaseLost)
	if l := a.f.Leases("flakes")[0]; l.State != fsm.LeaseEnded || l.EndReason != fsm.LeaseEndPromoted {
		t.Fatalf("the old lease after the promotion: %+v", l)
	}
	// No id is granted, the one it never saw leased included.
	wantErr(t, a.apply(fsm.EncodeLeaseOp(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "flakes", Holder: "new", Stamp: fsm.Stamp{NowMs: t0 + 6000}})), fsm.ErrNoWorkerFree)
	wantErr(t, a.apply(fsm.EncodeLeaseOp(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "flakes", Holder: "new", WorkerID: 1, Chosen: true, Stamp: fsm.Stamp{NowMs: t0 + 6000}})), fsm.ErrNoWorkerFree)
	// The leader's timer: the namespace's TTL plus its recycle delay.
	timers, _ := a.f.LeaseTimers()
	var rest *fsm.LeaseTimer
	for i, lt := range timers {
		if lt.State == fsm.LeaseResting {
			rest = &timers[i]
		}
	}
	if rest == nil || rest.Namespace != "flakes" || rest.WorkerID != fsm.PromotionRestWorker || rest.Version != res.Promotion.AtIndex || rest.WaitMs != ns.LeaseTTLMs+ns.RecycleDelayMs {
		t.Fatalf("rest timer %+v among %+v", rest, timers)
	}
	// The state survives a snapshot (format 8) as it is.
	b := persist(t, a.f)
	if v := binary.BigEndian.Uint32(b[8:12]); v != 8 {
		t.Fatalf("snapshot format %d with a rest, want 8", v)
	}
	g := restore(t, b)
	if !reflect.DeepEqual(g.PromotionRests(), a.f.PromotionRests()) || g.ClusterLevel() != fsm.LevelPromotionRest {
		t.Fatalf("rests after restore %+v (level %d), want %+v", g.PromotionRests(), g.ClusterLevel(), a.f.PromotionRests())
	}
	// An end naming another rest changes nothing; the one in progress
	// ends it, once.
	wantErr(t, a.apply(fsm.EncodeLeaseOp(fsm.LeaseOp{Op: fsm.LeaseOpEndPromotionRest, Namespace: "flakes", Version: rest.Version + 1})), fsm.ErrLeaseTimerStale)
	wantErr(t, a.apply(fsm.EncodeLeaseOp(fsm.LeaseOp{Op: fsm.LeaseOpEndPromotionRest, Namespace: "nope", Version: rest.Version})), fsm.ErrNamespaceNotFound)
	if resp := a.apply(fsm.EncodeLeaseOp(fsm.LeaseOp{Op: fsm.LeaseOpEndPromotionRest, Namespace: "flakes", Version: rest.Version})); resp != nil {
		t.Fatalf("end of the rest: %v", resp)
	}
	wantErr(t, a.apply(fsm.EncodeLeaseOp(fsm.LeaseOp{Op: fsm.LeaseOpEndPromotionRest, Namespace: "flakes", Version: rest.Version})), fsm.ErrLeaseTimerStale)
	if timers, _ := a.f.LeaseTimers(); len(timers) != 1 || timers[0].State != fsm.LeaseEnded {
		t.Fatalf("timers after the rest: %+v, want the ended lease's recycle only", timers)
	}
	// The id it never saw leased is granted now, with a floor above
	// what a holder of the old region may have used.
	l, ok := a.apply(fsm.EncodeLeaseOp(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "flakes", Holder: "new", Stamp: fsm.Stamp{NowMs: t0 + 40_000}})).(fsm.Lease)
	if !ok || l.WorkerID != 1 || l.TimestampFloorMs < t0+5000+ns.LeaseTTLMs || l.Token <= res.Promotion.TokenFloor {
		t.Fatalf("first grant after the rest %+v: want worker 1, a floor of at least %d and a token above %d", l, t0+5000+ns.LeaseTTLMs, res.Promotion.TokenFloor)
	}
	// A backup is the data's: the rests are the cluster's.
	var buf bytes.Buffer
	if err := a.f.Backup(&buf); err != nil {
		t.Fatal(err)
	}
	if st := restore(t, buf.Bytes()); len(st.PromotionRests()) != 0 {
		t.Fatalf("a backup carried the rests %+v", st.PromotionRests())
	}
}

// A promotion that trusts the in-sync bound keeps the leases it holds (the
// standby stored every lease write before it was answered): no rest, and
// the level stays.
func TestPromote_TrustedBound_NoRest(t *testing.T) {
	a := newApplier(t)
	if _, ok := a.apply(fsm.EncodeCreateNamespace(fsm.CreateNamespace{Namespace: testNamespace("flakes"), Stamp: fsm.Stamp{NowMs: t0}})).(fsm.NamespaceResult); !ok {
		t.Fatal("namespace")
	}
	a.apply(fsm.EncodeLeaseOp(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "flakes", Holder: "h", Stamp: fsm.Stamp{NowMs: t0}}))
	addStandby(t, a, "dr1")
	a.standby(fsm.StandbyOp{Op: fsm.StandbyInSync, ID: "dr1"})
	level := a.f.ClusterLevel()
	res, err := a.f.Promote("dr1", 0, t0+5000, nil)
	if err != nil || res.HeldLeases != 1 || res.EndedLeases != 0 || res.RestingNamespaces != 0 {
		t.Fatalf("promotion %+v %v", res, err)
	}
	if len(a.f.PromotionRests()) != 0 || a.f.ClusterLevel() != level {
		t.Fatalf("rests %+v, level %d (was %d)", a.f.PromotionRests(), a.f.ClusterLevel(), level)
	}
}

func TestSnapshotFixtureV8_StillRestores(t *testing.T) {
	b := fixtureBytes(t, fixtureV8, 8, func(t *testing.T) *fsm.FSM {
		a, _, _ := promotedWithAdvance(t)
		return a.f
	})
	f := restore(t, b)
	rs := f.PromotionRests()
	if len(rs) != 1 || rs[0].Namespace != "flakes" || rs[0].Index == 0 || rs[0].FloorMs != t0+5000+testNamespace("flakes").LeaseTTLMs {
		t.Fatalf("restored rests %+v", rs)
	}
	if !reflect.DeepEqual(persist(t, f), b) {
		t.Fatal("Persist no longer writes the v8 fixture's bytes for its state: a format changed without a new version")
	}
	// A v7 header on a body with the rests is refused: a binary that
	// knows only v7 would grant what the rest refuses.
	old := append([]byte(nil), b...)
	binary.BigEndian.PutUint32(old[8:12], 7)
	if err := fsm.New().Restore(nopCloser(old)); err == nil || !strings.Contains(err.Error(), "promotion rests of v8") {
		t.Fatalf("v7-labelled snapshot with rests: %v", err)
	}
}
