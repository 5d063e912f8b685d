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
