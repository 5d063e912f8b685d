package fsm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/fsm"
)

// Issue #34: the disaster-recovery standby's record, the block cap while it
// is recorded, and promotion.

const fixtureV7 = "testdata/snapshot-v7.bin"

func (a *applier) standby(op fsm.StandbyOp) any {
	return a.apply(fsm.EncodeStandbyOp(op))
}

func addStandby(t *testing.T, a *applier, id string) {
	t.Helper()
	if resp := a.standby(fsm.StandbyOp{Op: fsm.StandbyAdd, ID: id, Bound: fsm.DefaultStandbyBound, TimeoutMs: fsm.DefaultStandbyTimeoutMs, Stamp: fsm.Stamp{NowMs: t0, Leader: "n1"}}); resp != nil {
		t.Fatalf("add standby %q: %v", id, resp)
	}
}

// fixtureV7State: the v6 fixture's state with a standby recorded in sync.
func fixtureV7State(t *testing.T) *fsm.FSM {
	f := fixtureV6State(t)
	idx, _ := f.LastApplied()
	for i, op := range []fsm.StandbyOp{
		{Op: fsm.StandbyAdd, ID: "dr1", Bound: fsm.DefaultStandbyBound, TimeoutMs: fsm.DefaultStandbyTimeoutMs, Stamp: fsm.Stamp{NowMs: t0, Leader: "n1"}},
		{Op: fsm.StandbyInSync, ID: "dr1", AckIndex: idx + 1, Stamp: fsm.Stamp{NowMs: t0 + 5, Leader: "n1"}},
	} {
		if resp := f.Apply(logEntry(idx+1+uint64(i), 1, fsm.EncodeStandbyOp(op))); resp != nil {
			t.Fatalf("standby op %d: %v", i, resp)
		}
	}
	return f
}

func TestSnapshotFixtureV7_StillRestores(t *testing.T) {
	b := fixtureBytes(t, fixtureV7, 7, fixtureV7State)
	f := restore(t, b)
	sb, ok := f.StandbyInfo()
	if !ok || sb.ID != "dr1" || !sb.InSync() || sb.Bound != fsm.DefaultStandbyBound {
		t.Fatalf("restored standby %+v %v", sb, ok)
	}
	if !reflect.DeepEqual(persist(t, f), b) {
		t.Fatal("Persist no longer writes the v7 fixture's bytes for its state: a format changed without a new version")
	}
	// A v6 header on a body with the standby's fields is refused: a
	// binary that knows only v6 would drop them.
	old := append([]byte(nil), b...)
	binary.BigEndian.PutUint32(old[8:12], 6)
	if err := fsm.New().Restore(nopCloser(old)); err == nil || !strings.Contains(err.Error(), "standby fields of v7") {
		t.Fatalf("v6-labelled snapshot with a standby: %v", err)
	}
	// A backup is the data's, not the cluster's: no standby in it.
	var buf bytes.Buffer
	if err := f.Backup(&buf); err != nil {
		t.Fatal(err)
	}
	if g := restore(t, buf.Bytes()); func() bool { _, ok := g.StandbyInfo(); return ok }() {
		t.Fatal("a backup carried the standby")
	}
}

func TestStandby_CapsBlocksAtTheBound_OnePerSequencePerEntry(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("s", 1, math.MaxInt64)
	if b := a.mustReserve("s", 3*fsm.DefaultStandbyBound, 1); b.Len() != 3*fsm.DefaultStandbyBound {
		t.Fatalf("without a standby a block is not capped: %+v", b)
	}
	addStandby(t, a, "dr1")
	b := a.mustReserve("s", 3*fsm.DefaultStandbyBound, 1)
	if b.Len() != fsm.DefaultStandbyBound || b.First != 3*fsm.DefaultStandbyBound+1 {
		t.Fatalf("capped block %+v, want %d IDs above the mark", b, fsm.DefaultStandbyBound)
	}
	resp := a.apply(fsm.EncodeReserveBlocks(fsm.ReserveBlocks{Requests: []fsm.BlockRequest{
		{Name: "s", Count: 5, Min: 1}, {Name: "s", Count: 5, Min: 1},
	}}))
	bb := resp.(fsm.BlockBatch)
	if bb.Outcomes[0].Err != nil || !errors.Is(bb.Outcomes[1].Err, fsm.ErrInvalidCommand) {
		t.Fatalf("a name twice in one entry: %+v", bb)
	}
	// Removing the standby lifts the cap.
	if resp := a.standby(fsm.StandbyOp{Op: fsm.StandbyRemove, ID: "dr1"}); resp != nil {
		t.Fatal(resp)
	}
	if b := a.mustReserve("s", 3*fsm.DefaultStandbyBound, 1); b.Len() != 3*fsm.DefaultStandbyBound {
		t.Fatalf("after removal: %+v", b)
	}
}

