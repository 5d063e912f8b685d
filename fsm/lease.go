package fsm

import (
	"errors"
	"fmt"
	"math"
)

// Worker-id leases without clocks (issue #18).
//
// A lease is held from its grant until an entry ends it: the holder's
// release, an operator's revoke, or an expiry the leader proposes when the
// lease's TTL has elapsed on the leader's monotonic clock since it applied
// the grant or the last renewal. An ended lease's worker id rests until the
// leader proposes its recycle entry, a recycle delay later by the same
// clock; only then can it be granted again. Apply compares no times: every
// decision follows from the entries and the lease's state, token and
// version, so no wall clock, the leader's or anyone's, can end a lease
// early. A new leader starts every timer afresh with a full TTL (or recycle
// delay) from when it begins to serve: a lease can outlive its TTL across
// a failover, never fall short of it. The leader's timers live in package
// lessor.

// CommandLease carries every lease operation of this design; the legacy
// commands 6-8 decided by wall-clock stamps.
const CommandLease CommandType = 10

// Lease operations.
const (
	LeaseOpAcquire = "acquire"
	LeaseOpRenew   = "renew"
	LeaseOpRelease = "release"
	LeaseOpRevoke  = "revoke"
	LeaseOpExpire  = "expire"
	LeaseOpRecycle = "recycle"
)

// ErrLeaseTimerStale is the answer to an expiry or recycle entry whose
// lease moved on (renewed, ended or granted anew) after its timer started:
// the entry changes nothing, and the leader's timer for the new version
// takes over.
var ErrLeaseTimerStale = errors.New("lease timer is stale")

