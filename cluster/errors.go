package cluster

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
)

// Errors of the cluster layer. Every raft error that means "ask the leader"
// is mapped to one of these so that the layers above never import raft.
var (
	// ErrNotLeader: this node is not the leader (or not yet a serving
	// one); the request should go to the leader.
	ErrNotLeader = errors.New("not the leader")
	// ErrLeadershipLost: leadership was lost while the entry was in
	// flight. The entry may still commit, so its outcome is unknown: a
	// range it carried must never be handed out, and a retry may waste a
	// range (a gap) but never duplicate one.
	ErrLeadershipLost = errors.New("leadership lost while the command was in flight; outcome unknown")
	// ErrNotConfirmed: a quorum of voters did not confirm this node's
	// leadership in time (a partition, or voters down).
	ErrNotConfirmed = errors.New("leadership not confirmed by a quorum")
	// ErrTimeout: the command did not finish before the deadline; its
	// outcome is unknown.
	ErrTimeout = errors.New("timed out; outcome unknown")
	// ErrShutdown: the node is shutting down.
	ErrShutdown = errors.New("node is shutting down")
	// ErrMemberConflict: a join names an id or address that another member
	// already has.
	ErrMemberConflict = errors.New("member conflict")
	// ErrMemberUnreachable: the leader cannot reach a joining node's Raft
	// port (wrong address, or no certificate from the cluster's CA).
	ErrMemberUnreachable = errors.New("member unreachable")
	// ErrMemberNotFound: no member has that id.
	ErrMemberNotFound = errors.New("member not found")
)

// mapRaftError turns a raft error into one of the errors above, keeping the
// original text for the log.
func mapRaftError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress), errors.Is(err, raft.ErrNotVoter):
		return fmt.Errorf("%w: %v", ErrNotLeader, err)
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrAbortedByRestore):
		return fmt.Errorf("%w: %v", ErrLeadershipLost, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: %v", ErrShutdown, err)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: %v", ErrTimeout, err)
	}
	return err
}
