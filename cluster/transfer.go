package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// TransferLeadershipTo hands leadership to the voter id (raft's
// LeadershipTransferToServer) and returns the ID of the node that leads
// once the transfer has finished: id, unless an election raced it.
//
// Asking for this node, which leads already, changes nothing and returns
// its ID without an error: a retried request (the Helm chart's reconcile
// hook re-runs every step) finds its work done rather than a conflict.
//
// raft reports how a transfer failed only in the text of plain errors; they
// are mapped to this package's sentinels here, by what they mean to the
// caller: the target did not catch up or win in time (ErrTimeout, ask
// again), or the leader could not reach it (ErrMemberUnreachable).
func (n *Node) TransferLeadershipTo(ctx context.Context, id string) (string, error) {
	if _, ok := n.Leadership(); !ok {
		return "", ErrNotLeader
	}
	if id == n.cfg.ID {
		return id, nil
	}
	target, err := n.transferTarget(id)
	if err != nil {
		return "", err
	}
	// Registered before the transfer starts, so that the new leader's
	// observation cannot come and go before the wait below looks.
	obs := make(chan raft.Observation, 16)
	observer := raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	n.raft.RegisterObserver(observer)
	defer n.raft.DeregisterObserver(observer)
	term := n.raft.CurrentTerm()

	defer n.beginTransfer()()
	if err := n.await(ctx, func() raft.Future {
		return n.raft.LeadershipTransferToServer(target.ID, target.Address)
	}); err != nil {
		return "", transferError(id, err)
	}
	leader, err := n.awaitNewLeader(ctx, obs, term)
	if err != nil {
		return "", fmt.Errorf("leadership transfer to %q finished, but no new leader was known: %w", id, err)
	}
	switch leader {
	case id:
		n.log.Info("transferred leadership", "to", id)
		return leader, nil
	case n.cfg.ID:
		return "", fmt.Errorf("%w: leadership transfer to %q: this node was elected again in the election that followed; ask again", ErrTimeout, id)
	}
	return "", fmt.Errorf("%w: leadership transfer to %q: %q won the election that followed; ask again (it leads now)", ErrNotLeader, id, leader)
}

// transferTarget is the server id in the current configuration, if it may
// lead: a voter that is not the cluster's standby.
func (n *Node) transferTarget(id string) (raft.Server, error) {
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return raft.Server{}, mapRaftError(err)
	}
	if sb, ok := n.fsm.StandbyInfo(); ok && sb.ID == id {
		return raft.Server{}, fmt.Errorf("%w: %q is the cluster's disaster-recovery standby, a non-voter: leadership goes only to voters", ErrMemberConflict, id)
	}
	for _, s := range cf.Configuration().Servers {
		if s.ID != raft.ServerID(id) {
			continue
		}
		if s.Suffrage != raft.Voter {
			return raft.Server{}, fmt.Errorf("%w: %q is a non-voting member: leadership goes only to voters", ErrMemberConflict, id)
		}
		return s, nil
	}
	return raft.Server{}, fmt.Errorf("%w: %q is not in the raft configuration", ErrMemberNotFound, id)
}

// transferError maps what LeadershipTransferToServer's future answered.
// await has mapped raft's sentinels already (not the leader, shut down,
// enqueue timeout); the rest are raft's plain errors, recognised by their
// text in raft v1.7.3 (raft.go: leaderLoop and leadershipTransfer).
func transferError(id string, err error) error {
	for _, known := range []error{ErrNotLeader, ErrShutdown, ErrTimeout, ErrLeadershipLost} {
		if errors.Is(err, known) {
			return fmt.Errorf("leadership transfer to %q: %w", id, err)
		}
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "leadership transfer timeout"):
		return fmt.Errorf("%w: leadership transfer to %q did not finish within one election timeout (it had not caught up, or did not win): %v", ErrTimeout, id, err)
	case strings.Contains(msg, "cannot find replication state"):
		return fmt.Errorf("%w: %q left the raft configuration during the transfer: %v", ErrMemberNotFound, id, err)
	}
	return fmt.Errorf("%w: leadership transfer to %q: %v", ErrMemberUnreachable, id, err)
}

// awaitNewLeader waits until this node, which has just stepped down, knows
// the leader of a term after term (obs tells of each change; raft may drop
// observations to a full channel, so a slow tick looks again). The term
// matters: raft answers the transfer's future before it clears this node's
// own leadership, so for a moment the old leader still names itself.
func (n *Node) awaitNewLeader(ctx context.Context, obs <-chan raft.Observation, term uint64) (string, error) {
	tick := time.NewTicker(n.cfg.HeartbeatTimeout)
	defer tick.Stop()
	for {
		if _, id := n.raft.LeaderWithID(); id != "" && n.raft.CurrentTerm() > term {
			if string(id) != n.cfg.ID || n.raft.State() == raft.Leader {
				return string(id), nil
			}
		}
		select {
		case <-obs:
		case <-tick.C:
		case <-ctx.Done():
			return "", fmt.Errorf("%w: %v", ErrTimeout, ctx.Err())
		case <-n.shutdownCh:
			return "", ErrShutdown
		}
	}
}
