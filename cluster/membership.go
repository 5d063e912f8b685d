package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/fsm"
)

// Join adds a voter, or only updates its metadata when it is already a
// voter at that address (a restarted or re-registering node).
func (n *Node) Join(ctx context.Context, id, raftAddr, httpAddr string) error {
	if _, ok := n.Leadership(); !ok {
		return ErrNotLeader
	}
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return mapRaftError(err)
	}
	if sb, ok := n.fsm.StandbyInfo(); ok && sb.ID == id {
		return fmt.Errorf("%w: %q is the cluster's standby; it becomes a voter only by promotion (ticketd promote) once the primary is lost, or remove it first", ErrMemberConflict, id)
	}
	present := false
	for _, s := range cf.Configuration().Servers {
		switch {
		case s.ID == raft.ServerID(id) && s.Suffrage != raft.Voter:
			return fmt.Errorf("%w: %q is a non-voting member; remove it first", ErrMemberConflict, id)
		case s.ID == raft.ServerID(id) && s.Address == raft.ServerAddress(raftAddr):
			present = true
		case s.ID == raft.ServerID(id):
			return fmt.Errorf("%w: member %q already has raft address %s; remove it first", ErrMemberConflict, id, s.Address)
		case s.Address == raft.ServerAddress(raftAddr):
			return fmt.Errorf("%w: raft address %s already belongs to member %q", ErrMemberConflict, raftAddr, s.ID)
		}
	}
	if !present {
		// Refuse a voter this leader cannot reach on its Raft port (over
		// mutual TLS when that is on): a wrong address or a host without
		// the cluster's CA would only lower the cluster's fault tolerance.
		if _, err := n.probeClient.probe(raftAddr, time.Now().Add(n.cfg.ProbeTimeout)); err != nil {
			return fmt.Errorf("%w: raft address %s: %v", ErrMemberUnreachable, raftAddr, err)
		}
		if err := n.addServer(ctx, id, raftAddr, true); err != nil {
			return err
		}
		n.log.Info("added voter", "id", id, "raft_addr", raftAddr)
	}
	return n.recordMetadata(ctx, id, raftAddr, httpAddr)
}

// addServer adds a voter, or a non-voter, whose binary knows the cluster's
// feature level, holding levelMu so that the level does not rise between the
// check and the change of configuration (maybeRaiseLevel holds it from its
// probe to its entry's commit).
func (n *Node) addServer(ctx context.Context, id, raftAddr string, voter bool) error {
	n.levelMu.Lock()
	defer n.levelMu.Unlock()
	if err := n.checkJoinLevel(id, raftAddr); err != nil {
		return err
	}
	return n.await(ctx, func() raft.Future {
		if voter {
			// No lease outlives the configuration whose majority gave it.
			n.dropLease()
			return n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(raftAddr), 0, n.cfg.ElectionTimeout)
		}
		return n.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(raftAddr), 0, n.cfg.ElectionTimeout)
	})
}

// recordMetadata records a member's addresses unless they are recorded
// already.
func (n *Node) recordMetadata(ctx context.Context, id, raftAddr, httpAddr string) error {
	want := fsm.Member{ID: id, RaftAddr: raftAddr, HTTPAddr: httpAddr}
	if m, ok := n.fsm.Member(id); ok && m == want {
		return nil
	}
	_, err := n.Apply(ctx, fsm.EncodeSetMember(fsm.SetMember(want)))
	return err
}

// UpdateMetadata records the addresses of a node that is already in the
// Raft configuration. Unlike Join it never adds a voter, so a node that was
// removed cannot bring itself back by re-registering.
func (n *Node) UpdateMetadata(ctx context.Context, id, raftAddr, httpAddr string) error {
	if _, ok := n.Leadership(); !ok {
		return ErrNotLeader
	}
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return mapRaftError(err)
	}
	for _, s := range cf.Configuration().Servers {
		if s.ID != raft.ServerID(id) {
			continue
		}
		if s.Address != raft.ServerAddress(raftAddr) {
			return fmt.Errorf("%w: member %q has raft address %s, not %s", ErrMemberConflict, id, s.Address, raftAddr)
		}
		return n.recordMetadata(ctx, id, raftAddr, httpAddr)
	}
	return fmt.Errorf("%w: %q is not in the raft configuration", ErrMemberNotFound, id)
}

