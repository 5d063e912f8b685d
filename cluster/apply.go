package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/fsm"
)

// Apply proposes a command and waits until it is committed and applied on
// this node, then returns the FSM's response. A business rejection from the
// FSM comes back as the error.
func (n *Node) Apply(ctx context.Context, cmd []byte) (any, error) {
	resp, err := n.applyResponse(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if err, isErr := resp.(error); isErr {
		return nil, err
	}
	return resp, nil
}

// applyResponse is Apply with the FSM's response as it is, a rejection
// included: the error is only the proposal's. An entry that needs a
// feature level above the cluster's is refused (a *LevelError) before it is
// proposed: a member of an older release would stop at it.
func (n *Node) applyResponse(ctx context.Context, cmd []byte) (any, error) {
	if _, ok := n.Leadership(); !ok {
		return nil, ErrNotLeader
	}
	if err := n.gate(cmd); err != nil {
		return nil, err
	}
	return n.propose(ctx, cmd)
}

// propose proposes cmd without the level gate: only for entries whose level
// the caller has checked itself (maybeRaiseLevel), and the planted fault.
func (n *Node) propose(ctx context.Context, cmd []byte) (any, error) {
	if _, ok := n.Leadership(); !ok {
		return nil, ErrNotLeader
	}
	// raft's timeout bounds only the enqueue; the wait below has ours.
	start := time.Now()
	var f raft.ApplyFuture
	if err := n.await(ctx, func() raft.Future {
		f = n.raft.Apply(cmd, n.cfg.ElectionTimeout)
		return f
	}); err != nil {
		return nil, err
	}
	n.cfg.Metrics.ObserveApply(time.Since(start))
	return f.Response(), nil
}

// await hands Raft a request (start returns its future) and waits for the
// answer, for ctx to end, or for the node to shut down. A node that is
// shutting down starts nothing new. The goroutine that waits on the future
// outlives a caller who stops waiting, until Raft answers: Shutdown waits
// for it (see futures).
func (n *Node) await(ctx context.Context, start func() raft.Future) error {
	n.futuresMu.Lock()
	if n.closing {
		n.futuresMu.Unlock()
		return ErrShutdown
	}
	n.futures.Add(1)
	n.futuresMu.Unlock()
	f := start()
	done := make(chan error, 1)
	go func() {
		defer n.futures.Done()
		done <- f.Error()
	}()
	select {
	case err := <-done:
		return mapRaftError(err)
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", ErrTimeout, ctx.Err())
	case <-n.shutdownCh:
		return ErrShutdown
	}
}

// ReserveBlocks proposes block requests of one or more sequences as one log
// entry and returns each one's outcome, as the FSM computed it when it
// applied the entry. A lone request is proposed as a ReserveBlock entry
// (type 2), so a single-sequence log reads as it did before batches
// existed; several go as one ReserveBlocks entry (type 11) once the
// cluster's feature level has it, and as ReserveBlock entries proposed at
// once before (Raft still writes them in one batch). An error is a
// proposal's (not leader, timeout, shut down), and then no outcome is known.
func (n *Node) ReserveBlocks(ctx context.Context, reqs []fsm.BlockRequest) ([]fsm.BlockOutcome, error) {
	out, err := n.reserveBlocks(ctx, reqs)
	if err != nil {
		return nil, err
	}
	// A block is served only once an in-sync standby holds every entry
	// before the block's (standby.go).
	var index uint64
	for _, o := range out {
		if o.Err == nil {
			index = max(index, o.Block.Index)
		}
	}
	if index > 0 {
		wctx, cancel := n.standbyWaitContext(ctx)
		defer cancel()
		if err := n.awaitStandby(wctx, index-1); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (n *Node) reserveBlocks(ctx context.Context, reqs []fsm.BlockRequest) ([]fsm.BlockOutcome, error) {
	stamp := n.Stamp() // for the audit only: no block depends on it
	grouped, _ := fsm.EntryTypeLevel(fsm.CommandReserveBlocks)
	if len(reqs) > 1 && n.fsm.ClusterLevel() < grouped && !n.cfg.groupedBlocksIgnoreLevel() {
		return n.reserveEach(ctx, reqs, stamp)
	}
	if len(reqs) == 1 {
		r := reqs[0]
		resp, err := n.applyResponse(ctx, fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: r.Name, Count: r.Count, Min: r.Min, Stamp: stamp}))
		if err != nil {
			return nil, err
		}
		switch v := resp.(type) {
		case fsm.Block:
			return []fsm.BlockOutcome{{Block: v}}, nil
		case error:
			return []fsm.BlockOutcome{{Err: v}}, nil
		}
		return nil, fmt.Errorf("reserve block: unexpected FSM response %T", resp)
	}
	entry := fsm.EncodeReserveBlocks(fsm.ReserveBlocks{Requests: reqs, Stamp: stamp})
	var resp any
	var err error
	if n.cfg.groupedBlocksIgnoreLevel() {
		resp, err = n.propose(ctx, entry) // the planted bug: past the gate
	} else {
		resp, err = n.applyResponse(ctx, entry)
	}
	if err != nil {
		return nil, err
	}
	switch v := resp.(type) {
	case fsm.BlockBatch:
		return v.Outcomes, nil
	case error:
		return nil, v // the whole entry refused: a bug, since the issuer never proposes an empty or oversized batch
	}
	return nil, fmt.Errorf("reserve blocks: unexpected FSM response %T", resp)
}

// reserveEach proposes each request as its own ReserveBlock entry, all at
// once, for a cluster whose level does not have grouped blocks yet. The
// first proposal error is the answer: blocks that did commit are then
// unknown to the caller, and lost (skipped), never handed out twice.
func (n *Node) reserveEach(ctx context.Context, reqs []fsm.BlockRequest, stamp fsm.Stamp) ([]fsm.BlockOutcome, error) {
	out := make([]fsm.BlockOutcome, len(reqs))
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := n.applyResponse(ctx, fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: r.Name, Count: r.Count, Min: r.Min, Stamp: stamp}))
			if err != nil {
				errs[i] = err
				return
			}
			switch v := resp.(type) {
			case fsm.Block:
				out[i] = fsm.BlockOutcome{Block: v}
			case error:
				out[i] = fsm.BlockOutcome{Err: v}
			default:
				errs[i] = fmt.Errorf("reserve block: unexpected FSM response %T", resp)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ApplyLeaseOp stamps a lease operation with this leader's clock and ID
// (recorded for operators, never compared) and applies it; the answer is the
// FSM's.
//
// A lease the entry granted or changed is answered only once an in-sync
// standby has stored the entry: a promoted standby must know every worker
// id and fencing token the primary handed out.
func (n *Node) ApplyLeaseOp(ctx context.Context, op fsm.LeaseOp) (any, error) {
	op.Stamp = n.Stamp()
	return n.ApplyOnStandby(ctx, fsm.EncodeLeaseOp(op))
}

// ApplyOnStandby is Apply for an entry whose answer promises something a
// promoted standby must keep: a worker id or fencing token handed out, a
// raised mark (IDs at or below it belong to another generator), a restore.
// While a standby is recorded in sync, the answer waits until it has stored
// the entry (standby.go). Blocks need no such wait per entry: ReserveBlocks
// waits for what comes before each block.
func (n *Node) ApplyOnStandby(ctx context.Context, cmd []byte) (any, error) {
	resp, index, err := n.applyIndexed(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if _, ok := n.fsm.StandbyInfo(); ok {
		wctx, cancel := n.standbyWaitContext(ctx)
		defer cancel()
		if err := n.awaitStandby(wctx, index); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// applyIndexed is Apply that also returns the entry's log index.
func (n *Node) applyIndexed(ctx context.Context, cmd []byte) (any, uint64, error) {
	if _, ok := n.Leadership(); !ok {
		return nil, 0, ErrNotLeader
	}
	if err := n.gate(cmd); err != nil {
		return nil, 0, err
	}
	start := time.Now()
	var f raft.ApplyFuture
	if err := n.await(ctx, func() raft.Future {
		f = n.raft.Apply(cmd, n.cfg.ElectionTimeout)
		return f
	}); err != nil {
		return nil, 0, err
	}
	n.cfg.Metrics.ObserveApply(time.Since(start))
	resp := f.Response()
	if err, isErr := resp.(error); isErr {
		return nil, 0, err
	}
	return resp, f.Index(), nil
}

// Stamp is what this node, as leader, writes into entries that carry time:
// its wall clock and its ID. Lease decisions use the FSM's clock, the largest
// stamp applied so far, so every replica decides the same way.
func (n *Node) Stamp() fsm.Stamp {
	return fsm.Stamp{NowMs: n.WallNow().UnixMilli(), Leader: n.cfg.ID}
}

// WallNow reads this node's wall clock (Config.WallClock).
func (n *Node) WallNow() time.Time {
	if n.cfg.WallClock != nil {
		return n.cfg.WallClock()
	}
	return time.Now()
}

// Snapshot forces a snapshot now.
func (n *Node) Snapshot(ctx context.Context) error {
	return n.await(ctx, func() raft.Future { return n.raft.Snapshot() })
}
