package server_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
	"github.com/ticketd/ticketd/server"
)

// loadGen reserves continuously through every running node until stopped,
// logging every acknowledged range.
type loadGen struct {
	stop     atomic.Bool
	wg       sync.WaitGroup
	log      testcluster.RangeLog
	failures atomic.Int64
}

func startLoad(tc *testcluster.Cluster, seq string, workers int, count int64) *loadGen {
	return startLoadOn(tc.Running, seq, workers, count)
}

// startLoadOn is startLoad through the nodes running returns at each
// request.
func startLoadOn(running func() []*testcluster.Node, seq string, workers int, count int64) *loadGen {
	g := &loadGen{}
	for w := 0; w < workers; w++ {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			for i := w; !g.stop.Load() && i < 1_000_000; i++ {
				nodes := running()
				if len(nodes) == 0 {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				n := nodes[i%len(nodes)]
				r, status, err := testcluster.Reserve(n, seq, count)
				if err != nil || status != http.StatusOK {
					g.failures.Add(1)
					time.Sleep(5 * time.Millisecond)
					continue
				}
				g.log.Add(r)
			}
		}()
	}
	return g
}

func (g *loadGen) halt() {
	g.stop.Store(true)
	g.wg.Wait()
}

// waitProgress waits until at least n more ranges have been acknowledged.
func (g *loadGen) waitProgress(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	target := g.log.Len() + n
	testkit.EventuallyErr(t, timeout, 5*time.Millisecond, "load to make progress", func() error {
		if got := g.log.Len(); got < target {
			return fmt.Errorf("%d ranges, want %d (failures %d)", got, target, g.failures.Load())
		}
		return nil
	})
}

func TestCluster5_LeaderKilledTwice_NoRangeReissued(t *testing.T) {
	tc := testcluster.New(t, 5, nil)
	tc.CreateSequence("orders", nil)
	g := startLoad(tc, "orders", 6, 100)
	defer g.halt()
	for kill := 0; kill < 2; kill++ {
		g.waitProgress(t, 50, 10*time.Second)
		l := tc.Leader(10 * time.Second)
		before := g.log.Max()
		tc.Kill(l.ID)
		g.waitProgress(t, 50, 15*time.Second)
		r, status, err := testcluster.Reserve(tc.Leader(10*time.Second), "orders", 1)
		if err != nil || status != http.StatusOK {
			t.Fatalf("reserve: %d %v", status, err)
		}
		if r.First <= before {
			t.Fatalf("after killing %s got %+v, not above %d", l.ID, r, before)
		}
	}
	g.halt()
	g.log.CheckDisjoint(t)
	t.Logf("%d ranges acknowledged, %d failed attempts", g.log.Len(), g.failures.Load())
}

// TestCluster_JoinAndRemoveUnderLoad adds a 4th node through a follower's API
// and removes one of the original nodes (then the leader itself) while
// clients reserve through every node.
func TestCluster_JoinAndRemoveUnderLoad(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	tc.CreateSequence("orders", nil)
	g := startLoad(tc, "orders", 4, 10)
	defer g.halt()
	g.waitProgress(t, 50, 10*time.Second)

	// Join n4 through a follower: the follower forwards to the leader.
	l := tc.Leader(10 * time.Second)
	var via *testcluster.Node
	for _, n := range tc.Running() {
		if n.ID != l.ID {
			via = n
			break
		}
	}
	n4 := tc.AddNode("n4", []string{"http://" + via.HTTPAddr})
	testkit.Eventually(t, 15*time.Second, 20*time.Millisecond, "n4 to become a voter with metadata", func() bool {
		st, err := l.Srv.Node().Status()
		if err != nil {
			return false
		}
		for _, m := range st.Members {
			if m.ID == "n4" && m.Voter && m.HTTPAddr == n4.HTTPAddr {
				return len(st.Members) == 4
			}
		}
		return false
	})
	tc.WaitReady(15 * time.Second)
	g.waitProgress(t, 50, 10*time.Second)

	// Remove a follower that is not n4.
	var victim *testcluster.Node
	for _, n := range tc.Running() {
		if n.ID != l.ID && n.ID != "n4" {
			victim = n
			break
		}
	}
	status, err := tc.Do(http.MethodDelete, tc.URL(n4)+"/v1/cluster/members/"+victim.ID, nil, nil)
	if err != nil || status != http.StatusNoContent {
		t.Fatalf("remove %s: %d %v", victim.ID, status, err)
	}
	tc.Kill(victim.ID)
	g.waitProgress(t, 50, 10*time.Second)

	// Remove the leader itself: it steps down, another takes over.
	l = tc.Leader(10 * time.Second)
	status, err = tc.Do(http.MethodDelete, tc.URL(l)+"/v1/cluster/members/"+l.ID, nil, nil)
	if err != nil || (status != http.StatusNoContent && status != http.StatusServiceUnavailable) {
		t.Fatalf("remove leader %s: %d %v", l.ID, status, err)
	}
	testkit.Eventually(t, 15*time.Second, 20*time.Millisecond, "a new leader after removing "+l.ID, func() bool {
		for _, n := range tc.Running() {
			if _, ok := n.Srv.Issuer().Serving(); ok && n.ID != l.ID {
				return true
			}
		}
		return false
	})
	tc.Kill(l.ID)
	g.waitProgress(t, 50, 15*time.Second)
	g.halt()
	g.log.CheckDisjoint(t)

	st, err := tc.Leader(5 * time.Second).Srv.Node().Status()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Members) != 2 {
		t.Fatalf("members after two removals: %+v", st.Members)
	}
	t.Logf("%d ranges acknowledged, %d failed attempts", g.log.Len(), g.failures.Load())
}

