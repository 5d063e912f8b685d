package fsm

import (
	"fmt"
	"math"
	"sort"
)

// The rest after an untrusted promotion (issue 42, part 2). A standby
// promoted with --advance may have missed any number of lease writes: the
// primary granted worker ids after the standby fell out (free on the
// standby), re-granted ids whose old leases the standby still records as
// held, and its holders used timestamps up to their clocks plus the TTL.
// The promotion therefore, in every namespace:
//
//   - ends every held lease ("promoted"), so no old token renews;
//   - rests every worker id, not only those it knows of: no acquire is
//     granted until the new leader has served for the namespace's TTL plus
//     its recycle delay (lessor.go proposes CommandEndPromotionRest then;
//     a new leader starts the wait afresh, as every lease timer);
//   - raises a timestamp floor, which every later grant in the namespace
//     hands its holder, to the promotion's time plus the TTL: no holder of
//     the old region may have used a timestamp above it.
//
// Worker ids number up to 2^61, so the rest is one record per namespace,
// not a lease per id. It needs feature level 5: a binary that does not know
// it would grant what the others refuse.

// CommandEndPromotionRest ends a namespace's rest; its body is
// EndPromotionRest. The lessor proposes it as a LeaseOp
// (LeaseOpEndPromotionRest), which EncodeLeaseOp writes as this type.
const CommandEndPromotionRest CommandType = 17

// LeaseOpEndPromotionRest is the lessor's LeaseOp for the entry.
const LeaseOpEndPromotionRest = "end-promotion-rest"

// LeaseResting is the state of a namespace's rest as a lease timer: its
// worker id is PromotionRestWorker, a number no worker id has.
const (
	LeaseResting        LeaseState = "promotion-rest"
	PromotionRestWorker int64      = -1
)

// LeaseEndPromoted is the end reason of a lease an untrusted promotion
// ended.
const LeaseEndPromoted = "promoted"

// PromotionRest is a namespace's record: resting since the promotion at
// Index (0 once the rest is over), and the timestamp floor every grant in
// the namespace hands its holder from then on.
type PromotionRest struct {
	Namespace string `json:"namespace"`
	Index     uint64 `json:"index,omitempty"`
	FloorMs   int64  `json:"floor_ms"`
}

// EndPromotionRest is the body of CommandEndPromotionRest: the rest of
// Namespace that began at Index (the version the leader's timer started
// from) is over.
type EndPromotionRest struct {
	Namespace string `json:"namespace"`
	Index     uint64 `json:"index"`
	Stamp
}

// restNamespaces starts the rest of every namespace at index: held leases
// end, and the floor rises to atMs plus the TTL. It returns the leases
// ended. f.mu is held.
func (f *FSM) restNamespaces(index uint64, atMs int64) (ended int) {
	if f.promotionRests == nil {
		f.promotionRests = map[string]*PromotionRest{}
	}
	for name, ns := range f.namespaces {
		r := f.promotionRests[name]
		if r == nil {
			r = &PromotionRest{Namespace: name}
			f.promotionRests[name] = r
		}
		r.Index = index
		floor := int64(math.MaxInt64)
		if atMs <= math.MaxInt64-ns.LeaseTTLMs {
			floor = atMs + ns.LeaseTTLMs
		}
		r.FloorMs = max(r.FloorMs, floor)
		for _, l := range f.leases[name] {
			if l.State == LeaseHeld {
				l.State, l.EndReason, l.ReleasedMs = LeaseEnded, LeaseEndPromoted, atMs
				ended++
			}
		}
	}
	return ended
}

// restingSince is the index the namespace rests since (0: not resting).
// f.mu is held.
func (f *FSM) restingSince(ns string) uint64 {
	if r := f.promotionRests[ns]; r != nil {
		return r.Index
	}
	return 0
}

// promotionFloor is the namespace's timestamp floor (0: none). f.mu is
// held.
func (f *FSM) promotionFloor(ns string) int64 {
	if r := f.promotionRests[ns]; r != nil {
		return r.FloorMs
	}
	return 0
}

// restRefusal is an acquire's answer while ns rests.
func restRefusal(ns *Namespace, since uint64) error {
	return fmt.Errorf("%w: every worker id of %q rests after the promotion at index %d, until the leader has served for its lease TTL plus its recycle delay (%d ms + %d ms): a holder of the old region may still use any of them",
		ErrNoWorkerFree, ns.Name, since, ns.LeaseTTLMs, ns.RecycleDelayMs)
}

func (f *FSM) applyEndPromotionRest(c EndPromotionRest) any {
	f.tick(c.Stamp)
	r := f.promotionRests[c.Namespace]
	if _, ok := f.namespaces[c.Namespace]; !ok {
		return fmt.Errorf("%w: %q", ErrNamespaceNotFound, c.Namespace)
	}
	if r == nil || r.Index == 0 || r.Index != c.Index {
		return fmt.Errorf("%w: the rest of %q since index %d is not the one in progress", ErrLeaseTimerStale, c.Namespace, c.Index)
	}
	r.Index = 0
	f.leaseChanges++
	return nil
}

// PromotionRests is every namespace's record, sorted by namespace.
func (f *FSM) PromotionRests() []PromotionRest {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return sortedRests(f.promotionRests)
}

func sortedRests(m map[string]*PromotionRest) []PromotionRest {
	out := make([]PromotionRest, 0, len(m))
	for _, r := range m {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace < out[j].Namespace })
	return out
}
