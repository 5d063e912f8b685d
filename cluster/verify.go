package cluster

import (
	"context"
	"sync"
)

// verifier batches leadership checks. A caller never joins a round that was
// already running when it arrived: that round's answers may predate the
// caller, and a check must be evidence from after the caller's own state
// read. So callers that arrive while a round runs wait for the next one, which
// starts as soon as the running one ends and answers all of them at once.
// Under load one round serves many requests; alone, a request costs one round.
type verifier struct {
	run func() (uint64, error) // one quorum round: the confirmed term

	mu      sync.Mutex
	running bool
	next    *verifyRound // collects callers for the round after the running one
}

type verifyRound struct {
	done chan struct{}
	term uint64
	err  error
}

func newVerifier(run func() (uint64, error)) *verifier {
	return &verifier{run: run}
}

// verify returns the term in which this node was confirmed leader by a round
// that started after verify was called.
func (v *verifier) verify(ctx context.Context) (uint64, error) {
	v.mu.Lock()
	if v.next == nil {
		v.next = &verifyRound{done: make(chan struct{})}
	}
	r := v.next
	if !v.running {
		v.running = true
		v.next = nil
		go v.loop(r)
	}
	v.mu.Unlock()
	select {
	case <-r.done:
		return r.term, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// loop runs r, then any round that collected callers meanwhile.
func (v *verifier) loop(r *verifyRound) {
	for r != nil {
		r.term, r.err = v.run()
		close(r.done)
		v.mu.Lock()
		r = v.next
		v.next = nil
		if r == nil {
			v.running = false
		}
		v.mu.Unlock()
	}
}
