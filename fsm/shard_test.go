package fsm_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"

	"github.com/ticketd/ticketd/fsm"
)

// Shard-embedding namespaces and leases on a chosen worker id (issue #16).

func shardNamespace(name string) fsm.Namespace {
	n := testNamespace(name)
	n.TimestampBits, n.WorkerBits, n.SequenceBits = 40, 13, 10 // Instagram's low 23 bits; 40 of ms keep IDs positive
	n.MaxWorkers, n.WorkerRole = 8192, fsm.WorkerRoleShard
	return n
}

func chosen(ns, holder string, worker int64, requestID string, ms int64) fsm.LeaseOp {
	return fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: ns, Holder: holder, RequestID: requestID, WorkerID: worker, Chosen: true,
		ClientTimeMs: ms, Stamp: stamp(ms)}
}

// A chosen worker id is granted when free, refused while held and while it
// rests (stamps a year on make no difference), granted again after the
// recycle entry with a larger token and the previous holder's floor; a
// retry with the same request id gets the lease back.
func TestLeaseOp_ChosenWorker_GrantedOnlyWhenFree(t *testing.T) {
	a := leaseApplier{newApplier(t)}
	ns := shardNamespace("posts")
	if r, ok := a.create(ns, t0).(fsm.NamespaceResult); !ok || !r.Created || r.Namespace.WorkerRole != fsm.WorkerRoleShard {
		t.Fatalf("create: %+v", r)
	}
	l := a.mustLease(chosen("posts", "a", 17, "r-a", t0))
	if l.WorkerID != 17 || l.State != fsm.LeaseHeld || l.Token != a.index || l.Holder != "a" {
		t.Fatalf("grant %+v", l)
	}
	// Idempotent: the retry gets the same lease, and nothing is granted.
	if again := a.mustLease(chosen("posts", "a", 17, "r-a", t0+10)); !reflect.DeepEqual(again, l) {
		t.Fatalf("retry %+v, want %+v", again, l)
	}
	if n := len(a.f.Audit(0, 100)); n != 1 {
		t.Fatalf("%d audit records after a retry, want 1", n)
	}
	// The same request id cannot take a second worker id.
	wantErr(t, a.op(chosen("posts", "a", 18, "r-a", t0)), fsm.ErrInvalidCommand)

	// Held: refused, naming the holder and state.
	resp := a.op(chosen("posts", "b", 17, "r-b", t0+3_600_000))
	var wu fsm.WorkerUnavailableError
	if err, ok := resp.(error); !ok || !errors.Is(err, fsm.ErrWorkerUnavailable) || !errors.As(err, &wu) {
		t.Fatalf("acquire of a held shard: %#v", resp)
	}
	if wu.WorkerID != 17 || wu.Holder != "a" || wu.State != fsm.LeaseHeld || wu.EarliestFreeMs != l.ExpiresMs+ns.RecycleDelayMs {
		t.Fatalf("refusal %+v for lease %+v", wu, l)
	}
	// Another shard is free meanwhile.
	b18 := a.mustLease(chosen("posts", "b", 18, "", t0))
	if b18.WorkerID != 18 || b18.Token <= l.Token {
		t.Fatalf("shard 18: %+v", b18)
	}

	// Released: rests until the recycle entry, whatever the stamps say.
	rel := a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpRelease, Namespace: "posts", WorkerID: 17, Token: l.Token, Stamp: stamp(t0 + 5000)})
	resp = a.op(chosen("posts", "b", 17, "r-b", t0+365*86_400_000))
	wu = fsm.WorkerUnavailableError{}
	if err, ok := resp.(error); !ok || !errors.As(err, &wu) || wu.State != fsm.LeaseEnded || wu.EndReason != "released" || wu.EarliestFreeMs != rel.ReleasedMs+ns.RecycleDelayMs {
		t.Fatalf("acquire of a resting shard: %#v", resp)
	}
	// The old holder's retry does not get its ended lease back either.
	wantErr(t, a.op(chosen("posts", "a", 17, "r-a", t0)), fsm.ErrWorkerUnavailable)

	a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpRecycle, Namespace: "posts", WorkerID: 17, Token: l.Token, Version: rel.Version})
	freedAt := a.index
	b := a.mustLease(chosen("posts", "b", 17, "r-b", t0-86_400_000)) // a stamp a day back decides nothing either
	if b.WorkerID != 17 || b.Token <= b18.Token || b.Holder != "b" || b.TimestampFloorMs != t0+ns.LeaseTTLMs {
		t.Fatalf("grant after the recycle: %+v (first %+v)", b, l)
	}
	last := a.f.Audit(0, 100)
	if r := last[len(last)-1]; r.PrevToken != l.Token || r.PrevFreedIndex != freedAt || r.WorkerID != 17 {
		t.Fatalf("audit of the regrant %+v", r)
	}
	if rep := a.f.CheckAudit(); len(rep.Violations) != 0 || rep.Leases != 3 {
		t.Fatalf("probe %+v", rep)
	}
}

