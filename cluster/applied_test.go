package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/fsm"
)

// raiseSeeingListener records, at each raise it is told of, the mark that a
// read of the state machine shows at that moment.
type raiseSeeingListener struct {
	n    *Node
	mu   sync.Mutex
	seen []int64 // the mark a read showed when the cut was asked for
	ats  []int64
}

func (l *raiseSeeingListener) LeadershipAcquired(Leadership) {}
func (l *raiseSeeingListener) LeadershipLost(Leadership)     {}
func (l *raiseSeeingListener) RaiseApplying(sequence string, atLeast int64) {
	s, _ := l.n.FSM().Sequence(sequence)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, s.Issued)
	l.ats = append(l.ats, atLeast)
}

// TestApply_RaiseCutBeforeAnyReadSeesTheMark: the leader's cut of a raise
// must be made before a read can show the raised mark. Otherwise a read of
// next above X, followed by a reservation, can meet a leader that has not
// cut yet and hands out an ID at or below X. Until the cut moved in front
// of the apply, the listener heard of the raise after the mark was
// visible, and this test read the raised mark from inside it.
func TestApply_RaiseCutBeforeAnyReadSeesTheMark(t *testing.T) {
	n := openUnstarted(t, t.TempDir())
	t.Cleanup(func() { _ = n.Shutdown(context.Background(), false) })
	l := &raiseSeeingListener{n: n}
	if err := n.Start(l); err != nil {
		t.Fatalf("start: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := n.Leadership(); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no leadership in 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := n.Apply(ctx, fsm.EncodeCreateSequence(fsm.CreateSequence{Name: "s", Start: 1, Max: 1 << 40})); err != nil {
		t.Fatalf("create: %v", err)
	}
	for _, c := range []struct {
		fsm.RaiseSequence
		refused bool
	}{
		{fsm.RaiseSequence{Name: "s", AtLeast: 5000}, false},   // moves the mark
		{fsm.RaiseSequence{Name: "s", AtLeast: 100}, false},    // below the mark: still a cut
		{fsm.RaiseSequence{Name: "s", AtLeast: 1 << 41}, true}, // above max
		{fsm.RaiseSequence{Name: "nope", AtLeast: 7}, true},    // no such sequence
	} {
		if _, err := n.Apply(ctx, fsm.EncodeRaiseSequence(c.RaiseSequence)); (err != nil) != c.refused {
			t.Fatalf("raise %+v: %v, want refused=%v", c.RaiseSequence, err, c.refused)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// Refused raises ask for no cut: one above max would cut every block
	// the leader will hold of the sequence.
	if len(l.ats) != 2 || l.ats[0] != 5000 || l.ats[1] != 100 {
		t.Fatalf("cuts asked for %v, want [5000 100]", l.ats)
	}
	if l.seen[0] != 0 {
		t.Fatalf("the raise to 5000 was cut when a read already showed the mark at %d", l.seen[0])
	}
}
