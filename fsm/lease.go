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

// Lease is the latest lease of one worker id.
//
// Whether it is held is its State, changed only by log entries: a grant or
// renewal keeps it held, a release, a revoke or the leader's expiry entry
// ends it, and the leader's recycle entry frees the worker id for the next
// grant. No time comparison decides any of these (see lease.go). The
// millisecond fields are the proposing leaders' wall-clock stamps, kept for
// operators; only the legacy lease commands (types 6-8) decide with them.
type Lease struct {
	Namespace string `json:"namespace"`
	WorkerID  int64  `json:"worker_id"`
	Holder    string `json:"holder"`
	// Token fences a stale holder: the grant's log index, or one more than
	// the largest token ever granted if that is larger (after a restore,
	// whose backup carries the old cluster's larger tokens). It grows with
	// every grant, also across a restore.
	Token      uint64 `json:"token"`
	GrantedMs  int64  `json:"granted_ms"`
	ExpiresMs  int64  `json:"expires_ms"`
	ReleasedMs int64  `json:"released_ms,omitempty"` // 0 while not released
	// RequestID is the acquire's idempotency key: a retried acquire with
	// the same key gets this lease back while it is held.
	RequestID string `json:"request_id,omitempty"`

	// State is held, ended (resting) or free (v4).
	State LeaseState `json:"state"`
	// Version is the index of the entry that last granted or renewed the
	// lease (held), ended it (ended) or freed its worker id (free). Expiry
	// and recycle entries name the version their timer started from and
	// change nothing if it moved on since (v4).
	Version uint64 `json:"version"`
	// EndReason says what ended the lease: released, revoked, expired or
	// restored (v4).
	EndReason string `json:"end_reason,omitempty"`
	// ClientBoundMs is the highest Snowflake timestamp the holder may use:
	// its own clock when it sent the grant or renewal, plus the TTL (the
	// largest such value); 0 if the holder never sent its clock (v4).
	ClientBoundMs int64 `json:"client_bound_ms,omitempty"`
	// TimestampFloorMs is the highest timestamp any earlier holder of the
	// worker id may have used, handed to this holder at its grant: it
	// issues only timestamps above it (v4).
	TimestampFloorMs int64 `json:"timestamp_floor_ms,omitempty"`

	// GrantSeq is the audit sequence number (AuditRecord.Seq) of the
	// lease's grant record: a public name of the lease, which the token,
	// its holder's capability, is not (issue 47). It is derived, not
	// written to snapshots: a restore links it again from the audit it
	// restores (linkGrantSeqs), 0 where the audit no longer retains the
	// grant.
	GrantSeq uint64 `json:"-"`
}

// LeaseState is where a lease is in its life.
type LeaseState string

// Lease states.
const (
	// LeaseHeld: granted and not ended; its holder may generate IDs.
	LeaseHeld LeaseState = "held"
	// LeaseEnded: released, revoked, expired or restored; the worker id
	// rests for the recycle delay before the leader frees it.
	LeaseEnded LeaseState = "ended"
	// LeaseFree: the worker id may be granted again.
	LeaseFree LeaseState = "free"
)

// nextFloor is the timestamp floor for the next holder of this lease's
// worker id: nothing its holders may have used lies above it. A holder that
// never sent its clock is bounded by the leader's stamped expiry, which
// assumes the two clocks agree (the raw API's caveat; the SDK sends its
// clock).
func (l Lease) nextFloor() int64 {
	bound := l.ClientBoundMs
	if bound == 0 {
		bound = l.ExpiresMs
	}
	return max(l.TimestampFloorMs, bound)
}

// EndMs is when the lease stopped (or stops) being held by the stamps:
// informational, and the legacy commands' rule.
func (l Lease) EndMs() int64 {
	if l.ReleasedMs != 0 && l.ReleasedMs < l.ExpiresMs {
		return l.ReleasedMs
	}
	return l.ExpiresMs
}

// Active reports whether the lease is held at nowMs by the stamps (the
// legacy commands' rule).
func (l Lease) Active(nowMs int64) bool { return nowMs < l.EndMs() }

