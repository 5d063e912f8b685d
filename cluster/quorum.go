package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// VerifyLeader confirms, with evidence gathered after the call began, that
// this node is still the leader, and returns the term it leads in.
//
// With leader leases (lease.go) a lease that holds now is that evidence: a
// round that started before the call won it, and no later leader can have
// been elected since.
func (n *Node) VerifyLeader(ctx context.Context) (uint64, error) {
	if term, ok := n.leaseTerm(); ok {
		n.cfg.Metrics.LeaseCheck()
		return term, nil
	}
	return n.verifier.verify(ctx)
}

// probeRound asks voters for their term. A voter that answers with our term
// has not voted in a later election; a majority of them (counting ourselves)
// proves that no later leader existed when the round started.
//
// It asks only as many voters as a majority still needs, those that answered
// before first (probeOrder): in a 3-node cluster one follower is enough, and
// asking both cost the other a wake-up per round for an answer nobody waits
// for. A voter that fails, answers from an older term, or is silent past the
// hedge is replaced by the next one; the hedge (ProbeHedge) bounds what a
// silently partitioned voter costs the round that first meets it, after
// which it is asked last.
//
// With leases in use the round asks each voter it probes to promise too
// (promise.go), this node included, and a majority of promises renews the
// lease from the round's start.
func (n *Node) probeRound() (uint64, error) {
	if n.raft.State() != raft.Leader {
		return 0, ErrNotLeader
	}
	// The lease generation is read before the configuration: a membership
	// change drops the lease before it is proposed, and raft takes one
	// change at a time, so a grant that finds the generation unchanged
	// rests on a configuration at most one change from the current one,
	// whose majorities intersect ours.
	gen, mayLease := n.leaseState.begin()
	term := n.raft.CurrentTerm()
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return 0, mapRaftError(err)
	}
	var peers []string
	voters, acks := 0, 0
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		voters++
		if s.ID == raft.ServerID(n.cfg.ID) {
			acks++
			continue
		}
		peers = append(peers, string(s.Address))
	}
	if acks == 0 {
		return 0, ErrNotLeader
	}
	need := voters/2 + 1
	lease := mayLease && n.leaseMode(voters)
	var start time.Duration
	promised := 0
	if lease {
		// Read before anything is sent: the voters' promises all begin
		// after it, so the lease measured from it is never too long.
		start = n.leaseNow()
		if _, ok := n.promises.promise(term, n.cfg.LeaseDuration, gen); ok {
			promised = 1
		} else {
			lease = false // a vote of ours in flight: confirm, lease nothing
		}
	}
	if acks < need || (lease && promised < need) {
		t, err := n.askVoters(peers, term, tally{acks, promised}, need, lease, gen)
		if err != nil {
			return 0, err
		}
		acks, promised = t.acks, t.promised
	}
	if acks < need {
		return 0, fmt.Errorf("%w: %d of %d voters answered in term %d", ErrNotConfirmed, acks, voters, term)
	}
	if n.raft.State() != raft.Leader || n.raft.CurrentTerm() != term {
		return 0, ErrNotLeader
	}
	if lease && promised >= need {
		n.leaseState.grant(gen, leaseGrant{term: term, expiry: start + n.leaseLength()})
	}
	return term, nil
}

// tally counts a round's answers in the leader's term, and of them those
// that promised (lease rounds only).
type tally struct{ acks, promised int }

// askVoters probes peers until the answers reach need or no peer is left to
// ask. In a lease round an answer helps only with its promise, and a peer
// whose answer did not is replaced by the next. A peer in a later term is
// an error.
func (n *Node) askVoters(peers []string, term uint64, t tally, need int, lease bool, gen uint64) (tally, error) {
	type answer struct {
		addr     string
		term     uint64
		promised bool
		err      error
	}
	n.probeOrder.sort(peers)
	start := time.Now()
	deadline := start.Add(n.cfg.ProbeTimeout)
	hedge := start.Add(min(n.cfg.ProbeHedge, n.cfg.ProbeTimeout))
	answers := make(chan answer, len(peers)) // late answers never block
	asked, waiting := 0, 0
	helped := func() int {
		if lease {
			return t.promised
		}
		return t.acks
	}
	ask := func(by time.Time) {
		addr := peers[asked]
		asked++
		waiting++
		go func() {
			if !lease {
				t, err := n.probeClient.probe(addr, by)
				answers <- answer{addr, t, false, err}
				return
			}
			t, ok, err := n.leaseClient.lease(addr, by, func() leaseRequest {
				// A transfer that began meanwhile may have released
				// this voter already: promise nothing after it (and the
				// voter refuses a promise below its release anyway).
				if n.leaseState.transferring.Load() > 0 {
					return leaseRequest{op: leaseOpQuery, term: term}
				}
				return leaseRequest{op: leaseOpPromise, term: term, d: n.cfg.LeaseDuration, seq: gen}
			})
			answers <- answer{addr, t, ok, err}
		}()
	}
	// First the peers a majority needs, each given until the hedge.
	for asked < len(peers) && helped()+waiting < need {
		ask(hedge)
	}
	for waiting > 0 {
		a := <-answers
		waiting--
		switch {
		case a.err != nil:
			n.probeOrder.failed(a.addr)
		case a.term > term:
			return t, fmt.Errorf("%w: a voter is in term %d, we lead term %d", ErrNotLeader, a.term, term)
		case a.term == term:
			t.acks++
			if a.promised {
				t.promised++
			}
			if helped() >= need {
				return t, nil
			}
		default: // a voter behind us: its answer proves nothing
			n.probeOrder.failed(a.addr)
		}
		// This peer did not help: ask the next, with the whole round's time.
		for asked < len(peers) && helped()+waiting < need {
			ask(deadline)
		}
	}
	return t, nil
}
