package fsm_test

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/fsm"
)

// The wire package (api) checks names and bounds so that a bad request is a
// 400 before anything is proposed; the FSM checks them again when it applies
// the entry, with rules of its own that are frozen with the log format. If the
// wire ever accepted what the FSM refuses, a request would be proposed and
// then refused; worse, a wire rule copied into Apply and later tightened
// would make two binaries apply one log differently. These tests hold the
// wire to never accepting what Apply refuses, through Apply itself.

// wireAccepts is what httpapi checks before it proposes a create. Every
// other request checks ValidateSequenceName, looser (it accepts "." and "..",
// which earlier releases created), so that one is held to Apply's rule too.
func wireAccepts(name string, start, max int64) bool {
	if api.ValidateNewSequenceName(name) == nil && api.ValidateSequenceName(name) != nil {
		panic("api's creation rule accepts " + name + ", which its lookup rule refuses")
	}
	return api.ValidateSequenceName(name) == nil && api.ValidateBounds(start, max) == nil
}

// applyAccepts applies a sequence create and a namespace create carrying
// name (and the bounds) to a fresh FSM and reports whether either was
// refused as an invalid command, and why.
func applyAccepts(t testing.TB, name string, start, max int64) error {
	a := leaseApplier{newApplier(t)}
	if err, ok := a.create(testNamespace(name), t0).(error); ok && errors.Is(err, fsm.ErrInvalidCommand) {
		return err
	}
	if err, ok := a.applier.create(name, start, max).(error); ok && errors.Is(err, fsm.ErrInvalidCommand) {
		return err
	}
	return nil
}

func checkWireImpliesApply(t testing.TB, name string, start, max int64) {
	t.Helper()
	if !wireAccepts(name, start, max) {
		return
	}
	if err := applyAccepts(t, name, start, max); err != nil {
		t.Fatalf("the wire accepts name %q, start %d, max %d, but Apply refuses it: %v", name, start, max, err)
	}
}

func TestWireRulesImplyFSMRules(t *testing.T) {
	// Edges first: lengths around the limit, every byte value, the bounds'
	// corners.
	alphabet := "abcxyzABCXYZ0189._-"
	names := []string{"a", ".", "..", "-", "_", strings.Repeat("a", api.MaxSequenceNameLen), strings.Repeat("z", api.MaxSequenceNameLen-1)}
	for b := 0; b < 256; b++ {
		names = append(names, "x"+string(rune(b)), string([]byte{byte(b)}))
	}
	bounds := [][2]int64{{1, 1}, {1, math.MaxInt64}, {math.MaxInt64, math.MaxInt64}, {0, 1}, {-1, 5}, {5, 4}, {2, 3}}
	accepted := 0
	for _, n := range names {
		for _, b := range bounds {
			if wireAccepts(n, b[0], b[1]) {
				accepted++
			}
			checkWireImpliesApply(t, n, b[0], b[1])
		}
	}
	// Then random names, mostly from the allowed alphabet so that many are
	// accepted, with the odd byte from anywhere.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		var sb strings.Builder
		for k := rng.IntN(api.MaxSequenceNameLen + 3); k >= 0; k-- {
			if rng.IntN(20) == 0 {
				sb.WriteByte(byte(rng.IntN(256)))
			} else {
				sb.WriteByte(alphabet[rng.IntN(len(alphabet))])
			}
		}
		start := rng.Int64N(1 << 40)
		max := start + rng.Int64N(1<<40) - 8
		if wireAccepts(sb.String(), start, max) {
			accepted++
		}
		checkWireImpliesApply(t, sb.String(), start, max)
	}
	// A test whose inputs the wire all refused would prove nothing.
	if accepted < 1000 {
		t.Fatalf("only %d generated inputs passed the wire checks; the test is not exercising Apply", accepted)
	}
}

func FuzzWireRulesImplyFSMRules(f *testing.F) {
	f.Add("orders", int64(1), int64(math.MaxInt64))
	f.Add("a.b-c_D9", int64(7), int64(7))
	f.Add("..", int64(1), int64(2))
	f.Fuzz(func(t *testing.T, name string, start, max int64) {
		checkWireImpliesApply(t, name, start, max)
	})
}

