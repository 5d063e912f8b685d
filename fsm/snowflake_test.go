package fsm_test

import (
	"bytes"
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/fsm"
)

// Time in these tests: 2026-01-01 in Unix milliseconds, plus offsets.
const t0 int64 = 1767225600000

func testNamespace(name string) fsm.Namespace {
	return fsm.Namespace{
		Name: name, EpochMs: t0 - 1000, TimestampBits: 41, WorkerBits: 10, SequenceBits: 12, TickMs: 1,
		MaxWorkers: 3, LeaseTTLMs: 10_000, RecycleDelayMs: 20_000,
	}
}

type leaseApplier struct{ *applier }

func (a leaseApplier) create(n fsm.Namespace, now int64) any {
	return a.apply(fsm.EncodeCreateNamespace(fsm.CreateNamespace{Namespace: n, Stamp: fsm.Stamp{NowMs: now, Leader: "n1"}}))
}

func (a leaseApplier) acquire(ns, holder string, now int64) any {
	return a.apply(fsm.EncodeAcquireLease(fsm.AcquireLease{Namespace: ns, Holder: holder, Stamp: fsm.Stamp{NowMs: now, Leader: "n1"}}))
}

func (a leaseApplier) mustAcquire(ns, holder string, now int64) fsm.Lease {
	a.t.Helper()
	resp := a.acquire(ns, holder, now)
	l, ok := resp.(fsm.Lease)
	if !ok {
		a.t.Fatalf("acquire %s for %s at %d: %v", ns, holder, now, resp)
	}
	return l
}

func (a leaseApplier) renew(ns string, w int64, token uint64, now int64) any {
	return a.apply(fsm.EncodeRenewLease(fsm.RenewLease{Namespace: ns, WorkerID: w, Token: token, Stamp: fsm.Stamp{NowMs: now}}))
}

func (a leaseApplier) release(ns string, w int64, token uint64, now int64) any {
	return a.apply(fsm.EncodeReleaseLease(fsm.ReleaseLease{Namespace: ns, WorkerID: w, Token: token, Stamp: fsm.Stamp{NowMs: now}}))
}

func TestCreateNamespace_ValidatesLayout(t *testing.T) {
	a := leaseApplier{newApplier(t)}
	bad := map[string]func(n *fsm.Namespace){
		"bits not 63":          func(n *fsm.Namespace) { n.SequenceBits = 11 },
		"zero worker bits":     func(n *fsm.Namespace) { n.WorkerBits, n.TimestampBits = 0, 51 },
		"workers do not fit":   func(n *fsm.Namespace) { n.MaxWorkers = 1025 },
		"epoch in the future":  func(n *fsm.Namespace) { n.EpochMs = t0 + 1000 },
		"under 10 years left":  func(n *fsm.Namespace) { n.TimestampBits, n.SequenceBits = 38, 15 }, // 2^38 ms ≈ 8.7 years
		"old epoch eats years": func(n *fsm.Namespace) { n.EpochMs = t0 - 60*fsm.Year },
		"ttl too short":        func(n *fsm.Namespace) { n.LeaseTTLMs = 10 },
		"recycle below ttl":    func(n *fsm.Namespace) { n.RecycleDelayMs = 5_000 },
		"bad name":             func(n *fsm.Namespace) { n.Name = "a b" },
		"tick zero":            func(n *fsm.Namespace) { n.TickMs = 0 },
	}
	for name, mutate := range bad {
		n := testNamespace("ns")
		mutate(&n)
		if err, _ := a.create(n, t0).(error); !errors.Is(err, fsm.ErrInvalidCommand) {
			t.Errorf("%s: got %v, want ErrInvalidCommand", name, err)
		}
	}
	if len(a.f.Namespaces()) != 0 {
		t.Fatalf("a refused layout was stored: %+v", a.f.Namespaces())
	}
	n := testNamespace("ns")
	if r, ok := a.create(n, t0).(fsm.NamespaceResult); !ok || !r.Created {
		t.Fatalf("create: %v", r)
	}
	if r, ok := a.create(n, t0+5).(fsm.NamespaceResult); !ok || r.Created {
		t.Fatalf("same settings again: %v", r)
	}
	n.MaxWorkers = 2
	if err, _ := a.create(n, t0).(error); !errors.Is(err, fsm.ErrNamespaceConflict) {
		t.Fatalf("other settings: %v", err)
	}
	if years := testNamespace("x").YearsLeft(t0); years < 69 || years > 70 {
		t.Fatalf("41 bits of ms from 2026 should last ~69.7 years, got %.2f", years)
	}
}