func TestLeaseOp_ChosenWorker_BadRequestsRefusedStateUnchanged(t *testing.T) {
	a := leaseApplier{newApplier(t)}
	a.create(shardNamespace("posts"), t0)
	plain := testNamespace("users") // 3 worker ids
	a.create(plain, t0)
	a.mustLease(chosen("posts", "a", 0, "", t0))
	before := persist(t, a.f)
	for _, c := range []struct {
		op   fsm.LeaseOp
		want error
	}{
		{chosen("posts", "a", 8192, "", t0), fsm.ErrInvalidCommand},
		{chosen("posts", "a", -1, "", t0), fsm.ErrInvalidCommand},
		{chosen("users", "a", 3, "", t0), fsm.ErrInvalidCommand},
		{chosen("posts", "", 1, "", t0), fsm.ErrInvalidCommand},
		{chosen("nope", "a", 1, "", t0), fsm.ErrNamespaceNotFound},
		// A shard namespace grants only chosen ids.
		{fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "posts", Holder: "a"}, fsm.ErrInvalidCommand},
		{chosen("posts", "b", 0, "", t0), fsm.ErrWorkerUnavailable},
	} {
		if err, ok := a.op(c.op).(error); !ok || !errors.Is(err, c.want) {
			t.Fatalf("%+v: %v, want %v", c.op, err, c.want)
		}
	}
	if ra, rb := restore(t, before).Leases("posts"), restore(t, persist(t, a.f)).Leases("posts"); !reflect.DeepEqual(ra, rb) {
		t.Fatalf("refused acquires changed the leases: %+v -> %+v", ra, rb)
	}
	// A plain namespace takes chosen acquires too, and the lowest-free
	// acquire steps around a chosen id.
	if l := a.mustLease(chosen("users", "a", 0, "", t0)); l.WorkerID != 0 {
		t.Fatalf("chosen in a plain namespace: %+v", l)
	}
	if l := a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "users", Holder: "b"}); l.WorkerID != 1 {
		t.Fatalf("lowest free after a chosen grant: %+v", l)
	}
}

// Namespaces: the new fields are checked at creation and in every state
// that is restored; the settings are part of the namespace (a namespace
// with the same bits but another role is another namespace).
func TestNamespace_WorkerRoleAndHorizon_ValidatedAndCompared(t *testing.T) {
	a := leaseApplier{newApplier(t)}
	bad := shardNamespace("bad")
	bad.WorkerRole = "tenant"
	wantErr(t, a.create(bad, t0), fsm.ErrInvalidCommand)
	bad = shardNamespace("bad")
	bad.HorizonYears = -1
	wantErr(t, a.create(bad, t0), fsm.ErrInvalidCommand)
	bad.HorizonYears = fsm.MaxHorizonYears + 1
	wantErr(t, a.create(bad, t0), fsm.ErrInvalidCommand)

	n := shardNamespace("posts")
	n.HorizonYears = 50
	a.create(n, t0)
	plain := n
	plain.WorkerRole = ""
	wantErr(t, a.create(plain, t0), fsm.ErrNamespaceConflict)
	other := n
	other.HorizonYears = 0
	wantErr(t, a.create(other, t0), fsm.ErrNamespaceConflict)
	if r, ok := a.create(n, t0).(fsm.NamespaceResult); !ok || r.Created {
		t.Fatalf("same settings again: %#v", r)
	}

	// A snapshot holding a namespace with an unknown role is refused
	// whole.
	snap := persist(t, a.f)
	bogus := bytes.Replace(snap, []byte(`"worker_role":"shard"`), []byte(`"worker_role":"tenant"`), 1)
	if bytes.Equal(bogus, snap) {
		t.Fatalf("the snapshot does not hold the role: %s", snap)
	}
	if err := fsm.New().Restore(io.NopCloser(bytes.NewReader(bogus))); err == nil {
		t.Fatal("a snapshot with worker_role \"tenant\" was restored")
	}
	if err := fsm.ValidateBackup(bogus, 1); err == nil {
		t.Fatal("a backup with worker_role \"tenant\" passed validation")
	}
	if got, _ := restore(t, snap).Namespace("posts"); got != n {
		t.Fatalf("restored %+v, want %+v", got, n)
	}
}

