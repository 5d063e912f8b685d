// Package fsm is ticketd's replicated state machine: named sequences with
// their high-water marks; Snowflake namespaces (a layout and its worker ids)
// with their worker-id leases, granted, renewed, ended and recycled by log
// entries alone (lease.go); the allocation audit, a bounded record of every
// block and lease grant with the uniqueness probe that checks it (audit.go);
// backup and restore into a fresh cluster (backup.go); and the cluster's
// member metadata.
//
// It is pure and deterministic: the same log gives the same state and the same
// responses on every node. It knows raft.Log, raft.FSMSnapshot and
// raft.SnapshotSink and nothing of transports, HTTP or time. DESIGN.md states
// the invariants and why they hold.
package fsm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/google/btree"
	"github.com/hashicorp/raft"
)

// Business rejections, returned as the Apply response (an error value, not a
// panic: the entry is valid, the request is not). Each leaves the state as it
// was.
var (
	// ErrSequenceNotFound: the named sequence does not exist.
	ErrSequenceNotFound = errors.New("sequence not found")
	// ErrSequenceExhausted: fewer IDs are left than asked for; a sequence
	// never wraps.
	ErrSequenceExhausted = errors.New("sequence exhausted")
	// ErrSequenceConflict: the sequence exists with other settings.
	ErrSequenceConflict = errors.New("sequence exists with different settings")
	// ErrInvalidCommand: a well-formed entry whose arguments break a rule
	// (bad name, count out of range). The leader validates before it
	// proposes, so this means a client bypassed validation or a bug.
	ErrInvalidCommand = errors.New("invalid command")
)

// Sequence is the replicated state of one sequence.
type Sequence struct {
	Name  string `json:"name"`
	Start int64  `json:"start"`
	Max   int64  `json:"max"`
	// Issued is the high-water mark: the highest ID ever handed to a leader,
	// Start-1 before the first block. It only grows, and never past Max.
	Issued int64 `json:"issued"`
}

// Remaining is how many IDs are left to hand out.
func (s Sequence) Remaining() int64 { return s.Max - s.Issued }

// Next is the lowest ID never handed to any leader, and false once the
// sequence is exhausted (Next would be Max+1, which may not fit an int64).
func (s Sequence) Next() (int64, bool) {
	if s.Issued >= s.Max {
		return 0, false
	}
	return s.Issued + 1, true
}

// Block is the result of an applied CommandReserveBlock: IDs First..Last
// (inclusive) now belong to the leader that proposed the entry.
type Block struct {
	Sequence string
	First    int64
	Last     int64
	// Index and Term are those of the log entry that granted the block.
	Index uint64
	Term  uint64
}

// Len is the number of IDs in the block.
func (b Block) Len() int64 { return b.Last - b.First + 1 }

// CreateResult is the result of an applied CommandCreateSequence.
type CreateResult struct {
	Sequence Sequence
	// Created is false when the sequence already existed with the same
	// settings.
	Created bool
}

// Member is a node's metadata.
type Member struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	HTTPAddr string `json:"http_addr"`
}

// FSM implements raft.FSM. Apply runs on raft's FSM goroutine; the read
// methods may be called from any goroutine.
type FSM struct {
	mu        sync.RWMutex
	sequences map[string]*Sequence
	// byName holds the same *Sequence values as sequences, ordered by
	// name: listing a page costs O(log n + limit), and snapshots and
	// listings walk it in order instead of sorting the map (issue #17).
	// Every write to sequences writes it too (applyCreate, install).
	byName     *btree.BTreeG[*Sequence]
	members    map[string]Member
	namespaces map[string]*Namespace
	leases     map[string]map[int64]*Lease // namespace -> worker id -> latest lease
	auditLog   []AuditRecord               // by index, oldest first
	auditSeq   uint64                      // Seq of the latest audit record
	clockMs    int64                       // the largest leader stamp seen in a lease entry (informational)
	// leaseChanges counts lease changes (not snapshotted: readers only
	// compare it with what they saw before).
	leaseChanges uint64
	tokenFloor   uint64 // the largest fencing token granted, here or in a restored backup
	lastIndex    uint64
	lastTerm     uint64
	// clusterLevel is the cluster's feature level (level.go), 0 for
	// LevelBase; atomic because every proposal's gate reads it.
	clusterLevel atomic.Uint32
	// standby is the recorded disaster-recovery standby (standby.go);
	// promotions and fence what this data went through.
	standby    *Standby
	promotions []Promotion
	fence      *Fence
	// promotionRests are the namespaces' records of an untrusted
	// promotion (promotionrest.go).
	promotionRests map[string]*PromotionRest

	// faults are the planted bugs of the fault-injection build (faults.go);
	// in every other build an empty struct whose checks are constants.
	faults plantedFaults
}