func TestStandby_StateChangesOnlyThroughEntries(t *testing.T) {
	a := newApplier(t)
	wantErr(t, a.standby(fsm.StandbyOp{Op: fsm.StandbyInSync, ID: "dr1"}), fsm.ErrNoStandby)
	addStandby(t, a, "dr1")
	sb, _ := a.f.StandbyInfo()
	if sb.State != fsm.StandbyStateCatchingUp || sb.AddedIndex != a.index {
		t.Fatalf("a new standby is %+v, want catching up from its entry", sb)
	}
	a.standby(fsm.StandbyOp{Op: fsm.StandbyInSync, ID: "dr1", AckIndex: 7})
	inSyncAt := a.index
	a.standby(fsm.StandbyOp{Op: fsm.StandbyInSync, ID: "dr1", AckIndex: 9}) // a repeat changes nothing
	if sb, _ = a.f.StandbyInfo(); !sb.InSync() || sb.SinceIndex != inSyncAt || sb.AckIndex != 7 {
		t.Fatalf("after in-sync twice: %+v", sb)
	}
	a.standby(fsm.StandbyOp{Op: fsm.StandbyOutOfSync, ID: "dr1", Reason: "unreachable", Stamp: fsm.Stamp{NowMs: t0 + 30_000}})
	if sb, _ = a.f.StandbyInfo(); sb.State != fsm.StandbyStateOutOfSync || sb.OutOfSyncCount != 1 || sb.Reason != "unreachable" || sb.SinceMs != t0+30_000 {
		t.Fatalf("after out-of-sync: %+v", sb)
	}
	wantErr(t, a.standby(fsm.StandbyOp{Op: "bogus", ID: "dr1"}), fsm.ErrInvalidCommand)
	wantErr(t, a.standby(fsm.StandbyOp{Op: fsm.StandbyAdd, ID: "dr2", Bound: fsm.DefaultStandbyBound, TimeoutMs: 1000}), fsm.ErrStandbyConflict)
	if sb2, _ := a.f.StandbyInfo(); sb2 != sb {
		t.Fatalf("a refused entry changed the standby: %+v", sb2)
	}
}