// bound raises the holder's timestamp bound to clientMs + ttl.
func (l *Lease) bound(clientMs, ttlMs int64) {
	if clientMs > 0 && clientMs <= math.MaxInt64-ttlMs {
		l.ClientBoundMs = max(l.ClientBoundMs, clientMs+ttlMs)
	}
}

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
// A chosen acquire goes as CommandLeaseV2, the end of a promotion's rest as
// CommandEndPromotionRest.
func EncodeLeaseOp(c LeaseOp) []byte {
	if c.Op == LeaseOpEndPromotionRest {
		// The lessor's timer names the rest it started from as Version.
		return mustEncode(CommandEndPromotionRest, EndPromotionRest{Namespace: c.Namespace, Index: c.Version, Stamp: c.Stamp})
	}
	if c.Chosen {
		return mustEncode(CommandLeaseV2, c)
	}
	return mustEncode(CommandLease, c)
}

// AcquireLease is the body of CommandAcquireLease (legacy: see lease.go).
type AcquireLease struct {
	Namespace string `json:"namespace"`
	Holder    string `json:"holder"`
	// RequestID, if set, makes the acquire idempotent (see Lease).
	RequestID string `json:"request_id,omitempty"`
	Stamp
}

// RenewLease is the body of CommandRenewLease (legacy).
type RenewLease struct {
	Namespace string `json:"namespace"`
	WorkerID  int64  `json:"worker_id"`
	Token     uint64 `json:"token"`
	Stamp
}

// ReleaseLease is the body of CommandReleaseLease (legacy). A zero Token
// revokes the lease whatever its token (an operator's revoke).
type ReleaseLease struct {
	Namespace string `json:"namespace"`
	WorkerID  int64  `json:"worker_id"`
	Token     uint64 `json:"token"`
	Stamp
}