// LeaseOp is the body of CommandLease.
type LeaseOp struct {
	Op        string `json:"op"`
	Namespace string `json:"namespace"`
	// Acquire: Holder, RequestID (idempotency key), ClientTimeMs.
	Holder    string `json:"holder,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	// ClientTimeMs is the holder's wall clock when it sent an acquire or
	// renewal; it bounds the timestamps the holder may use (see
	// Lease.ClientBoundMs). Recorded, never compared with anything.
	ClientTimeMs int64 `json:"client_time_ms,omitempty"`
	// Renew, release, expire and recycle name the worker id and the token
	// of the lease (revoke takes any token).
	WorkerID int64  `json:"worker_id,omitempty"`
	Token    uint64 `json:"token,omitempty"`
	// Version, for expire and recycle, is the lease's version when the
	// leader's timer started.
	Version uint64 `json:"version,omitempty"`
	// Chosen makes an acquire ask for the worker id WorkerID and no other
	// (issue #16: a shard's id): granted only if that id was never leased
	// or a recycle entry freed it, else ErrWorkerUnavailable. Absent
	// (false) in every entry written before, which apply as they did.
	Chosen bool `json:"chosen,omitempty"`
	Stamp
}

// ErrWorkerUnavailable: the worker id a chosen acquire asked for is held,
// or rests after its lease ended until the leader's recycle entry frees
// it. The error is a WorkerUnavailableError.
var ErrWorkerUnavailable = errors.New("worker id unavailable")

// WorkerUnavailableError is the answer to a chosen acquire whose worker id
// is not free: who has it and how it stands. Everything in it comes from
// the state, so every replica answers the same.
type WorkerUnavailableError struct {
	Namespace string
	WorkerID  int64
	// Holder is the lease's holder; State is LeaseHeld or LeaseEnded (the
	// id rests), EndReason what ended it.
	Holder    string
	State     LeaseState
	EndReason string
	// EarliestFreeMs is the earliest the id can be had by the leaders'
	// stamps (Unix ms): for a held lease, its stamped expiry plus the
	// recycle delay (if its holder renews no more); for an ended one, the
	// stamp of its end plus the recycle delay. An estimate for the caller:
	// the leader frees the id by its monotonic clock, and a new leader
	// restarts the wait.
	EarliestFreeMs int64
	LeaseTTLMs     int64
	RecycleDelayMs int64
}

func (e WorkerUnavailableError) Error() string {
	if e.State == LeaseHeld {
		return fmt.Sprintf("%s: worker %d of %q is held by %q; it is free a recycle delay (%d ms) after that lease ends (released, revoked, or expired %d ms after its holder's last renewal): not before about %d (Unix ms) if it renews no more",
			ErrWorkerUnavailable, e.WorkerID, e.Namespace, e.Holder, e.RecycleDelayMs, e.LeaseTTLMs, e.EarliestFreeMs)
	}
	return fmt.Sprintf("%s: worker %d of %q rests after %q's lease ended (%s); the leader frees it a recycle delay (%d ms) after the end: about %d (Unix ms)",
		ErrWorkerUnavailable, e.WorkerID, e.Namespace, e.Holder, e.EndReason, e.RecycleDelayMs, e.EarliestFreeMs)
}

// Is makes errors.Is(err, ErrWorkerUnavailable) hold.
func (e WorkerUnavailableError) Is(target error) bool { return target == ErrWorkerUnavailable }

// EncodeLeaseOp encodes a CommandLease entry.
// A chosen acquire goes as CommandLeaseV2.
func EncodeLeaseOp(c LeaseOp) []byte {
	if c.Chosen {
		return mustEncode(CommandLeaseV2, c)
	}
	return mustEncode(CommandLease, c)
}

func (f *FSM) applyLeaseOp(c LeaseOp, index, term uint64) any {
	now := f.tick(c.Stamp) // recorded for operators; decides nothing
	switch c.Op {
	case LeaseOpAcquire:
		return f.acquire(c, now, index, term)
	case LeaseOpRenew, LeaseOpRelease, LeaseOpRevoke:
		if c.Op != LeaseOpRevoke && c.Token == 0 {
			return fmt.Errorf("%w: token is required", ErrInvalidCommand)
		}
		l, err := f.heldLease(c.Namespace, c.WorkerID, c.Token, now)
		if err != nil {
			return err
		}
		ns := f.namespaces[c.Namespace]
		if c.Op == LeaseOpRenew {
			l.ExpiresMs = now + ns.LeaseTTLMs
			l.bound(c.ClientTimeMs, ns.LeaseTTLMs)
			l.Version = index
		} else {
			l.ReleasedMs = now
			l.State, l.Version, l.EndReason = LeaseEnded, index, c.Op+"d"
		}
		f.leaseChanges++
		return *l
	case LeaseOpExpire, LeaseOpRecycle:
		want, next, reason := LeaseHeld, LeaseEnded, "expired"
		if c.Op == LeaseOpRecycle {
			want, next, reason = LeaseEnded, LeaseFree, ""
		}
		l, ok := f.leases[c.Namespace][c.WorkerID]
		if !ok || l.State != want || l.Token != c.Token || l.Version != c.Version {
			return fmt.Errorf("%w: %s of worker %d of %q at token %d, version %d", ErrLeaseTimerStale, c.Op, c.WorkerID, c.Namespace, c.Token, c.Version)
		}
		l.State, l.Version = next, index
		if reason != "" {
			l.EndReason, l.ReleasedMs = reason, now
		}
		f.leaseChanges++
		return *l
	}
	return fmt.Errorf("%w: unknown lease operation %q", ErrInvalidCommand, c.Op)
}

func (f *FSM) acquire(c LeaseOp, now int64, index, term uint64) any {
	ns, leases, err := f.leaseTarget(c.Namespace, c.Holder, c.RequestID)
	if err != nil {
		return err
	}
	if c.Chosen {
		return f.acquireChosen(ns, leases, c, now, index, term)
	}
	if ns.WorkerRole == WorkerRoleShard {
		return fmt.Errorf("%w: the worker ids of %q are shards: an acquire must choose its shard (worker_id)", ErrInvalidCommand, ns.Name)
	}
	// A retry of an acquire that was granted (its answer lost, or a 503
	// after the grant) gets that lease back: otherwise every retry would
	// tie up another worker id for a TTL and a recycle delay.
	if c.RequestID != "" && !f.faults.skipAcquireIdempotency() {
		for _, l := range leases {
			if l.RequestID == c.RequestID && l.Holder == c.Holder && f.held(l, now) {
				return *l
			}
		}
	}
	// The lowest worker id never leased or freed by a recycle entry.
	for w := int64(0); w < ns.MaxWorkers; w++ {
		if prev, used := leases[w]; used && !f.free(prev, ns, now) {
			continue
		}
		return f.grant(ns, w, c.Holder, c.RequestID, c.ClientTimeMs, c.Stamp, now, index, term, false)
	}
	return fmt.Errorf("%w: all %d worker ids of %q are leased or resting", ErrNoWorkerFree, ns.MaxWorkers, c.Namespace)
}

// acquireChosen grants the worker id c.WorkerID if it was never leased or
// is free, by the same rules and with the same tokens as any grant; a held
// or resting id is refused with a WorkerUnavailableError (issue #16).
func (f *FSM) acquireChosen(ns *Namespace, leases map[int64]*Lease, c LeaseOp, now int64, index, term uint64) any {
	w := c.WorkerID
	if w < 0 || w >= ns.MaxWorkers {
		return fmt.Errorf("%w: worker id %d is out of range: those of %q are 0 to %d", ErrInvalidCommand, w, ns.Name, ns.MaxWorkers-1)
	}
	prev, used := leases[w]
	if c.RequestID != "" && !f.faults.skipAcquireIdempotency() {
		// The retry of a chosen acquire that was granted gets its lease
		// back, as any acquire's retry does.
		if used && prev.RequestID == c.RequestID && prev.Holder == c.Holder && f.held(prev, now) {
			return *prev
		}
		// One held lease per request id and holder, so that the retry of
		// an acquire that chose nothing finds exactly one (the lowest
		// worker id, should that ever not hold: map order is random).
		other := int64(-1)
		for _, l := range leases {
			if l.RequestID == c.RequestID && l.Holder == c.Holder && f.held(l, now) && (other < 0 || l.WorkerID < other) {
				other = l.WorkerID
			}
		}
		if other >= 0 {
			return fmt.Errorf("%w: request id %q of %q already holds worker %d of %q; a request id names one acquire", ErrInvalidCommand, c.RequestID, c.Holder, other, ns.Name)
		}
	}
	if used && !f.free(prev, ns, now) {
		e := WorkerUnavailableError{Namespace: ns.Name, WorkerID: w, Holder: prev.Holder, State: LeaseEnded, EndReason: prev.EndReason,
			LeaseTTLMs: ns.LeaseTTLMs, RecycleDelayMs: ns.RecycleDelayMs}
		end := prev.ReleasedMs
		if f.held(prev, now) {
			e.State, e.EndReason, end = LeaseHeld, "", prev.ExpiresMs
		} else if end == 0 {
			end = prev.ExpiresMs // a restored lease
		}
		e.EarliestFreeMs = end
		if end <= math.MaxInt64-ns.RecycleDelayMs {
			e.EarliestFreeMs = end + ns.RecycleDelayMs
		}
		return e
	}
	return f.grant(ns, w, c.Holder, c.RequestID, c.ClientTimeMs, c.Stamp, now, index, term, false)
}

// held and free are the state's answers; the planted fault
// WallClockLeaseExpiry answers by the stamps instead, as before issue #18.
func (f *FSM) held(l *Lease, now int64) bool {
	if f.faults.wallClockLeaseExpiry() {
		return l.State == LeaseHeld && l.Active(now)
	}
	return l.State == LeaseHeld
}

func (f *FSM) free(l *Lease, ns *Namespace, now int64) bool {
	if f.faults.wallClockLeaseExpiry() && !l.Active(now) && now >= l.EndMs()+ns.RecycleDelayMs {
		return true
	}
	return l.State == LeaseFree
}

// leaseWithToken finds the latest lease of a worker id if its token is
// token (any token for 0, an operator's revoke), held or not.
func (f *FSM) leaseWithToken(ns string, worker int64, token uint64) (*Lease, error) {
	leases, ok := f.leases[ns]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNamespaceNotFound, ns)
	}
	l, ok := leases[worker]
	if !ok || (token != 0 && l.Token != token) {
		return nil, fmt.Errorf("%w: worker %d of %q is not held with token %d", ErrLeaseLost, worker, ns, token)
	}
	return l, nil
}

func (f *FSM) heldLease(ns string, worker int64, token uint64, now int64) (*Lease, error) {
	l, err := f.leaseWithToken(ns, worker, token)
	if err != nil {
		return nil, err
	}
	if !f.held(l, now) {
		return nil, fmt.Errorf("%w: worker %d of %q %s", ErrLeaseLost, worker, ns, l.EndReason)
	}
	return l, nil
}

// LeaseTimer is what the leader's timers need of a lease that is held or
// resting.
type LeaseTimer struct {
	Namespace string
	WorkerID  int64
	Token     uint64
	Version   uint64
	State     LeaseState
	// WaitMs is how long the leader waits before it proposes the next
	// step: the TTL for a held lease, the recycle delay for an ended one.
	WaitMs int64
}

// LeaseChanges counts every change to any lease; a reader that saw the same
// count has nothing new to look at.
func (f *FSM) LeaseChanges() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.leaseChanges
}

// LeaseTimers returns every lease that is held or resting, and the count of
// changes it reflects.
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
	return out, f.leaseChanges
}
