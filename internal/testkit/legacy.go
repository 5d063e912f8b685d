package testkit

import (
	"bytes"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/fsm"
)

// LegacyDotNamesBackup is a backup holding sequences "." (start 1) and ".."
// (start 100) and namespace ".", made by the state machine from create
// entries as a cluster of an earlier release wrote them into its log. The
// API refuses to create such names since issue 30; the FSM's frozen rule
// still applies them, and restoring this backup is how a test gets them.
func LegacyDotNamesBackup(t testing.TB) []byte {
	t.Helper()
	f := fsm.New()
	ns := fsm.Namespace{
		Name: ".", EpochMs: api.DefaultEpochMs, TimestampBits: api.DefaultTimestampBits, WorkerBits: api.DefaultWorkerBits,
		SequenceBits: api.DefaultSequenceBits, TickMs: api.DefaultTickMs, MaxWorkers: 1 << api.DefaultWorkerBits,
		LeaseTTLMs: api.DefaultLeaseTTLMs, RecycleDelayMs: api.DefaultRecycleDelayMs,
	}
	entries := [][]byte{
		fsm.EncodeCreateSequence(fsm.CreateSequence{Name: ".", Start: 1, Max: api.DefaultMax}),
		fsm.EncodeCreateSequence(fsm.CreateSequence{Name: "..", Start: 100, Max: api.DefaultMax}),
		fsm.EncodeCreateNamespace(fsm.CreateNamespace{Namespace: ns, Stamp: fsm.Stamp{NowMs: time.Now().UnixMilli(), Leader: "old"}}),
	}
	for i, e := range entries {
		if res, bad := f.Apply(&raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: e}).(error); bad {
			t.Fatalf("entry %d: the FSM refused a dot name it must keep applying: %v", i+1, res)
		}
	}
	var buf bytes.Buffer
	if err := f.Backup(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
