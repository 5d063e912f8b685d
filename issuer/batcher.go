package issuer

import (
	"context"
	"fmt"
	"sync"

	"github.com/ticketd/ticketd/fsm"
)

// batcher commits the block requests of every sequence as few log entries
// as it can: while BatchesInFlight entries are in flight, requests queue,
// and the next entry carries all of them (up to fsm.MaxBatchBlocks). With
// thousands of sequences each needing a block now and then, the requests
// of those that wait at the same time cost one fsynced Raft round, not one
// each. A lone request goes at once: batching never adds a wait.
type batcher struct {
	is *Issuer

	mu       sync.Mutex
	queue    []blockCall
	inFlight int
}

// blockCall is one sequence's block request and the proposal its waiters
// wait on.
type blockCall struct {
	s   *sequence
	p   *proposal
	req fsm.BlockRequest
}

// submit queues c and starts an entry if fewer than BatchesInFlight are in
// flight.
func (b *batcher) submit(c blockCall) {
	b.mu.Lock()
	b.queue = append(b.queue, c)
	start := b.inFlight < b.is.cfg.BatchesInFlight
	if start {
		b.inFlight++
	}
	b.mu.Unlock()
	if start {
		go b.run()
	}
}

// discard drops the requests not yet proposed (leadership ended: their
// sequences are dead and their waiters already failed).
func (b *batcher) discard() {
	b.mu.Lock()
	clear(b.queue)
	b.queue = b.queue[:0]
	b.mu.Unlock()
}

// run proposes entries until the queue is empty.
func (b *batcher) run() {
	for {
		b.mu.Lock()
		n := min(len(b.queue), fsm.MaxBatchBlocks)
		if n == 0 {
			b.inFlight--
			b.mu.Unlock()
			return
		}
		calls := make([]blockCall, n)
		copy(calls, b.queue)
		rest := copy(b.queue, b.queue[n:])
		clear(b.queue[rest:])
		b.queue = b.queue[:rest]
		b.mu.Unlock()
		b.propose(calls)
	}
}

// propose commits one entry for calls and hands each sequence its outcome.
func (b *batcher) propose(calls []blockCall) {
	reqs := make([]fsm.BlockRequest, len(calls))
	for i, c := range calls {
		reqs[i] = c.req
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.is.cfg.ProposeTimeout)
	defer cancel()
	b.is.cfg.Metrics.ObserveBlockBatch(len(reqs))
	outcomes, err := b.is.p.ReserveBlocks(ctx, reqs)
	if err == nil && len(outcomes) != len(calls) {
		err = fmt.Errorf("block batch: %d outcomes for %d requests", len(outcomes), len(calls))
	}
	for i, c := range calls {
		if err != nil {
			c.s.granted(c.p, fsm.Block{}, err)
			continue
		}
		c.s.granted(c.p, outcomes[i].Block, outcomes[i].Err)
	}
}
