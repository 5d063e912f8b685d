package fsm_test

import (
	"errors"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"

	"github.com/ticketd/ticketd/fsm"
)

// Lease operations of issue #18 (CommandLease): decided by entries, never by
// stamps.

func (a leaseApplier) op(c fsm.LeaseOp) any { return a.apply(fsm.EncodeLeaseOp(c)) }

func (a leaseApplier) mustLease(c fsm.LeaseOp) fsm.Lease {
	a.t.Helper()
	resp := a.op(c)
	l, ok := resp.(fsm.Lease)
	if !ok {
		a.t.Fatalf("%s %+v: %v", c.Op, c, resp)
	}
	return l
}

func stamp(ms int64) fsm.Stamp { return fsm.Stamp{NowMs: ms, Leader: "n1"} }

// A lease lives from its grant until an entry ends it, however far the
// stamps jump; its worker id is granted again only after a recycle entry;
// timers of an older version change nothing.
func TestLeaseOp_LifeCycle_EntriesDecideNotStamps(t *testing.T) {
	a := leaseApplier{newApplier(t)}
	ns := testNamespace("ns")
	ns.MaxWorkers = 1
	a.create(ns, t0)
	l := a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "ns", Holder: "a", ClientTimeMs: t0, Stamp: stamp(t0)})
	if l.State != fsm.LeaseHeld || l.Version != a.index || l.ClientBoundMs != t0+ns.LeaseTTLMs || l.TimestampFloorMs != 0 {
		t.Fatalf("grant %+v", l)
	}
	grantVersion := l.Version

	// An hour, then a day, later by the stamps: still held, renewable.
	wantErr(t, a.op(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "ns", Holder: "b", Stamp: stamp(t0 + 3_600_000)}), fsm.ErrNoWorkerFree)
	r := a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpRenew, Namespace: "ns", WorkerID: 0, Token: l.Token, ClientTimeMs: t0 + 5000, Stamp: stamp(t0 + 86_400_000)})
	if r.State != fsm.LeaseHeld || r.Version != a.index || r.ClientBoundMs != t0+5000+ns.LeaseTTLMs {
		t.Fatalf("renewal %+v", r)
	}
	// A holder's clock that steps back never lowers its bound.
	r = a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpRenew, Namespace: "ns", WorkerID: 0, Token: l.Token, ClientTimeMs: t0 + 1000, Stamp: stamp(t0 - 86_400_000)})
	if r.ClientBoundMs != t0+5000+ns.LeaseTTLMs {
		t.Fatalf("bound after a backward client clock: %+v", r)
	}

	// The timer of the grant's version is stale after the renewal.
	wantErr(t, a.op(fsm.LeaseOp{Op: fsm.LeaseOpExpire, Namespace: "ns", WorkerID: 0, Token: l.Token, Version: grantVersion}), fsm.ErrLeaseTimerStale)
	if cur := a.f.Leases("ns")[0]; cur.State != fsm.LeaseHeld {
		t.Fatalf("a stale expiry ended the lease: %+v", cur)
	}
	// Recycling a held lease is stale too.
	wantErr(t, a.op(fsm.LeaseOp{Op: fsm.LeaseOpRecycle, Namespace: "ns", WorkerID: 0, Token: l.Token, Version: r.Version}), fsm.ErrLeaseTimerStale)

	e := a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpExpire, Namespace: "ns", WorkerID: 0, Token: l.Token, Version: r.Version, Stamp: stamp(t0)})
	if e.State != fsm.LeaseEnded || e.EndReason != "expired" || e.Version != a.index {
		t.Fatalf("expiry %+v", e)
	}
	wantErr(t, a.op(fsm.LeaseOp{Op: fsm.LeaseOpRenew, Namespace: "ns", WorkerID: 0, Token: l.Token, Stamp: stamp(t0)}), fsm.ErrLeaseLost)
	// Resting: not granted, whatever the stamp says.
	wantErr(t, a.op(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "ns", Holder: "b", Stamp: stamp(t0 + 365*86_400_000)}), fsm.ErrNoWorkerFree)

	f := a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpRecycle, Namespace: "ns", WorkerID: 0, Token: l.Token, Version: e.Version})
	if f.State != fsm.LeaseFree {
		t.Fatalf("recycle %+v", f)
	}
	freedAt := a.index
	b := a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "ns", Holder: "b", Stamp: stamp(t0 - 3_600_000)})
	if b.WorkerID != 0 || b.Token <= l.Token || b.TimestampFloorMs != t0+5000+ns.LeaseTTLMs || b.ClientBoundMs != 0 {
		t.Fatalf("second grant %+v", b)
	}
	audit := a.f.Audit(0, 10)
	last := audit[len(audit)-1]
	if last.PrevToken != l.Token || last.PrevFreedIndex != freedAt || last.LegacyClock {
		t.Fatalf("audit of the second grant %+v", last)
	}
	if rep := a.f.CheckAudit(); len(rep.Violations) != 0 || rep.Leases != 2 {
		t.Fatalf("probe %+v", rep)
	}

	// b never sent its clock: the next holder's floor falls back to the
	// leader's stamped expiry.
	a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpRelease, Namespace: "ns", WorkerID: 0, Token: b.Token})
	cur := a.f.Leases("ns")[0]
	a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpRecycle, Namespace: "ns", WorkerID: 0, Token: b.Token, Version: cur.Version})
	c := a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "ns", Holder: "c"})
	if c.TimestampFloorMs != max(b.TimestampFloorMs, b.ExpiresMs) {
		t.Fatalf("floor after a holder without a clock: %+v (previous %+v)", c, b)
	}
}

