package server_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/cluster"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
	"github.com/ticketd/ticketd/server"
)

// Issue 43, G1 and G3: every node of a StatefulSet gets the same seed list
// (--initial-cluster naming the first three) and the same --join; the nodes
// beyond the seeds join, and a node restarted on the data dir it kept after
// it was removed asks the cluster, not its own copy of the configuration,
// whether it is a member.

// seedsOf is the seed list of tc's bootstrapped nodes and their API URLs.
func seedsOf(tc *testcluster.Cluster, ids ...string) ([]cluster.Peer, []string) {
	var peers []cluster.Peer
	var urls []string
	for _, id := range ids {
		n := tc.Node(id)
		peers = append(peers, cluster.Peer{ID: id, RaftAddr: n.RaftAddr})
		urls = append(urls, tc.URL(n))
	}
	return peers, urls
}

// waitVoters waits until the serving leader's configuration is exactly ids,
// all voters, each with its API address recorded.
func waitVoters(t *testing.T, tc *testcluster.Cluster, ids ...string) {
	t.Helper()
	want := slices.Clone(ids)
	slices.Sort(want)
	testkit.EventuallyErr(t, 30*time.Second, 20*time.Millisecond, fmt.Sprintf("the leader's configuration to be the voters %v", want), func() error {
		l := tc.Leader(10 * time.Second)
		st, err := l.Srv.Node().Status()
		if err != nil {
			return err
		}
		var got []string
		for _, m := range st.Members {
			if !m.Voter || m.HTTPAddr != tc.Node(m.ID).HTTPAddr {
				return fmt.Errorf("member %+v is not a voter with its API address", m)
			}
			got = append(got, m.ID)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("%s's configuration: %v", l.ID, got)
		}
		return nil
	})
}

// removeMember removes id through the leader's API.
func removeMember(t *testing.T, tc *testcluster.Cluster, id string) {
	t.Helper()
	testkit.EventuallyErr(t, 15*time.Second, 50*time.Millisecond, "remove "+id, func() error {
		status, err := tc.Do(http.MethodDelete, tc.URL(tc.Leader(10*time.Second))+"/v1/cluster/members/"+id, nil, nil)
		if err != nil || status != http.StatusNoContent {
			return fmt.Errorf("status %d, err %v", status, err)
		}
		return nil
	})
}

// TestCluster_NodesOutsideTheSeeds_JoinAsVoters: n4 and n5, started with
// the seeds' --initial-cluster (n1..n3) and --join, bootstrap nothing and join
// as voters; the five serve as one cluster.
func TestCluster_NodesOutsideTheSeeds_JoinAsVoters(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	seeds, join := seedsOf(tc, "n1", "n2", "n3")
	for _, id := range []string{"n4", "n5"} {
		tc.AddNodeWith(id, join, func(cfg *server.Config) { cfg.Cluster.InitialCluster = seeds })
	}
	waitVoters(t, tc, "n1", "n2", "n3", "n4", "n5")
	tc.WaitReady(20 * time.Second)
	for _, id := range []string{"n4", "n5"} {
		if l := tc.Node(id).Srv.Node().LeaderID(); l == "" || l == "n4" || l == "n5" {
			t.Fatalf("%s follows %q, want one of the seeds", id, l)
		}
	}
	tc.CreateSequence("orders", nil)
	if r, status, err := testcluster.Reserve(tc.Node("n5"), "orders", 10); err != nil || status != http.StatusOK || r.First < 1 {
		t.Fatalf("reserve through n5: %+v %d %v", r, status, err)
	}
}

