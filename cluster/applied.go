package cluster

import (
	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/fsm"
)

// appliedFSM tells the node of entries whose effect reaches past the state
// machine, on raft's FSM goroutine, as each applies and before anyone
// waiting on the entry hears of it. That is the one place every such entry
// passes on the node that serves, whoever proposed it and whether or not
// its proposer still waits for the answer: a caller that hangs up ends the
// wait in Apply, never the entry (issue 30).
type appliedFSM struct {
	instrumentedFSM
	n *Node
}

func (f appliedFSM) Apply(l *raft.Log) any {
	// The mark counts the blocks this leader already holds, so a raise
	// into one moves no mark: the leader cuts what it holds at or below
	// the value. It does so before the entry applies, so that no read can
	// show the raised mark while the leader still holds IDs below it.
	if l.Type == raft.LogCommand && f.n.listener != nil {
		if sequence, atLeast, ok := f.FSM.PendingRaise(l.Data); ok {
			f.n.listener.RaiseApplying(sequence, atLeast)
		}
	}
	resp := f.FSM.Apply(l)
	if l.Type == raft.LogCommand && len(l.Data) > 0 && fsm.CommandType(l.Data[0]) == fsm.CommandStandby {
		// The standby's state changed: waits for it look again, and a
		// fence ends this stretch of leadership for good (establish
		// refuses to serve a fenced cluster).
		f.n.seen.wake()
		if _, fenced := f.FSM.Fenced(); fenced {
			f.n.requestReestablish()
		}
		if sb, ok := f.FSM.StandbyInfo(); ok && sb.ID == f.n.cfg.ID && sb.InSync() && sb.SinceIndex == l.Index {
			f.n.fresh.inSync(l.Index)
		}
	}
	switch resp.(type) {
	case fsm.RestoreResult:
		// The state changed under the issuer and the lessor: the leader
		// loop ends this stretch of leadership and starts a new one
		// after a Barrier. Asked for here, never waited on: the leader
		// loop's Barrier needs this goroutine.
		f.n.requestReestablish()
	}
	return resp
}