func TestPromote_InSync_AdvancesByTheBound_EndsLeases_RaisesTheFloor(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("big", 1, math.MaxInt64)
	a.mustCreate("tiny", 1, 1000)
	a.mustReserve("big", 500, 1)
	ns := testNamespace("flakes")
	if _, ok := a.apply(fsm.EncodeCreateNamespace(fsm.CreateNamespace{Namespace: ns, Stamp: fsm.Stamp{NowMs: t0}})).(fsm.NamespaceResult); !ok {
		t.Fatal("namespace")
	}
	lease, ok := a.apply(fsm.EncodeLeaseOp(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "flakes", Holder: "h", Stamp: fsm.Stamp{NowMs: t0}})).(fsm.Lease)
	if !ok {
		t.Fatal("acquire")
	}
	addStandby(t, a, "dr1")
	a.standby(fsm.StandbyOp{Op: fsm.StandbyInSync, ID: "dr1"})

	// Refusals first: each names why and changes nothing.
	before := persist(t, a.f)
	for _, tc := range []struct {
		id      string
		advance int64
		want    error
	}{
		{"n1", 0, fsm.ErrNotStandby},
		{"dr1", fsm.DefaultStandbyBound - 1, fsm.ErrAdvanceTooSmall},
		{"dr1", -5, fsm.ErrInvalidCommand},
	} {
		if _, err := a.f.Promote(tc.id, tc.advance, t0, nil); !errors.Is(err, tc.want) {
			t.Errorf("promote %q advance %d: %v, want %v", tc.id, tc.advance, err, tc.want)
		}
	}
	if !bytes.Equal(persist(t, a.f), before) {
		t.Fatal("a refused promotion changed the state")
	}

	res, err := a.f.Promote("dr1", 0, t0+1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Promotion.Advance != fsm.DefaultStandbyBound || res.Promotion.State != fsm.StandbyStateInSync {
		t.Fatalf("promotion %+v", res.Promotion)
	}
	if s := a.seq("big"); s.Issued != 500+fsm.DefaultStandbyBound {
		t.Fatalf("big after promotion %+v", s)
	}
	if s := a.seq("tiny"); s.Issued != s.Max || !reflect.DeepEqual(res.Exhausted, []string{"tiny"}) {
		t.Fatalf("tiny after promotion %+v, exhausted %v: the advance stops at max, loudly", s, res.Exhausted)
	}
	ls := a.f.Leases("flakes")
	if len(ls) != 1 || ls[0].State != fsm.LeaseHeld || ls[0].Version != res.Promotion.AtIndex || res.HeldLeases != 1 {
		t.Fatalf("leases after promotion %+v (%+v): want the lease still held, with the promotion's index as its version so that the new leader times it afresh", ls, res)
	}
	if _, ok := a.f.StandbyInfo(); ok {
		t.Fatal("the promoted node still records itself as a standby")
	}
	// The next grant's token is above every index the old cluster can
	// have reached.
	a.index += 10 // any later point of the new log
	next, ok := a.apply(fsm.EncodeLeaseOp(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "flakes", Holder: "h2", Stamp: fsm.Stamp{NowMs: t0 + 2000}})).(fsm.Lease)
	if !ok || next.Token <= res.Promotion.TokenFloor || next.Token <= lease.Token || next.WorkerID == lease.WorkerID {
		t.Fatalf("first grant after promotion %+v (old %+v, floor %d): want a higher token and not the resting id", next, lease, res.Promotion.TokenFloor)
	}
	// The promotion survives a snapshot, and a second one is refused.
	g := restore(t, persist(t, a.f))
	if ps := g.Promotions(); len(ps) != 1 || !reflect.DeepEqual(ps[0], res.Promotion) {
		t.Fatalf("promotions after restore %+v", ps)
	}
	if _, err := g.Promote("dr1", 0, t0, nil); !errors.Is(err, fsm.ErrAlreadyPromoted) {
		t.Fatalf("second promotion: %v", err)
	}
}

func TestPromote_OutOfSyncOrCatchingUp_NeedsAnExplicitAdvance(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("s", 1, math.MaxInt64)
	addStandby(t, a, "dr1")
	_, err := a.f.Promote("dr1", 0, t0, nil)
	if !errors.Is(err, fsm.ErrStandbyNotInSync) || !strings.Contains(err.Error(), "catching up") {
		t.Fatalf("catching-up standby: %v", err)
	}
	a.standby(fsm.StandbyOp{Op: fsm.StandbyInSync, ID: "dr1"})
	a.standby(fsm.StandbyOp{Op: fsm.StandbyOutOfSync, ID: "dr1", Reason: "unreachable for 30s", Stamp: fsm.Stamp{NowMs: t0}})
	_, err = a.f.Promote("dr1", 0, t0, nil)
	if !errors.Is(err, fsm.ErrStandbyNotInSync) || !strings.Contains(err.Error(), "out of sync at index") || !strings.Contains(err.Error(), "--advance") {
		t.Fatalf("out-of-sync standby: %v", err)
	}
	res, err := a.f.Promote("dr1", 5*fsm.DefaultStandbyBound, t0, nil)
	if err != nil || res.Promotion.Advance != 5*fsm.DefaultStandbyBound || res.Promotion.State != fsm.StandbyStateOutOfSync {
		t.Fatalf("explicit advance: %+v %v", res, err)
	}
	if s := a.seq("s"); s.Issued != 5*fsm.DefaultStandbyBound {
		t.Fatalf("mark %+v", s)
	}
}