var _ raft.FSM = (*FSM)(nil)

// New returns an empty FSM.
func New() *FSM {
	return &FSM{
		sequences:  make(map[string]*Sequence),
		byName:     newSequenceIndex(),
		members:    make(map[string]Member),
		namespaces: make(map[string]*Namespace),
		leases:     make(map[string]map[int64]*Lease),
	}
}

// Apply applies one committed log entry and returns its result: a
// CreateResult, a Block, a RaiseResult, nil, or one of the errors above. An entry that
// cannot be decoded panics: the log is corrupt or was written by a newer
// version, and applying anything after it would let this node diverge.
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	if len(l.Data) == 0 {
		panic(fmt.Sprintf("fsm: empty log entry at index %d", l.Index))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastIndex, f.lastTerm = l.Index, l.Term

	_, cmd, err := decodeCommand(l.Data)
	if err != nil {
		panic(err.(*decodeError).at(l.Index))
	}
	switch c := cmd.(type) {
	case nil:
		return nil // an unknown type with IgnoreUnknownTypeFlag: skipped
	case *CreateSequence:
		return f.applyCreate(*c)
	case *ReserveBlock:
		return f.applyReserve(*c, l.Index, l.Term)
	case *SetMember:
		if c.ID == "" {
			return fmt.Errorf("%w: member id is empty", ErrInvalidCommand)
		}
		f.members[c.ID] = Member(*c)
		return nil
	case *RemoveMember:
		delete(f.members, c.ID)
		return nil
	case *CreateNamespace:
		return f.applyCreateNamespace(*c, l.Index, l.Term)
	case *AcquireLease:
		return f.applyLegacyAcquire(*c, l.Index, l.Term)
	case *RenewLease:
		return f.applyLegacyRenew(*c, l.Index)
	case *ReleaseLease:
		return f.applyLegacyRelease(*c, l.Index)
	case *RestoreBackup:
		return f.applyRestore(*c, l.Index)
	case *LeaseOp:
		return f.applyLeaseOp(*c, l.Index, l.Term)
	case *ReserveBlocks:
		return f.applyReserveBlocks(*c, l.Index, l.Term)
	case *RaiseSequence:
		return f.applyRaise(*c, l.Index, l.Term)
	case *SetFeatureLevel:
		return f.applySetFeatureLevel(*c)
	case *StandbyOp:
		return f.applyStandby(*c, l.Index)
	case *EndPromotionRest:
		return f.applyEndPromotionRest(*c)
	}
	panic(fmt.Sprintf("fsm: no handler for %T at index %d", cmd, l.Index)) // decodeCommand and this switch disagree
}