const (
	maxHolderLen    = 256
	maxRequestIDLen = 128
)

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
	if since := f.restingSince(ns.Name); since != 0 {
		return restRefusal(ns, since)
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

// leaseTarget checks an acquire's namespace, holder and request id.
func (f *FSM) leaseTarget(namespace, holder, requestID string) (*Namespace, map[int64]*Lease, error) {
	ns, ok := f.namespaces[namespace]
	if !ok {
		return nil, nil, fmt.Errorf("%w: %q", ErrNamespaceNotFound, namespace)
	}
	if holder == "" || len(holder) > maxHolderLen {
		return nil, nil, fmt.Errorf("%w: holder must be 1 to %d bytes", ErrInvalidCommand, maxHolderLen)
	}
	if len(requestID) > maxRequestIDLen {
		return nil, nil, fmt.Errorf("%w: request id must be at most %d bytes", ErrInvalidCommand, maxRequestIDLen)
	}
	return ns, f.leases[namespace], nil
}

// grant leases worker w to holder at this entry; now is the stamp recorded.
func (f *FSM) grant(ns *Namespace, w int64, holder, requestID string, clientMs int64, s Stamp, now int64, index, term uint64, legacy bool) Lease {
	leases := f.leases[ns.Name]
	token := index
	if token <= f.tokenFloor && !f.faults.reuseLeaseTokens() {
		token = f.tokenFloor + 1
	}
	l := &Lease{Namespace: ns.Name, WorkerID: w, Holder: holder, Token: token, GrantedMs: now,
		ExpiresMs: now + ns.LeaseTTLMs, RequestID: requestID, State: LeaseHeld, Version: index}
	l.bound(clientMs, ns.LeaseTTLMs)
	rec := AuditRecord{Index: index, Term: term, Leader: s.Leader, TimeMs: now, Kind: AuditLease,
		Namespace: ns.Name, WorkerID: w, Holder: holder, Token: token, LegacyClock: legacy}
	if prev, used := leases[w]; used {
		rec.PrevEndMs = prev.EndMs()
		rec.PrevToken = prev.Token
		if prev.State == LeaseFree {
			rec.PrevFreedIndex = prev.Version
		}
		l.TimestampFloorMs = prev.nextFloor()
	}
	l.TimestampFloorMs = max(l.TimestampFloorMs, f.promotionFloor(ns.Name))
	leases[w] = l
	f.tokenFloor = max(f.tokenFloor, token)
	f.leaseChanges++
	l.GrantSeq = f.audit(rec)
	return *l
}

// linkGrantSeqs sets every lease's GrantSeq from the audit, after a
// restore; f.mu is held.
func (f *FSM) linkGrantSeqs() {
	type grantKey struct {
		ns     string
		worker int64
		token  uint64
	}
	seqs := map[grantKey]uint64{}
	for i := range f.auditLog {
		if r := &f.auditLog[i]; r.Kind == AuditLease {
			seqs[grantKey{r.Namespace, r.WorkerID, r.Token}] = r.Seq
		}
	}
	for _, byID := range f.leases {
		for _, l := range byID {
			l.GrantSeq = seqs[grantKey{l.Namespace, l.WorkerID, l.Token}]
		}
	}
}

// The legacy lease commands (types 6-8) decide by comparing wall-clock
// stamps, as ticketd did before issue #18; a leader no longer proposes them,
// but a log written before the upgrade must replay to the answers its
// clients were given. They keep the v4 fields in step so that the leader's
// lease timers take over from where they leave off.

func (f *FSM) applyLegacyAcquire(c AcquireLease, index, term uint64) any {
	now := f.tick(c.Stamp)
	ns, leases, err := f.leaseTarget(c.Namespace, c.Holder, c.RequestID)
	if err != nil {
		return err
	}
	if since := f.restingSince(ns.Name); since != 0 {
		return restRefusal(ns, since)
	}
	if c.RequestID != "" && !f.faults.skipAcquireIdempotency() {
		for _, l := range leases {
			if l.RequestID == c.RequestID && l.Holder == c.Holder && l.Active(now) {
				return *l
			}
		}
	}
	for w := int64(0); w < ns.MaxWorkers; w++ {
		prev, used := leases[w]
		if used && (prev.Active(now) || now < prev.EndMs()+ns.RecycleDelayMs) {
			continue
		}
		return f.grant(ns, w, c.Holder, c.RequestID, 0, c.Stamp, now, index, term, true)
	}
	return fmt.Errorf("%w: all %d worker ids of %q are leased or resting", ErrNoWorkerFree, ns.MaxWorkers, c.Namespace)
}

func (f *FSM) legacyHeldLease(ns string, worker int64, token uint64, now int64) (*Lease, error) {
	l, err := f.leaseWithToken(ns, worker, token)
	if err != nil {
		return nil, err
	}
	if !l.Active(now) {
		return nil, fmt.Errorf("%w: worker %d of %q ended at %d (now %d)", ErrLeaseLost, worker, ns, l.EndMs(), now)
	}
	return l, nil
}

func (f *FSM) applyLegacyRenew(c RenewLease, index uint64) any {
	now := f.tick(c.Stamp)
	if c.Token == 0 {
		return fmt.Errorf("%w: token is required", ErrInvalidCommand)
	}
	l, err := f.legacyHeldLease(c.Namespace, c.WorkerID, c.Token, now)
	if err != nil {
		return err
	}
	l.ExpiresMs = now + f.namespaces[c.Namespace].LeaseTTLMs
	l.State, l.Version = LeaseHeld, index
	f.leaseChanges++
	return *l
}

func (f *FSM) applyLegacyRelease(c ReleaseLease, index uint64) any {
	now := f.tick(c.Stamp)
	l, err := f.legacyHeldLease(c.Namespace, c.WorkerID, c.Token, now)
	if err != nil {
		return err
	}
	l.ReleasedMs = now
	l.State, l.Version, l.EndReason = LeaseEnded, index, endReason(c.Token)
	f.leaseChanges++
	return *l
}

func endReason(token uint64) string {
	if token == 0 {
		return "revoked"
	}
	return "released"
}
