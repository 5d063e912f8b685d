package fsm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/fsm"
)

var update = flag.Bool("update", false, "rewrite fsm/testdata fixtures of the current snapshot format")

const fixtureV1 = "testdata/snapshot-v1.bin"

// fixtureV1State is the state stored in testdata/snapshot-v1.bin: a sequence
// in use up to MaxInt64, an exhausted one, an untouched one, and two members.
var fixtureV1State = state{
	Sequences: []fsm.Sequence{
		{Name: "invoices.2024", Start: 1000, Max: 1004, Issued: 1004}, // exhausted
		{Name: "orders", Start: 1, Max: math.MaxInt64, Issued: 150},
		{Name: "untouched", Start: 42, Max: 99, Issued: 41},
	},
	Members: []fsm.Member{
		{ID: "node-1", RaftAddr: "10.0.0.1:7000", HTTPAddr: "10.0.0.1:8080"},
		{ID: "node-2", RaftAddr: "10.0.0.2:7000", HTTPAddr: "10.0.0.2:8080"},
	},
	Index: 12,
	Term:  3,
}

// fixtureV1Log builds fixtureV1State through Apply, as a cluster would have.
func fixtureV1Log(t testing.TB) *fsm.FSM {
	t.Helper()
	a := newApplier(t)
	a.mustCreate("orders", 1, math.MaxInt64)                                                                        // 1
	a.mustCreate("invoices.2024", 1000, 1004)                                                                       // 2
	a.apply(fsm.EncodeSetMember(fsm.SetMember{ID: "node-1", RaftAddr: "10.0.0.1:7000", HTTPAddr: "10.0.0.1:8080"})) // 3
	a.mustReserve("orders", 100, 1)                                                                                 // 4
	a.term = 2
	a.apply(fsm.EncodeSetMember(fsm.SetMember{ID: "node-3", RaftAddr: "10.0.0.3:7000"}))                            // 5
	a.apply(fsm.EncodeSetMember(fsm.SetMember{ID: "node-2", RaftAddr: "10.0.0.2:7000", HTTPAddr: "10.0.0.2:8080"})) // 6
	a.mustReserve("invoices.2024", 3, 1)                                                                            // 7
	a.mustReserve("orders", 50, 1)                                                                                  // 8
	a.mustReserve("invoices.2024", 10, 1)                                                                           // 9: the 2 left
	a.term = 3
	a.apply(fsm.EncodeRemoveMember(fsm.RemoveMember{ID: "node-3"}))        // 10
	a.mustCreate("untouched", 42, 99)                                      // 11
	wantErr(t, a.reserve("invoices.2024", 1, 1), fsm.ErrSequenceExhausted) // 12
	return a.f
}

// TestSnapshotFixtureV1_StillRestores reads the snapshot format v1 as shipped.
// Never regenerate it to make this test pass: a snapshot on a user's disk does
// not change when the code does. A new format gets a new fixture
// (snapshot-v2.bin) and a new test; this one stays.
func TestSnapshotFixtureV1_StillRestores(t *testing.T) {
	if *update {
		writeFixtureV1(t)
	}
	b, err := os.ReadFile(fixtureV1)
	if err != nil {
		t.Fatalf("read fixture (generate it once with go test ./fsm/ -run TestSnapshotFixtureV1 -update): %v", err)
	}
	r := &trackingReader{Reader: bytes.NewReader(b)}
	f := fsm.New()
	if err := f.Restore(r); err != nil {
		t.Fatalf("Restore(%s): %v", fixtureV1, err)
	}
	if !r.closed {
		t.Errorf("Restore did not close its reader")
	}
	assertSameState(t, fixtureV1, stateOf(f), fixtureV1State)

	inv, _ := f.Sequence("invoices.2024")
	if _, ok := inv.Next(); ok || inv.Remaining() != 0 {
		t.Errorf("restored exhausted sequence: Next ok=%v Remaining=%d; want false, 0", ok, inv.Remaining())
	}
	// The restored FSM carries on where the snapshot left off.
	resp := f.Apply(logEntry(13, 3, fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "orders", Count: 10, Min: 1})))
	if b, ok := resp.(fsm.Block); !ok || b.First != 151 || b.Last != 160 {
		t.Fatalf("reserve after restoring the fixture: %#v, want orders [151, 160]", resp)
	}
	wantErr(t, f.Apply(logEntry(14, 3, fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "invoices.2024", Count: 1, Min: 1}))), fsm.ErrSequenceExhausted)
}

// While the current format is still v1, Persist must write the fixture's bytes
// exactly: a change to them without a version bump would leave old binaries
// misreading new snapshots.
func TestSnapshotPersist_V1BytesMatchFixture(t *testing.T) {
	if fsm.SnapshotVersion != 1 {
		t.Skipf("current format is v%d; the v1 fixture only has to stay readable", fsm.SnapshotVersion)
	}
	want, err := os.ReadFile(fixtureV1)
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	if got := persist(t, fixtureV1Log(t)); !bytes.Equal(got, want) {
		t.Fatalf("Persist wrote\n%q\nthe v1 fixture holds\n%q\nbump SnapshotVersion and add a fixture for the new format", got, want)
	}
}

