package fsm

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// A disaster-recovery standby (issue #34): a non-voting member, typically in
// another region, that receives the log and serves nothing that issues IDs.
// The FSM records which member it is, the bound the leader keeps it within,
// whether it was in sync, and, after a promotion, that this data was promoted
// and from where. The leader enforces the bound (cluster/standby.go); this
// file holds what every replica, and the standby's own disk, must agree on:
//
//   - While a standby is recorded, a block grants at most Bound IDs of a
//     sequence per entry (capBlock), whatever the leader asked. The leader
//     serves a block only once the standby has stored every entry before
//     the block's, so the IDs it has served of a sequence never pass the
//     mark the standby holds by more than Bound: the block's first ID is
//     the mark at the entry before it, plus one.
//   - The state (in sync or out of sync) changes only through entries, so
//     the standby's own log says what it may trust: a promotion of a standby
//     whose log says in sync advances every sequence by Bound; one that says
//     out of sync (or still catching up) needs the operator's --advance.
//   - A promotion (Promote) is applied offline to the standby's own state,
//     like raft.RecoverCluster: it is never an entry, since the cluster it
//     would be proposed to is gone.

// CommandStandby records a standby, its state, its removal, or that this
// cluster's standby was promoted elsewhere (a fence).
const CommandStandby CommandType = 16

// Standby operations.
const (
	StandbyAdd       = "add"         // record the standby (catching up: not in sync yet)
	StandbyInSync    = "in-sync"     // the leader found it caught up
	StandbyOutOfSync = "out-of-sync" // unreachable past its timeout: the leader goes on without it
	StandbyRemove    = "remove"      // it left the cluster
	StandbyFence     = "fence"       // it answered that it was promoted: this cluster serves nothing more
)

// Standby states as recorded.
const (
	StandbyStateCatchingUp = "catching-up"
	StandbyStateInSync     = "in-sync"
	StandbyStateOutOfSync  = "out-of-sync"
)

// Defaults and limits of a standby's settings.
const (
	// DefaultStandbyBound is the IDs per sequence the leader may serve past
	// what the standby has stored: one reservation of the largest size.
	// (api.MaxReserveCount, mirrored here: the FSM's rules never take a
	// number from the wire package; a test holds them equal.)
	DefaultStandbyBound int64 = 10_000_000
	// MinStandbyBound: a block must hold the largest reservation.
	MinStandbyBound = DefaultStandbyBound
	// DefaultStandbyTimeoutMs is how long the standby may be unreachable
	// before the leader records it out of sync and goes on without it.
	DefaultStandbyTimeoutMs = 10_000
	MinStandbyTimeoutMs     = 100
	MaxStandbyTimeoutMs     = 3_600_000
)

var (
	// ErrStandbyConflict: another member is the standby, or the settings
	// differ from the recorded ones.
	ErrStandbyConflict = errors.New("standby conflict")
	// ErrNoStandby: the operation names a standby that is not recorded.
	ErrNoStandby = errors.New("no such standby")
	// ErrFenced: this cluster's standby was promoted; it serves nothing.
	ErrFenced = errors.New("fenced: this cluster's standby was promoted")
)

// StandbyOp is the body of CommandStandby.
type StandbyOp struct {
	Op        string `json:"op"`
	ID        string `json:"id"`
	Bound     int64  `json:"bound,omitempty"`      // add
	TimeoutMs int64  `json:"timeout_ms,omitempty"` // add
	// AckIndex is, for in-sync, the index the standby had stored when the
	// leader proposed it; for out-of-sync, the last it had acknowledged.
	// Recorded for people: nothing decides by it.
	AckIndex uint64 `json:"ack_index,omitempty"`
	// Reason says why, for people (out-of-sync, fence).
	Reason string `json:"reason,omitempty"`
	Stamp
}

// EncodeStandbyOp encodes a CommandStandby entry.
func EncodeStandbyOp(c StandbyOp) []byte { return mustEncode(CommandStandby, c) }

