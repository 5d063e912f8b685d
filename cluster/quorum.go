package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// VerifyLeader confirms, with evidence gathered after the call began, that
// this node is still the leader, and returns the term it leads in.
func (n *Node) VerifyLeader(ctx context.Context) (uint64, error) {
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
func (n *Node) probeRound() (uint64, error) {
	if n.raft.State() != raft.Leader {
		return 0, ErrNotLeader
	}
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
	if acks < need {
		var err error
		if acks, err = n.askVoters(peers, term, acks, need); err != nil {
			return 0, err
		}
	}
	if acks < need {
		return 0, fmt.Errorf("%w: %d of %d voters answered in term %d", ErrNotConfirmed, acks, voters, term)
	}
	if n.raft.State() != raft.Leader || n.raft.CurrentTerm() != term {
		return 0, ErrNotLeader
	}
	return term, nil
}

// askVoters probes peers until acks reaches need or no peer is left to ask,
// and returns acks. A peer in a later term is an error.
func (n *Node) askVoters(peers []string, term uint64, acks, need int) (int, error) {
	type answer struct {
		addr string
		term uint64
		err  error
	}
	n.probeOrder.sort(peers)
	start := time.Now()
	deadline := start.Add(n.cfg.ProbeTimeout)
	hedge := start.Add(min(n.cfg.ProbeHedge, n.cfg.ProbeTimeout))
	answers := make(chan answer, len(peers)) // late answers never block
	asked, waiting := 0, 0
	ask := func(by time.Time) {
		addr := peers[asked]
		asked++
		waiting++
		go func() {
			t, err := n.probeClient.probe(addr, by)
			answers <- answer{addr, t, err}
		}()
	}
	// First the peers a majority needs, each given until the hedge.
	for asked < len(peers) && acks+waiting < need {
		ask(hedge)
	}
	for waiting > 0 {
		a := <-answers
		waiting--
		switch {
		case a.err != nil:
			n.probeOrder.failed(a.addr)
		case a.term > term:
			return acks, fmt.Errorf("%w: a voter is in term %d, we lead term %d", ErrNotLeader, a.term, term)
		case a.term == term:
			acks++
			if acks >= need {
				return acks, nil
			}
		default: // a voter behind us: its answer proves nothing
			n.probeOrder.failed(a.addr)
		}
		// This peer did not help: ask the next, with the whole round's time.
		for asked < len(peers) && acks+waiting < need {
			ask(deadline)
		}
	}
	return acks, nil
}