func writeFixtureV1(t *testing.T) {
	t.Helper()
	if fsm.SnapshotVersion != 1 {
		t.Fatalf("refusing to overwrite %s with a v%d snapshot: add a new fixture for the new format", fixtureV1, fsm.SnapshotVersion)
	}
	f := fixtureV1Log(t)
	assertSameState(t, "fixture source", stateOf(f), fixtureV1State)
	if err := os.MkdirAll(filepath.Dir(fixtureV1), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fixtureV1, persist(t, f), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", fixtureV1)
}

// Persist writes the oldest format that carries the state: v4 for what a
// level-1 binary knows (so an older follower can install it), v6 once the
// cluster's level is recorded.
func TestSnapshotPersist_WritesMagicVersionAndClosesSink(t *testing.T) {
	f := fixtureV1Log(t)
	b := persist(t, f) // persist checks Close, not Cancel
	if len(b) < 12 || string(b[:8]) != "TKTDSNAP" {
		t.Fatalf("snapshot starts %q, want magic TKTDSNAP", b[:min(len(b), 12)])
	}
	if v := binary.BigEndian.Uint32(b[8:12]); v != 4 {
		t.Fatalf("header version %d, want 4 (the oldest that carries a level-1 state)", v)
	}
	idx, _ := f.LastApplied()
	if resp := f.Apply(logEntry(idx+1, 1, fsm.EncodeSetFeatureLevel(fsm.SetFeatureLevel{Level: fsm.CurrentLevel}))); resp != nil {
		t.Fatalf("set level: %v", resp)
	}
	b = persist(t, f)
	// Format 6 is the oldest that carries a level; 7 adds only the
	// standby's fields, which this state does not hold.
	if v := binary.BigEndian.Uint32(b[8:12]); v != 6 {
		t.Fatalf("header version %d at level %d, want 6", v, fsm.CurrentLevel)
	}
	g := fsm.New()
	if err := g.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
		t.Fatal(err)
	}
	if g.ClusterLevel() != fsm.CurrentLevel {
		t.Fatalf("restored level %d, want %d", g.ClusterLevel(), fsm.CurrentLevel)
	}
}

func TestSnapshotPersist_SinkFails_CancelsAndReturnsError(t *testing.T) {
	snap, err := fixtureV1Log(t).Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	boom := errors.New("disk full")
	sink := &memSink{id: "x", failWrites: boom}
	if err := snap.Persist(sink); !errors.Is(err, boom) {
		t.Fatalf("Persist = %v, want an error wrapping %v", err, boom)
	}
	if !sink.cancelled || sink.closed {
		t.Fatalf("after a failed Persist: cancelled=%v closed=%v; want cancelled, not closed", sink.cancelled, sink.closed)
	}
}

// A snapshot is a copy: entries applied after Snapshot() and before Persist
// do not leak into it.
func TestSnapshot_IsPointInTime_ApplyAfterSnapshotNotPersisted(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("s", 1, 100)
	a.mustReserve("s", 10, 1)
	want := stateOf(a.f)
	snap, err := a.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	a.mustReserve("s", 10, 1)
	a.mustCreate("t", 1, 5)
	a.apply(fsm.EncodeSetMember(fsm.SetMember{ID: "n1"}))
	b := persistSnap(t, snap)
	snap.Release()
	assertSameState(t, "restored point-in-time snapshot", stateOf(restore(t, b)), want)
}

func TestSnapshotRestore_EmptyFSM_RoundTrips(t *testing.T) {
	got := stateOf(restore(t, persist(t, fsm.New())))
	if len(got.Sequences) != 0 || len(got.Members) != 0 || got.Index != 0 || got.Term != 0 {
		t.Fatalf("restored empty FSM: %+v", got)
	}
}

// Restore replaces the state; it does not merge into it.
func TestSnapshotRestore_ReplacesExistingStateNotMerges(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("only-here", 1, 10)
	a.apply(fsm.EncodeSetMember(fsm.SetMember{ID: "only-here"}))
	b, err := os.ReadFile(fixtureV1)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.f.Restore(nopCloser(b)); err != nil {
		t.Fatal(err)
	}
	assertSameState(t, "restore over existing state", stateOf(a.f), fixtureV1State)
}