// Standby is the recorded standby.
type Standby struct {
	ID        string `json:"id"`
	Bound     int64  `json:"bound"`
	TimeoutMs int64  `json:"timeout_ms"`
	State     string `json:"state"`
	// SinceIndex and SinceMs are the entry that recorded State (its index
	// and its leader's stamp, for people).
	SinceIndex uint64 `json:"since_index"`
	SinceMs    int64  `json:"since_ms,omitempty"`
	AckIndex   uint64 `json:"ack_index,omitempty"`
	Reason     string `json:"reason,omitempty"`
	AddedIndex uint64 `json:"added_index"`
	// OutOfSyncCount counts the times it fell out of sync.
	OutOfSyncCount int64 `json:"out_of_sync_count,omitempty"`
}

// InSync reports whether the standby's own log may be trusted to bound what
// the primary served by Bound.
func (s Standby) InSync() bool { return s.State == StandbyStateInSync }

// Promotion records that this data was promoted from a standby.
type Promotion struct {
	// Standby is the member that was promoted (this node).
	Standby string `json:"standby"`
	// AtIndex is the last log index the standby held.
	AtIndex uint64 `json:"at_index"`
	// Advance is what every sequence's mark was raised by.
	Advance int64 `json:"advance"`
	// State is the standby's recorded state when it was promoted.
	State string `json:"state"`
	// TokenFloor is the fencing floor set by the promotion.
	TokenFloor uint64 `json:"token_floor"`
	// AtMs is the promoting machine's wall clock, for people.
	AtMs int64 `json:"at_ms,omitempty"`
	// OldMembers are the ids of the old cluster's other members: the
	// promoted node refuses their Raft traffic (cluster/standby.go).
	OldMembers []string `json:"old_members,omitempty"`
}