// decodeCommand decodes a log entry: the type byte (IgnoreUnknownTypeFlag
// stripped) and a pointer to its body (*CreateSequence, *ReserveBlock, ...).
// An unknown type with the flag decodes to a nil body: Apply skips it. An
// empty entry, an unknown type without the flag or a body that is not its
// type's JSON is a *decodeError, on which Apply panics; decodeCommand itself
// never panics, so FuzzApplyLog can tell corrupt entries from valid ones.
func decodeCommand(data []byte) (CommandType, any, error) {
	if len(data) == 0 {
		return 0, nil, &decodeError{empty: true}
	}
	// As in Nomad, the flag is stripped before dispatch: a known type
	// with the flag set is applied, an unknown one is skipped.
	t := CommandType(data[0])
	ignoreUnknown := t&IgnoreUnknownTypeFlag != 0
	t &^= IgnoreUnknownTypeFlag
	var body any
	switch t {
	case CommandCreateSequence:
		body = new(CreateSequence)
	case CommandReserveBlock:
		body = new(ReserveBlock)
	case CommandSetMember:
		body = new(SetMember)
	case CommandRemoveMember:
		body = new(RemoveMember)
	case CommandCreateNamespace:
		body = new(CreateNamespace)
	case CommandAcquireLease:
		body = new(AcquireLease)
	case CommandRenewLease:
		body = new(RenewLease)
	case CommandReleaseLease:
		body = new(ReleaseLease)
	case CommandRestoreBackup:
		body = new(RestoreBackup)
	case CommandLease:
		body = new(LeaseOp)
	case CommandReserveBlocks:
		body = new(ReserveBlocks)
	case CommandRaiseSequence:
		body = new(RaiseSequence)
	case CommandCreateNamespaceV2:
		body = new(CreateNamespace)
	case CommandLeaseV2:
		body = new(LeaseOp)
	case CommandStandby:
		body = &StandbyOp{}
	case CommandEndPromotionRest:
		body = new(EndPromotionRest)
	case CommandSetFeatureLevel:
		body = new(SetFeatureLevel)
	default:
		if ignoreUnknown {
			return t, nil, nil
		}
		return t, nil, &decodeError{t: t, unknown: true}
	}
	if err := json.Unmarshal(data[1:], body); err != nil {
		return t, nil, &decodeError{t: t, err: err}
	}
	if l, ok := body.(*SetFeatureLevel); ok && l.Level > CurrentLevel {
		// A level this binary does not know is as unreadable as a type
		// it does not know: what follows may use it.
		return t, nil, &decodeError{t: t, err: &UnknownLevelError{Cluster: l.Level, Known: CurrentLevel}}
	}
	return t, body, nil
}

// decodeError is why an entry cannot be applied: the log is corrupt or was
// written by a newer version.
type decodeError struct {
	t       CommandType // flag stripped
	empty   bool
	unknown bool
	err     error // the JSON error, for a body that does not decode
}

func (e *decodeError) Error() string {
	switch {
	case e.empty:
		return "empty log entry"
	case e.unknown:
		return fmt.Sprintf("unknown command type %d", uint8(e.t))
	}
	return fmt.Sprintf("cannot decode %s: %v", e.t, e.err)
}

// at is Apply's panic message for the entry at index.
func (e *decodeError) at(index uint64) string {
	switch {
	case e.empty:
		return fmt.Sprintf("fsm: empty log entry at index %d", index)
	case e.unknown:
		return fmt.Sprintf("fsm: unknown command type %d at index %d", uint8(e.t), index)
	}
	var ul *UnknownLevelError
	if errors.As(e.err, &ul) {
		at := *ul
		at.Index = index
		return at.Error()
	}
	return fmt.Sprintf("fsm: cannot decode %s at index %d: %v", e.t, index, e.err)
}

func (e *decodeError) Unwrap() error { return e.err }

func (f *FSM) applyCreate(c CreateSequence) any {
	if err := validateName(c.Name); err != nil {
		return fmt.Errorf("%w: sequence %v", ErrInvalidCommand, err)
	}
	if err := validateBounds(c.Start, c.Max); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidCommand, err)
	}
	if s, ok := f.sequences[c.Name]; ok {
		if s.Start != c.Start || s.Max != c.Max {
			return fmt.Errorf("%w: %q has start %d and max %d", ErrSequenceConflict, c.Name, s.Start, s.Max)
		}
		return CreateResult{Sequence: *s}
	}
	s := &Sequence{Name: c.Name, Start: c.Start, Max: c.Max, Issued: c.Start - 1}
	f.sequences[c.Name] = s
	f.byName.ReplaceOrInsert(s)
	return CreateResult{Sequence: *s, Created: true}
}

