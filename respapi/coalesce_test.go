package respapi

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/domain"
)

// Reservations that arrive while one is in flight go to the leader as one,
// and each caller gets a disjoint part of its range.
func TestForwardBatches_CoalescesWhileInFlight_PartsDisjoint(t *testing.T) {
	var sends atomic.Int64
	var next atomic.Int64
	next.Store(1)
	release := make(chan struct{})
	first := true
	var mu sync.Mutex
	b := newForwardBatches(func(ctx context.Context, name string, count int64, token string) (int64, int64, error) {
		sends.Add(1)
		mu.Lock()
		hold := first
		first = false
		mu.Unlock()
		if hold {
			<-release // the first flight waits while the others gather
		}
		f := next.Add(count) - count
		return f, f + count - 1, nil
	}, time.Second)
	const callers = 50
	type got struct{ first, last int64 }
	out := make([]got, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, l, err := b.reserve(t.Context(), "s", int64(i+1), "tok")
			if err != nil {
				t.Error(err)
			}
			out[i] = got{f, l}
		}()
		if i == 0 {
			time.Sleep(20 * time.Millisecond) // the first is in flight
		}
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	if n := sends.Load(); n != 2 {
		t.Fatalf("%d requests to the leader for %d callers, want 2 (the first, then all that waited)", n, callers)
	}
	seen := map[int64]bool{}
	for i, g := range out {
		if g.last-g.first != int64(i) {
			t.Fatalf("caller %d got [%d, %d], want %d IDs", i, g.first, g.last, i+1)
		}
		for id := g.first; id <= g.last; id++ {
			if seen[id] {
				t.Fatalf("ID %d handed to two callers", id)
			}
			seen[id] = true
		}
	}
}

// A batch of several that the leader refuses is sent again caller by
// caller, so each sees the leader's answer to its own request; a leader
// that cannot be reached fails the batch at once.
func TestForwardBatches_FailedBatch_EachCallerAlone(t *testing.T) {
	var alone atomic.Int64
	release := make(chan struct{})
	var once sync.Once
	b := newForwardBatches(func(ctx context.Context, name string, count int64, token string) (int64, int64, error) {
		held := false
		once.Do(func() { held = true })
		if held {
			<-release
			return 1, count, nil
		}
		if count > 3 { // the batch: refused as exhausted
			return 0, 0, domain.Kindf(domain.ErrExhausted, "would pass max")
		}
		alone.Add(1)
		return 100, 100 + count - 1, nil
	}, time.Second)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, _, _ = b.reserve(t.Context(), "s", 1, "") }()
	time.Sleep(20 * time.Millisecond)
	errs := make([]error, 3)
	for i := range 3 {
		wg.Add(1)
		go func() { defer wg.Done(); _, _, errs[i] = b.reserve(t.Context(), "s", 2, "") }()
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("a caller failed where its own request succeeds: %v", err)
		}
	}
	if alone.Load() != 3 {
		t.Fatalf("%d callers sent alone after the batch failed, want 3", alone.Load())
	}

	down := newForwardBatches(func(ctx context.Context, name string, count int64, token string) (int64, int64, error) {
		return 0, 0, domain.Kindf(domain.ErrUnavailable, "leader unreachable")
	}, time.Second)
	if _, _, err := down.reserve(t.Context(), "s", 1, ""); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("unreachable leader: %v", err)
	}
}