// Sequences and namespaces named "." or ".." are refused at creation by api
// (dot segments, which URLs and proxies resolve away) but not by Apply: its
// rule is frozen with the command format, and logs, snapshots and backups of
// earlier releases hold such names. They must keep applying and keep
// working.
func TestFSMRules_DotNames_RefusedByTheWire_StillAppliedFromLogsSnapshotsBackups(t *testing.T) {
	for _, name := range []string{".", ".."} {
		if err := api.ValidateNewSequenceName(name); err == nil || !strings.Contains(err.Error(), "dot segment") {
			t.Errorf("api.ValidateNewSequenceName(%q) = %v; want the dot-segment refusal", name, err)
		}
		if err := api.ValidateSequenceName(name); err != nil {
			t.Errorf("api.ValidateSequenceName(%q) = %v; an existing sequence of that name must stay reachable", name, err)
		}
	}
	for _, name := range []string{"...", "a.b", ".x", "x.", "._"} {
		if err := api.ValidateNewSequenceName(name); err != nil {
			t.Errorf("api.ValidateNewSequenceName(%q) = %v; only \".\" and \"..\" are dot segments", name, err)
		}
	}

	a := leaseApplier{newApplier(t)}
	a.mustCreate(".", 1, math.MaxInt64)
	a.mustCreate("..", 100, math.MaxInt64)
	if res, bad := a.create(testNamespace("."), t0).(error); bad {
		t.Fatalf("create namespace \".\": %v", res)
	}
	a.mustAcquire(".", "h1", t0)
	if b := a.mustReserve(".", 10, 1); b.First != 1 || b.Last != 10 {
		t.Fatalf("first block of \".\" = %+v, want 1..10", b)
	}
	a.mustRaise("..", 1000)
	if b := a.mustReserve("..", 5, 1); b.First != 1001 {
		t.Fatalf("block of \"..\" after a raise to 1000 = %+v, want it to start at 1001", b)
	}

	// Snapshot and restore: the same state.
	g := restore(t, persist(t, a.f))
	for _, name := range []string{".", ".."} {
		if got, want := mustSeq(t, g, name), a.seq(name); got != want {
			t.Errorf("after snapshot and restore, %q = %+v, want %+v", name, got, want)
		}
	}
	// A backup restored into an empty cluster: the marks lifted, still
	// reserving.
	var backup bytes.Buffer
	if err := a.f.Backup(&backup); err != nil {
		t.Fatal(err)
	}
	b := newApplier(t)
	if res, bad := b.restoreBackup(backup.Bytes(), 50, t0).(error); bad {
		t.Fatalf("restore of a backup holding dot names: %v", res)
	}
	if blk := b.mustReserve(".", 1, 1); blk.First <= 10 {
		t.Fatalf("\".\" after restore handed out %+v, at or below its old mark 10", blk)
	}
	if _, ok := b.f.Namespace("."); !ok {
		t.Fatalf("namespace \".\" lost in backup and restore")
	}
}

func mustSeq(t *testing.T, f *fsm.FSM, name string) fsm.Sequence {
	t.Helper()
	s, ok := f.Sequence(name)
	if !ok {
		t.Fatalf("sequence %q does not exist", name)
	}
	return s
}

// The numbers the FSM decides by are its own; api mirrors them for the
// wire. They must agree (issue 48: fsm imported api for them).
func TestWireMirrors_AgreeWithTheFSMsOwnNumbers(t *testing.T) {
	if api.BaseFeatureLevel != int(fsm.LevelBase) {
		t.Errorf("api.BaseFeatureLevel %d, fsm.LevelBase %d", api.BaseFeatureLevel, fsm.LevelBase)
	}
	if api.MaxReserveCount != fsm.DefaultStandbyBound || api.DefaultStandbyBound != fsm.DefaultStandbyBound {
		t.Errorf("api.MaxReserveCount %d, api.DefaultStandbyBound %d, fsm.DefaultStandbyBound %d", api.MaxReserveCount, api.DefaultStandbyBound, fsm.DefaultStandbyBound)
	}
	d := fsm.LevelInfo(fsm.CurrentLevel)
	if got := api.FeatureLevel(d); got.Level != d.Level || got.MaxEntryType != d.MaxEntryType || got.SnapshotFormat != d.SnapshotFormat {
		t.Errorf("api.FeatureLevel(%+v) = %+v", d, got)
	}
}
