//go:build ticketd_faults

package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/server"
)

// The Snowflake service's planted bugs (client.UnsafeSnowflakeFaults, in
// the nodes' generators) make the tests of snowflakefaults_test.go see what
// they guard against: these run the same scenarios with the bug planted
// and require the violation.

// TestPlanted_SnowflakeIgnoreFloor_ServesBelowTheFloor: the restart behind
// the worker id's floor, with the floor ignored: the second tenure serves
// IDs below the first tenure's last one.
func TestPlanted_SnowflakeIgnoreFloor_ServesBelowTheFloor(t *testing.T) {
	var clocks nodeClocks
	tc := testcluster.New(t, 1, func(id string, cfg *server.Config) {
		clocks.tweak(id, cfg)
		cfg.UnsafeSnowflake = client.UnsafeSnowflakeFaults{IgnoreTimestampFloor: true}
	})
	i64 := func(v int64) *int64 { return &v }
	createNamespace(t, tc, "solo", api.NamespaceRequest{MaxWorkers: i64(1), LeaseTTLMs: i64(1000), RecycleDelayMs: i64(1000)})
	n := tc.Running()[0]
	var before int64
	for range 20 {
		out, prob, st, _ := postIDs(t, tc, n, "solo", 100)
		if st != http.StatusOK {
			t.Fatalf("first tenure: %d %+v", st, prob)
		}
		before = out.IDs[len(out.IDs)-1]
	}
	tc.Kill(n.ID)
	clocks.offset(n.ID).Store(int64(-10 * time.Second)) // well behind the first tenure, however slow the restart
	tc.Restart(n.ID)
	tc.WaitReady(10 * time.Second)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		out, _, st, _ := postIDs(t, tc, n, "solo", 100)
		if st == http.StatusOK && out.IDs[0] <= before {
			t.Logf("planted bug seen: %d after the first tenure's %d", out.IDs[0], before)
			return
		}
	}
	t.Fatal("with the floor ignored, the second tenure never served below the first")
}

// TestPlanted_SnowflakeServeAfterLeaseEnd_ServesPastTheLease: the cut-off
// follower, with its deadline ignored, serves on after the leader ended its
// lease.
func TestPlanted_SnowflakeServeAfterLeaseEnd_ServesPastTheLease(t *testing.T) {
	tc := testcluster.New(t, 3, func(id string, cfg *server.Config) {
		cfg.UnsafeSnowflake = client.UnsafeSnowflakeFaults{ServeAfterLeaseEnd: true}
	})
	i64 := func(v int64) *int64 { return &v }
	createNamespace(t, tc, "orders", api.NamespaceRequest{LeaseTTLMs: i64(1000), RecycleDelayMs: i64(2000)})
	leader := tc.Leader(10 * time.Second)
	var cut *testcluster.Node
	for _, n := range tc.Running() {
		if n != leader {
			cut = n
		}
	}
	first, prob, st, _ := postIDs(t, tc, cut, "orders", 1)
	if st != http.StatusOK {
		t.Fatalf("before the cut: %d %+v", st, prob)
	}
	tc.Net.Isolate(cut.ID)
	var endedMs int64
	for deadline := time.Now().Add(15 * time.Second); endedMs == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the leader never ended the cut-off node's lease")
		}
		for _, l := range listLeases(t, tc, leader, "orders") {
			if l.WorkerID == first.WorkerID && l.State == "ended" {
				endedMs = l.ReleasedMs
			}
		}
	}
	if _, _, st, _ := postIDs(t, tc, cut, "orders", 1); st != http.StatusOK {
		t.Fatalf("with the deadline ignored the cut-off node should serve after its lease ended at %d; got %d", endedMs, st)
	}
}
