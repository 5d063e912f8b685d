package issuer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/internal/testkit"
)

func manySequences(n int, max int64) []fsm.CreateSequence {
	out := make([]fsm.CreateSequence, n)
	for i := range out {
		out[i] = fsm.CreateSequence{Name: fmt.Sprintf("seq-%04d", i), Start: 1, Max: max}
	}
	return out
}

// queued is how many block requests wait in the batcher, not yet proposed.
func queued(is *Issuer) int {
	is.batcher.mu.Lock()
	defer is.batcher.mu.Unlock()
	return len(is.batcher.queue)
}

// Sequences that need a block while an entry is in flight go together in
// the next entry: 50 sequences, one entry in flight at a time, cost at most
// two entries (the first request alone, or with whatever had queued before
// it was proposed; then the rest together), not 50.
func TestBlocks_ManySequencesWaitingAtOnce_ShareOneEntry(t *testing.T) {
	seqs := manySequences(50, 1<<40)
	p := newFSMProposer(t, seqs...)
	p.gate = make(chan struct{})
	cfg := testConfig()
	cfg.BatchesInFlight = 1
	is := New(p, cfg)
	is.Acquire(1)

	var wg sync.WaitGroup
	got := make([]Range, len(seqs))
	errs := make([]error, len(seqs))
	for i, c := range seqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = is.Reserve(context.Background(), c.Name, 1000)
		}()
	}
	testkit.Eventually(t, 5*time.Second, time.Millisecond, "every sequence's block request queued or proposed", func() bool {
		p.mu.Lock()
		inFlight := 0
		for _, n := range p.batches {
			inFlight += n
		}
		p.mu.Unlock()
		return inFlight+queued(is) == len(seqs)
	})
	close(p.gate)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", seqs[i].Name, err)
		}
		if got[i].First != 1 || got[i].Last != 1000 {
			t.Fatalf("%s: %+v, want its first 1000 IDs", seqs[i].Name, got[i])
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	total := 0
	for _, n := range p.batches {
		total += n
	}
	if len(p.batches) > 2 || total != len(seqs) {
		t.Fatalf("entries of %v requests for %d sequences, want at most 2 entries holding them all", p.batches, len(seqs))
	}
}

// A sequence far too quiet for its rate to size its blocks (one request of
// 1,000 IDs a second, as with one of thousands of sequences) still serves
// most requests from memory: a block holds many requests of the size seen.
func TestBlockSize_QuietSequence_BlockHoldsManyRequestsOfTheSizeSeen(t *testing.T) {
	p := newFSMProposer(t, fsm.CreateSequence{Name: "s", Start: 1, Max: 1 << 62})
	cfg := testConfig()
	cfg.RequestsPerBlock = 16 // a few blocks in 100 requests
	is := New(p, cfg)
	var now atomic.Int64
	base := time.Now()
	is.now = func() time.Time { return base.Add(time.Duration(now.Load())) }
	is.Acquire(1)
	const requests = 100
	for range requests {
		now.Add(int64(time.Second))
		if _, err := is.Reserve(context.Background(), "s", 1000); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, is, "s")
	}
	n := p.proposals.Load()
	if max := 1 + int64(2*requests/cfg.RequestsPerBlock); n > max {
		t.Fatalf("%d block proposals for %d requests of 1,000 IDs, want at most %d", n, requests, max)
	}
}

// The leader keeps at most MaxCachedSequences in memory; a forgotten
// sequence starts again above everything it handed out.
func TestEviction_BoundsCachedSequences_RangesStillIncrease(t *testing.T) {
	seqs := manySequences(400, 1<<40)
	p := newFSMProposer(t, seqs...)
	cfg := testConfig()
	cfg.MaxCachedSequences = 40
	is := New(p, cfg)
	is.Acquire(1)
	last := map[string]int64{}
	for round := range 3 {
		for _, c := range seqs {
			r, err := is.Reserve(context.Background(), c.Name, 10)
			if err != nil {
				t.Fatal(err)
			}
			if r.First <= last[c.Name] {
				t.Fatalf("round %d: %s got %+v, at or below %d handed out before", round, c.Name, r, last[c.Name])
			}
			last[c.Name] = r.Last
			is.mu.RLock()
			n := len(is.seqs)
			is.mu.RUnlock()
			if n > cfg.MaxCachedSequences {
				t.Fatalf("%d sequences cached, bound %d", n, cfg.MaxCachedSequences)
			}
		}
	}
}

// Requests racing with evictions are served, each range once.
func TestEviction_ConcurrentRequests_AllServedDisjoint(t *testing.T) {
	seqs := manySequences(200, 1<<40)
	p := newFSMProposer(t, seqs...)
	cfg := testConfig()
	cfg.MaxCachedSequences = 16
	is := New(p, cfg)
	is.Acquire(1)
	const workers, each = 16, 200
	got := make([][]Range, len(seqs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				k := (w*7919 + i*104729) % len(seqs)
				r, err := is.Reserve(context.Background(), seqs[k].Name, 5)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				got[k] = append(got[k], r)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, rs := range got {
		checkDisjoint(t, rs)
	}
}

// Losing leadership drops the block requests not yet proposed: their
// waiters fail at once and nothing is proposed for them.
func TestDrop_QueuedBlockRequests_NeverProposed(t *testing.T) {
	seqs := manySequences(5, 1<<40)
	p := newFSMProposer(t, seqs...)
	p.gate = make(chan struct{})
	cfg := testConfig()
	cfg.BatchesInFlight = 1
	is := New(p, cfg)
	is.Acquire(1)
	errs := make(chan error, len(seqs))
	for i, c := range seqs {
		go func() {
			_, err := is.Reserve(context.Background(), c.Name, 1)
			errs <- err
		}()
		// One at a time, so that the first is in flight and the rest queue.
		testkit.Eventually(t, 5*time.Second, time.Millisecond, "request proposed or queued", func() bool {
			return p.proposals.Load() == 1 && queued(is) == i
		})
	}
	testkit.Eventually(t, 5*time.Second, time.Millisecond, "four requests queued", func() bool { return queued(is) == len(seqs)-1 })
	is.Drop()
	for range seqs {
		if err := <-errs; !errors.Is(err, ErrNotServing) {
			t.Fatalf("err = %v, want ErrNotServing", err)
		}
	}
	close(p.gate)
	time.Sleep(20 * time.Millisecond)
	if n := p.proposals.Load(); n != 1 {
		t.Fatalf("%d entries proposed, want only the one in flight before the drop", n)
	}
	if q := queued(is); q != 0 {
		t.Fatalf("%d requests still queued after the drop", q)
	}
}
