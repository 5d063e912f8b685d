package fsm

import (
	"fmt"
	"sort"
)

// The allocation audit: every block and lease grant, with the log index and
// term of its entry, the leader that proposed it and the leader's time. It
// keeps the latest AuditRetention records (older ones are dropped first),
// is replicated and snapshotted like the rest of the state, and backs
// inspection and the uniqueness probe.

// AuditRetention is how many audit records the FSM keeps.
const AuditRetention = 20_000

// Audit record kinds.
const (
	AuditBlock = "block"
	AuditLease = "lease"
)

// AuditRecord is one grant.
type AuditRecord struct {
	// Seq numbers the records in the order they were made, from 1, and
	// keeps growing across a restore (which renumbers the backup's
	// records). Paging goes by Seq: Index does not grow across a restore,
	// whose records carry the old cluster's indices.
	Seq    uint64 `json:"seq,omitempty"`
	Index  uint64 `json:"index"`
	Term   uint64 `json:"term"`
	Leader string `json:"leader,omitempty"`
	// TimeMs is the proposing leader's clock (informational for blocks;
	// the FSM's lease clock for leases).
	TimeMs int64  `json:"time_ms"`
	Kind   string `json:"kind"`

	Sequence string `json:"sequence,omitempty"`
	First    int64  `json:"first,omitempty"`
	Last     int64  `json:"last,omitempty"`

	Namespace string `json:"namespace,omitempty"`
	WorkerID  int64  `json:"worker_id,omitempty"`
	Holder    string `json:"holder,omitempty"`
	Token     uint64 `json:"token,omitempty"`
	// PrevEndMs and PrevToken describe the worker id's previous lease,
	// so the probe can check the two never overlapped.
	PrevEndMs int64  `json:"prev_end_ms,omitempty"`
	PrevToken uint64 `json:"prev_token,omitempty"`
	// PrevFreedIndex is the index of the entry that freed the worker id
	// for this grant (the previous lease's recycle entry); 0 for a first
	// grant and for grants by the legacy commands, which decided by time.
	PrevFreedIndex uint64 `json:"prev_freed_index,omitempty"`
	// LegacyClock marks a grant by the legacy commands, which decided by
	// wall-clock stamps (also every lease grant of a pre-v4 snapshot).
	LegacyClock bool `json:"legacy_clock,omitempty"`
}

// audit appends r and returns its sequence number.
func (f *FSM) audit(r AuditRecord) uint64 {
	if len(f.auditLog) >= AuditRetention {
		// Drop the oldest tenth at once, so trimming is amortised.
		drop := AuditRetention / 10
		f.auditLog = append(f.auditLog[:0:0], f.auditLog[drop:]...)
	}
	f.auditSeq++
	r.Seq = f.auditSeq
	f.auditLog = append(f.auditLog, r)
	return r.Seq
}

// Audit returns up to limit records with a sequence number above afterSeq,
// oldest first.
func (f *FSM) Audit(afterSeq uint64, limit int) []AuditRecord {
	f.mu.RLock()
	defer f.mu.RUnlock()
	i := sort.Search(len(f.auditLog), func(i int) bool { return f.auditLog[i].Seq > afterSeq })
	end := min(len(f.auditLog), i+limit)
	return append([]AuditRecord(nil), f.auditLog[i:end]...)
}

// FindBlock returns the retained block record of a sequence that contains
// id.
func (f *FSM) FindBlock(sequence string, id int64) (AuditRecord, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for i := len(f.auditLog) - 1; i >= 0; i-- {
		r := f.auditLog[i]
		if r.Kind == AuditBlock && r.Sequence == sequence && r.First <= id && id <= r.Last {
			return r, true
		}
	}
	return AuditRecord{}, false
}

