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
// operator must choose (see PrepareRestore), and seeds only an empty cluster.

var (
	// ErrBackupInvalid: the bytes are not a backup this version can read.
	ErrBackupInvalid = errors.New("invalid backup")
	// ErrClusterNotEmpty: restore seeds a new cluster only.
	ErrClusterNotEmpty = errors.New("cluster already has sequences")
)

// Backup writes the current state as a backup.
func (f *FSM) Backup(w io.Writer) error {
	f.mu.RLock()
	st := f.stateLocked()
	f.mu.RUnlock()
	return writeSnapshot(w, st)
}

// RestoreReport says what PrepareRestore did.
type RestoreReport struct {
	Sequences int
	// Exhausted lists the sequences whose lifted mark reached their max:
	// they can hand out nothing more.
	Exhausted []string
}

// PrepareRestore turns a backup into the snapshot a new cluster starts from:
// the backup's sequences with every high-water mark lifted by advance
// (stopping at the sequence's max, never wrapping), and the given members
// (the new cluster's own, not the old one's). advance must be positive: it is
// the operator's bound on how many IDs any sequence handed out after the
// backup was taken.
//
// Worker-id leases of the backup are treated as held until nowMs (the
// restoring leader's clock): a generator that renewed with the old cluster
// after the backup was taken keeps its worker id to itself until its lease
// has run out and the recycle delay has passed.
func PrepareRestore(backup []byte, advance int64, members []Member, nowMs int64) ([]byte, RestoreReport, error) {
	var rep RestoreReport
	if advance < 1 {
		return nil, rep, fmt.Errorf("%w: advance must be at least 1, got %d", ErrInvalidCommand, advance)
	}
	st, err := readSnapshot(bytes.NewReader(backup))
	if err != nil {
		return nil, rep, fmt.Errorf("%w: %v", ErrBackupInvalid, err)
	}
	seen := map[string]bool{}
	for i := range st.Sequences {
		s := &st.Sequences[i]
		if err := s.validate(); err != nil {
			return nil, rep, fmt.Errorf("%w: %v", ErrBackupInvalid, err)
		}
		if seen[s.Name] {
			return nil, rep, fmt.Errorf("%w: sequence %q appears twice", ErrBackupInvalid, s.Name)
		}
		seen[s.Name] = true
		if advance >= s.Remaining() {
			s.Issued = s.Max
			rep.Exhausted = append(rep.Exhausted, s.Name)
		} else {
			s.Issued += advance
		}
	}
	rep.Sequences = len(st.Sequences)
	for i := range st.Leases {
		l := &st.Leases[i]
		l.ExpiresMs, l.ReleasedMs = max(l.ExpiresMs, nowMs), 0
	}
	st.ClockMs = max(st.ClockMs, nowMs)
	st.Members = members
	st.LastIndex, st.LastTerm = 0, 0 // raft assigns the restore its own index
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, st); err != nil {
		return nil, rep, err
	}
	return buf.Bytes(), rep, nil
}