// TestCluster_RemovedWhileDown_RestartedOnItsDataWithJoin_JoinsAgain: n3
// is stopped, removed from the cluster, then restarted on the data dir it
// kept, whose Raft configuration still names it, with --join: it asks the
// cluster, which has it no longer, and so joins again and catches up. On
// the old code it trusted its own configuration and stayed out for good.
func TestCluster_RemovedWhileDown_RestartedOnItsDataWithJoin_JoinsAgain(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	tc.CreateSequence("orders", nil)
	victim := "n3"
	if tc.Leader(10*time.Second).ID == victim {
		victim = "n2"
	}
	var others []string
	for _, id := range []string{"n1", "n2", "n3"} {
		if id != victim {
			others = append(others, id)
		}
	}
	_, join := seedsOf(tc, others...)
	tc.Kill(victim)
	removeMember(t, tc, victim)
	waitVoters(t, tc, others...)
	// Entries the victim never saw, for it to catch up on.
	before, status, err := testcluster.Reserve(tc.Leader(10*time.Second), "orders", 100)
	if err != nil || status != http.StatusOK {
		t.Fatalf("reserve while %s is out: %d %v", victim, status, err)
	}

	tc.RestartWith(victim, func(cfg *server.Config) { cfg.Join = join })
	waitVoters(t, tc, "n1", "n2", "n3")
	tc.WaitReady(20 * time.Second)
	after, status, err := testcluster.Reserve(tc.Node(victim), "orders", 1)
	if err != nil || status != http.StatusOK || after.First <= before.Last {
		t.Fatalf("reserve through %s after it rejoined: %+v %d %v, want above %d", victim, after, status, err, before.Last)
	}
}

// TestCluster_RemovedWhileRunning_NeverRejoinsByItself: n4 joined through
// --join; removed by an operator while it runs, it stays out. The ask at
// start is answered once and never repeated, so the node does not undo the
// removal (a scale-down removes a pod's member before it deletes the pod).
// A node that did ask again would be back within a few metadata intervals
// (100 ms each here); the test watches for thirty. (Something that must not
// happen can only be watched for a while: a false pass is possible, a false
// failure is not.)
func TestCluster_RemovedWhileRunning_NeverRejoinsByItself(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	seeds, join := seedsOf(tc, "n1", "n2", "n3")
	tc.AddNodeWith("n4", join, func(cfg *server.Config) { cfg.Cluster.InitialCluster = seeds })
	waitVoters(t, tc, "n1", "n2", "n3", "n4")
	removeMember(t, tc, "n4")
	waitVoters(t, tc, "n1", "n2", "n3")
	for i := 0; i < 30; i++ {
		time.Sleep(100 * time.Millisecond)
		for _, id := range []string{"n1", "n2", "n3"} {
			own, err := tc.Node(id).Srv.Node().Configuration()
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(own, func(p cluster.Peer) bool { return p.ID == "n4" }) {
				t.Fatalf("after %d ms, %s's configuration names n4 again: the removed node rejoined by itself", (i+1)*100, id)
			}
		}
	}
}

// TestCluster_NodeOfAnotherCluster_NeverAsksToJoin: b1 holds the Raft state
// of a cluster of its own; restarted with --join pointing at another
// cluster, it refuses to ask to be added there, since that cluster's leader
// would overwrite b1's log with its own, and says why.
func TestCluster_NodeOfAnotherCluster_NeverAsksToJoin(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	_, join := seedsOf(tc, "n1", "n2", "n3")
	tc.AddNodeWith("b1", nil, func(cfg *server.Config) {
		cfg.Cluster.InitialCluster = nil
		cfg.Cluster.Bootstrap = true
	})
	testkit.Eventually(t, 10*time.Second, 20*time.Millisecond, "b1 to lead its own cluster", func() bool {
		_, ok := tc.Node("b1").Srv.Node().Leadership()
		return ok
	})
	tc.Kill("b1")
	logs := &syncBuffer{}
	tc.RestartWith("b1", func(cfg *server.Config) {
		cfg.Cluster.InitialCluster = nil
		cfg.Join = join
		// Slow timers: b1 does not lead its own cluster again (which would
		// end its ask) before it has asked.
		cfg.Cluster.HeartbeatTimeout, cfg.Cluster.ElectionTimeout = time.Minute, time.Minute
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	testkit.Eventually(t, 15*time.Second, 20*time.Millisecond, "b1 to say it will not join another cluster", func() bool {
		return strings.Contains(logs.String(), "shares no member with this node's Raft configuration")
	})
	for _, id := range []string{"n1", "n2", "n3"} {
		own, err := tc.Node(id).Srv.Node().Configuration()
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(own, func(p cluster.Peer) bool { return p.ID == "b1" }) {
			t.Fatalf("%s's configuration names b1: a node of another cluster was added", id)
		}
	}
}

// syncBuffer is a log destination that tests read while the node writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
