package fsm_test

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/ticketd/ticketd/fsm"
)

// TestProperty_Leases_NeverOverlap drives random acquires, renewals,
// releases and revokes with a leader clock that mostly moves forward and
// sometimes jumps back (a new leader with a slower clock). For every worker
// id, each grant must come after the previous lease ended plus the recycle
// delay, judged on the FSM's clock; tokens must grow; two FSMs fed the same
// log must agree; and the uniqueness probe must find nothing.
func TestProperty_Leases_NeverOverlap(t *testing.T) {
	for _, seed := range []uint64{1, 7, 2026} {
		r := rand.New(rand.NewPCG(seed, seed))
		a := leaseApplier{newApplier(t)}
		twin := leaseApplier{newApplier(t)}
		ns := testNamespace("ns")
		ns.MaxWorkers = 4
		a.create(ns, t0)
		twin.create(ns, t0)
		now := t0
		type held struct {
			worker int64
			token  uint64
		}
		var holders []held
		lastEnd := map[int64]int64{} // worker -> end of its latest lease as of its last change
		var lastToken uint64
		for step := 0; step < 3000; step++ {
			now += int64(r.IntN(4000))
			stamp := now
			if r.IntN(10) == 0 {
				stamp = now - int64(r.IntN(30_000)) // a lagging leader
			}
			var data []byte
			switch p := r.IntN(10); {
			case p < 4:
				data = fsm.EncodeAcquireLease(fsm.AcquireLease{Namespace: "ns", Holder: "h", Stamp: fsm.Stamp{NowMs: stamp}})
			case p < 8 && len(holders) > 0:
				h := holders[r.IntN(len(holders))]
				data = fsm.EncodeRenewLease(fsm.RenewLease{Namespace: "ns", WorkerID: h.worker, Token: h.token, Stamp: fsm.Stamp{NowMs: stamp}})
			case len(holders) > 0:
				h := holders[r.IntN(len(holders))]
				tok := h.token
				if r.IntN(4) == 0 {
					tok = 0 // revoke
				}
				data = fsm.EncodeReleaseLease(fsm.ReleaseLease{Namespace: "ns", WorkerID: h.worker, Token: tok, Stamp: fsm.Stamp{NowMs: stamp}})
			default:
				continue
			}
			before := a.f.ClockMs()
			resp := a.apply(data)
			if twinResp := twin.apply(data); !reflect.DeepEqual(normalize(resp), normalize(twinResp)) {
				t.Fatalf("seed %d step %d: FSMs disagree: %v vs %v", seed, step, resp, twinResp)
			}
			clock := a.f.ClockMs()
			if clock < before {
				t.Fatalf("seed %d step %d: clock moved back from %d to %d", seed, step, before, clock)
			}
			switch v := resp.(type) {
			case fsm.Lease:
				if v.Token > lastToken && v.GrantedMs == clock && v.ExpiresMs == clock+ns.LeaseTTLMs {
					// A new grant: the worker's previous lease must have
					// ended and rested.
					if end, ok := lastEnd[v.WorkerID]; ok && clock < end+ns.RecycleDelayMs {
						t.Fatalf("seed %d step %d: worker %d granted at %d, previous lease ended %d", seed, step, v.WorkerID, clock, end)
					}
					lastToken = v.Token
					holders = append(holders, held{v.WorkerID, v.Token})
				}
				lastEnd[v.WorkerID] = v.EndMs()
			case error:
				if !errors.Is(v, fsm.ErrLeaseLost) && !errors.Is(v, fsm.ErrNoWorkerFree) {
					t.Fatalf("seed %d step %d: unexpected error %v", seed, step, v)
				}
			}
			if len(holders) > 16 {
				holders = holders[len(holders)-16:]
			}
		}
		if rep := a.f.CheckAudit(); len(rep.Violations) != 0 || rep.Leases == 0 {
			t.Fatalf("seed %d: audit %+v", seed, rep)
		}
		if !reflect.DeepEqual(persist(t, a.f), persist(t, twin.f)) {
			t.Fatalf("seed %d: twin snapshots differ", seed)
		}
	}
}
