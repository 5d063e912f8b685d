package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/testkit"
)

// A caller never joins a round that was already running when it arrived: the
// round that answers it started after it called.
func TestVerifier_CallerNeverJoinsARunningRound(t *testing.T) {
	var rounds atomic.Int64
	var mu sync.Mutex
	starts := map[int64]time.Time{}
	release := make(chan struct{})
	v := newVerifier(func() (uint64, error) {
		n := rounds.Add(1)
		mu.Lock()
		starts[n] = time.Now()
		mu.Unlock()
		<-release
		return uint64(n), nil
	}, 1, 0)
	// First caller starts round 1, which blocks.
	first := make(chan uint64)
	go func() {
		term, _ := v.verify(context.Background())
		first <- term
	}()
	testkit.Eventually(t, 5*time.Second, time.Millisecond, "round 1 to start", func() bool { return rounds.Load() >= 1 })
	// These arrive while round 1 runs: they must be answered by round 2.
	const late = 20
	var wg sync.WaitGroup
	called := make([]time.Time, late)
	answers := make([]uint64, late)
	for i := 0; i < late; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			called[i] = time.Now()
			answers[i], _ = v.verify(context.Background())
		}()
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	if got := <-first; got != 1 {
		t.Fatalf("first caller answered by round %d, want 1", got)
	}
	wg.Wait()
	for i, a := range answers {
		mu.Lock()
		started := starts[int64(a)]
		mu.Unlock()
		if a < 2 || started.Before(called[i]) {
			t.Fatalf("caller %d (called %v) answered by round %d that started %v", i, called[i], a, started)
		}
	}
	// All late callers shared one round.
	if n := rounds.Load(); n != 2 {
		t.Fatalf("%d rounds for 1 + %d callers, want 2", n, late)
	}
}

func TestVerifier_ContextEndsWait(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	v := newVerifier(func() (uint64, error) { <-release; return 1, nil }, 1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := v.verify(ctx); err == nil {
		t.Fatal("verify returned without a round finishing")
	}
}

// verifyRecorder runs rounds that block until released and records when each
// started and ended.
type verifyRecorder struct {
	mu      sync.Mutex
	starts  []time.Time
	ends    []time.Time
	release chan struct{}
}

func (r *verifyRecorder) run() (uint64, error) {
	r.mu.Lock()
	r.starts = append(r.starts, time.Now())
	n := len(r.starts)
	r.mu.Unlock()
	<-r.release
	r.mu.Lock()
	r.ends = append(r.ends, time.Now())
	r.mu.Unlock()
	return uint64(n), nil
}

func (r *verifyRecorder) rounds() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.starts)
}

// callers starts n verify calls and returns a channel of their answers.
func callers(v *verifier, n int) <-chan uint64 {
	out := make(chan uint64, n)
	for range n {
		go func() {
			term, _ := v.verify(context.Background())
			out <- term
		}()
	}
	return out
}

// A round that follows another, with fewer callers than the batch, waits
// for the linger before it starts, and callers arriving meanwhile join it.
func TestVerifier_FollowingRoundLingers(t *testing.T) {
	const linger = 100 * time.Millisecond
	rec := &verifyRecorder{release: make(chan struct{})}
	v := newVerifier(rec.run, 100, linger)
	first := callers(v, 1)
	testkit.Eventually(t, 5*time.Second, time.Millisecond, "round 1 to start", func() bool { return rec.rounds() == 1 })
	early := callers(v, 3)
	testkit.Eventually(t, 5*time.Second, time.Millisecond, "callers to wait for round 2", func() bool { return v.pending() == 3 })
	close(rec.release) // every round from now on returns at once
	if got := <-first; got != 1 {
		t.Fatalf("first caller answered by round %d", got)
	}
	// Round 2 is lingering now; these join it.
	late := callers(v, 4)
	for range 3 {
		if got := <-early; got != 2 {
			t.Fatalf("a caller of the lingering round was answered by round %d", got)
		}
	}
	for range 4 {
		if got := <-late; got != 2 {
			t.Fatalf("a caller that arrived during the linger was answered by round %d, want 2", got)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.starts) != 2 {
		t.Fatalf("%d rounds, want 2", len(rec.starts))
	}
	if waited := rec.starts[1].Sub(rec.ends[0]); waited < linger {
		t.Fatalf("round 2 started %v after round 1 ended, before the linger of %v", waited, linger)
	}
}

// A following round that has its batch starts without waiting out the
// linger; a caller with no round running starts one at once.
func TestVerifier_FullBatchAndLoneCallerDoNotLinger(t *testing.T) {
	rec := &verifyRecorder{release: make(chan struct{})}
	v := newVerifier(rec.run, 5, time.Hour)
	first := callers(v, 1)
	testkit.Eventually(t, 5*time.Second, time.Millisecond, "round 1 to start", func() bool { return rec.rounds() == 1 })
	batch := callers(v, 5)
	testkit.Eventually(t, 5*time.Second, time.Millisecond, "callers to wait for round 2", func() bool { return v.pending() == 5 })
	close(rec.release)
	<-first
	for range 5 {
		select {
		case got := <-batch:
			if got != 2 {
				t.Fatalf("answered by round %d, want 2", got)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a full batch waited for the linger")
		}
	}
	// Idle now: a lone caller starts a round at once.
	testkit.Eventually(t, 5*time.Second, time.Millisecond, "the loop to stop", func() bool { return !v.isRunning() })
	select {
	case got := <-callers(v, 1):
		if got != 3 {
			t.Fatalf("lone caller answered by round %d, want 3", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a lone caller waited for the linger")
	}
}

func (v *verifier) pending() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.next == nil {
		return 0
	}
	return v.next.callers
}

func (v *verifier) isRunning() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.running
}

func TestParseInitialCluster(t *testing.T) {
	peers, err := ParseInitialCluster("n1=127.0.0.1:1, n2=127.0.0.1:2,n3=[::1]:3")
	if err != nil || len(peers) != 3 || peers[2].RaftAddr != "[::1]:3" {
		t.Fatalf("got %v, %v", peers, err)
	}
	for _, bad := range []string{"n1", "n1=", "=127.0.0.1:1", "n1=nohost", "n1=127.0.0.1:1,n1=127.0.0.1:2", "n1=127.0.0.1:1,n2=127.0.0.1:1"} {
		if _, err := ParseInitialCluster(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
