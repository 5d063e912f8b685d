package fsm_test

import (
	"bytes"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/fsm"
)

// Issue #16's state (a shard namespace with a horizon, a chosen lease, a raise
// record) goes into the log under types of its own and into snapshots of
// format v5, so that a binary that does not know it stops or refuses instead
// of applying it without it and diverging from its peers.

const fixtureV5 = "testdata/snapshot-v5.bin"

// fixtureV5State has a shard namespace with a horizon, a chosen lease and a
// raise record.
func fixtureV5State(t *testing.T) *fsm.FSM {
	a := newApplier(t)
	a.mustCreate("orders", 1, 1<<40)
	a.mustReserve("orders", 100, 1)
	a.mustRaise("orders", 5000)
	n := testNamespace("posts")
	n.WorkerRole, n.HorizonYears = fsm.WorkerRoleShard, 50
	if _, ok := a.apply(fsm.EncodeCreateNamespace(fsm.CreateNamespace{Namespace: n, Stamp: fsm.Stamp{NowMs: t0, Leader: "n1"}})).(fsm.NamespaceResult); !ok {
		t.Fatal("creating the shard namespace failed")
	}
	resp := a.apply(fsm.EncodeLeaseOp(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "posts", Holder: "h", RequestID: "r1", WorkerID: 2, Chosen: true, Stamp: fsm.Stamp{NowMs: t0 + 10, Leader: "n1"}}))
	if l, ok := resp.(fsm.Lease); !ok || l.WorkerID != 2 {
		t.Fatalf("chosen acquire: %#v", resp)
	}
	return a.f
}

func TestSnapshotFixtureV5_StillRestores(t *testing.T) {
	b := fixtureBytes(t, fixtureV5, 5, fixtureV5State)
	f := restore(t, b)
	ns, ok := f.Namespace("posts")
	if !ok || ns.WorkerRole != fsm.WorkerRoleShard || ns.HorizonYears != 50 {
		t.Fatalf("namespace %+v", ns)
	}
	if ls := f.Leases("posts"); len(ls) != 1 || ls[0].WorkerID != 2 || ls[0].State != fsm.LeaseHeld {
		t.Fatalf("leases %+v", ls)
	}
	if s, _ := f.Sequence("orders"); s.Issued != 5000 {
		t.Fatalf("orders %+v", s)
	}
	if rep := f.CheckAudit(); len(rep.Violations) != 0 {
		t.Fatalf("probe %+v", rep)
	}
	// Persist writes the oldest format that carries a state: this one's
	// (level 1, with v5's fields) is still v5, byte for byte.
	if !reflect.DeepEqual(persist(t, f), b) {
		t.Fatal("Persist no longer writes the v5 fixture's bytes for its state: a format changed without a new version")
	}
}

// A snapshot labelled v4 that holds v5's state was not written by a v4
// binary: refused, not read with the fields kept or dropped.
func TestSnapshotV4_HoldingV5State_Refused(t *testing.T) {
	b, err := os.ReadFile(fixtureV5)
	if err != nil {
		t.Fatal(err)
	}
	relabelled := append(append([]byte(nil), b[:8]...), 0, 0, 0, 4)
	relabelled = append(relabelled, b[12:]...)
	err = fsm.New().Restore(io.NopCloser(bytes.NewReader(relabelled)))
	if err == nil || !strings.Contains(err.Error(), "of v5") {
		t.Fatalf("Restore of a v4-labelled snapshot with v5 state: %v", err)
	}
}

func TestEncode_Issue16Fields_GoUnderTypesOfTheirOwn(t *testing.T) {
	n := testNamespace("ns")
	if typ := fsm.EncodeCreateNamespace(fsm.CreateNamespace{Namespace: n})[0]; fsm.CommandType(typ) != fsm.CommandCreateNamespace {
		t.Fatalf("a plain namespace as type %d", typ)
	}
	for _, m := range []func(*fsm.Namespace){
		func(n *fsm.Namespace) { n.WorkerRole = fsm.WorkerRoleShard },
		func(n *fsm.Namespace) { n.HorizonYears = 40 },
	} {
		v := n
		m(&v)
		if typ := fsm.EncodeCreateNamespace(fsm.CreateNamespace{Namespace: v})[0]; fsm.CommandType(typ) != fsm.CommandCreateNamespaceV2 {
			t.Fatalf("namespace %+v as type %d, want %d", v, typ, fsm.CommandCreateNamespaceV2)
		}
	}
	op := fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "ns", Holder: "h", WorkerID: 1}
	if typ := fsm.EncodeLeaseOp(op)[0]; fsm.CommandType(typ) != fsm.CommandLease {
		t.Fatalf("an unchosen acquire as type %d", typ)
	}
	op.Chosen = true
	if typ := fsm.EncodeLeaseOp(op)[0]; fsm.CommandType(typ) != fsm.CommandLeaseV2 {
		t.Fatalf("a chosen acquire as type %d", typ)
	}
	// Both new types apply exactly as their bodies under the old types
	// would: the same state from the same operations.
	st := fixtureV5State(t)
	if ns, _ := st.Namespace("posts"); ns.WorkerRole != fsm.WorkerRoleShard {
		t.Fatalf("namespace %+v", ns)
	}
}
