package fsm_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/ticketd/ticketd/fsm"
)

func TestPrepareRestore_LiftsMarksNeverWraps(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("orders", 1, math.MaxInt64)
	a.mustCreate("small", 1, 100)
	a.mustCreate("top", math.MaxInt64-10, math.MaxInt64)
	a.apply(fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "orders", Count: 500, Min: 1}))
	a.apply(fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "small", Count: 40, Min: 1}))
	var backup bytes.Buffer
	if err := a.f.Backup(&backup); err != nil {
		t.Fatal(err)
	}
	members := []fsm.Member{{ID: "x1", RaftAddr: "h:1", HTTPAddr: "h:2"}}
	snap, rep, err := fsm.PrepareRestore(backup.Bytes(), 1000, members, 0)
	if err != nil {
		t.Fatal(err)
	}
	restored := restore(t, snap)
	check := func(name string, issued int64) {
		t.Helper()
		s, ok := restored.Sequence(name)
		if !ok || s.Issued != issued {
			t.Fatalf("%s restored as %+v, want issued %d", name, s, issued)
		}
	}
	check("orders", 1500)
	check("small", 100) // lifted to its max: exhausted, never wrapped
	check("top", math.MaxInt64)
	if len(rep.Exhausted) != 2 || rep.Sequences != 3 {
		t.Fatalf("report %+v", rep)
	}
	if got := restored.Members(); len(got) != 1 || got[0].ID != "x1" {
		t.Fatalf("members %+v, want the new cluster's", got)
	}
}

func TestPrepareRestore_RejectsBadInput(t *testing.T) {
	if _, _, err := fsm.PrepareRestore([]byte("garbage"), 10, nil, 0); !errors.Is(err, fsm.ErrBackupInvalid) {
		t.Fatalf("garbage: %v", err)
	}
	var backup bytes.Buffer
	if err := fsm.New().Backup(&backup); err != nil {
		t.Fatal(err)
	}
	for _, adv := range []int64{0, -1} {
		if _, _, err := fsm.PrepareRestore(backup.Bytes(), adv, nil, 0); !errors.Is(err, fsm.ErrInvalidCommand) {
			t.Fatalf("advance %d: %v", adv, err)
		}
	}
}