// Fence records that this cluster's standby answered that it was promoted:
// the other side is the cluster now, and this one serves nothing.
type Fence struct {
	Standby string `json:"standby"`
	Index   uint64 `json:"index"`
	AtMs    int64  `json:"at_ms,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// StandbyInfo is the recorded standby, if any.
func (f *FSM) StandbyInfo() (Standby, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.standby == nil {
		return Standby{}, false
	}
	return *f.standby, true
}

// Promotions lists the promotions this data went through, oldest first.
func (f *FSM) Promotions() []Promotion {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return append([]Promotion(nil), f.promotions...)
}

// Fenced returns the fence, if this cluster's standby was promoted.
func (f *FSM) Fenced() (Fence, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.fence == nil {
		return Fence{}, false
	}
	return *f.fence, true
}

// ValidateStandbySettings checks a standby's bound and timeout.
func ValidateStandbySettings(bound, timeoutMs int64) error {
	var errs []error
	if bound < MinStandbyBound {
		errs = append(errs, fmt.Errorf("standby bound %d: must be at least %d IDs (one reservation of the largest size)", bound, MinStandbyBound))
	}
	if timeoutMs < MinStandbyTimeoutMs || timeoutMs > MaxStandbyTimeoutMs {
		errs = append(errs, fmt.Errorf("standby timeout %d ms: must be between %d ms and %d ms", timeoutMs, MinStandbyTimeoutMs, MaxStandbyTimeoutMs))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %v", ErrInvalidCommand, errors.Join(errs...))
	}
	return nil
}

func (f *FSM) applyStandby(c StandbyOp, index uint64) any {
	now := f.tick(c.Stamp)
	if c.ID == "" {
		return fmt.Errorf("%w: standby id is empty", ErrInvalidCommand)
	}
	switch c.Op {
	case StandbyAdd:
		if err := ValidateStandbySettings(c.Bound, c.TimeoutMs); err != nil {
			return err
		}
		if s := f.standby; s != nil {
			if s.ID != c.ID {
				return fmt.Errorf("%w: %q is the standby already; remove it first (one standby per cluster)", ErrStandbyConflict, s.ID)
			}
			if s.Bound != c.Bound || s.TimeoutMs != c.TimeoutMs {
				return fmt.Errorf("%w: %q is recorded with bound %d and timeout %d ms, not %d and %d ms; remove it first", ErrStandbyConflict, s.ID, s.Bound, s.TimeoutMs, c.Bound, c.TimeoutMs)
			}
			return nil // the same standby again: nothing changes
		}
		f.standby = &Standby{ID: c.ID, Bound: c.Bound, TimeoutMs: c.TimeoutMs, State: StandbyStateCatchingUp,
			SinceIndex: index, SinceMs: now, AddedIndex: index}
		return nil
	case StandbyInSync, StandbyOutOfSync:
		s := f.standby
		if s == nil || s.ID != c.ID {
			return fmt.Errorf("%w: %q", ErrNoStandby, c.ID)
		}
		state := StandbyStateInSync
		if c.Op == StandbyOutOfSync {
			state = StandbyStateOutOfSync
		}
		if s.State == state {
			return nil // a leader that proposed from an older view: nothing changes
		}
		if state == StandbyStateOutOfSync {
			s.OutOfSyncCount++
		}
		s.State, s.SinceIndex, s.SinceMs, s.AckIndex, s.Reason = state, index, now, c.AckIndex, c.Reason
		return nil
	case StandbyRemove:
		if f.standby == nil || f.standby.ID != c.ID {
			return fmt.Errorf("%w: %q", ErrNoStandby, c.ID)
		}
		f.standby = nil
		return nil
	case StandbyFence:
		if f.fence == nil {
			f.fence = &Fence{Standby: c.ID, Index: index, AtMs: now, Reason: c.Reason}
		}
		return nil
	}
	return fmt.Errorf("%w: standby op %q (want add, in-sync, out-of-sync, remove or fence)", ErrInvalidCommand, c.Op)
}

// blockCap is the most IDs one entry may grant a sequence: the standby's
// bound while one is recorded, else no cap. f.mu is held.
func (f *FSM) blockCap() int64 {
	if f.standby != nil {
		return f.standby.Bound
	}
	return math.MaxInt64
}

// PromoteCheck says whether this state, the standby id's own, may be
// promoted with the given advance (0: none given). It returns the advance
// the promotion will use. Nothing changes.
func (f *FSM) PromoteCheck(id string, advance int64) (int64, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.promoteCheckLocked(id, advance)
}

// Errors of a promotion that is refused.
var (
	ErrNotStandby       = errors.New("not a standby")
	ErrAlreadyPromoted  = errors.New("already promoted")
	ErrStandbyNotInSync = errors.New("standby not in sync")
	ErrAdvanceTooSmall  = errors.New("advance below the recorded bound")
)

func (f *FSM) promoteCheckLocked(id string, advance int64) (int64, error) {
	for _, p := range f.promotions {
		if p.Standby == id && f.standby == nil {
			return 0, fmt.Errorf("%w: this data was promoted from standby %q at index %d (advance %d); it is a cluster of its own now, start it with ticketd serve", ErrAlreadyPromoted, p.Standby, p.AtIndex, p.Advance)
		}
	}
	s := f.standby
	if s == nil {
		return 0, fmt.Errorf("%w: the log records no standby; only a standby's data can be promoted (a voter's cluster recovers by itself, or from a backup with ticketd restore)", ErrNotStandby)
	}
	if s.ID != id {
		return 0, fmt.Errorf("%w: the log records %q as the standby, not %q (this node)", ErrNotStandby, s.ID, id)
	}
	if advance < 0 {
		return 0, fmt.Errorf("%w: advance %d is negative", ErrInvalidCommand, advance)
	}
	if advance != 0 && advance < s.Bound {
		return 0, fmt.Errorf("%w: --advance %d is below the recorded bound of %d IDs per sequence, which the primary may have served past what this standby holds", ErrAdvanceTooSmall, advance, s.Bound)
	}
	if !s.InSync() && advance == 0 {
		if s.State == StandbyStateOutOfSync {
			return 0, fmt.Errorf("%w: recorded out of sync at index %d (%s) after %q; the primary went on without it from then, so it may be behind by any number of IDs: give --advance N, at least the IDs any sequence can have been given since then, and at least the bound %d", ErrStandbyNotInSync, s.SinceIndex, fmtStampMs(s.SinceMs), s.Reason, s.Bound)
		}
		return 0, fmt.Errorf("%w: still catching up since it was added at index %d (%s): it never held the primary's state within the bound; give --advance N, at least the IDs any sequence can have been given since, and at least the bound %d", ErrStandbyNotInSync, s.AddedIndex, fmtStampMs(s.SinceMs), s.Bound)
	}
	if advance == 0 {
		advance = s.Bound
	}
	return advance, nil
}

// PromoteResult is what a promotion did.
type PromoteResult struct {
	Promotion  Promotion
	Sequences  int
	Exhausted  []string // sequences the advance used up (never wrapped)
	HeldLeases int      // leases still held: each is timed out afresh by the new leader
	// EndedLeases and RestingNamespaces: with the operator's advance,
	// the held leases ended ("promoted") and the namespaces resting.
	EndedLeases       int
	RestingNamespaces int
}

// Promote makes the standby id's state the state of a new cluster: every
// sequence's mark rises by the advance (PromoteCheck), stopping at its max
// (exhausted, never wrapped); every held lease stays held with a new
// version, so the new leader times it out with a full TTL and then rests
// its worker id a recycle delay before anyone gets it again; the fencing
// floor rises above every index the old cluster can have
// used; the standby record is dropped and the promotion recorded. It is not
// an entry: the caller (ticketd promote) applies it to the recovered state
// before that state is written as the new cluster's snapshot.
func (f *FSM) Promote(id string, advance int64, atMs int64, oldMembers []string) (PromoteResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	adv, err := f.promoteCheckLocked(id, advance)
	if err != nil {
		return PromoteResult{}, err
	}
	state := f.standby.State
	res := PromoteResult{Sequences: len(f.sequences)}
	for _, s := range f.sequences {
		if f.faults.promoteWithoutAdvance() {
			break // the planted bug (faults.go)
		}
		if adv >= s.Remaining() {
			s.Issued = s.Max
			res.Exhausted = append(res.Exhausted, s.Name)
		} else {
			s.Issued += adv
		}
	}
	// A promotion with the operator's advance cannot trust the leases it
	// holds: the standby may have missed grants, renewals and ends. Every
	// namespace rests then (promotionrest.go): held leases end, every
	// worker id waits the TTL plus the recycle delay from when the new
	// leader serves, and later grants get a floor above what any old
	// holder can have used. Its level is raised with it, so that no
	// binary that would grant during the rest can join.
	if advance != 0 && len(f.namespaces) > 0 && !f.faults.promoteKeepsLeases() {
		res.EndedLeases = f.restNamespaces(f.lastIndex, atMs)
		res.RestingNamespaces = len(f.namespaces)
		if f.ClusterLevel() < LevelPromotionRest {
			f.clusterLevel.Store(uint32(LevelPromotionRest))
		}
	}
	// Held leases stay held: the new leader's lessor restarts a full TTL
	// for each (their version changes) and then the recycle delay, so no
	// worker id leased in the old region is granted before its TTL plus
	// recycle delay from when the promoted node serves, which is after the
	// old region was lost and so after the holder's last renewal. (A
	// standby in sync stored every lease write before it was answered.)
	for _, byID := range f.leases {
		for _, l := range byID {
			l.Version = f.lastIndex
			if l.State == LeaseHeld {
				res.HeldLeases++
			}
		}
	}
	// Tokens are log indices (or the floor + 1). The old cluster's log can
	// have run ahead of what this standby stored, by at most what it wrote
	// while the standby lagged; a jump of 2^32 indices is far past any
	// such stretch and costs nothing, since tokens are only compared.
	f.tokenFloor = max(f.tokenFloor, f.lastIndex) + 1<<32
	p := Promotion{Standby: id, AtIndex: f.lastIndex, Advance: adv, State: state, TokenFloor: f.tokenFloor, AtMs: atMs,
		OldMembers: append([]string(nil), oldMembers...)}
	f.promotions = append(f.promotions, p)
	f.standby = nil
	f.fence = nil
	// The old cluster's members are not this one's: their metadata would
	// send followers' forwarding to nodes of a cluster that is gone.
	for mid := range f.members {
		if mid != id {
			delete(f.members, mid)
		}
	}
	f.leaseChanges++
	res.Promotion = p
	return res, nil
}

func fmtStampMs(ms int64) string {
	if ms == 0 {
		return "time not recorded"
	}
	return fmt.Sprintf("leader clock %s", msTime(ms).UTC().Format("2006-01-02T15:04:05Z"))
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms) }

// OldMembers are the ids of every cluster this data was promoted away from
// (its own id excluded).
func (f *FSM) OldMembers() map[string]bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := map[string]bool{}
	for _, p := range f.promotions {
		for _, id := range p.OldMembers {
			out[id] = true
		}
	}
	return out
}
