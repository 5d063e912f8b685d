package fsm

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Snowflake namespaces and worker-id leases.
//
// A Snowflake ID is timestamp|worker|sequence, generated in the client's
// process. Two generators must never hold the same worker id at once, so the
// cluster leases worker ids. Leases end by log entries, timed by the
// leader's monotonic clock (lease.go); the wall-clock stamps entries carry
// are recorded for operators and decide only the legacy commands.

var (
	// ErrNamespaceNotFound: the named namespace does not exist.
	ErrNamespaceNotFound = errors.New("namespace not found")
	// ErrNamespaceConflict: the namespace exists with another layout.
	ErrNamespaceConflict = errors.New("namespace exists with different settings")
	// ErrNoWorkerFree: every worker id of the namespace is leased or
	// waiting out its recycle delay.
	ErrNoWorkerFree = errors.New("no worker id is free")
	// ErrLeaseLost: the lease is not held with this token any more
	// (expired, released, revoked or granted to someone else); its holder
	// must stop generating IDs.
	ErrLeaseLost = errors.New("lease lost")
)

// Year is the length of a year used for capacity figures (365.25 days).
const Year int64 = 365.25 * 24 * 3600 * 1000

// Namespace is a Snowflake ID layout and its lease policy.
type Namespace struct {
	Name string `json:"name"`
	// EpochMs is the Unix time in milliseconds that timestamp 0 stands for.
	EpochMs int64 `json:"epoch_ms"`
	// Bits: TimestampBits+WorkerBits+SequenceBits = 63, so IDs are
	// positive int64s.
	TimestampBits uint8 `json:"timestamp_bits"`
	WorkerBits    uint8 `json:"worker_bits"`
	SequenceBits  uint8 `json:"sequence_bits"`
	// TickMs is the length of one timestamp unit.
	TickMs int64 `json:"tick_ms"`
	// MaxWorkers is how many worker ids may be leased at once.
	MaxWorkers int64 `json:"max_workers"`
	// LeaseTTLMs is how long a lease lasts without renewal.
	LeaseTTLMs int64 `json:"lease_ttl_ms"`
	// RecycleDelayMs is how long a worker id rests after its lease ended
	// before it is granted again; at least the TTL, so that a holder that
	// could not renew has stopped before its id is reused.
	RecycleDelayMs int64 `json:"recycle_delay_ms"`
	// WorkerRole is what the worker field of an ID stands for: "" (a
	// worker id: an acquire gets the lowest free one, or the one it
	// chooses) or WorkerRoleShard (a logical shard, as in Instagram's IDs:
	// an acquire must choose its shard, LeaseOp.Chosen). Issue #16;
	// absent from every namespace made before, which reads as "".
	WorkerRole string `json:"worker_role,omitempty"`
	// HorizonYears is how long the namespace is meant to last: creating it
	// warns when its timestamp bits run out sooner. 0 is the default,
	// DefaultHorizonYears. Advisory only: nothing the FSM decides reads it
	// (issue #16; absent before).
	HorizonYears int64 `json:"horizon_years,omitempty"`
}

// WorkerRoleShard marks a namespace whose worker field is a logical shard.
const WorkerRoleShard = "shard"

// DefaultHorizonYears is the horizon of a namespace that names none: 30
// years, about as long as a database schema outlives the system it was
// designed for, and well inside the 69.7 years of 41 bits of milliseconds,
// so the default layout creates without a warning and one that halves
// the timestamp's range does not.
const DefaultHorizonYears int64 = 30

// MaxHorizonYears bounds HorizonYears (its milliseconds fit an int64 many
// times over).
const MaxHorizonYears int64 = 10_000

// Horizon is HorizonYears, or the default for 0.
func (n Namespace) Horizon() int64 {
	if n.HorizonYears == 0 {
		return DefaultHorizonYears
	}
	return n.HorizonYears
}

// EndMs is the last millisecond the timestamp bits can express (saturating
// at the int64 maximum).
func (n Namespace) EndMs() int64 {
	units := (int64(1) << n.TimestampBits) - 1
	if n.TickMs > 0 && units > (math.MaxInt64-n.EpochMs)/n.TickMs {
		return math.MaxInt64
	}
	return n.EpochMs + units*n.TickMs
}

// Decoded is a Snowflake ID taken apart.
type Decoded struct {
	TimeMs   int64
	WorkerID int64
	Sequence int64
}

// Decode takes an ID of this namespace apart.
func (n Namespace) Decode(id int64) Decoded {
	seqMask := int64(1)<<n.SequenceBits - 1
	workerMask := int64(1)<<n.WorkerBits - 1
	ts := id >> (n.SequenceBits + n.WorkerBits)
	return Decoded{
		TimeMs:   n.EpochMs + ts*n.TickMs,
		WorkerID: (id >> n.SequenceBits) & workerMask,
		Sequence: id & seqMask,
	}
}

// Compose builds an ID from its parts (the inverse of Decode for times on a
// tick boundary).
func (n Namespace) Compose(timeMs, worker, seq int64) int64 {
	ts := (timeMs - n.EpochMs) / n.TickMs
	return ts<<(n.SequenceBits+n.WorkerBits) | worker<<n.SequenceBits | seq
}

// YearsLeft is how long after nowMs the timestamp bits last.
func (n Namespace) YearsLeft(nowMs int64) float64 {
	return float64(n.EndMs()-nowMs) / float64(Year)
}

