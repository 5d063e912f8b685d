package server

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
)

// loadGen reserves continuously through every running node until stopped,
// logging every acknowledged range.
type loadGen struct {
	stop     atomic.Bool
	wg       sync.WaitGroup
	log      rangeLog
	failures atomic.Int64
}

func startLoad(tc *testCluster, seq string, workers int, count int64) *loadGen {
	g := &loadGen{}
	for w := 0; w < workers; w++ {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			for i := w; !g.stop.Load() && i < 1_000_000; i++ {
				nodes := tc.running()
				if len(nodes) == 0 {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				n := nodes[i%len(nodes)]
				r, status, err := reserve(n, seq, count)
				if err != nil || status != http.StatusOK {
					g.failures.Add(1)
					time.Sleep(5 * time.Millisecond)
					continue
				}
				g.log.add(r)
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
	target := g.log.len() + n
	deadline := time.Now().Add(timeout)
	for g.log.len() < target {
		if time.Now().After(deadline) {
			t.Fatalf("load made no progress: %d ranges, want %d (failures %d)", g.log.len(), target, g.failures.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCluster5_LeaderKilledTwice_NoRangeReissued(t *testing.T) {
	tc := newTestCluster(t, 5, nil)
	tc.createSequence("orders", nil)
	g := startLoad(tc, "orders", 6, 100)
	defer g.halt()
	for kill := 0; kill < 2; kill++ {
		g.waitProgress(t, 50, 10*time.Second)
		l := tc.leader(10 * time.Second)
		before := g.log.max()
		tc.kill(l.id)
		g.waitProgress(t, 50, 15*time.Second)
		r, status, err := reserve(tc.leader(10*time.Second), "orders", 1)
		if err != nil || status != http.StatusOK {
			t.Fatalf("reserve: %d %v", status, err)
		}
		if r.First <= before {
			t.Fatalf("after killing %s got %+v, not above %d", l.id, r, before)
		}
	}
	g.halt()
	g.log.checkDisjoint(t)
	t.Logf("%d ranges acknowledged, %d failed attempts", g.log.len(), g.failures.Load())
}

// TestCluster_JoinAndRemoveUnderLoad adds a 4th node through a follower's API
// and removes one of the original nodes (then the leader itself) while
// clients reserve through every node.
func TestCluster_JoinAndRemoveUnderLoad(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	tc.createSequence("orders", nil)
	g := startLoad(tc, "orders", 4, 10)
	defer g.halt()
	g.waitProgress(t, 50, 10*time.Second)

	// Join n4 through a follower: the follower forwards to the leader.
	l := tc.leader(10 * time.Second)
	var via *testNode
	for _, n := range tc.running() {
		if n.id != l.id {
			via = n
			break
		}
	}
	n4 := tc.addNode("n4", []string{"http://" + via.httpAddr})
	waitFor(t, 15*time.Second, "n4 to become a voter with metadata", func() bool {
		st, err := l.srv.Node().Status()
		if err != nil {
			return false
		}
		for _, m := range st.Members {
			if m.ID == "n4" && m.Voter && m.HTTPAddr == n4.httpAddr {
				return len(st.Members) == 4
			}
		}
		return false
	})
	tc.waitReady(15 * time.Second)
	g.waitProgress(t, 50, 10*time.Second)

	// Remove a follower that is not n4.
	var victim *testNode
	for _, n := range tc.running() {
		if n.id != l.id && n.id != "n4" {
			victim = n
			break
		}
	}
	status, err := do(http.MethodDelete, "http://"+n4.httpAddr+"/v1/cluster/members/"+victim.id, nil, nil)
	if err != nil || status != http.StatusNoContent {
		t.Fatalf("remove %s: %d %v", victim.id, status, err)
	}
	tc.kill(victim.id)
	g.waitProgress(t, 50, 10*time.Second)

	// Remove the leader itself: it steps down, another takes over.
	l = tc.leader(10 * time.Second)
	status, err = do(http.MethodDelete, "http://"+l.httpAddr+"/v1/cluster/members/"+l.id, nil, nil)
	if err != nil || (status != http.StatusNoContent && status != http.StatusServiceUnavailable) {
		t.Fatalf("remove leader %s: %d %v", l.id, status, err)
	}
	waitFor(t, 15*time.Second, "a new leader after removing "+l.id, func() bool {
		for _, n := range tc.running() {
			if _, ok := n.srv.Issuer().Serving(); ok && n.id != l.id {
				return true
			}
		}
		return false
	})
	tc.kill(l.id)
	g.waitProgress(t, 50, 15*time.Second)
	g.halt()
	g.log.checkDisjoint(t)

	st, err := tc.leader(5 * time.Second).srv.Node().Status()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Members) != 2 {
		t.Fatalf("members after two removals: %+v", st.Members)
	}
	t.Logf("%d ranges acknowledged, %d failed attempts", g.log.len(), g.failures.Load())
}

// TestCluster_SnapshotInstalledOnNewAndLaggingNodes forces snapshots and log
// compaction, then brings in a node that can only catch up from a snapshot:
// a new joiner, and a follower that was down while the log moved on.
func TestCluster_SnapshotInstalledOnNewAndLaggingNodes(t *testing.T) {
	tc := newTestCluster(t, 3, func(id string, cfg *Config) {
		cfg.Cluster.SnapshotThreshold = 8
		cfg.Cluster.TrailingLogs = 4
		cfg.Cluster.SnapshotInterval = 100 * time.Millisecond
		cfg.Issuer.MinBlock = 16 // small blocks: many log entries
		cfg.Issuer.MaxBlock = 16
	})
	tc.createSequence("orders", nil)
	tc.createSequence("invoices", map[string]int64{"start": 1000, "max": 1 << 40})
	l := tc.leader(10 * time.Second)
	var follower *testNode
	for _, n := range tc.running() {
		if n.id != l.id {
			follower = n
		}
	}
	tc.kill(follower.id)

	var log rangeLog
	for i := 0; i < 200; i++ {
		r, status, err := reserve(l, []string{"orders", "invoices"}[i%2], 10)
		if err != nil || status != http.StatusOK {
			t.Fatalf("reserve: %d %v", status, err)
		}
		if i%2 == 0 {
			log.add(r)
		}
	}
	if err := l.srv.Node().Snapshot(context.Background()); err != nil {
		t.Logf("forced snapshot: %v", err)
	}
	ordersBefore := log.max()

	// The lagging follower returns; its log is far behind the leader's
	// compacted log, so it must be sent a snapshot.
	tc.restart(follower.id)
	n5 := tc.addNode("n4", []string{"http://" + l.httpAddr})
	tc.waitReady(20 * time.Second)
	for _, n := range []*testNode{tc.nodes[follower.id], n5} {
		waitFor(t, 15*time.Second, n.id+" to catch up", func() bool {
			seq, ok := n.srv.Node().FSM().Sequence("orders")
			return ok && seq.Issued >= ordersBefore
		})
		inv, ok := n.srv.Node().FSM().Sequence("invoices")
		if !ok || inv.Start != 1000 || inv.Max != 1<<40 {
			t.Fatalf("%s restored invoices as %+v", n.id, inv)
		}
	}
	// Make a node that learned everything from a snapshot the leader.
	for i := 0; i < 20; i++ {
		cur := tc.leader(10 * time.Second)
		if cur.id == n5.id {
			break
		}
		_ = cur.srv.Node().TransferLeadership(context.Background())
		time.Sleep(100 * time.Millisecond)
	}
	var seq api.Sequence
	status, err := do(http.MethodGet, "http://"+n5.httpAddr+"/v1/sequences/orders", nil, &seq)
	if err != nil || status != http.StatusOK || seq.Next == nil || *seq.Next <= ordersBefore {
		t.Fatalf("sequence after snapshot install: %d %v %+v (want next > %d)", status, err, seq, ordersBefore)
	}
	r, status, err := reserve(n5, "orders", 10)
	if err != nil || status != http.StatusOK || r.First <= ordersBefore {
		t.Fatalf("reserve after snapshot install: %d %v %+v (want above %d)", status, err, r, ordersBefore)
	}
	log.add(r)
	log.checkDisjoint(t)
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
