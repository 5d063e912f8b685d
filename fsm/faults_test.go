//go:build ticketd_faults

package fsm_test

import (
	"testing"

	"github.com/ticketd/ticketd/fsm"
)

// Tests of the planted bugs run with -tags ticketd_faults (scripts/test.sh
// does), as the binary that carries them is built.

// The planted bug of issue #18: with expiry by wall clock again, a leader
// whose clock is an hour ahead grants a worker id that is held; the
// uniqueness probe reports it.
func TestLeaseOp_PlantedWallClockExpiry_GrantsAHeldWorker(t *testing.T) {
	a := leaseApplier{newApplier(t)}
	a.f.PlantFaults(fsm.Faults{WallClockLeaseExpiry: true})
	ns := testNamespace("ns")
	ns.MaxWorkers = 1
	a.create(ns, t0)
	l := a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "ns", Holder: "a", Stamp: stamp(t0)})
	b := a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "ns", Holder: "b", Stamp: stamp(t0 + 3_600_000)})
	if b.WorkerID != l.WorkerID {
		t.Fatalf("the planted bug did not reuse the worker: %+v", b)
	}
	if rep := a.f.CheckAudit(); len(rep.Violations) != 1 {
		t.Fatalf("probe: %+v", rep)
	}
}

// The planted bug of issue 42's part 2 (ticketd promote
// --unsafe-fault promote-keeps-leases): the rule before the rest. The held
// lease stays held and the id the standby never saw leased is granted at
// once: the fault suite's DR disaster "leases" must catch it.
func TestPromote_PlantedKeepsLeases_GrantsAtOnce(t *testing.T) {
	a, old, res := promotedWithAdvance(t, func(f *fsm.FSM) { f.PlantFaults(fsm.Faults{PromoteKeepsLeases: true}) })
	if res.HeldLeases != 1 || res.EndedLeases != 0 || res.RestingNamespaces != 0 || len(a.f.PromotionRests()) != 0 {
		t.Fatalf("promotion with the planted bug %+v, rests %+v: want the old rule", res, a.f.PromotionRests())
	}
	l, ok := a.apply(fsm.EncodeLeaseOp(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "flakes", Holder: "new", Stamp: fsm.Stamp{NowMs: t0 + 6000}})).(fsm.Lease)
	if !ok || l.WorkerID == old.WorkerID {
		t.Fatalf("acquire after the planted promotion: %+v", l)
	}
}
