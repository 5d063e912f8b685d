package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/fsm"
)

// The leader's half of leader leases (issue 44; DESIGN-leases.md, section
// 3). With Config.LeaseReads, a leadership round asks each voter it probes
// to promise (promise.go) not to vote for LeaseDuration. A round that a
// majority answered with that promise, this node's own included, gives the
// leader a lease: until start + D·(1−ε) on its lease clock, where start was
// read before the round's first probe went out and ε is LeaseMaxDrift, the
// bound on how much faster than the leader's clock a voter's may run. While
// it holds, VerifyLeader answers without a round: no later leader can have
// been elected, because every majority that could elect one holds a voter
// still keeping its promise.

// leaseGrant is a lease: the term it was won in and when it ends on the
// lease clock. Immutable; Node.lease points at the current one.
type leaseGrant struct {
	term   uint64
	expiry time.Duration
}

// leaseState is the leader's lease and what invalidates it.
type leaseState struct {
	cur atomic.Pointer[leaseGrant]
	// transferring is set while this node hands its leadership on: rounds
	// then promise nothing, so the target can win its votes.
	transferring atomic.Int32
	// mu orders a round's grant against a drop: a round grants only if no
	// drop came after it started (gen unchanged), or a round in flight
	// across a transfer's release would grant a lease whose promises were
	// released.
	mu  sync.Mutex
	gen uint64
	// base anchors the fault build's rate hook (leaseNow).
	base time.Duration
}

// begin returns the generation a round starts in, and whether it may ask
// for promises (no transfer runs).
func (s *leaseState) begin() (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen, s.transferring.Load() == 0
}

func (s *leaseState) drop() {
	s.mu.Lock()
	s.gen++
	s.cur.Store(nil)
	s.mu.Unlock()
}

// bump starts a new generation for a transfer's release, and returns it:
// every promise asked for before was asked below it. keep leaves the lease
// in place (the planted bug lease-kept-across-transfer).
func (s *leaseState) bump(keep bool) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	if !keep {
		s.cur.Store(nil)
	}
	return s.gen
}

// grant sets the lease a round won, unless a drop or a transfer came after
// the round began.
func (s *leaseState) grant(gen uint64, g leaseGrant) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen || s.transferring.Load() > 0 {
		return false
	}
	s.cur.Store(&g)
	return true
}

// leaseNow reads the leader's lease clock: CLOCK_BOOTTIME, which keeps
// counting while the machine is suspended (leaseclock_linux.go). The fault
// build can slow it (lease-clock-drift).
func (n *Node) leaseNow() time.Duration {
	now := bootClock()
	if rate := n.cfg.leaseClockRate(); rate != 1 {
		return n.leaseState.base + time.Duration(float64(now-n.leaseState.base)*rate)
	}
	return now
}

// leaseTerm returns the term of a lease that holds now.
func (n *Node) leaseTerm() (uint64, bool) {
	g := n.leaseState.cur.Load()
	if g == nil {
		return 0, false
	}
	if n.raft.State() != raft.Leader || n.raft.CurrentTerm() != g.term {
		return 0, false
	}
	if n.leaseNow() >= g.expiry && !n.cfg.leaseServePastExpiry() {
		return 0, false
	}
	return g.term, true
}

// leaseMode reports whether a round now should ask for promises.
func (n *Node) leaseMode(voters int) bool {
	return n.cfg.LeaseReads && voters > 1 && n.leaseState.transferring.Load() == 0 &&
		n.fsm.ClusterLevel() >= fsm.LevelLeases
}

// leaseLength is how long after a round's start its lease holds.
func (n *Node) leaseLength() time.Duration {
	return time.Duration(float64(n.cfg.LeaseDuration) * (1 - n.cfg.LeaseMaxDrift))
}

// dropLease ends the lease: at a step-down, before a membership change,
// and at a transfer.
func (n *Node) dropLease() { n.leaseState.drop() }

// beginTransfer stops leases for a leadership transfer; the returned func
// ends it (the transfer finished or failed).
func (n *Node) beginTransfer() func() {
	n.leaseState.transferring.Add(1)
	return func() { n.leaseState.transferring.Add(-1) }
}

// releaseForTransfer runs just before raft's TimeoutNow, the last moment
// before the target campaigns: it ends the lease and asks every voter,
// itself included, to forget its promises, so that the target can win.
// A voter that does not answer keeps its promise: the target then fails
// to win, and the transfer times out. That is slow, but never unsafe. The
// returned func runs once TimeoutNow has returned.
func (n *Node) releaseForTransfer() (after func()) {
	r := n.started.Load()
	if r == nil || !n.cfg.LeaseReads {
		return func() {}
	}
	// No round asks for a promise again until raft's transfer has had its
	// time: the target may win at any moment of it. Raised here, whoever
	// started the transfer, and lowered one election timeout (raft's own
	// transfer timeout) after TimeoutNow returned.
	n.leaseState.transferring.Add(1)
	after = func() {
		time.AfterFunc(n.cfg.ElectionTimeout, func() { n.leaseState.transferring.Add(-1) })
	}
	term := r.CurrentTerm()
	seq := n.leaseState.bump(n.cfg.leaseKeptAcrossTransfer())
	n.promises.release(term, seq)
	cf := r.GetConfiguration()
	if cf.Error() != nil {
		return after
	}
	// Well inside raft's transfer timeout, which runs meanwhile.
	deadline := time.Now().Add(min(n.cfg.ProbeTimeout, n.cfg.ElectionTimeout/2))
	var wg sync.WaitGroup
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage != raft.Voter || s.ID == raft.ServerID(n.cfg.ID) {
			continue
		}
		wg.Add(1)
		go func(addr string) {
			defer wg.Done()
			_, _, _ = n.leaseClient.lease(addr, deadline, func() leaseRequest {
				return leaseRequest{op: leaseOpRelease, term: term, seq: seq}
			})
		}(string(s.Address))
	}
	wg.Wait()
	return after
}

// renewLeases keeps the lease of stretch l fresh: a round every third of
// the lease, well before it ends. Requests that find it lapsed (a round
// failed, or came late) run a round themselves.
func (n *Node) renewLeases(l Leadership) {
	every := n.cfg.LeaseDuration / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-n.shutdownCh:
			return
		}
		if cur := n.current.Load(); cur == nil || cur.Epoch != l.Epoch {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*n.cfg.ProbeTimeout)
		_, _ = n.verifier.verify(ctx)
		cancel()
	}
}
