package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/internal/testkit"
)

// servingLeader waits until exactly want serves as leader among nodes.
func servingLeader(t *testing.T, nodes []*Node, want *Node) {
	t.Helper()
	testkit.Eventually(t, 15*time.Second, 10*time.Millisecond, want.ID()+" serving as the only leader", func() bool {
		for _, n := range nodes {
			if _, ok := n.Leadership(); ok != (n == want) {
				return false
			}
		}
		return true
	})
}

// Leadership goes to the voter named, not to one raft picks: each follower
// in turn, then back to the first leader.
func TestTransferLeadershipTo_NamedVoterLeads(t *testing.T) {
	nodes := startNodes(t, 3, raceTimings)
	first := leaderOf(t, nodes)
	servingLeader(t, nodes, first)
	var order []*Node
	for _, n := range nodes {
		if n != first {
			order = append(order, n)
		}
	}
	order = append(order, first)
	cur := first
	for _, to := range order {
		got, err := cur.TransferLeadershipTo(t.Context(), to.ID())
		if err != nil {
			t.Fatalf("%s: transfer to %s: %v", cur.ID(), to.ID(), err)
		}
		if got != to.ID() {
			t.Fatalf("%s: transfer to %s says %q leads", cur.ID(), to.ID(), got)
		}
		servingLeader(t, nodes, to)
		if id := to.LeaderID(); id != to.ID() {
			t.Fatalf("after the transfer %s names %q as leader", to.ID(), id)
		}
		cur = to
	}
}

// What cannot lead is refused before anything moves, with an error that
// names the target and says why; the leader asked for itself answers that
// it leads, and a follower sends the caller to the leader.
func TestTransferLeadershipTo_RefusesWhatCannotLead(t *testing.T) {
	nodes := startNodes(t, 3, raceTimings)
	l := leaderOf(t, nodes)
	servingLeader(t, nodes, l)
	var followers []*Node
	for _, n := range nodes {
		if n != l {
			followers = append(followers, n)
		}
	}

	if got, err := l.TransferLeadershipTo(t.Context(), l.ID()); err != nil || got != l.ID() {
		t.Fatalf("transfer to the leader itself: %q, %v; want %q and no error", got, err, l.ID())
	}
	if _, err := followers[0].TransferLeadershipTo(t.Context(), followers[1].ID()); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("transfer asked of a follower: %v, want ErrNotLeader", err)
	}
	_, err := l.TransferLeadershipTo(t.Context(), "nope")
	if !errors.Is(err, ErrMemberNotFound) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("transfer to an unknown id: %v, want ErrMemberNotFound naming it", err)
	}
	// A non-voter at an address nothing answers: refused by its suffrage,
	// before any RPC could fail.
	if err := l.await(t.Context(), func() raft.Future {
		return l.raft.AddNonvoter("watcher", "127.0.0.1:1", 0, 0)
	}); err != nil {
		t.Fatalf("add a non-voter: %v", err)
	}
	_, err = l.TransferLeadershipTo(t.Context(), "watcher")
	if !errors.Is(err, ErrMemberConflict) || !strings.Contains(err.Error(), `"watcher" is a non-voting member`) {
		t.Fatalf("transfer to a non-voter: %v, want ErrMemberConflict saying it does not vote", err)
	}
	servingLeader(t, nodes, l)

	// A voter that is down: the transfer fails, as a timeout (it could
	// not catch up) or as unreachable (TimeoutNow found no one), and the
	// leader keeps leading.
	down := followers[1]
	if err := down.Shutdown(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	_, err = l.TransferLeadershipTo(t.Context(), down.ID())
	if !errors.Is(err, ErrTimeout) && !errors.Is(err, ErrMemberUnreachable) {
		t.Fatalf("transfer to a stopped voter: %v, want ErrTimeout or ErrMemberUnreachable", err)
	}
	if !strings.Contains(err.Error(), down.ID()) {
		t.Fatalf("transfer to a stopped voter: %v does not name %s", err, down.ID())
	}
	if _, ok := l.Leadership(); !ok {
		t.Fatalf("%s stopped leading after a failed transfer", l.ID())
	}
}
