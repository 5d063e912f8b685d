package cluster

import (
	"time"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/fsm"
)

// LeaderHTTPAddr returns the leader's ID and API address as the replicated
// metadata records it.
func (n *Node) LeaderHTTPAddr() (id, httpAddr string, ok bool) {
	_, lid := n.raft.LeaderWithID()
	if lid == "" {
		return "", "", false
	}
	m, found := n.fsm.Member(string(lid))
	if !found || m.HTTPAddr == "" {
		return string(lid), "", false
	}
	return string(lid), m.HTTPAddr, true
}

// LeaderID returns the ID of the leader this node knows of, or "".
func (n *Node) LeaderID() string {
	_, id := n.raft.LeaderWithID()
	return string(id)
}

// Status returns this node's view of the cluster.
func (n *Node) Status() (domain.ClusterStatus, error) {
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return domain.ClusterStatus{}, mapRaftError(err)
	}
	st := domain.ClusterStatus{
		Node:          n.cfg.ID,
		State:         n.raft.State().String(),
		Leader:        n.LeaderID(),
		Term:          n.raft.CurrentTerm(),
		CommitIndex:   n.raft.CommitIndex(),
		AppliedIndex:  n.raft.AppliedIndex(),
		RaftTLS:       n.cfg.TLS != nil,
		Members:       []domain.Member{},
		LagEntries:    n.Lag(),
		Storage:       n.storageStatus(),
		LastContact:   n.lastContact(),
		LeaderChanges: n.leaders.list(),

		Version:             n.cfg.Version,
		FeatureLevel:        int(n.ownLevel()),
		Feature:             domain.FeatureLevel(fsm.LevelInfo(n.ownLevel())),
		ClusterFeatureLevel: int(n.fsm.ClusterLevel()),
	}
	st.Standby = n.standbyStatus()
	st.ThisNodeStandby = st.Standby != nil && st.Standby.ID == n.cfg.ID
	if fe, ok := n.fsm.Fenced(); ok {
		st.Fence = &domain.Fence{Standby: fe.Standby, Index: fe.Index, Reason: fe.Reason}
		if fe.AtMs != 0 {
			st.Fence.At = time.UnixMilli(fe.AtMs).UTC()
		}
	}
	for _, p := range n.fsm.Promotions() {
		dp := domain.Promotion{Standby: p.Standby, AtIndex: p.AtIndex, Advance: p.Advance, State: p.State, TokenFloor: p.TokenFloor}
		if p.AtMs != 0 {
			dp.At = time.UnixMilli(p.AtMs).UTC()
		}
		st.Promotions = append(st.Promotions, dp)
	}
	for _, s := range cf.Configuration().Servers {
		m := domain.Member{ID: string(s.ID), RaftAddr: string(s.Address), Voter: s.Suffrage == raft.Voter}
		if md, ok := n.fsm.Member(string(s.ID)); ok {
			m.HTTPAddr = md.HTTPAddr
		}
		if l, ok := n.levels.get(string(s.ID)); ok {
			m.Version, m.FeatureLevel, m.LevelReport = l.Version, int(l.Level), l.Report
		}
		st.Members = append(st.Members, m)
	}
	return st, nil
}

// lastContact is how long ago this node last heard from a leader: 0 on the
// leader, -1 if never (raft's LastContact is updated only on followers).
func (n *Node) lastContact() time.Duration {
	if n.raft.State() == raft.Leader {
		return 0
	}
	t := n.raft.LastContact()
	if t.IsZero() {
		return -1
	}
	return time.Since(t)
}

// CaughtUp reports whether this node knows a leader and has applied every
// entry it knows to be committed.
func (n *Node) CaughtUp() bool {
	if n.LeaderID() == "" {
		return false
	}
	return n.raft.AppliedIndex() >= n.raft.CommitIndex()
}