func TestLeaseOp_BadOperations_RefusedStateUnchanged(t *testing.T) {
	a := leaseApplier{newApplier(t)}
	a.create(testNamespace("ns"), t0)
	l := a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "ns", Holder: "a"})
	before := persist(t, a.f)
	for _, c := range []struct {
		op   fsm.LeaseOp
		want error
	}{
		{fsm.LeaseOp{Op: "steal", Namespace: "ns"}, fsm.ErrInvalidCommand},
		{fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "ns"}, fsm.ErrInvalidCommand},
		{fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "nope", Holder: "a"}, fsm.ErrNamespaceNotFound},
		{fsm.LeaseOp{Op: fsm.LeaseOpRenew, Namespace: "ns", WorkerID: l.WorkerID}, fsm.ErrInvalidCommand},
		{fsm.LeaseOp{Op: fsm.LeaseOpRenew, Namespace: "ns", WorkerID: l.WorkerID, Token: l.Token + 1}, fsm.ErrLeaseLost},
		{fsm.LeaseOp{Op: fsm.LeaseOpRelease, Namespace: "ns", WorkerID: 2, Token: l.Token}, fsm.ErrLeaseLost},
		{fsm.LeaseOp{Op: fsm.LeaseOpExpire, Namespace: "ns", WorkerID: l.WorkerID, Token: l.Token + 1, Version: l.Version}, fsm.ErrLeaseTimerStale},
		{fsm.LeaseOp{Op: fsm.LeaseOpExpire, Namespace: "nope", WorkerID: 0, Token: l.Token, Version: l.Version}, fsm.ErrLeaseTimerStale},
	} {
		wantErr(t, a.op(c.op), c.want)
	}
	after := persist(t, a.f)
	// Only the index moved.
	if ra, rb := restore(t, before).Leases("ns"), restore(t, after).Leases("ns"); !reflect.DeepEqual(ra, rb) {
		t.Fatalf("refused operations changed the leases: %+v -> %+v", ra, rb)
	}
}