func TestSnapshotRestore_RejectsCorruptSnapshots_StateUnchanged(t *testing.T) {
	const goodBody = `{"last_index":7,"last_term":2,"sequences":[{"name":"s","start":10,"max":20,"issued":15}],"members":[]}`
	seqBody := func(start, max, issued int64) string {
		return `{"last_index":7,"last_term":2,"sequences":[{"name":"ok","start":1,"max":5,"issued":0},` +
			`{"name":"s","start":` + itoa(start) + `,"max":` + itoa(max) + `,"issued":` + itoa(issued) + `}],"members":[]}`
	}
	for _, tc := range []struct {
		name    string
		data    []byte
		errText string
	}{
		{"empty", nil, "header"},
		{"truncated header", []byte("TKTDSN"), "header"},
		{"bad magic", rawSnapshot("NOTTICKT", 1, goodBody), "not a ticketd snapshot"},
		{"magic of another case", rawSnapshot("tktdsnap", 1, goodBody), "not a ticketd snapshot"},
		{"newer version 9", rawSnapshot("TKTDSNAP", 9, goodBody), "version 9"},
		{"version MaxUint32", rawSnapshot("TKTDSNAP", math.MaxUint32, goodBody), "version 4294967295"},
		{"version 0", rawSnapshot("TKTDSNAP", 0, goodBody), "version 0"},
		{"little-endian version 1", append([]byte("TKTDSNAP\x01\x00\x00\x00"), goodBody...), "version 16777216"},
		{"body missing", rawSnapshot("TKTDSNAP", 1, ""), "decode"},
		{"body truncated", rawSnapshot("TKTDSNAP", 1, goodBody[:len(goodBody)/2]), "decode"},
		{"unknown field", rawSnapshot("TKTDSNAP", 1, `{"last_index":1,"surprise":true}`), "decode"},
		{"mark below start-1", rawSnapshot("TKTDSNAP", 1, seqBody(10, 20, 8)), "high-water mark 8 outside [9, 20]"},
		{"mark above max", rawSnapshot("TKTDSNAP", 1, seqBody(10, 20, 21)), "high-water mark 21 outside [9, 20]"},
		{"mark far negative", rawSnapshot("TKTDSNAP", 1, seqBody(10, 20, math.MinInt64)), "high-water mark"},
		{"max below start", rawSnapshot("TKTDSNAP", 1, seqBody(10, 9, 9)), "max (9) must be at least start (10)"},
		{"start zero", rawSnapshot("TKTDSNAP", 1, seqBody(0, 9, 0)), "start must be at least 1"},
		{"invalid name", rawSnapshot("TKTDSNAP", 1, `{"sequences":[{"name":"a b","start":1,"max":2,"issued":0}]}`), "sequence name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fixtureV1Log(t)
			r := &trackingReader{Reader: bytes.NewReader(tc.data)}
			err := f.Restore(r)
			if err == nil {
				t.Fatalf("Restore accepted a corrupt snapshot")
			}
			if !strings.Contains(err.Error(), tc.errText) {
				t.Errorf("Restore error %q should mention %q", err, tc.errText)
			}
			if !r.closed {
				t.Errorf("Restore did not close its reader on error")
			}
			assertSameState(t, "after a rejected Restore", stateOf(f), fixtureV1State)
		})
	}
}

// The bounds of the mark are inclusive: Start-1 (nothing issued) and Max
// (exhausted) are both valid.
func TestSnapshotRestore_MarkAtBoundsAccepted(t *testing.T) {
	body := `{"last_index":3,"last_term":1,"sequences":[` +
		`{"name":"fresh","start":10,"max":20,"issued":9},` +
		`{"name":"done","start":10,"max":20,"issued":20},` +
		`{"name":"top","start":1,"max":9223372036854775807,"issued":9223372036854775807}],"members":null}`
	f := restore(t, rawSnapshot("TKTDSNAP", 1, body))
	want := []fsm.Sequence{
		{Name: "done", Start: 10, Max: 20, Issued: 20},
		{Name: "fresh", Start: 10, Max: 20, Issued: 9},
		{Name: "top", Start: 1, Max: math.MaxInt64, Issued: math.MaxInt64},
	}
	got := f.Sequences()
	if len(got) != len(want) {
		t.Fatalf("Sequences() = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Sequences() = %+v, want %+v", got, want)
		}
	}
	wantErr(t, f.Apply(logEntry(4, 1, fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "top", Count: 1, Min: 1}))), fsm.ErrSequenceExhausted)
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func nopCloser(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

// fixtureBytes returns the snapshot fixture at path, of format version;
// with -update, while this binary writes that format, it first writes it
// from state.
func fixtureBytes(t *testing.T, path string, version uint32, state func(*testing.T) *fsm.FSM) []byte {
	t.Helper()
	if *update {
		if fsm.SnapshotVersion != version {
			t.Fatalf("refusing to overwrite %s with a v%d snapshot", path, fsm.SnapshotVersion)
		}
		if err := os.WriteFile(path, persist(t, state(t)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read fixture (generate it with go test ./fsm/ -run TestSnapshotFixtureV%d -update): %v", version, err)
	}
	if v := binary.BigEndian.Uint32(b[8:12]); v != version {
		t.Fatalf("fixture format %d, want %d", v, version)
	}
	return b
}
