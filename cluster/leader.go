package cluster

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/fsm"
)

// Leadership identifies one stretch of leadership of this node: Epoch counts
// every change of leadership state on this node, Term is Raft's term. Blocks
// handed to a leader belong to one Leadership and die with it.
type Leadership struct {
	Epoch uint64
	Term  uint64
}

// LeadershipListener is told when this node starts serving as leader (after
// its Barrier) and when it stops, from one goroutine, in order; and of every
// raise about to apply, from raft's FSM goroutine.
type LeadershipListener interface {
	LeadershipAcquired(Leadership)
	LeadershipLost(Leadership)
	// RaiseApplying is called on every node right before a raise of
	// sequence to atLeast that the state machine accepts applies, so
	// before any read can show its mark and before it is acknowledged: a
	// serving leader must serve nothing at or below atLeast from then on.
	// It must not block (raft's FSM goroutine waits for it).
	RaiseApplying(sequence string, atLeast int64)
}

// leaderLoop turns Raft's leadership changes into serving and not serving.
// Raft's LeaderCh can drop signals and fires before the new leader has
// applied the entries of earlier terms (raft #508), so the loop watches the
// observer and also polls, and a new leader serves only after a Barrier.
func (n *Node) leaderLoop() {
	defer n.wg.Done()
	poll := time.NewTicker(max(n.cfg.HeartbeatTimeout/10, 5*time.Millisecond))
	defer poll.Stop()
	for {
		select {
		case <-n.shutdownCh:
			if cur := n.current.Swap(nil); cur != nil && n.listener != nil {
				n.listener.LeadershipLost(*cur)
			}
			return
		case <-n.obsCh:
		case <-poll.C:
		case <-n.reestablishReq:
			asked := n.reestablished.asked.Load()
			n.reestablish()
			n.reestablished.did(asked)
			continue
		}
		n.checkLeadership()
	}
}

// reestablish ends the current stretch of leadership, if any, and starts a
// new one after a Barrier if this node still leads; only the leader loop
// calls it.
func (n *Node) reestablish() {
	if cur := n.current.Load(); cur != nil {
		n.stepDown(*cur)
	}
	n.checkLeadership()
}

// requestReestablish asks the leader loop to re-establish and returns at
// once; requests made before the loop took the last one are one request.
func (n *Node) requestReestablish() {
	n.reestablished.asked.Add(1)
	select {
	case n.reestablishReq <- struct{}{}:
	default:
	}
}

// AwaitReestablished waits until the leader loop has re-established for
// every request made so far (serving again if this node still leads), or
// ctx ends. A restore's answer waits for it, so that its caller's next
// request meets the new stretch of leadership; the re-establishing itself
// never depends on anyone waiting.
func (n *Node) AwaitReestablished(ctx context.Context) error {
	target := n.reestablished.asked.Load()
	for {
		n.reestablished.mu.Lock()
		done, changed := n.reestablished.done, n.reestablished.changedCh()
		n.reestablished.mu.Unlock()
		if done >= target {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%w: %v", ErrTimeout, ctx.Err())
		case <-n.shutdownCh:
			return ErrShutdown
		}
	}
}

// reestablishes counts the re-establishing asked for and done.
type reestablishes struct {
	asked   atomic.Uint64
	mu      sync.Mutex
	done    uint64
	changed chan struct{} // closed when done moves
}

// changedCh is closed when done next moves; r.mu is held.
func (r *reestablishes) changedCh() chan struct{} {
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	return r.changed
}

// did records that every request up to asked has been handled.
func (r *reestablishes) did(asked uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = max(r.done, asked)
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// checkLeadership starts or stops serving to match Raft's state; only the
// leader loop calls it.
func (n *Node) checkLeadership() {
	isLeader := n.raft.State() == raft.Leader
	term := n.raft.CurrentTerm()
	n.leaders.observe(term, n.LeaderID(), time.Now())
	cur := n.current.Load()
	if cur != nil && (!isLeader || cur.Term != term) {
		n.stepDown(*cur)
		cur = nil
	}
	if isLeader && cur == nil {
		n.establish(term)
	}
}

func (n *Node) stepDown(l Leadership) {
	n.cfg.Metrics.LeadershipChanged()
	n.current.Store(nil)
	n.dropLease()
	n.levels.set(nil) // a follower shows no probe answers, rather than stale ones
	n.epoch.Add(1)
	n.log.Info("stopped serving as leader", "term", l.Term)
	if n.listener != nil {
		n.listener.LeadershipLost(l)
	}
}

// establish runs the Barrier that makes this node's FSM hold everything
// committed before its term, then starts serving.
func (n *Node) establish(term uint64) {
	if _, fenced := n.fsm.Fenced(); fenced && n.fencedTerm.Load() == term {
		return // found fenced after this term's Barrier already
	}
	if n.cfg.skipBarrier() {
		n.log.Warn("UNSAFE: serving as leader without a Barrier (planted fault)")
	} else if err := n.await(context.Background(), func() raft.Future { return n.raft.Barrier(n.cfg.ElectionTimeout) }); err != nil {
		n.log.Warn("barrier failed; not serving yet", "term", term, "err", err)
		return
	}
	if n.raft.State() != raft.Leader || n.raft.CurrentTerm() != term {
		return
	}
	if fe, fenced := n.fsm.Fenced(); fenced {
		// Checked at every tick of the leader loop, so logged only once
		// per term.
		if n.fencedTerm.Swap(term) != term {
			n.log.Error("leader of a fenced cluster: serving nothing, since its standby was promoted", "term", term, "standby", fe.Standby, "fenced_at_index", fe.Index, "reason", fe.Reason)
		}
		return
	}
	n.seen.reset(term) // before anything waits on the standby in this stretch
	if !n.heardFromStandby(term) {
		return
	}
	l := Leadership{Epoch: n.epoch.Add(1), Term: term}
	n.cfg.Metrics.LeadershipChanged()
	n.current.Store(&l)
	n.log.Info("serving as leader", "term", term)
	if n.listener != nil {
		n.listener.LeadershipAcquired(l)
	}
	n.wg.Add(3)
	go func() {
		defer n.wg.Done()
		n.recordOwnMetadata(l)
	}()
	go func() {
		defer n.wg.Done()
		n.watchStandby(l)
	}()
	go func() {
		defer n.wg.Done()
		n.watchLevels(l)
	}()
	if n.cfg.LeaseReads {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.renewLeases(l)
		}()
	}
}

// recordOwnMetadata writes this node's addresses into the replicated member
// metadata if they are missing or stale, so followers can forward to it.
func (n *Node) recordOwnMetadata(l Leadership) {
	want := fsm.Member{ID: n.cfg.ID, RaftAddr: n.mux.advertise.String(), HTTPAddr: n.cfg.HTTPAdvertise}
	if m, ok := n.fsm.Member(n.cfg.ID); ok && m == want {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*n.cfg.ElectionTimeout)
	defer cancel()
	if _, err := n.Apply(ctx, fsm.EncodeSetMember(fsm.SetMember(want))); err != nil {
		n.log.Warn("could not record own metadata", "term", l.Term, "err", err)
	}
}

// Leadership returns the current stretch of leadership, or false when this
// node is not serving as leader.
func (n *Node) Leadership() (Leadership, bool) {
	if l := n.current.Load(); l != nil {
		return *l, true
	}
	return Leadership{}, false
}