// TestProperty_LeaseOps_StampsDecideNothing drives random lease operations,
// timers with current and stale versions, through two FSMs: one whose
// stamps jump back and forth by up to a day, one whose stamps are all zero.
// Every answer but the stamp fields must be the same, each grant of a
// worker id must follow a recycle entry, tokens grow, and the probe finds
// nothing.
func TestProperty_LeaseOps_StampsDecideNothing(t *testing.T) {
	for _, seed := range []uint64{1, 7, 2026} {
		r := rand.New(rand.NewPCG(seed, seed))
		a, z := leaseApplier{newApplier(t)}, leaseApplier{newApplier(t)}
		ns := testNamespace("ns")
		ns.MaxWorkers = 4
		a.create(ns, t0)
		z.create(ns, t0)
		var lastToken uint64
		applied := map[string]int{}
		for step := 0; step < 4000; step++ {
			leases := z.f.Leases("ns")
			var pick fsm.Lease
			if len(leases) > 0 {
				pick = leases[r.IntN(len(leases))]
			}
			c := fsm.LeaseOp{Namespace: "ns", WorkerID: pick.WorkerID, Token: pick.Token, Version: pick.Version}
			switch p := r.IntN(12); {
			case p < 3 || len(leases) == 0:
				c = fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "ns", Holder: "h", ClientTimeMs: 1 + int64(r.IntN(1000))} // with a clock, so floors never fall back to stamps
			case p < 6:
				c.Op = fsm.LeaseOpRenew
			case p < 7:
				c.Op = fsm.LeaseOpRelease
			case p < 8:
				c.Op, c.Token = fsm.LeaseOpRevoke, 0
			case p < 10:
				c.Op = fsm.LeaseOpExpire
			default:
				c.Op = fsm.LeaseOpRecycle
			}
			if r.IntN(5) == 0 {
				c.Version-- // a stale timer
			}
			zr := z.op(c)
			c.Stamp = stamp(t0 + int64(r.IntN(2*86_400_000)) - 86_400_000)
			ar := a.op(c)
			if !reflect.DeepEqual(decision(ar), decision(zr)) {
				t.Fatalf("seed %d step %d: %s decided %+v with stamps, %+v without", seed, step, c.Op, decision(ar), decision(zr))
			}
			if l, ok := ar.(fsm.Lease); ok {
				applied[c.Op]++
				if c.Op == fsm.LeaseOpAcquire && l.Token > lastToken {
					lastToken = l.Token
				} else if c.Op == fsm.LeaseOpAcquire && l.Token < lastToken {
					t.Fatalf("seed %d step %d: token %d after %d", seed, step, l.Token, lastToken)
				}
			}
		}
		for _, op := range []string{fsm.LeaseOpAcquire, fsm.LeaseOpRenew, fsm.LeaseOpRelease, fsm.LeaseOpRevoke, fsm.LeaseOpExpire, fsm.LeaseOpRecycle} {
			if applied[op] == 0 {
				t.Fatalf("seed %d: no %s was ever applied (%v): the walk does not cover the life cycle", seed, op, applied)
			}
		}
		for _, f := range []*fsm.FSM{a.f, z.f} {
			if rep := f.CheckAudit(); len(rep.Violations) != 0 || rep.Leases == 0 {
				t.Fatalf("seed %d: probe %+v", seed, rep)
			}
		}
		if la, lz := decisionsOf(a.f.Leases("ns")), decisionsOf(z.f.Leases("ns")); !reflect.DeepEqual(la, lz) {
			t.Fatalf("seed %d: final leases differ: %+v vs %+v", seed, la, lz)
		}
	}
}

// decision strips an answer of the stamp fields.
func decision(resp any) any {
	switch v := resp.(type) {
	case fsm.Lease:
		v.GrantedMs, v.ExpiresMs, v.ReleasedMs = 0, 0, 0
		return v
	case error:
		for _, e := range []error{fsm.ErrLeaseLost, fsm.ErrLeaseTimerStale, fsm.ErrNoWorkerFree, fsm.ErrWorkerUnavailable, fsm.ErrInvalidCommand} {
			if errors.Is(v, e) {
				return e
			}
		}
		return v.Error()
	}
	return resp
}

func decisionsOf(ls []fsm.Lease) []any {
	out := make([]any, len(ls))
	for i, l := range ls {
		out[i] = decision(l)
	}
	return out
}

const fixtureV4 = "testdata/snapshot-v4.bin"

