package fsm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/goleak"

	"github.com/ticketd/ticketd/fsm"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// memSink is an in-memory raft.SnapshotSink: Persist writes into buf, and the
// test reads the bytes back for Restore.
type memSink struct {
	buf       bytes.Buffer
	id        string
	closed    bool
	cancelled bool
	// failWrites makes every Write fail, to exercise Persist's error path.
	failWrites error
}

var _ raft.SnapshotSink = (*memSink)(nil)

func (s *memSink) Write(p []byte) (int, error) {
	if s.closed || s.cancelled {
		return 0, errors.New("memSink: write after close or cancel")
	}
	if s.failWrites != nil {
		return 0, s.failWrites
	}
	return s.buf.Write(p)
}

func (s *memSink) Close() error {
	if s.closed {
		return errors.New("memSink: closed twice")
	}
	s.closed = true
	return nil
}

func (s *memSink) ID() string { return s.id }

func (s *memSink) Cancel() error {
	s.cancelled = true
	return nil
}

// reset makes the sink reusable (benchmarks).
func (s *memSink) reset() {
	s.buf.Reset()
	s.closed, s.cancelled = false, false
}

// trackingReader is an io.ReadCloser that records whether Restore closed it.
type trackingReader struct {
	io.Reader
	closed bool
}

func (r *trackingReader) Close() error {
	r.closed = true
	return nil
}

// persist snapshots f and returns the bytes Persist wrote.
func persist(t testing.TB, f *fsm.FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	defer snap.Release()
	return persistSnap(t, snap)
}

func persistSnap(t testing.TB, snap raft.FSMSnapshot) []byte {
	t.Helper()
	sink := &memSink{id: "test"}
	if err := snap.Persist(sink); err != nil {
		t.Fatalf("Persist: %v", err)
	}
	if !sink.closed || sink.cancelled {
		t.Fatalf("Persist succeeded but sink closed=%v cancelled=%v; want closed and not cancelled", sink.closed, sink.cancelled)
	}
	return bytes.Clone(sink.buf.Bytes())
}

// restore returns a fresh FSM restored from b.
func restore(t testing.TB, b []byte) *fsm.FSM {
	t.Helper()
	f := fsm.New()
	if err := f.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	return f
}

// rawSnapshot builds snapshot bytes by hand: magic, big-endian version, body.
func rawSnapshot(magic string, version uint32, body string) []byte {
	var b []byte
	b = append(b, magic...)
	b = binary.BigEndian.AppendUint32(b, version)
	return append(b, body...)
}

// state is everything observable about an FSM.
type state struct {
	Sequences []fsm.Sequence
	Members   []fsm.Member
	Index     uint64
	Term      uint64
}

func stateOf(f *fsm.FSM) state {
	idx, term := f.LastApplied()
	return state{Sequences: f.Sequences(), Members: f.Members(), Index: idx, Term: term}
}

func assertSameState(t testing.TB, what string, got, want state) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: state differs\n got: %+v\nwant: %+v", what, got, want)
	}
}

// logEntry is a LogCommand entry at index/term carrying data.
func logEntry(index, term uint64, data []byte) *raft.Log {
	return &raft.Log{Index: index, Term: term, Type: raft.LogCommand, Data: data}
}

// applier feeds entries to an FSM with increasing indexes.
type applier struct {
	t     testing.TB
	f     *fsm.FSM
	index uint64
	term  uint64
}

func newApplier(t testing.TB) *applier {
	return &applier{t: t, f: fsm.New(), term: 1}
}

func (a *applier) apply(data []byte) any {
	a.index++
	return a.f.Apply(logEntry(a.index, a.term, data))
}

func (a *applier) create(name string, start, max int64) any {
	return a.apply(fsm.EncodeCreateSequence(fsm.CreateSequence{Name: name, Start: start, Max: max}))
}

func (a *applier) mustCreate(name string, start, max int64) fsm.CreateResult {
	a.t.Helper()
	r, ok := a.create(name, start, max).(fsm.CreateResult)
	if !ok || !r.Created {
		a.t.Fatalf("create %q [%d, %d]: got %#v, want a new sequence", name, start, max, r)
	}
	return r
}

func (a *applier) reserve(name string, count, min int64) any {
	return a.apply(fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: name, Count: count, Min: min}))
}

func (a *applier) mustReserve(name string, count, min int64) fsm.Block {
	a.t.Helper()
	resp := a.reserve(name, count, min)
	b, ok := resp.(fsm.Block)
	if !ok {
		a.t.Fatalf("reserve %q count=%d min=%d: got %#v, want a Block", name, count, min, resp)
	}
	return b
}

func (a *applier) seq(name string) fsm.Sequence {
	a.t.Helper()
	s, ok := a.f.Sequence(name)
	if !ok {
		a.t.Fatalf("sequence %q does not exist", name)
	}
	return s
}

// wantErr asserts that resp is an error value matching target.
func wantErr(t testing.TB, resp any, target error) {
	t.Helper()
	err, ok := resp.(error)
	if !ok {
		t.Fatalf("got response %#v (%T), want an error matching %v", resp, resp, target)
	}
	if !errors.Is(err, target) {
		t.Fatalf("got error %q, want one matching %q", err, target)
	}
	for _, other := range []error{fsm.ErrSequenceNotFound, fsm.ErrSequenceExhausted, fsm.ErrSequenceConflict, fsm.ErrInvalidCommand} {
		if other != target && errors.Is(err, other) {
			t.Fatalf("error %q matches %q as well as %q", err, other, target)
		}
	}
}

// mustPanic runs fn and returns what it panicked with, failing if it did not.
func mustPanic(t testing.TB, fn func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatalf("did not panic")
		}
		msg = fmt.Sprint(r)
	}()
	fn()
	return ""
}

// assertUnlocked fails if a read of f blocks, i.e. a panicking Apply left the
// lock held.
func assertUnlocked(t testing.TB, f *fsm.FSM) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.Sequences()
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("FSM lock still held after a panicking Apply")
	}
}
