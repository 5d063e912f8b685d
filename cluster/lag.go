package cluster

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// How far a follower is behind its leader (issue #19). A follower's own
// commit index is capped at the last entry in its log, so a node that cannot
// append, or that is replaying a long backlog, looks caught up by it. Every
// AppendEntries the leader sends carries the leader's commit index, whether
// or not the follower can store its entries: leaderWatch reads it off the
// RPCs on their way to Raft, and the lag is that index less this node's
// applied index.

// leaderWatch wraps Raft's transport and records the highest leader commit
// index seen in an AppendEntries or InstallSnapshot request.
type leaderWatch struct {
	*raft.NetworkTransport
	leaderCommit atomic.Uint64

	// seen records, on the leader, what each peer's answers show of its
	// log (standby.go); noPipeline refuses pipelined replication while a
	// standby is recorded; refuse, when it returns an error, answers an
	// RPC with it instead of handing it to Raft (a promoted node's answer
	// to its old cluster). All three are set before Raft starts.
	seen       *replicationSeen
	noPipeline func() bool
	refuse     func(rpc raft.RPC) error
	// onCommit is told of every leader commit index seen (freshStart).
	onCommit func(uint64)
	// promises, when set, holds back votes this node promised not to
	// give or ask for (promise.go); beforeTimeoutNow releases the
	// leader's lease before a transfer's target campaigns.
	promises         *promises
	beforeTimeoutNow func() (after func())
	// onConfigEntry is told before an entry changing the configuration
	// is sent to a follower (the leader drops its lease).
	onConfigEntry func()
	localID       string
	localAddr     string
	log           *slog.Logger

	once     sync.Once
	consumer chan raft.RPC
	stop     chan struct{}
}

func newLeaderWatch(t *raft.NetworkTransport) *leaderWatch {
	return &leaderWatch{NetworkTransport: t, consumer: make(chan raft.RPC), stop: make(chan struct{})}
}

// Consumer hands Raft the transport's RPCs after reading the leader's
// commit index off each. Heartbeats bypass it (they carry no index).
func (w *leaderWatch) Consumer() <-chan raft.RPC {
	w.once.Do(func() { go w.relay(w.NetworkTransport.Consumer()) })
	return w.consumer
}

func (w *leaderWatch) relay(in <-chan raft.RPC) {
	for {
		select {
		case rpc := <-in:
			switch req := rpc.Command.(type) {
			case *raft.AppendEntriesRequest:
				w.sawCommit(req.LeaderCommitIndex)
			case *raft.InstallSnapshotRequest:
				w.sawCommit(req.LastLogIndex)
			}
			if w.refuse != nil {
				if err := w.refuse(rpc); err != nil {
					rpc.Respond(nil, err)
					continue
				}
			}
			rpc, ok := w.guardVote(rpc)
			if !ok {
				continue
			}
			select {
			case w.consumer <- rpc:
			case <-w.stop:
				// The transport answers the caller with its own
				// shutdown error once it closes.
				return
			}
		case <-w.stop:
			return
		}
	}
}

func (w *leaderWatch) sawCommit(index uint64) {
	if w.onCommit != nil {
		w.onCommit(index)
	}
	for {
		cur := w.leaderCommit.Load()
		if index <= cur || w.leaderCommit.CompareAndSwap(cur, index) {
			return
		}
	}
}

// close stops the relay; Raft has stopped reading by then.
func (w *leaderWatch) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
}

// Lag is how many committed entries this node has yet to apply: the
// highest commit index a leader has sent it (its own, on the leader) less
// its applied index.
func (n *Node) Lag() uint64 {
	r := n.started.Load()
	if r == nil {
		return 0
	}
	applied := r.AppliedIndex()
	commit := r.CommitIndex()
	if r.State() != raft.Leader {
		commit = max(commit, n.watch.leaderCommit.Load())
	}
	if commit <= applied {
		return 0
	}
	return commit - applied
}