func TestLeases_NeverShareAWorkerID_AcrossExpiryAndRelease(t *testing.T) {
	a := leaseApplier{newApplier(t)}
	a.create(testNamespace("ns"), t0)
	l0 := a.mustAcquire("ns", "a", t0)
	l1 := a.mustAcquire("ns", "b", t0+1)
	l2 := a.mustAcquire("ns", "c", t0+2)
	if l0.WorkerID != 0 || l1.WorkerID != 1 || l2.WorkerID != 2 || !(l0.Token < l1.Token && l1.Token < l2.Token) {
		t.Fatalf("grants %+v %+v %+v", l0, l1, l2)
	}
	if err, _ := a.acquire("ns", "d", t0+3).(error); !errors.Is(err, fsm.ErrNoWorkerFree) {
		t.Fatalf("fourth acquire: %v", err)
	}
	// Renewing keeps worker 0; worker 1 is released; worker 2 expires.
	if r, ok := a.renew("ns", 0, l0.Token, t0+9_000).(fsm.Lease); !ok || r.ExpiresMs != t0+19_000 {
		t.Fatalf("renew: %v", r)
	}
	if _, ok := a.release("ns", 1, l1.Token, t0+9_500).(fsm.Lease); !ok {
		t.Fatal("release failed")
	}
	// Before the recycle delay has passed nothing is free.
	if err, _ := a.acquire("ns", "d", t0+20_000).(error); !errors.Is(err, fsm.ErrNoWorkerFree) {
		t.Fatalf("acquire during recycle delay: %v", err)
	}
	// Worker 1 was released at t0+9500: free from t0+29500.
	l := a.mustAcquire("ns", "d", t0+29_500)
	if l.WorkerID != 1 || l.Token <= l1.Token {
		t.Fatalf("reused grant %+v", l)
	}
	// The old holder of worker 1 is fenced off by its token.
	if err, _ := a.renew("ns", 1, l1.Token, t0+29_600).(error); !errors.Is(err, fsm.ErrLeaseLost) {
		t.Fatalf("stale renew: %v", err)
	}
	// Worker 0 was renewed to t0+19000, so it is not free before t0+39000.
	l = a.mustAcquire("ns", "e", t0+32_000) // worker 2: expired t0+10002, free from t0+30002
	if l.WorkerID != 2 {
		t.Fatalf("got %+v, want worker 2", l)
	}
	if err, _ := a.renew("ns", 0, l0.Token, t0+20_000).(error); !errors.Is(err, fsm.ErrLeaseLost) {
		t.Fatalf("renew after expiry: %v", err)
	}
	rep := a.f.CheckAudit()
	if len(rep.Violations) != 0 || rep.Leases != 5 {
		t.Fatalf("audit: %+v", rep)
	}
}

// A leader whose clock is behind its predecessor's cannot move lease time
// backwards: the FSM keeps the largest time it has seen.
func TestLeases_ClockNeverMovesBackwards(t *testing.T) {
	a := leaseApplier{newApplier(t)}
	a.create(testNamespace("ns"), t0)
	l := a.mustAcquire("ns", "a", t0+50_000)
	// A renewal stamped with an older time is judged at the newest time
	// seen, so a lease cannot be revived by a lagging clock.
	if r, ok := a.renew("ns", l.WorkerID, l.Token, t0).(fsm.Lease); !ok || r.ExpiresMs != t0+60_000 {
		t.Fatalf("renew with a lagging clock: %v", r)
	}
	if a.f.ClockMs() != t0+50_000 {
		t.Fatalf("clock %d", a.f.ClockMs())
	}
}

func TestLeases_RevokeWithZeroToken(t *testing.T) {
	a := leaseApplier{newApplier(t)}
	a.create(testNamespace("ns"), t0)
	l := a.mustAcquire("ns", "a", t0)
	if _, ok := a.release("ns", l.WorkerID, 0, t0+100).(fsm.Lease); !ok {
		t.Fatal("revoke failed")
	}
	if err, _ := a.renew("ns", l.WorkerID, l.Token, t0+200).(error); !errors.Is(err, fsm.ErrLeaseLost) {
		t.Fatalf("renew after revoke: %v", err)
	}
}