// Remove removes a member from the cluster. Removing the leader itself makes
// it step down once the change commits.
func (n *Node) Remove(ctx context.Context, id string) error {
	if _, ok := n.Leadership(); !ok {
		return ErrNotLeader
	}
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return mapRaftError(err)
	}
	found := false
	for _, s := range cf.Configuration().Servers {
		if s.ID == raft.ServerID(id) {
			found = true
		}
	}
	if !found {
		_, isMember := n.fsm.Member(id)
		// A standby's record without a server: a join that failed after
		// recording it, whose taking back failed too. Removing clears it.
		sb, isStandby := n.fsm.StandbyInfo()
		if !isMember && (!isStandby || sb.ID != id) {
			return fmt.Errorf("%w: %q", ErrMemberNotFound, id)
		}
	}
	// Metadata first: once the leader has removed itself it can no longer
	// apply anything. A standby's record goes with it, which lifts the
	// bound and every wait on it.
	if sb, ok := n.fsm.StandbyInfo(); ok && sb.ID == id {
		if err := n.removeStandbyRecord(ctx, sb); err != nil {
			return err
		}
	}
	if _, err := n.Apply(ctx, fsm.EncodeRemoveMember(fsm.RemoveMember{ID: id})); err != nil {
		return err
	}
	if !found {
		return nil
	}
	if id == n.cfg.ID {
		// The leader removing itself steps down once the change commits:
		// as for a transfer, it lets the others vote at once instead of
		// waiting out their promises (a failover shorter by up to the
		// lease, measured by the fault suite's member-remove-leader).
		n.releaseForTransfer()()
	}
	if err := n.await(ctx, func() raft.Future {
		n.dropLease()
		return n.raft.RemoveServer(raft.ServerID(id), 0, n.cfg.ElectionTimeout)
	}); err != nil {
		return err
	}
	n.log.Info("removed member", "id", id)
	return nil
}

// TransferLeadership hands leadership to another voter and waits for it.
func (n *Node) TransferLeadership(ctx context.Context) error {
	defer n.beginTransfer()()
	return n.await(ctx, n.raft.LeadershipTransfer)
}

// IsMember reports whether the Raft configuration names this node.
func (n *Node) IsMember() bool {
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return false
	}
	for _, s := range cf.Configuration().Servers {
		if s.ID == raft.ServerID(n.cfg.ID) {
			return true
		}
	}
	return false
}

func (n *Node) voterCount() int {
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return 0
	}
	c := 0
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			c++
		}
	}
	return c
}

// removeStandbyRecord removes the standby's record. Removing it ends every
// wait on the standby as an out-of-sync record does, and the standby may
// never hear of it: so for a standby in sync it comes no earlier than a
// certificate of any leader allows (standbycert.go). The leader stops
// certifying and waits that out (at most the standby's timeout); should
// the wait or the entry fail, certifying resumes.
func (n *Node) removeStandbyRecord(ctx context.Context, sb fsm.Standby) error {
	if sb.InSync() {
		until, resume := n.seen.stopCerts(time.Duration(sb.TimeoutMs) * time.Millisecond)
		// The wait can pass a request's deadline (the default timeout is
		// the API's): it is bounded by itself instead, so that a caller
		// that gives up does not undo a removal half-way.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Until(until)+2*n.cfg.ElectionTimeout)
		defer cancel()
		if wait := time.Until(until); wait > 0 {
			n.log.Info("removing an in-sync standby: waiting out the certificates of its trust horizon first", "standby", sb.ID, "wait", wait.Round(time.Millisecond))
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				resume()
				return fmt.Errorf("%w: removing in-sync standby %q waits until %s, when the last certificate of its trust horizon expires: %v", ErrTimeout, sb.ID, time.Now().Add(time.Until(until)).UTC().Format(time.RFC3339), ctx.Err())
			case <-n.shutdownCh:
				t.Stop()
				return ErrShutdown
			}
		}
		if _, err := n.Apply(ctx, fsm.EncodeStandbyOp(fsm.StandbyOp{Op: fsm.StandbyRemove, ID: sb.ID, Stamp: n.Stamp()})); err != nil {
			resume()
			return err
		}
		return nil
	}
	_, err := n.Apply(ctx, fsm.EncodeStandbyOp(fsm.StandbyOp{Op: fsm.StandbyRemove, ID: sb.ID, Stamp: n.Stamp()}))
	return err
}
