package fsm_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/ticketd/ticketd/fsm"
)

func backupOf(t *testing.T, f *fsm.FSM) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := f.Backup(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func (a *applier) restoreBackup(backup []byte, advance, now int64) any {
	return a.apply(fsm.EncodeRestoreBackup(fsm.RestoreBackup{Backup: backup, Advance: advance, Stamp: fsm.Stamp{NowMs: now, Leader: "x1"}}))
}

func TestRestoreBackup_LiftsMarksNeverWraps_KeepsOwnMembers(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("orders", 1, math.MaxInt64)
	a.mustCreate("small", 1, 100)
	a.mustCreate("top", math.MaxInt64-10, math.MaxInt64)
	a.apply(fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "orders", Count: 500, Min: 1}))
	a.apply(fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "small", Count: 40, Min: 1}))
	a.apply(fsm.EncodeSetMember(fsm.SetMember{ID: "old1", RaftAddr: "o:1", HTTPAddr: "o:2"}))
	backup := backupOf(t, a.f)

	b := newApplier(t)
	b.apply(fsm.EncodeSetMember(fsm.SetMember{ID: "x1", RaftAddr: "h:1", HTTPAddr: "h:2"}))
	res, ok := b.restoreBackup(backup, 1000, t0).(fsm.RestoreResult)
	if !ok {
		t.Fatalf("restore: %v", b.restoreBackup(backup, 1000, t0))
	}
	check := func(name string, issued int64) {
		t.Helper()
		if s := b.seq(name); s.Issued != issued {
			t.Fatalf("%s restored as %+v, want issued %d", name, s, issued)
		}
	}
	check("orders", 1500)
	check("small", 100) // lifted to its max: exhausted, never wrapped
	check("top", math.MaxInt64)
	if len(res.Exhausted) != 2 || res.Sequences != 3 {
		t.Fatalf("result %+v", res)
	}
	if got := b.f.Members(); len(got) != 1 || got[0].ID != "x1" {
		t.Fatalf("members %+v, want the new cluster's own", got)
	}
}

// The emptiness rule is decided at apply: whatever was applied before the
// restore entry, in log order, makes it refuse.
func TestRestoreBackup_RefusedUnlessEmptyWhereItApplies(t *testing.T) {
	src := leaseApplier{newApplier(t)}
	src.mustCreate("orders", 1, 1<<40)
	backup := backupOf(t, src.f)
	for name, before := range map[string]func(a leaseApplier){
		"a sequence":        func(a leaseApplier) { a.mustCreate("other", 1, 10) },
		"a namespace":       func(a leaseApplier) { a.create(testNamespace("users"), t0) },
		"a namespace+lease": func(a leaseApplier) { a.create(testNamespace("users"), t0); a.mustAcquire("users", "g", t0) },
		"a previous restore": func(a leaseApplier) {
			if _, ok := a.restoreBackup(backup, 10, t0).(fsm.RestoreResult); !ok {
				t.Fatal("first restore refused")
			}
		},
	} {
		a := leaseApplier{newApplier(t)}
		before(a)
		wantErr(t, a.restoreBackup(backup, 10, t0), fsm.ErrClusterNotEmpty)
		if _, ok := a.f.Sequence("orders"); ok && name != "a previous restore" {
			t.Fatalf("%s: the refused restore changed the state", name)
		}
	}
}

func TestRestoreBackup_RejectsBadInputAsValues(t *testing.T) {
	a := newApplier(t)
	wantErr(t, a.restoreBackup([]byte("garbage"), 10, t0), fsm.ErrBackupInvalid)
	empty := backupOf(t, fsm.New())
	for _, adv := range []int64{0, -1} {
		wantErr(t, a.restoreBackup(empty, adv, t0), fsm.ErrInvalidCommand)
		if err := fsm.ValidateBackup(empty, adv); !errors.Is(err, fsm.ErrInvalidCommand) {
			t.Fatalf("ValidateBackup advance %d: %v", adv, err)
		}
	}
	if err := fsm.ValidateBackup([]byte("garbage"), 1); !errors.Is(err, fsm.ErrBackupInvalid) {
		t.Fatalf("ValidateBackup garbage: %v", err)
	}
}

