package cluster

import (
	"context"
	"sync"
	"time"
)

// verifier batches leadership checks. A caller never joins a round that was
// already running when it arrived: that round's answers may predate the
// caller, and a check must be evidence from after the caller's own state
// read. So callers that arrive while a round runs wait for the next one.
//
// When no round is running, a caller starts one at once: a lone request
// costs one round trip to the fastest majority and no wait. A round that
// follows another (callers arrived while it ran) starts when the previous
// one ends if it already has batch callers; with fewer it lingers, up to
// linger, for more to join. Under steady load that is what decides the cost
// of the check: a round costs the leader and every voter a message and a
// wake-up whatever it answers, and back-to-back rounds that answer a few
// callers each spent more CPU on probes than on the requests. Lingering is
// safe: every caller still joins before its round starts.
type verifier struct {
	run    func() (uint64, error) // one quorum round: the confirmed term
	batch  int                    // callers that start a following round at once
	linger time.Duration          // the longest a following round waits for them

	mu      sync.Mutex
	running bool
	next    *verifyRound // collects callers for the round after the running one
}

type verifyRound struct {
	done    chan struct{}
	full    chan struct{} // closed when callers reaches the verifier's batch
	callers int
	term    uint64
	err     error
}

// newVerifier returns a verifier whose following rounds wait up to linger
// for batch callers; linger 0 starts every round as soon as the previous one
// ends.
func newVerifier(run func() (uint64, error), batch int, linger time.Duration) *verifier {
	return &verifier{run: run, batch: max(batch, 1), linger: max(linger, 0)}
}

// verify returns the term in which this node was confirmed leader by a round
// that started after verify was called.
func (v *verifier) verify(ctx context.Context) (uint64, error) {
	v.mu.Lock()
	if v.next == nil {
		v.next = &verifyRound{done: make(chan struct{}), full: make(chan struct{})}
	}
	r := v.next
	r.callers++
	if r.callers == v.batch {
		close(r.full)
	}
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

// loop runs r, then any round that collected callers meanwhile, each after
// its linger.
func (v *verifier) loop(r *verifyRound) {
	var timer *time.Timer
	for r != nil {
		r.term, r.err = v.run()
		close(r.done)

		v.mu.Lock()
		r = v.next
		if r != nil && r.callers < v.batch && v.linger > 0 {
			// r stays open to callers while it lingers.
			v.mu.Unlock()
			if timer == nil {
				timer = time.NewTimer(v.linger)
			} else {
				timer.Reset(v.linger)
			}
			select {
			case <-r.full:
				timer.Stop()
			case <-timer.C:
			}
			v.mu.Lock()
		}
		v.next = nil
		if r == nil {
			v.running = false
		}
		v.mu.Unlock()
	}
}
