package fsm_test

import (
	"bytes"
	"encoding/json"
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
	for _, fx := range []string{fixtureV1, fixtureV2, fixtureV3, fixtureV4} {
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

// FuzzLeaseOps applies arbitrary lease operations (each a CommandLease body
// that decodes as JSON; an entry that does not decode panics by design) to a
// state with a lease in every state. Apply must answer with a lease or an
// error value, never panic; the state it leaves must survive a snapshot and
// its restore; and the uniqueness probe must stay clean.
func FuzzLeaseOps(f *testing.F) {
	for _, seed := range []string{
		`{"op":"acquire","namespace":"users","holder":"h","client_time_ms":9223372036854775807}`,
		`{"op":"renew","namespace":"users","worker_id":1,"token":5,"client_time_ms":-4}`,
		`{"op":"expire","namespace":"users","worker_id":0,"token":4,"version":4}`,
		`{"op":"recycle","namespace":"users","worker_id":-1,"token":0}`,
		`{"op":"revoke","namespace":"users","worker_id":3}`,
		`{"op":"steal"}`,
	} {
		f.Add([]byte(seed), []byte(`{"op":"acquire","namespace":"users","holder":"x"}`))
	}
	f.Fuzz(func(t *testing.T, first, second []byte) {
		st := fixtureV4State(t)
		index, _ := st.LastApplied()
		for _, body := range [][]byte{first, second} {
			var op fsm.LeaseOp
			if json.Unmarshal(body, &op) != nil {
				continue
			}
			index++
			switch resp := st.Apply(logEntry(index, 1, append([]byte{byte(fsm.CommandLease)}, body...))).(type) {
			case fsm.Lease, error:
			default:
				t.Fatalf("%s: answer %T %v", body, resp, resp)
			}
		}
		snap := persist(t, st)
		r := fsm.New()
		if err := r.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
			t.Fatalf("the state after %q, %q does not restore: %v", first, second, err)
		}
		if rep := r.CheckAudit(); len(rep.Violations) != 0 {
			t.Fatalf("probe after %q, %q: %+v", first, second, rep.Violations)
		}
	})
}