// Tokens only grow: a grant on a cluster seeded from a backup gets a token
// above every token of the backup, although its log index is small.
func TestRestoreBackup_TokensKeepGrowing(t *testing.T) {
	src := leaseApplier{newApplier(t)}
	src.create(testNamespace("users"), t0)
	var highest uint64
	for i := int64(0); i < 50; i++ {
		now := t0 + i*testNamespace("").RecycleDelayMs
		l := src.mustAcquire("users", "g", now)
		src.release("users", l.WorkerID, l.Token, now)
		highest = l.Token
	}
	a := leaseApplier{newApplier(t)}
	if _, ok := a.restoreBackup(backupOf(t, src.f), 10, t0).(fsm.RestoreResult); !ok {
		t.Fatal("restore refused")
	}
	later := t0 + 100*testNamespace("").RecycleDelayMs
	l := a.mustAcquire("users", "new", later)
	if l.Token <= highest {
		t.Fatalf("token %d after restore, the backup granted up to %d", l.Token, highest)
	}
	// And they survive a snapshot of the restored state.
	r := leaseApplier{&applier{t: t, f: restore(t, persist(t, a.f)), index: a.index, term: 1}}
	if l2 := r.mustAcquire("users", "next", later); l2.Token <= l.Token {
		t.Fatalf("token %d after snapshot, %d before", l2.Token, l.Token)
	}
}

// Leases of the backup count as held until the restore: their worker ids
// rest a recycle delay after it.
func TestRestoreBackup_LeasedWorkersRestAfterTheRestore(t *testing.T) {
	src := leaseApplier{newApplier(t)}
	n := testNamespace("users")
	src.create(n, t0)
	held := src.mustAcquire("users", "g", t0) // expires t0+TTL
	a := leaseApplier{newApplier(t)}
	restoredAt := t0 + 5*n.LeaseTTLMs
	a.restoreBackup(backupOf(t, src.f), 10, restoredAt)
	for _, now := range []int64{restoredAt, restoredAt + n.RecycleDelayMs - 1} {
		if l := a.mustAcquire("users", "x", now); l.WorkerID == held.WorkerID {
			t.Fatalf("worker %d granted again at %d, restored at %d", l.WorkerID, now, restoredAt)
		}
	}
}

func TestAcquire_SameRequestID_SameLeaseWhileHeld(t *testing.T) {
	a := leaseApplier{newApplier(t)}
	a.create(testNamespace("users"), t0)
	acq := func(holder, rid string, now int64) fsm.Lease {
		t.Helper()
		l, ok := a.apply(fsm.EncodeAcquireLease(fsm.AcquireLease{Namespace: "users", Holder: holder, RequestID: rid, Stamp: fsm.Stamp{NowMs: now}})).(fsm.Lease)
		if !ok {
			t.Fatalf("acquire %s %s refused", holder, rid)
		}
		return l
	}
	first := acq("g", "r1", t0)
	if again := acq("g", "r1", t0+1); again != first {
		t.Fatalf("retry got %+v, first %+v", again, first)
	}
	if other := acq("g", "r2", t0+2); other.WorkerID == first.WorkerID {
		t.Fatalf("another request id got the same worker %d", other.WorkerID)
	}
	if other := acq("h", "r1", t0+3); other.WorkerID == first.WorkerID {
		t.Fatalf("another holder with the same request id got worker %d", other.WorkerID)
	}
	// Once the lease has ended, the request id names nothing.
	late := acq("g", "r1", first.ExpiresMs+testNamespace("").RecycleDelayMs)
	if late.Token == first.Token {
		t.Fatalf("a retry after expiry got the expired lease %+v", late)
	}
	wantErr(t, a.apply(fsm.EncodeAcquireLease(fsm.AcquireLease{Namespace: "users", Holder: "g", RequestID: string(make([]byte, 129)), Stamp: fsm.Stamp{NowMs: t0}})), fsm.ErrInvalidCommand)
}

// Audit records are numbered in order and keep growing across a restore,
// whose records carry the old cluster's (larger) log indices.
func TestAudit_NumberedInOrderAcrossRestore(t *testing.T) {
	src := leaseApplier{newApplier(t)}
	src.mustCreate("orders", 1, 1<<40)
	for i := 0; i < 20; i++ {
		src.mustReserve("orders", 10, 1)
	}
	a := leaseApplier{newApplier(t)}
	a.restoreBackup(backupOf(t, src.f), 10, t0)
	a.mustReserve("orders", 10, 1)
	var after uint64
	var seen int
	for {
		page := a.f.Audit(after, 3)
		if len(page) == 0 {
			break
		}
		for _, r := range page {
			if r.Seq != after+1 {
				t.Fatalf("record seq %d after %d", r.Seq, after)
			}
			after = r.Seq
			seen++
		}
	}
	if seen != 21 {
		t.Fatalf("paged %d records, want 21", seen)
	}
	if rep := a.f.CheckAudit(); len(rep.Violations) != 0 {
		t.Fatalf("violations after restore: %+v", rep.Violations)
	}
}
