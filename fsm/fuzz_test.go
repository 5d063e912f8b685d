package fsm_test

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/ticketd/ticketd/fsm"
)

// FuzzRestoreBackup feeds arbitrary bytes as a backup. Whatever the leader's
// check (ValidateBackup) accepts must apply as a restore entry on an empty
// state, and the state it leaves must survive a snapshot and its restore:
// raft panics when the FSM refuses a snapshot, so a backup that passed the
// check but left a state the FSM cannot restore would take a node down at
// its next restart. Nothing here may panic.
func FuzzRestoreBackup(f *testing.F) {
	for _, fx := range []string{fixtureV1, fixtureV2, fixtureV3} {
		if b, err := os.ReadFile(fx); err == nil {
			f.Add(b, int64(1000))
		}
	}
	f.Add([]byte("TKTDSNAP\x00\x00\x00\x03{}"), int64(1))
	f.Add([]byte("garbage"), int64(5))
	f.Fuzz(func(t *testing.T, backup []byte, advance int64) {
		if err := fsm.ValidateBackup(backup, advance); err != nil {
			a := newApplier(t)
			if _, ok := a.restoreBackup(backup, advance, t0).(error); !ok {
				t.Fatalf("the FSM applied a backup the leader refuses: %v", err)
			}
			return
		}
		a := newApplier(t)
		if _, ok := a.restoreBackup(backup, advance, t0).(fsm.RestoreResult); !ok {
			t.Fatalf("a backup that passed ValidateBackup was refused at apply: %v", a.restoreBackup(backup, advance, t0))
		}
		snap := persist(t, a.f)
		r := fsm.New()
		if err := r.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
			t.Fatalf("the restored state's snapshot does not restore: %v", err)
		}
		if !bytes.Equal(persist(t, r), snap) {
			t.Fatal("snapshot → restore → snapshot changed the bytes")
		}
	})
}