func TestAudit_RecordsBlocksAndFindsThem(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("s", 1, 1<<40)
	for i := 0; i < 5; i++ {
		a.apply(fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "s", Count: 100, Min: 1, Stamp: fsm.Stamp{NowMs: t0 + int64(i), Leader: "n2"}}))
	}
	r, ok := a.f.FindBlock("s", 250)
	if !ok || r.First != 201 || r.Last != 300 || r.Leader != "n2" || r.TimeMs != t0+2 {
		t.Fatalf("FindBlock(250) = %+v, %v", r, ok)
	}
	if _, ok := a.f.FindBlock("s", 501); ok {
		t.Fatal("found a block for an ID never granted")
	}
	if got := a.f.Audit(0, 3); len(got) != 3 || got[0].First != 1 {
		t.Fatalf("Audit(0, 3) = %+v", got)
	}
	if rep := a.f.CheckAudit(); rep.Blocks != 5 || len(rep.Violations) != 0 {
		t.Fatalf("check: %+v", rep)
	}
}

// The probe finds planted violations: overlapping blocks and a worker id
// granted while its previous lease had not rested.
func TestCheckAudit_FindsPlantedViolations(t *testing.T) {
	body := `{"last_index":9,"last_term":1,"sequences":[{"name":"s","start":1,"max":1000,"issued":300}],"members":[],` +
		`"namespaces":[{"name":"ns","epoch_ms":0,"timestamp_bits":41,"worker_bits":10,"sequence_bits":12,"tick_ms":1,"max_workers":4,"lease_ttl_ms":10000,"recycle_delay_ms":20000}],` +
		`"audit":[{"index":2,"term":1,"time_ms":1,"kind":"block","sequence":"s","first":1,"last":200},` +
		`{"index":3,"term":1,"time_ms":2,"kind":"block","sequence":"s","first":150,"last":300},` +
		`{"index":4,"term":1,"time_ms":100,"kind":"lease","namespace":"ns","worker_id":1,"holder":"a","token":4},` +
		`{"index":5,"term":1,"time_ms":5000,"kind":"lease","namespace":"ns","worker_id":1,"holder":"b","token":5,"prev_end_ms":10100,"prev_token":4}]}`
	f := restore(t, rawSnapshot("TKTDSNAP", 2, body))
	rep := f.CheckAudit()
	if len(rep.Violations) != 2 {
		t.Fatalf("violations: %+v", rep.Violations)
	}
	if !strings.Contains(rep.Violations[0].Detail, "does not lie above") || rep.Violations[1].Kind != "lease" {
		t.Fatalf("violations: %+v", rep.Violations)
	}
}

func TestAudit_RetentionIsBounded(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("s", 1, 1<<50)
	for i := 0; i < fsm.AuditRetention+500; i++ {
		a.apply(fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "s", Count: 1, Min: 1}))
	}
	got := a.f.Audit(0, fsm.AuditRetention*2)
	if len(got) > fsm.AuditRetention || len(got) < fsm.AuditRetention*9/10 {
		t.Fatalf("%d records retained, bound %d", len(got), fsm.AuditRetention)
	}
	if last := got[len(got)-1]; last.Last != int64(fsm.AuditRetention+500) {
		t.Fatalf("newest record %+v", last)
	}
}

func TestSnapshotV2_RoundTripsLeasesAndAudit(t *testing.T) {
	a := leaseApplier{newApplier(t)}
	a.create(testNamespace("ns"), t0)
	a.mustAcquire("ns", "a", t0)
	a.mustCreate("s", 1, 100)
	a.apply(fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "s", Count: 10, Min: 1}))
	snap := persist(t, a.f)
	r := restore(t, snap)
	if !bytes.Equal(persist(t, r), snap) {
		t.Fatal("restore then persist changed the snapshot")
	}
	if len(r.Leases("ns")) != 1 || r.ClockMs() != t0 || len(r.Audit(0, 10)) != 2 {
		t.Fatalf("restored: leases %+v clock %d audit %+v", r.Leases("ns"), r.ClockMs(), r.Audit(0, 10))
	}
}

const fixtureV2 = "testdata/snapshot-v2.bin"

