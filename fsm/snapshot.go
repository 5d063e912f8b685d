package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"

	"github.com/hashicorp/raft"
)

// Snapshot format: the 8-byte magic, a big-endian uint32 format version, then
// the state as one JSON document. Every version ever shipped keeps a fixture in
// testdata/ and a test that still reads it.
var snapshotMagic = [8]byte{'T', 'K', 'T', 'D', 'S', 'N', 'A', 'P'}

// SnapshotVersion is the format Persist writes. Version 2 added Snowflake
// namespaces, leases, the allocation audit and the lease clock; a v1
// snapshot reads as one with none of them. Version 3 added the fencing-token
// floor, the audit's own sequence numbers and leases' request ids; a v1 or
// v2 snapshot gets them derived when read (see upgrade). Version 4 added the
// leases' state, version, end reason and timestamp bounds (issue #18); an
// older snapshot's leases get a state derived from the stamps, as the
// legacy rules would have decided at the snapshot's point of the log.
// Version 5 added namespaces' worker role and horizon and the audit's raise
// records (issue #16); an older snapshot has none, and a binary that knows
// only v4 refuses a v5 snapshot rather than drop them. Version 6 added the
// cluster's feature level (level.go); an older snapshot's is LevelBase.
//
// SnapshotVersion is the newest format this binary reads and writes. It
// writes the oldest format that carries the state (snapshotFormat): a
// leader's snapshot goes to followers that may run an older binary, which
// refuse a format newer than theirs, and the gate on entries (level.go)
// keeps a state that needs a newer format from arising before every member
// can read it.
// Version 7 added the disaster-recovery standby, promotions and the fence
// (standby.go); an older snapshot has none. Version 8 added the namespaces'
// rests after an untrusted promotion (promotionrest.go).
const SnapshotVersion uint32 = 8

type snapshotState struct {
	LastIndex  uint64        `json:"last_index"`
	LastTerm   uint64        `json:"last_term"`
	Sequences  []Sequence    `json:"sequences"`
	Members    []Member      `json:"members"`
	Namespaces []Namespace   `json:"namespaces,omitempty"`
	Leases     []Lease       `json:"leases,omitempty"`
	Audit      []AuditRecord `json:"audit,omitempty"`
	ClockMs    int64         `json:"clock_ms,omitempty"`
	// TokenFloor is the largest fencing token ever granted (v3).
	TokenFloor uint64 `json:"token_floor,omitempty"`
	// AuditSeq is the sequence number of the latest audit record (v3).
	AuditSeq uint64 `json:"audit_seq,omitempty"`
	// FeatureLevel is the cluster's feature level (v6), 0 for LevelBase.
	// A backup leaves it out: it is the cluster's, not the data's.
	FeatureLevel FeatureLevel `json:"feature_level,omitempty"`
	// Standby, Promotions and Fence (v7, standby.go) are the cluster's too:
	// a backup leaves them out.
	Standby    *Standby    `json:"standby,omitempty"`
	Promotions []Promotion `json:"promotions,omitempty"`
	Fence      *Fence      `json:"fence,omitempty"`
	// PromotionRests (v8, promotionrest.go): the namespaces' rests and
	// timestamp floors after an untrusted promotion; a backup leaves them
	// out.
	PromotionRests []PromotionRest `json:"promotion_rests,omitempty"`
}

type snapshot struct {
	state snapshotState
}

var _ raft.FSMSnapshot = (*snapshot)(nil)

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if err := writeSnapshot(sink, s.state); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *snapshot) Release() {}

// snapshotFormat is the oldest format that carries st: 8 for a promotion's
// rests, 7 for a standby, a
// promotion or a fence, 6 for a recorded
// feature level above the base, 5 for a namespace with a worker role or
// horizon or a raise record, 4 otherwise (v4 is the oldest format this
// binary writes: every field v1 to v3 derive is in the state).
func (st *snapshotState) snapshotFormat() uint32 {
	if len(st.PromotionRests) > 0 {
		return 8
	}
	if st.Standby != nil || len(st.Promotions) > 0 || st.Fence != nil {
		return 7
	}
	if st.FeatureLevel > LevelBase {
		return 6
	}
	for _, n := range st.Namespaces {
		if n.WorkerRole != "" || n.HorizonYears != 0 {
			return 5
		}
	}
	for _, r := range st.Audit {
		if r.Kind == AuditRaise {
			return 5
		}
	}
	return 4
}

func writeSnapshot(w io.Writer, st snapshotState) error {
	if st.FeatureLevel <= LevelBase {
		st.FeatureLevel = 0 // the base is implied, so a v4 or v5 body stays one
	}
	bw := bufio.NewWriter(w)
	var hdr [12]byte
	copy(hdr[:8], snapshotMagic[:])
	binary.BigEndian.PutUint32(hdr[8:], st.snapshotFormat())
	if _, err := bw.Write(hdr[:]); err != nil {
		return fmt.Errorf("fsm: write snapshot header: %w", err)
	}
	if err := json.NewEncoder(bw).Encode(st); err != nil {
		return fmt.Errorf("fsm: write snapshot: %w", err)
	}
	return bw.Flush()
}