// TestCluster_SnapshotInstalledOnNewAndLaggingNodes forces snapshots and log
// compaction, then brings in a node that can only catch up from a snapshot:
// a new joiner, and a follower that was down while the log moved on.
func TestCluster_SnapshotInstalledOnNewAndLaggingNodes(t *testing.T) {
	tc := testcluster.New(t, 3, func(id string, cfg *server.Config) {
		cfg.Cluster.SnapshotThreshold = 8
		cfg.Cluster.TrailingLogs = 4
		cfg.Cluster.SnapshotInterval = 100 * time.Millisecond
		cfg.Issuer.MinBlock = 16 // small blocks: many log entries
		cfg.Issuer.MaxBlock = 16
	})
	tc.CreateSequence("orders", nil)
	tc.CreateSequence("invoices", map[string]int64{"start": 1000, "max": 1 << 40})
	l := tc.Leader(10 * time.Second)
	var follower *testcluster.Node
	for _, n := range tc.Running() {
		if n.ID != l.ID {
			follower = n
		}
	}
	tc.Kill(follower.ID)

	var log testcluster.RangeLog
	for i := 0; i < 200; i++ {
		r, status, err := testcluster.Reserve(l, []string{"orders", "invoices"}[i%2], 10)
		if err != nil || status != http.StatusOK {
			t.Fatalf("reserve: %d %v", status, err)
		}
		if i%2 == 0 {
			log.Add(r)
		}
	}
	if err := l.Srv.Node().Snapshot(context.Background()); err != nil {
		t.Logf("forced snapshot: %v", err)
	}
	ordersBefore := log.Max()

	// The lagging follower returns; its log is far behind the leader's
	// compacted log, so it must be sent a snapshot.
	tc.Restart(follower.ID)
	n5 := tc.AddNode("n4", []string{"http://" + l.HTTPAddr})
	tc.WaitReady(20 * time.Second)
	for _, n := range []*testcluster.Node{tc.Node(follower.ID), n5} {
		testkit.Eventually(t, 15*time.Second, 20*time.Millisecond, n.ID+" to catch up", func() bool {
			seq, ok := n.Srv.Node().FSM().Sequence("orders")
			return ok && seq.Issued >= ordersBefore
		})
		inv, ok := n.Srv.Node().FSM().Sequence("invoices")
		if !ok || inv.Start != 1000 || inv.Max != 1<<40 {
			t.Fatalf("%s restored invoices as %+v", n.ID, inv)
		}
	}
	// Make a node that learned everything from a snapshot the leader.
	for i := 0; i < 20; i++ {
		cur := tc.Leader(10 * time.Second)
		if cur.ID == n5.ID {
			break
		}
		_ = cur.Srv.Node().TransferLeadership(context.Background())
		time.Sleep(100 * time.Millisecond)
	}
	var seq api.Sequence
	status, err := tc.Do(http.MethodGet, tc.URL(n5)+"/v1/sequences/orders", nil, &seq)
	if err != nil || status != http.StatusOK || seq.Next == nil || *seq.Next <= ordersBefore {
		t.Fatalf("sequence after snapshot install: %d %v %+v (want next > %d)", status, err, seq, ordersBefore)
	}
	r, status, err := testcluster.Reserve(n5, "orders", 10)
	if err != nil || status != http.StatusOK || r.First <= ordersBefore {
		t.Fatalf("reserve after snapshot install: %d %v %+v (want above %d)", status, err, r, ordersBefore)
	}
	log.Add(r)
	log.CheckDisjoint(t)
}