// fixtureV2State builds the state the v2 fixture holds.
func fixtureV2State(t *testing.T) *fsm.FSM {
	a := leaseApplier{newApplier(t)}
	a.mustCreate("orders", 1, 1<<40)
	a.apply(fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "orders", Count: 1000, Min: 1, Stamp: fsm.Stamp{NowMs: t0, Leader: "n1"}}))
	a.create(testNamespace("users"), t0)
	l := a.mustAcquire("users", "api-1", t0+10)
	a.release("users", l.WorkerID, l.Token, t0+20)
	a.mustAcquire("users", "api-2", t0+30)
	a.apply(fsm.EncodeSetMember(fsm.SetMember{ID: "n1", RaftAddr: "10.0.0.1:8090", HTTPAddr: "10.0.0.1:8080"}))
	return a.f
}

func TestSnapshotFixtureV2_StillRestores(t *testing.T) {
	if *update {
		if fsm.SnapshotVersion != 2 {
			t.Fatalf("refusing to overwrite %s with a v%d snapshot", fixtureV2, fsm.SnapshotVersion)
		}
		if err := os.WriteFile(fixtureV2, persist(t, fixtureV2State(t)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(fixtureV2)
	if err != nil {
		t.Fatalf("read fixture (generate it with go test ./fsm/ -run TestSnapshotFixtureV2 -update): %v", err)
	}
	f := restore(t, b)
	if s, ok := f.Sequence("orders"); !ok || s.Issued != 1000 {
		t.Fatalf("orders: %+v", s)
	}
	leases := f.Leases("users")
	if len(leases) != 2 || leases[0].Holder != "api-1" || leases[0].ReleasedMs != t0+20 || leases[1].Holder != "api-2" {
		t.Fatalf("leases: %+v", leases)
	}
	if f.ClockMs() != t0+30 || len(f.Audit(0, 100)) != 3 {
		t.Fatalf("clock %d audit %+v", f.ClockMs(), f.Audit(0, 100))
	}
	if fsm.SnapshotVersion == 2 && !bytes.Equal(persist(t, f), b) {
		t.Fatal("Persist no longer writes the v2 fixture's bytes: bump SnapshotVersion and add a fixture")
	}
}

const fixtureV3 = "testdata/snapshot-v3.bin"

// fixtureV3State is a cluster seeded from a backup of the v2 fixture's state,
// with one more block and an idempotent acquire: the token floor, audit
// numbering and request ids that v3 added are all in play.
func fixtureV3State(t *testing.T) *fsm.FSM {
	a := leaseApplier{newApplier(t)}
	a.apply(fsm.EncodeSetMember(fsm.SetMember{ID: "m1", RaftAddr: "10.0.1.1:8090", HTTPAddr: "10.0.1.1:8080"}))
	if _, ok := a.restoreBackup(backupOf(t, fixtureV2State(t)), 1000, t0+40).(fsm.RestoreResult); !ok {
		t.Fatal("restore refused")
	}
	a.apply(fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "orders", Count: 10, Min: 1, Stamp: fsm.Stamp{NowMs: t0 + 50, Leader: "m1"}}))
	a.apply(fsm.EncodeAcquireLease(fsm.AcquireLease{Namespace: "users", Holder: "api-3", RequestID: "req-1", Stamp: fsm.Stamp{NowMs: t0 + 60, Leader: "m1"}}))
	return a.f
}

func TestSnapshotFixtureV3_StillRestores(t *testing.T) {
	if *update {
		if fsm.SnapshotVersion != 3 {
			t.Fatalf("refusing to overwrite %s with a v%d snapshot", fixtureV3, fsm.SnapshotVersion)
		}
		if err := os.WriteFile(fixtureV3, persist(t, fixtureV3State(t)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(fixtureV3)
	if err != nil {
		t.Fatalf("read fixture (generate it with go test ./fsm/ -run TestSnapshotFixtureV3 -update): %v", err)
	}
	f := restore(t, b)
	if s, ok := f.Sequence("orders"); !ok || s.Issued != 2010 {
		t.Fatalf("orders: %+v", s)
	}
	leases := f.Leases("users")
	if len(leases) != 3 || leases[2].Holder != "api-3" || leases[2].RequestID != "req-1" || leases[2].Token <= leases[1].Token {
		t.Fatalf("leases: %+v", leases)
	}
	audit := f.Audit(0, 100)
	if len(audit) != 5 || audit[4].Seq != 5 || audit[4].Token != leases[2].Token {
		t.Fatalf("audit %+v", audit)
	}
	if m := f.Members(); len(m) != 1 || m[0].ID != "m1" {
		t.Fatalf("members %+v", m)
	}
	if fsm.SnapshotVersion == 3 && !bytes.Equal(persist(t, f), b) {
		t.Fatal("Persist no longer writes the v3 fixture's bytes: bump SnapshotVersion and add a fixture")
	}
}

// A v2 snapshot gets the v3 fields derived: audit numbers in order, and a
// token floor at its largest token, so the next grant's token is above it.
func TestSnapshotFixtureV2_UpgradesTokenFloorAndAuditNumbers(t *testing.T) {
	b, err := os.ReadFile(fixtureV2)
	if err != nil {
		t.Fatal(err)
	}
	f := restore(t, b)
	audit := f.Audit(0, 100)
	for i, r := range audit {
		if r.Seq != uint64(i+1) {
			t.Fatalf("audit %d has seq %d", i, r.Seq)
		}
	}
	a := leaseApplier{&applier{t: t, f: f, index: 1, term: 1}} // a log index below every token
	l := a.mustAcquire("users", "api-9", t0+100_000)
	for _, old := range f.Leases("users") {
		if old.WorkerID != l.WorkerID && old.Token >= l.Token {
			t.Fatalf("new token %d not above %d", l.Token, old.Token)
		}
	}
}

// TestLease_GrantSeq_NamesTheGrantRecord (issue 47): a grant's answer, a
// retried acquire's, a renewal's and the listing name the lease by the
// sequence number of its grant record in the audit; a snapshot restore
// links it again from the audit, and a backup restore from the renumbered
// records.
func TestLease_GrantSeq_NamesTheGrantRecord(t *testing.T) {
	a := leaseApplier{newApplier(t)}
	a.create(testNamespace("ns"), t0)
	a.mustCreate("s", 1, math.MaxInt64)
	a.apply(fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "s", Count: 10, Min: 1})) // a block record first
	recordOf := func(f *fsm.FSM, seq uint64) fsm.AuditRecord {
		for _, r := range f.Audit(0, 1000) {
			if r.Seq == seq {
				return r
			}
		}
		return fsm.AuditRecord{}
	}
	l, ok := a.apply(fsm.EncodeLeaseOp(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "ns", Holder: "h", RequestID: "r1", Stamp: fsm.Stamp{NowMs: t0}})).(fsm.Lease)
	if !ok || l.GrantSeq == 0 {
		t.Fatalf("grant %+v", l)
	}
	if r := recordOf(a.f, l.GrantSeq); r.Kind != fsm.AuditLease || r.Token != l.Token || r.WorkerID != l.WorkerID || r.Holder != "h" {
		t.Fatalf("grant_seq %d names %+v, not the grant of token %d", l.GrantSeq, r, l.Token)
	}
	retry, _ := a.apply(fsm.EncodeLeaseOp(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "ns", Holder: "h", RequestID: "r1", Stamp: fsm.Stamp{NowMs: t0 + 1}})).(fsm.Lease)
	renewed, _ := a.renew("ns", l.WorkerID, l.Token, t0+2).(fsm.Lease)
	second := a.mustAcquire("ns", "h2", t0+3)
	if retry.GrantSeq != l.GrantSeq || renewed.GrantSeq != l.GrantSeq || second.GrantSeq <= l.GrantSeq || a.f.Leases("ns")[0].GrantSeq != l.GrantSeq {
		t.Fatalf("retry %d, renewal %d, second grant %d, listing %+v; grant %d", retry.GrantSeq, renewed.GrantSeq, second.GrantSeq, a.f.Leases("ns"), l.GrantSeq)
	}
	if g := restore(t, persist(t, a.f)); !reflect.DeepEqual(g.Leases("ns"), a.f.Leases("ns")) {
		t.Fatalf("after a snapshot restore %+v, want %+v", g.Leases("ns"), a.f.Leases("ns"))
	}
	// A backup restored elsewhere: the records are renumbered after the
	// new cluster's own, and the leases name their new numbers.
	b := leaseApplier{newApplier(t)}
	b.create(testNamespace("other"), t0)
	b.mustAcquire("other", "x", t0)
	b.restoreBackup(backupOf(t, a.f), 100, t0+10)
	for _, rl := range b.f.Leases("ns") {
		if r := recordOf(b.f, rl.GrantSeq); rl.GrantSeq == 0 || r.Token != rl.Token || r.Namespace != "ns" {
			t.Fatalf("restored lease %+v names record %+v", rl, r)
		}
	}
}