func (n Namespace) validate(nowMs int64) error {
	if err := n.validateLayout(); err != nil {
		return err
	}
	if n.EpochMs > nowMs {
		return fmt.Errorf("epoch_ms %d must be in the past (now %d)", n.EpochMs, nowMs)
	}
	if n.EndMs()-nowMs < 10*Year {
		return fmt.Errorf("the timestamp bits run out %.1f years from now; a layout must leave at least 10", n.YearsLeft(nowMs))
	}
	return nil
}

// validateLayout checks the rules a namespace keeps at any time (validate
// adds those about the time of its creation).
func (n Namespace) validateLayout() error {
	if err := validateName(n.Name); err != nil {
		return fmt.Errorf("namespace %v", err)
	}
	if n.TimestampBits < 1 || n.WorkerBits < 1 || n.SequenceBits < 1 || int(n.TimestampBits)+int(n.WorkerBits)+int(n.SequenceBits) != 63 {
		return fmt.Errorf("timestamp_bits (%d) + worker_bits (%d) + sequence_bits (%d) must be 63, each at least 1", n.TimestampBits, n.WorkerBits, n.SequenceBits)
	}
	if n.TickMs < 1 || n.TickMs > 60_000 {
		return fmt.Errorf("tick_ms must be between 1 and 60000, got %d", n.TickMs)
	}
	if n.MaxWorkers < 1 || n.MaxWorkers > int64(1)<<n.WorkerBits {
		return fmt.Errorf("max_workers %d does not fit worker_bits %d (at most %d)", n.MaxWorkers, n.WorkerBits, int64(1)<<n.WorkerBits)
	}
	if n.EpochMs < 0 {
		return fmt.Errorf("epoch_ms %d must not be negative", n.EpochMs)
	}
	if n.LeaseTTLMs < 1000 || n.LeaseTTLMs > 3_600_000 {
		return fmt.Errorf("lease_ttl_ms must be between 1000 and 3600000, got %d", n.LeaseTTLMs)
	}
	if n.RecycleDelayMs < n.LeaseTTLMs || n.RecycleDelayMs > 24*3_600_000 {
		return fmt.Errorf("recycle_delay_ms must be at least lease_ttl_ms (%d) and at most a day, got %d", n.LeaseTTLMs, n.RecycleDelayMs)
	}
	// Issue #16's fields; both are absent (valid) in older namespaces.
	if n.WorkerRole != "" && n.WorkerRole != WorkerRoleShard {
		return fmt.Errorf("worker_role must be empty (worker ids) or %q, got %q", WorkerRoleShard, n.WorkerRole)
	}
	if n.HorizonYears < 0 || n.HorizonYears > MaxHorizonYears {
		return fmt.Errorf("horizon_years must be between 1 and %d (0: the default), got %d", MaxHorizonYears, n.HorizonYears)
	}
	return nil
}

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

// CreateNamespace is the body of CommandCreateNamespace.
type CreateNamespace struct {
	Namespace Namespace `json:"namespace"`
	Stamp
}

// Stamp is what the leader writes into entries that need time: its clock
// and its ID (for the audit).
type Stamp struct {
	NowMs  int64  `json:"now_ms,omitempty"`
	Leader string `json:"leader,omitempty"`
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

// NamespaceResult is the result of CommandCreateNamespace.
type NamespaceResult struct {
	Namespace Namespace
	Created   bool
}

const (
	maxHolderLen    = 256
	maxRequestIDLen = 128
)

func (f *FSM) tick(s Stamp) int64 {
	if s.NowMs > f.clockMs {
		f.clockMs = s.NowMs
	}
	return f.clockMs
}

func (f *FSM) applyCreateNamespace(c CreateNamespace, index, term uint64) any {
	now := f.tick(c.Stamp)
	n := c.Namespace
	if err := n.validate(now); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidCommand, err)
	}
	if old, ok := f.namespaces[n.Name]; ok {
		if *old != n {
			return fmt.Errorf("%w: %q has another layout or lease policy", ErrNamespaceConflict, n.Name)
		}
		return NamespaceResult{Namespace: *old}
	}
	f.namespaces[n.Name] = &n
	f.leases[n.Name] = map[int64]*Lease{}
	return NamespaceResult{Namespace: n, Created: true}
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
	leases[w] = l
	f.tokenFloor = max(f.tokenFloor, token)
	f.leaseChanges++
	f.audit(rec)
	return *l
}

// bound raises the holder's timestamp bound to clientMs + ttl.
func (l *Lease) bound(clientMs, ttlMs int64) {
	if clientMs > 0 && clientMs <= math.MaxInt64-ttlMs {
		l.ClientBoundMs = max(l.ClientBoundMs, clientMs+ttlMs)
	}
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

// Namespace returns a namespace's layout.
func (f *FSM) Namespace(name string) (Namespace, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, ok := f.namespaces[name]
	if !ok {
		return Namespace{}, false
	}
	return *n, true
}

// Namespaces returns every namespace, sorted by name.
func (f *FSM) Namespaces() []Namespace {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.sortedNamespaces()
}

func (f *FSM) sortedNamespaces() []Namespace {
	out := make([]Namespace, 0, len(f.namespaces))
	for _, n := range f.namespaces {
		out = append(out, *n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
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

// ClockMs is the latest leader stamp the FSM has seen: informational (and
// the legacy commands' clock).
func (f *FSM) ClockMs() int64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.clockMs
}