func (f *FSM) applyReserve(c ReserveBlock, index, term uint64) any {
	if c.Count < 1 || c.Min < 1 || c.Min > c.Count {
		return fmt.Errorf("%w: block count %d and min %d must satisfy 1 <= min <= count", ErrInvalidCommand, c.Count, c.Min)
	}
	s, ok := f.sequences[c.Name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrSequenceNotFound, c.Name)
	}
	// Issued <= Max always holds, so Remaining cannot overflow, and neither
	// can Issued+granted <= Max.
	granted := min(c.Count, s.Remaining(), f.blockCap())
	if granted < c.Min {
		return fmt.Errorf("%w: %q has %d IDs left (max %d), %d needed", ErrSequenceExhausted, c.Name, s.Remaining(), s.Max, c.Min)
	}
	b := Block{Sequence: c.Name, First: s.Issued + 1, Last: s.Issued + granted, Index: index, Term: term}
	s.Issued = b.Last
	f.audit(AuditRecord{Index: index, Term: term, Leader: c.Leader, TimeMs: c.NowMs, Kind: AuditBlock,
		Sequence: c.Name, First: b.First, Last: b.Last})
	return b
}

// Sequence returns the state of the named sequence.
func (f *FSM) Sequence(name string) (Sequence, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	s, ok := f.sequences[name]
	if !ok {
		return Sequence{}, false
	}
	return *s, true
}

// SequenceCount is how many sequences exist.
func (f *FSM) SequenceCount() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.sequences)
}

// Sequences returns every sequence, sorted by name.
func (f *FSM) Sequences() []Sequence {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.sortedSequences()
}

// SequencesPage returns up to limit sequences whose names are strictly
// greater than after (in byte order; "" starts at the first), sorted by name,
// and whether more sequences follow the last one returned. A limit below 1
// returns none. It costs O(log n + limit) for n sequences.
func (f *FSM) SequencesPage(after string, limit int) (page []Sequence, more bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	limit = max(limit, 0)
	if limit > 0 {
		page = make([]Sequence, 0, min(limit, f.byName.Len()))
	}
	f.byName.AscendGreaterOrEqual(&Sequence{Name: after}, func(s *Sequence) bool {
		if s.Name == after {
			return true // strictly after
		}
		if len(page) == limit {
			more = true
			return false
		}
		page = append(page, *s)
		return true
	})
	return page, more
}

func (f *FSM) sortedSequences() []Sequence {
	out := make([]Sequence, 0, f.byName.Len())
	f.byName.Ascend(func(s *Sequence) bool {
		out = append(out, *s)
		return true
	})
	return out
}

// newSequenceIndex returns an empty index of sequences by name (byte order).
// Degree 32 (nodes of 31 to 63 items) is what etcd's key index uses; the
// tree adds about 10 bytes per sequence to the map's entry.
func newSequenceIndex() *btree.BTreeG[*Sequence] {
	return btree.NewG(32, func(a, b *Sequence) bool { return a.Name < b.Name })
}

// Member returns the metadata of one node.
func (f *FSM) Member(id string) (Member, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	m, ok := f.members[id]
	return m, ok
}

// Members returns every node's metadata, sorted by ID.
func (f *FSM) Members() []Member {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.sortedMembers()
}

func (f *FSM) sortedMembers() []Member {
	out := make([]Member, 0, len(f.members))
	for _, m := range f.members {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// LastApplied returns the index and term of the last entry applied (or
// restored from a snapshot).
func (f *FSM) LastApplied() (index, term uint64) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.lastIndex, f.lastTerm
}

// Snapshot captures the state; Persist writes it while Apply goes on.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return &snapshot{state: f.stateLocked()}, nil
}