func readSnapshot(r io.Reader) (snapshotState, error) {
	var st snapshotState
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return st, fmt.Errorf("fsm: read snapshot header: %w", err)
	}
	if !bytes.Equal(hdr[:8], snapshotMagic[:]) {
		return st, fmt.Errorf("fsm: not a ticketd snapshot (magic %q)", hdr[:8])
	}
	switch v := binary.BigEndian.Uint32(hdr[8:]); v {
	case 1, 2, 3, 4, 5, 6, 7, 8:
		// v2 to v8 only added fields, so all decode into the same
		// struct; an older body has none of the newer ones.
		dec := json.NewDecoder(r)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&st); err != nil {
			return st, fmt.Errorf("fsm: decode snapshot v%d: %w", v, err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return st, fmt.Errorf("fsm: snapshot v%d has data after its state", v)
		}
		if v == 1 && (len(st.Namespaces) > 0 || len(st.Leases) > 0 || len(st.Audit) > 0 || st.ClockMs != 0) {
			return st, fmt.Errorf("fsm: snapshot v1 holds fields of v2")
		}
		if v < 3 {
			if st.TokenFloor != 0 || st.AuditSeq != 0 {
				return st, fmt.Errorf("fsm: snapshot v%d holds fields of v3", v)
			}
			st.upgrade()
		}
		if v < 8 && len(st.PromotionRests) > 0 {
			return st, fmt.Errorf("fsm: snapshot v%d holds the promotion rests of v8", v)
		}
		if v < 7 && (st.Standby != nil || len(st.Promotions) > 0 || st.Fence != nil) {
			return st, fmt.Errorf("fsm: snapshot v%d holds the standby fields of v7", v)
		}
		if v < 6 && st.FeatureLevel != 0 {
			return st, fmt.Errorf("fsm: snapshot v%d holds the feature level of v6", v)
		}
		if st.FeatureLevel > CurrentLevel {
			return st, &UnknownLevelError{Cluster: st.FeatureLevel, Known: CurrentLevel, Index: st.LastIndex}
		}
		if v < 5 {
			for _, n := range st.Namespaces {
				if n.WorkerRole != "" || n.HorizonYears != 0 {
					return st, fmt.Errorf("fsm: snapshot v%d holds namespace fields of v5", v)
				}
			}
			for _, r := range st.Audit {
				if r.Kind == AuditRaise {
					return st, fmt.Errorf("fsm: snapshot v%d holds a raise record of v5", v)
				}
			}
		}
		if v < 4 {
			for _, l := range st.Leases {
				if l.State != "" || l.Version != 0 || l.EndReason != "" || l.ClientBoundMs != 0 || l.TimestampFloorMs != 0 {
					return st, fmt.Errorf("fsm: snapshot v%d holds lease fields of v4", v)
				}
			}
			st.deriveLeaseStates()
			for i := range st.Audit {
				if st.Audit[i].Kind == AuditLease {
					st.Audit[i].LegacyClock = true
				}
			}
		}
		return st, nil
	default:
		return st, fmt.Errorf("fsm: snapshot format version %d is newer than this binary knows (%d)", v, SnapshotVersion)
	}
}

// upgrade derives the v3 fields of an older snapshot: the token floor is the
// largest token it holds (tokens were log indices then, so no grant after it
// can have had a smaller one), and audit records are numbered in their order.
func (st *snapshotState) upgrade() {
	for _, l := range st.Leases {
		st.TokenFloor = max(st.TokenFloor, l.Token)
	}
	for i := range st.Audit {
		st.TokenFloor = max(st.TokenFloor, st.Audit[i].Token)
		st.Audit[i].Seq = uint64(i + 1)
	}
	st.AuditSeq = uint64(len(st.Audit))
}

// deriveLeaseStates gives the leases of a pre-v4 snapshot the state the
// legacy rules give them at the snapshot's lease clock: held while active,
// ended while resting, free after. Their versions are the snapshot's index,
// so the leader's timers start afresh from when it first serves them.
func (st *snapshotState) deriveLeaseStates() {
	recycle := map[string]int64{}
	for _, n := range st.Namespaces {
		recycle[n.Name] = n.RecycleDelayMs
	}
	for i := range st.Leases {
		l := &st.Leases[i]
		l.Version = st.LastIndex
		switch {
		case l.Active(st.ClockMs):
			l.State = LeaseHeld
		case st.ClockMs < l.EndMs()+recycle[l.Namespace]:
			l.State, l.EndReason = LeaseEnded, legacyEndReason(*l)
		default:
			l.State, l.EndReason = LeaseFree, legacyEndReason(*l)
		}
	}
}

func legacyEndReason(l Lease) string {
	if l.ReleasedMs != 0 && l.ReleasedMs < l.ExpiresMs {
		return "released"
	}
	return "expired"
}