// FindLease returns the retained lease grant of a namespace's worker id
// whose holding interval contains atMs.
func (f *FSM) FindLease(namespace string, worker int64, atMs int64) (AuditRecord, Lease, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var end int64 = -1
	for i := len(f.auditLog) - 1; i >= 0; i-- {
		r := f.auditLog[i]
		if r.Kind != AuditLease || r.Namespace != namespace || r.WorkerID != worker {
			continue
		}
		if r.TimeMs <= atMs {
			// This grant lasted until the next grant's PrevEndMs, or is
			// the current lease.
			if end == -1 {
				cur := f.leases[namespace][worker]
				if cur != nil && cur.Token == r.Token {
					return r, *cur, atMs < cur.EndMs()
				}
				return r, Lease{}, false
			}
			return r, Lease{}, atMs < end
		}
		end = r.PrevEndMs
	}
	return AuditRecord{}, Lease{}, false
}

// Violation is something the uniqueness probe found that must never happen.
type Violation struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// CheckReport is the result of CheckAudit.
type CheckReport struct {
	Blocks     int         `json:"blocks_checked"`
	Leases     int         `json:"leases_checked"`
	Violations []Violation `json:"violations"`
}

// CheckAudit is the uniqueness probe: per sequence the retained blocks are
// disjoint and increase with the log index, and no worker id was granted
// before its previous lease had ended and been freed by a recycle entry (by
// the legacy commands: before it had rested the recycle delay by the stamps).
func (f *FSM) CheckAudit() CheckReport {
	f.mu.RLock()
	defer f.mu.RUnlock()
	rep := CheckReport{Violations: []Violation{}}
	lastBlock := map[string]AuditRecord{}
	for _, r := range f.auditLog {
		switch r.Kind {
		case AuditRaise:
			// The IDs a raise passed over were never handed out, but no
			// later block may reach back into them either.
			if r.First < 1 || r.Last < r.First {
				rep.Violations = append(rep.Violations, Violation{"raise", fmt.Sprintf("%s: raise over %d..%d at index %d is malformed", r.Sequence, r.First, r.Last, r.Index)})
			}
			if prev, ok := lastBlock[r.Sequence]; ok && r.First <= prev.Last {
				rep.Violations = append(rep.Violations, Violation{"raise", fmt.Sprintf("%s: raise over %d..%d at index %d does not lie above %s %d..%d at index %d", r.Sequence, r.First, r.Last, r.Index, prev.Kind, prev.First, prev.Last, prev.Index)})
			}
			lastBlock[r.Sequence] = r
		case AuditBlock:
			rep.Blocks++
			if r.First < 1 || r.Last < r.First {
				rep.Violations = append(rep.Violations, Violation{"block", fmt.Sprintf("%s: block %d..%d at index %d is malformed", r.Sequence, r.First, r.Last, r.Index)})
			}
			if prev, ok := lastBlock[r.Sequence]; ok && r.First <= prev.Last {
				rep.Violations = append(rep.Violations, Violation{"block", fmt.Sprintf("%s: block %d..%d at index %d does not lie above %s %d..%d at index %d", r.Sequence, r.First, r.Last, r.Index, prev.Kind, prev.First, prev.Last, prev.Index)})
			}
			lastBlock[r.Sequence] = r
		case AuditLease:
			rep.Leases++
			if r.PrevToken == 0 {
				break
			}
			if !r.LegacyClock {
				// Granted by the state: the previous lease must have been
				// freed by a recycle entry before this grant.
				if r.PrevFreedIndex == 0 || r.PrevFreedIndex >= r.Index {
					rep.Violations = append(rep.Violations, Violation{"lease", fmt.Sprintf("%s: worker %d granted at index %d (token %d) while its previous lease (token %d) had not been freed", r.Namespace, r.WorkerID, r.Index, r.Token, r.PrevToken)})
				}
				break
			}
			ns, ok := f.namespaces[r.Namespace]
			if ok && r.TimeMs < r.PrevEndMs+ns.RecycleDelayMs {
				rep.Violations = append(rep.Violations, Violation{"lease", fmt.Sprintf("%s: worker %d granted at %d (token %d) while its previous lease (token %d) ended at %d and had to rest %d ms", r.Namespace, r.WorkerID, r.TimeMs, r.Token, r.PrevToken, r.PrevEndMs, ns.RecycleDelayMs)})
			}
		}
	}
	return rep
}
