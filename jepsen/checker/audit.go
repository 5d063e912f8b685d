package checker

// What the harness read of the main cluster's allocation audit (GET
// /v1/audit): the raise records, and enough about how it read them to tell
// "this raise moved no mark" from "the audit dropped its record". One line
// of history.jsonl, of type "audit", holds it.

// AuditKindRaise is the audit kind of a raise that moved a sequence's mark.
const AuditKindRaise = "raise"

// AuditKindLease is the audit kind of a worker-id lease grant.
const AuditKindLease = "lease"

// AuditRecord is one raise record: the entry at log Index moved Sequence's
// mark from First-1 to Last (the raise's at_least); or one lease grant of
// the namespaces the Snowflake checks look at: worker WorkerID of
// Namespace to Holder with Token, at TimeMs (the leader's clock, for the
// match with the lease listings only). Seq numbers the audit's records of
// every kind in the order they were made. SeenNs is the end of the pass
// that first read it: the grant was applied before then.
type AuditRecord struct {
	Seq      uint64 `json:"seq"`
	Index    uint64 `json:"index"`
	Kind     string `json:"kind"`
	Sequence string `json:"sequence,omitempty"`
	First    int64  `json:"first,omitempty"`
	Last     int64  `json:"last,omitempty"`

	Namespace string `json:"namespace,omitempty"`
	WorkerID  int64  `json:"worker_id,omitempty"`
	Holder    string `json:"holder,omitempty"`
	Token     uint64 `json:"token,omitempty"`
	TimeMs    int64  `json:"time_ms,omitempty"`
	PrevToken uint64 `json:"prev_token,omitempty"`
	SeenNs    int64  `json:"seen_ns,omitempty"`
}

// LeaseFloor is a lease as a listing of its namespace's leases showed it
// (GET /v1/namespaces/{name}/leases, which names no token): matched to its
// grant by worker id, holder and GrantedMs (the grant record's TimeMs).
// FloorMs is the timestamp floor the grant handed the holder, FloorTick the
// first tick of the namespace that starts above it (0: no floor).
type LeaseFloor struct {
	Namespace string `json:"namespace"`
	WorkerID  int64  `json:"worker_id"`
	Holder    string `json:"holder"`
	GrantedMs int64  `json:"granted_ms"`
	FloorMs   int64  `json:"floor_ms,omitempty"`
	FloorTick int64  `json:"floor_tick,omitempty"`
	SeenNs    int64  `json:"seen_ns"`
}

// AuditPoll is one pass of the harness through the audit, paged until it
// came back empty: begun at StartNs, ended at EndNs, having read every
// record up to Seq (bar the Gaps).
type AuditPoll struct {
	StartNs int64  `json:"start_ns"`
	EndNs   int64  `json:"end_ns"`
	Seq     uint64 `json:"seq"`
}

// SeqRange is an inclusive range of audit record numbers.
type SeqRange struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
}

// Audit is what the harness read of the main cluster's audit during the run
// and after the final reads.
type Audit struct {
	Type   string        `json:"type"` // always "audit"
	Raises []AuditRecord `json:"raises"`
	// Leases are the lease grants of the namespaces of the server-made
	// Snowflake IDs, Floors what the lease listings showed of them.
	Leases []AuditRecord `json:"leases,omitempty"`
	Floors []LeaseFloor  `json:"floors,omitempty"`
	Polls  []AuditPoll   `json:"polls"`
	// Gaps are records the harness never read: the audit keeps only its
	// latest records and had dropped them before a poll reached them.
	Gaps []SeqRange `json:"gaps,omitempty"`
}

// readThrough is the highest record number read by a poll that ended
// before t (0 if none): a record made after t has a higher number.
func (a *Audit) readThrough(t int64) uint64 {
	var s uint64
	for _, p := range a.Polls {
		if p.EndNs < t {
			s = max(s, p.Seq)
		}
	}
	return s
}

// readAfter is the highest record number read by the first poll begun
// after t; ok is false when none began after t. Such a poll read every
// record made before t, gaps aside.
func (a *Audit) readAfter(t int64) (uint64, bool) {
	for _, p := range a.Polls {
		if p.StartNs > t {
			return p.Seq, true
		}
	}
	return 0, false
}

// complete reports whether the harness read every record numbered in
// (lo, hi].
func (a *Audit) complete(lo, hi uint64) bool {
	for _, g := range a.Gaps {
		if g.To > lo && g.From <= hi {
			return false
		}
	}
	return true
}
