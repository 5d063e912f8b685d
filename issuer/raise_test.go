package issuer

import (
	"context"
	"testing"
	"time"

	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/internal/testkit"
)

// raise applies a raise entry, then tells the issuer, as the server does.
func raise(t *testing.T, p *fsmProposer, is *Issuer, name string, atLeast int64) fsm.RaiseResult {
	t.Helper()
	resp, err := p.apply(fsm.EncodeRaiseSequence(fsm.RaiseSequence{Name: name, AtLeast: atLeast}))
	if err != nil {
		t.Fatalf("raise %s to %d: %v", name, atLeast, err)
	}
	is.Raise(name, atLeast)
	return resp.(fsm.RaiseResult)
}

// A raise into the block the leader holds moves no mark in the state machine
// (the block is already counted), yet the IDs below the raised value that
// the leader still holds must not be served after it.
func TestRaise_IntoTheHeldBlock_CutsWhatIsBelow(t *testing.T) {
	p := newFSMProposer(t, fsm.CreateSequence{Name: "s", Start: 1, Max: 1 << 40})
	is := New(p, testConfig())
	is.Acquire(1)
	if r, err := is.Reserve(context.Background(), "s", 10); err != nil || r.First != 1 {
		t.Fatalf("first range %+v, %v", r, err)
	}
	held, _ := p.f.Sequence("s")
	at := held.Issued - 5 // inside the block held in memory
	if res := raise(t, p, is, "s", at); res.Raised {
		t.Fatalf("raise to %d below the mark %d moved it: %+v", at, held.Issued, res)
	}
	r, err := is.Reserve(context.Background(), "s", 3)
	if err != nil {
		t.Fatal(err)
	}
	if r.First <= at {
		t.Fatalf("range %+v after a raise to %d", r, at)
	}
}

func TestRaise_AboveTheHeldBlock_NextRangeAbove(t *testing.T) {
	p := newFSMProposer(t, fsm.CreateSequence{Name: "s", Start: 1, Max: 1 << 40})
	is := New(p, testConfig())
	is.Acquire(1)
	if _, err := is.Reserve(context.Background(), "s", 10); err != nil {
		t.Fatal(err)
	}
	raise(t, p, is, "s", 1_000_000)
	r, err := is.Reserve(context.Background(), "s", 7)
	if err != nil || r.First != 1_000_001 || r.Last != 1_000_007 {
		t.Fatalf("range %+v, %v; want 1000001..1000007", r, err)
	}
}

// A block proposed before the raise and granted once the raise has returned
// is cut as it arrives.
func TestRaise_BlockInFlight_CutWhenItArrives(t *testing.T) {
	p := newFSMProposer(t, fsm.CreateSequence{Name: "s", Start: 1, Max: 1 << 40})
	p.gate = make(chan struct{})
	is := New(p, testConfig())
	is.Acquire(1)
	done := make(chan Range, 1)
	go func() {
		r, err := is.Reserve(context.Background(), "s", 5)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	testkit.Eventually(t, 5*time.Second, time.Millisecond, "the block proposal", func() bool { return p.proposals.Load() >= 1 })
	// The raise is applied while the block waits to be applied, so in this
	// test's log it comes first: the block then lies above it anyway. To
	// have the block granted first and delivered after, apply the raise
	// only to the issuer's floor, at a value the coming block holds.
	is.Raise("s", 500)
	close(p.gate)
	select {
	case r := <-done:
		if r.First <= 500 {
			t.Fatalf("range %+v served from a block granted before a raise to 500 and delivered after", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reservation never finished")
	}
}

// The floor belongs to the term: a new term starts with no blocks, and its
// blocks come from the state machine's mark, which the raise lifted.
func TestRaise_AfterFailover_NewTermStartsAboveTheMark(t *testing.T) {
	p := newFSMProposer(t, fsm.CreateSequence{Name: "s", Start: 1, Max: 1 << 40})
	is := New(p, testConfig())
	is.Acquire(1)
	raise(t, p, is, "s", 77_777)
	is.Drop()
	p.mu.Lock()
	p.term = 2
	p.mu.Unlock()
	is.Acquire(2)
	r, err := is.Reserve(context.Background(), "s", 1)
	if err != nil || r.First != 77_778 {
		t.Fatalf("range %+v, %v; want 77778", r, err)
	}
}