// Old namespaces and lease entries do not carry the new fields: their
// encoding is what it was, the v4 fixture restores and persists to the same
// bytes, and a log of lease operations without chosen acquires applies to
// the same answers whether or not the decoder knows the field (the answers
// of TestLeaseOp_LifeCycle_EntriesDecideNotStamps and the v11 log fixture
// pin the rest).
func TestLeaseOp_OldEntriesEncodeAndReplayAsBefore(t *testing.T) {
	op := fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "ns", Holder: "h", RequestID: "r", ClientTimeMs: 5}
	if got, want := string(fsm.EncodeLeaseOp(op)), "\x0a"+`{"op":"acquire","namespace":"ns","holder":"h","request_id":"r","client_time_ms":5}`; got != want {
		t.Fatalf("an acquire that chooses nothing encodes as %q, want %q (as before issue #16)", got, want)
	}
	cn := fsm.EncodeCreateNamespace(fsm.CreateNamespace{Namespace: testNamespace("ns")})
	if bytes.Contains(cn, []byte("worker_role")) || bytes.Contains(cn, []byte("horizon")) {
		t.Fatalf("a plain namespace's entry carries the new fields: %s", cn)
	}
	raw, err := os.ReadFile(fixtureV4)
	if err != nil {
		t.Fatal(err)
	}
	f := restore(t, raw)
	for _, n := range f.Namespaces() {
		if n.WorkerRole != "" || n.HorizonYears != 0 {
			t.Fatalf("v4 fixture namespace %+v", n)
		}
	}
	// Persisted now, it is the same state in the v5 format: the new
	// fields stay absent.
	if again := persist(t, f); !bytes.Equal(again[12:], raw[12:]) {
		t.Fatalf("the v4 fixture's state does not persist to the same body")
	}

	// The same random log of lease operations that choose nothing, applied
	// as encoded now and as the pre-#16 JSON (no chosen field in the
	// struct): the same answers and the same state.
	type oldLeaseOp struct {
		Op           string `json:"op"`
		Namespace    string `json:"namespace"`
		Holder       string `json:"holder,omitempty"`
		RequestID    string `json:"request_id,omitempty"`
		ClientTimeMs int64  `json:"client_time_ms,omitempty"`
		WorkerID     int64  `json:"worker_id,omitempty"`
		Token        uint64 `json:"token,omitempty"`
		Version      uint64 `json:"version,omitempty"`
		fsm.Stamp
	}
	r := rand.New(rand.NewPCG(16, 16))
	x, y := leaseApplier{newApplier(t)}, leaseApplier{newApplier(t)}
	ns := testNamespace("ns")
	x.create(ns, t0)
	y.create(ns, t0)
	for step := range 2000 {
		c := randomLeaseOp(r, y.f.Leases("ns"))
		old, err := fsm.Encode(fsm.CommandLease, oldLeaseOp{c.Op, c.Namespace, c.Holder, c.RequestID, c.ClientTimeMs, c.WorkerID, c.Token, c.Version, c.Stamp})
		if err != nil {
			t.Fatal(err)
		}
		if nw := fsm.EncodeLeaseOp(c); !bytes.Equal(nw, old) {
			t.Fatalf("step %d: %q encodes as %q, before issue #16 as %q", step, c.Op, nw, old)
		}
		if rx, ry := x.op(c), y.apply(old); !reflect.DeepEqual(normalize(rx), normalize(ry)) {
			t.Fatalf("step %d: %v vs %v", step, rx, ry)
		}
	}
	if !bytes.Equal(persist(t, x.f), persist(t, y.f)) {
		t.Fatal("the two logs left different states")
	}
}

// randomLeaseOp is a random lease operation that chooses no worker id, on
// namespace "ns", about the given leases.
func randomLeaseOp(r *rand.Rand, leases []fsm.Lease) fsm.LeaseOp {
	var pick fsm.Lease
	if len(leases) > 0 {
		pick = leases[r.IntN(len(leases))]
	}
	c := fsm.LeaseOp{Namespace: "ns", WorkerID: pick.WorkerID, Token: pick.Token, Version: pick.Version, Stamp: stamp(t0 + int64(r.IntN(100_000)))}
	switch p := r.IntN(12); {
	case p < 3 || len(leases) == 0:
		c = fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "ns", Holder: "h", RequestID: []string{"", "r1"}[r.IntN(2)], ClientTimeMs: 1 + int64(r.IntN(1000)), Stamp: c.Stamp}
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
	return c
}

