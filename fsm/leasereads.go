package fsm

import (
	"math"
	"sort"
)

// LeaseTimer is what the leader's timers need of a lease that is held or
// resting.
type LeaseTimer struct {
	Namespace string
	WorkerID  int64
	Token     uint64
	Version   uint64
	State     LeaseState
	// WaitMs is how long the leader waits before it proposes the next
	// step: the TTL for a held lease, the recycle delay for an ended one,
	// both for a namespace resting after a promotion (LeaseResting, whose
	// WorkerID is PromotionRestWorker and Version the rest's index).
	WaitMs int64
}

// LeaseChanges counts every change to any lease; a reader that saw the same
// count has nothing new to look at.
func (f *FSM) LeaseChanges() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.leaseChanges
}

// LeaseTimers returns every lease that is held or resting, every namespace
// resting after a promotion, and the count of changes it reflects.
func (f *FSM) LeaseTimers() ([]LeaseTimer, uint64) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []LeaseTimer
	for name, leases := range f.leases {
		ns := f.namespaces[name]
		for _, l := range leases {
			t := LeaseTimer{Namespace: name, WorkerID: l.WorkerID, Token: l.Token, Version: l.Version, State: l.State}
			switch l.State {
			case LeaseHeld:
				t.WaitMs = ns.LeaseTTLMs
			case LeaseEnded:
				t.WaitMs = ns.RecycleDelayMs
			default:
				continue
			}
			out = append(out, t)
		}
	}
	for name, r := range f.promotionRests {
		if ns := f.namespaces[name]; ns != nil && r.Index != 0 {
			wait := int64(math.MaxInt64)
			if ns.LeaseTTLMs <= math.MaxInt64-ns.RecycleDelayMs {
				wait = ns.LeaseTTLMs + ns.RecycleDelayMs
			}
			out = append(out, LeaseTimer{Namespace: name, WorkerID: PromotionRestWorker, Version: r.Index, State: LeaseResting, WaitMs: wait})
		}
	}
	return out, f.leaseChanges
}

// Leases returns the latest lease of every worker id of a namespace, sorted
// by worker id.
func (f *FSM) Leases(ns string) []Lease {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return sortedLeases(f.leases[ns])
}

func sortedLeases(m map[int64]*Lease) []Lease {
	out := make([]Lease, 0, len(m))
	for _, l := range m {
		out = append(out, *l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].WorkerID < out[j].WorkerID })
	return out
}
