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
	})
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
	v := newVerifier(func() (uint64, error) { <-release; return 1, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := v.verify(ctx); err == nil {
		t.Fatal("verify returned without a round finishing")
	}
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