// TestProperty_ChosenAcquires_NeverGrantAHeldOrRestingID drives random
// chosen and unchosen acquires with renewals, releases, revokes and the
// leader's timers, on twins (one with stamps jumping by a day, one without):
// a chosen acquire is granted exactly when its id was never leased or is
// free (a retry of a held lease's own request excepted), refused with
// ErrWorkerUnavailable exactly when it is held or resting; tokens grow; the
// twins decide alike; the probe finds nothing.
func TestProperty_ChosenAcquires_NeverGrantAHeldOrRestingID(t *testing.T) {
	for _, seed := range []uint64{1, 16, 2026} {
		r := rand.New(rand.NewPCG(seed, seed))
		a, z := leaseApplier{newApplier(t)}, leaseApplier{newApplier(t)}
		ns := testNamespace("ns")
		ns.MaxWorkers = 4
		a.create(ns, t0)
		z.create(ns, t0)
		var lastToken uint64
		granted, refused := 0, 0
		for step := range 4000 {
			leases := z.f.Leases("ns")
			c := randomLeaseOp(r, leases)
			c.Stamp = fsm.Stamp{}
			if r.IntN(3) == 0 {
				c = fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "ns", Holder: []string{"h", "k"}[r.IntN(2)], WorkerID: int64(r.IntN(5)), Chosen: true,
					RequestID: []string{"", "r1", "r2"}[r.IntN(3)], ClientTimeMs: 1 + int64(r.IntN(1000))}
			} else if r.IntN(5) == 0 {
				c.Version-- // a stale timer
			}
			var prev *fsm.Lease
			for i := range leases {
				if c.Chosen && leases[i].WorkerID == c.WorkerID {
					prev = &leases[i]
				}
			}
			zr := z.op(c)
			c.Stamp = stamp(t0 + int64(r.IntN(2*86_400_000)) - 86_400_000)
			ar := a.op(c)
			if !reflect.DeepEqual(decision(ar), decision(zr)) {
				t.Fatalf("seed %d step %d: %+v decided %+v with stamps, %+v without", seed, step, c, decision(ar), decision(zr))
			}
			if !c.Chosen {
				if l, ok := zr.(fsm.Lease); ok && c.Op == fsm.LeaseOpAcquire && l.Token > lastToken {
					lastToken = l.Token
				}
				continue
			}
			retry := prev != nil && prev.State == fsm.LeaseHeld && c.RequestID != "" && prev.RequestID == c.RequestID && prev.Holder == c.Holder
			switch v := zr.(type) {
			case fsm.Lease:
				if retry {
					if !reflect.DeepEqual(v, *prev) {
						t.Fatalf("seed %d step %d: a retry answered %+v, want %+v", seed, step, v, *prev)
					}
					continue
				}
				if prev != nil && prev.State != fsm.LeaseFree {
					t.Fatalf("seed %d step %d: worker %d granted while %s: %+v", seed, step, c.WorkerID, prev.State, *prev)
				}
				if v.WorkerID != c.WorkerID || v.Token <= lastToken || v.State != fsm.LeaseHeld {
					t.Fatalf("seed %d step %d: grant %+v for %+v after token %d", seed, step, v, c, lastToken)
				}
				lastToken = v.Token
				granted++
			case error:
				switch {
				case errors.Is(v, fsm.ErrWorkerUnavailable):
					if prev == nil || prev.State == fsm.LeaseFree || retry {
						t.Fatalf("seed %d step %d: refused %+v with %v, lease %+v", seed, step, c, v, prev)
					}
					refused++
				case errors.Is(v, fsm.ErrInvalidCommand):
					// out of range, or the request id holds another id
				default:
					t.Fatalf("seed %d step %d: %v", seed, step, v)
				}
			}
		}
		if granted < 20 || refused < 20 {
			t.Fatalf("seed %d: %d chosen grants, %d refusals: the walk does not cover both", seed, granted, refused)
		}
		for _, f := range []*fsm.FSM{a.f, z.f} {
			if rep := f.CheckAudit(); len(rep.Violations) != 0 {
				t.Fatalf("seed %d: probe %+v", seed, rep)
			}
		}
		if la, lz := decisionsOf(a.f.Leases("ns")), decisionsOf(z.f.Leases("ns")); !reflect.DeepEqual(la, lz) {
			t.Fatalf("seed %d: final leases differ: %+v vs %+v", seed, la, lz)
		}
	}
}
