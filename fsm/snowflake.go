package fsm

import "errors"

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
