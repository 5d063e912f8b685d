package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Backup and restore. A backup is a snapshot in the format Persist writes.
// Restoring an old backup as it is would hand out again every ID issued
// since it was taken, so restore lifts every high-water mark by an amount the
// operator must choose, and seeds only an empty cluster. Both rules are
// decided where the restore applies, in the log (CommandRestoreBackup), so
// nothing can slip in between a check and the act.

var (
	// ErrBackupInvalid: the bytes are not a backup this version can read,
	// or they break a rule of the state.
	ErrBackupInvalid = errors.New("invalid backup")
	// ErrClusterNotEmpty: restore seeds a new cluster only: one with no
	// sequences, namespaces or leases.
	ErrClusterNotEmpty = errors.New("cluster is not empty")
)

// Backup writes the current state as a backup: a snapshot without the
// cluster's feature level (a restore seeds data, not the level of the
// cluster it came from), in the oldest format that carries it, so that a
// cluster of an older release can restore it when its data allows.
func (f *FSM) Backup(w io.Writer) error {
	f.mu.RLock()
	st := f.stateLocked()
	f.mu.RUnlock()
	st.clusterOnlyDropped()
	return writeSnapshot(w, st)
}

// ReencodeBackup rewrites a valid backup in the oldest format that carries
// its data, without any feature level it holds: the leader proposes a
// restore of it so that every member that can read the data can apply it
// (RequiredLevel then asks only for the level its data needs).
func ReencodeBackup(backup []byte) ([]byte, error) {
	st, err := readSnapshot(bytes.NewReader(backup))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBackupInvalid, err)
	}
	st.clusterOnlyDropped()
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, st); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// clusterOnlyDropped leaves out what belongs to the cluster rather than its
// data: the feature level, the standby, promotions, a fence and a
// promotion's rests.
func (st *snapshotState) clusterOnlyDropped() {
	st.FeatureLevel = 0
	st.Standby, st.Promotions, st.Fence, st.PromotionRests = nil, nil, nil, nil
}

// RestoreBackup is the body of CommandRestoreBackup. The leader stamps it
// with its clock; everything else is decided when it applies.
type RestoreBackup struct {
	Backup  []byte `json:"backup"`
	Advance int64  `json:"advance"`
	Stamp
}

// RestoreResult is the result of an applied CommandRestoreBackup.
type RestoreResult struct {
	Sequences  int
	Namespaces int
	// Exhausted lists the sequences whose lifted mark reached their max:
	// they can hand out nothing more.
	Exhausted []string
}

// ValidateBackup reads a backup and checks it against every rule the state
// machine applies to it, so that the leader can refuse a bad one (400)
// before proposing anything.
func ValidateBackup(backup []byte, advance int64) error {
	_, err := readBackup(backup, advance)
	return err
}

func readBackup(backup []byte, advance int64) (snapshotState, error) {
	if advance < 1 {
		return snapshotState{}, fmt.Errorf("%w: advance must be at least 1, got %d", ErrInvalidCommand, advance)
	}
	st, err := readSnapshot(bytes.NewReader(backup))
	if err != nil {
		return st, fmt.Errorf("%w: %v", ErrBackupInvalid, err)
	}
	if err := st.validate(); err != nil {
		return st, fmt.Errorf("%w: %v", ErrBackupInvalid, err)
	}
	return st, nil
}

// empty reports whether the state holds nothing a restore could overwrite:
// no sequence, no namespace (and so no lease). Member metadata is the
// cluster's own and survives a restore. f.mu is held.
func (f *FSM) empty() bool { return len(f.sequences) == 0 && len(f.namespaces) == 0 }

// applyRestore seeds the state from a backup, if the state is empty at this
// point of the log:
//   - every high-water mark is lifted by Advance (stopping at the
//     sequence's max: exhausted, never wrapped), the operator's bound on the
//     IDs issued after the backup was taken;
//   - every lease of the backup that is not free ends at the restore
//     (state ended), so its worker id rests a full recycle delay, timed by
//     the leader from when it serves the restored state, before anyone gets
//     it (the legacy stamps say held until the restore, as before); every
//     lease, free or not, takes the restore entry's index as its version;
//   - the token floor carries over, so fencing tokens keep growing;
//   - the backup's audit records are renumbered after this FSM's.
func (f *FSM) applyRestore(c RestoreBackup, index uint64) any {
	now := f.tick(c.Stamp)
	st, err := readBackup(c.Backup, c.Advance)
	if err != nil {
		return err
	}
	if !f.empty() && !f.faults.restoreSkipEmptyCheck() {
		return fmt.Errorf("%w: it has %d sequences and %d namespaces; restore seeds a new, empty cluster", ErrClusterNotEmpty, len(f.sequences), len(f.namespaces))
	}
	res := RestoreResult{Sequences: len(st.Sequences), Namespaces: len(st.Namespaces)}
	for i := range st.Sequences {
		s := &st.Sequences[i]
		if c.Advance >= s.Remaining() {
			s.Issued = s.Max
			res.Exhausted = append(res.Exhausted, s.Name)
		} else {
			s.Issued += c.Advance
		}
	}
	for i := range st.Leases {
		l := &st.Leases[i]
		l.ExpiresMs, l.ReleasedMs = max(l.ExpiresMs, now), 0
		// Every version becomes this entry's index, a free lease's too:
		// the backup's are the old cluster's indices, and a free one's
		// would go into the next grant's audit record as the index that
		// freed the worker id, above the grant's own (a false violation
		// of the probe).
		l.Version = index
		if l.State != LeaseFree {
			l.State, l.EndReason = LeaseEnded, "restored"
		}
	}
	f.install(st)
	for _, r := range st.Audit {
		f.audit(r) // renumbers
	}
	f.linkGrantSeqs()
	f.clockMs = max(f.clockMs, st.ClockMs)
	f.tokenFloor = max(f.tokenFloor, st.TokenFloor)
	// Every restored lease is a lease change: the leader's lessor rescans
	// and starts their recycle timers from this entry alone, whoever asked
	// for the restore and whether or not they still wait for its answer.
	f.leaseChanges++
	return res
}