// fixtureV4State has a lease in each state, timestamp bounds and floors,
// and a legacy grant before them.
func fixtureV4State(t *testing.T) *fsm.FSM {
	a := leaseApplier{newApplier(t)}
	a.apply(fsm.EncodeSetMember(fsm.SetMember{ID: "n1", RaftAddr: "10.0.0.1:8090", HTTPAddr: "10.0.0.1:8080"}))
	a.mustCreate("orders", 1, 1<<40)
	a.apply(fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "orders", Count: 100, Min: 1, Stamp: stamp(t0)}))
	ns := testNamespace("users")
	ns.MaxWorkers = 4
	a.create(ns, t0)
	legacy := a.mustAcquire("users", "api-0", t0+10) // worker 0, held
	w1 := a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "users", Holder: "api-1", RequestID: "r1", ClientTimeMs: t0 + 20, Stamp: stamp(t0 + 20)})
	a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpRenew, Namespace: "users", WorkerID: w1.WorkerID, Token: w1.Token, ClientTimeMs: t0 + 30, Stamp: stamp(t0 + 30)})
	w2 := a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "users", Holder: "api-2", ClientTimeMs: t0 + 40, Stamp: stamp(t0 + 40)})
	a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpRelease, Namespace: "users", WorkerID: w2.WorkerID, Token: w2.Token, Stamp: stamp(t0 + 50)})
	w3 := a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "users", Holder: "api-3", Stamp: stamp(t0 + 60)})
	e := a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpExpire, Namespace: "users", WorkerID: w3.WorkerID, Token: w3.Token, Version: w3.Version, Stamp: stamp(t0 + 70)})
	a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpRecycle, Namespace: "users", WorkerID: w3.WorkerID, Token: w3.Token, Version: e.Version, Stamp: stamp(t0 + 80)})
	a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "users", Holder: "api-4", ClientTimeMs: t0 + 90, Stamp: stamp(t0 + 90)}) // worker 3 again, with a floor
	_ = legacy
	return a.f
}

func TestSnapshotFixtureV4_StillRestores(t *testing.T) {
	if *update {
		if fsm.SnapshotVersion != 4 {
			t.Fatalf("refusing to overwrite %s with a v%d snapshot", fixtureV4, fsm.SnapshotVersion)
		}
		if err := os.WriteFile(fixtureV4, persist(t, fixtureV4State(t)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(fixtureV4)
	if err != nil {
		t.Fatalf("read fixture (generate it with go test ./fsm/ -run TestSnapshotFixtureV4 -update): %v", err)
	}
	f := restore(t, b)
	leases := f.Leases("users")
	states := []fsm.LeaseState{}
	for _, l := range leases {
		states = append(states, l.State)
	}
	if !reflect.DeepEqual(states, []fsm.LeaseState{fsm.LeaseHeld, fsm.LeaseHeld, fsm.LeaseEnded, fsm.LeaseHeld}) {
		t.Fatalf("states %v of %+v", states, leases)
	}
	if leases[1].ClientBoundMs != t0+30+10_000 || leases[3].TimestampFloorMs != t0+60+10_000 || leases[2].EndReason != "released" {
		t.Fatalf("v4 fields: %+v", leases)
	}
	if rep := f.CheckAudit(); len(rep.Violations) != 0 || rep.Leases != 5 {
		t.Fatalf("probe %+v", rep)
	}
	if fsm.SnapshotVersion == 4 && !reflect.DeepEqual(persist(t, f), b) {
		t.Fatal("Persist no longer writes the v4 fixture's bytes: bump SnapshotVersion and add a fixture")
	}
}

// A pre-v4 snapshot's leases get their state from the legacy rule at the
// snapshot's lease clock, and versions at its index.
func TestSnapshotFixtureV3_LeasesGetStates(t *testing.T) {
	b, err := os.ReadFile(fixtureV3)
	if err != nil {
		t.Fatal(err)
	}
	f := restore(t, b)
	idx, _ := f.LastApplied()
	for _, l := range f.Leases("users") {
		want := fsm.LeaseHeld
		if !l.Active(f.ClockMs()) {
			want = fsm.LeaseEnded
		}
		if l.State != want || l.Version != idx {
			t.Fatalf("lease %+v: want state %s, version %d", l, want, idx)
		}
	}
	for _, r := range f.Audit(0, 100) {
		if r.Kind == fsm.AuditLease && !r.LegacyClock {
			t.Fatalf("a v3 grant not marked legacy: %+v", r)
		}
	}
}