// Restore replaces the state with a snapshot's. A snapshot that breaks any
// rule of the state (validateState) is refused before anything changes.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	st, err := readSnapshot(rc)
	if err != nil {
		return err
	}
	if err := st.validate(); err != nil {
		return fmt.Errorf("fsm: snapshot: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.install(st)
	f.members = make(map[string]Member, len(st.Members))
	for _, m := range st.Members {
		f.members[m.ID] = m
	}
	f.auditLog, f.auditSeq = st.Audit, st.AuditSeq
	f.linkGrantSeqs()
	f.clockMs, f.tokenFloor = st.ClockMs, st.TokenFloor
	f.lastIndex, f.lastTerm = st.LastIndex, st.LastTerm
	f.clusterLevel.Store(uint32(st.FeatureLevel))
	f.standby, f.promotions, f.fence = st.Standby, st.Promotions, st.Fence
	f.promotionRests = nil
	for i := range st.PromotionRests {
		if f.promotionRests == nil {
			f.promotionRests = map[string]*PromotionRest{}
		}
		r := st.PromotionRests[i]
		f.promotionRests[r.Namespace] = &r
	}
	f.leaseChanges++
	return nil
}

// install replaces sequences, namespaces and leases with a validated
// state's; f.mu is held.
func (f *FSM) install(st snapshotState) {
	f.sequences = make(map[string]*Sequence, len(st.Sequences))
	f.byName = newSequenceIndex()
	for i := range st.Sequences {
		s := &st.Sequences[i]
		f.sequences[s.Name] = s
		f.byName.ReplaceOrInsert(s)
	}
	f.namespaces = make(map[string]*Namespace, len(st.Namespaces))
	f.leases = make(map[string]map[int64]*Lease, len(st.Namespaces))
	for i := range st.Namespaces {
		n := st.Namespaces[i]
		f.namespaces[n.Name] = &n
		f.leases[n.Name] = map[int64]*Lease{}
	}
	for i := range st.Leases {
		l := st.Leases[i]
		f.leases[l.Namespace][l.WorkerID] = &l
	}
}

// stateLocked copies the state for a snapshot or backup; f.mu is held.
func (f *FSM) stateLocked() snapshotState {
	st := snapshotState{
		LastIndex:  f.lastIndex,
		LastTerm:   f.lastTerm,
		Sequences:  f.sortedSequences(),
		Members:    f.sortedMembers(),
		Namespaces: f.sortedNamespaces(),
		Audit:      append([]AuditRecord(nil), f.auditLog...),
		ClockMs:    f.clockMs,
		TokenFloor: f.tokenFloor,
		AuditSeq:   f.auditSeq,
		// A backup drops it again (Backup): it is the cluster's.
		FeatureLevel: FeatureLevel(f.clusterLevel.Load()),
		Promotions:   append([]Promotion(nil), f.promotions...),
	}
	if f.standby != nil {
		sb := *f.standby
		st.Standby = &sb
	}
	if f.fence != nil {
		fe := *f.fence
		st.Fence = &fe
	}
	if len(st.Promotions) == 0 {
		st.Promotions = nil
	}
	if len(f.promotionRests) > 0 {
		st.PromotionRests = sortedRests(f.promotionRests)
	}
	for _, n := range st.Namespaces {
		st.Leases = append(st.Leases, sortedLeases(f.leases[n.Name])...)
	}
	return st
}

func (s Sequence) validate() error {
	if err := validateName(s.Name); err != nil {
		return fmt.Errorf("sequence %v", err)
	}
	if err := validateBounds(s.Start, s.Max); err != nil {
		return fmt.Errorf("sequence %q: %v", s.Name, err)
	}
	if s.Issued < s.Start-1 || s.Issued > s.Max {
		return fmt.Errorf("sequence %q: high-water mark %d outside [%d, %d]", s.Name, s.Issued, s.Start-1, s.Max)
	}
	return nil
}
