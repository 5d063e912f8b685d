package server_test

import (
	"github.com/ticketd/ticketd/internal/testcluster"

	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
)

func TestCluster3_ReservationsThroughEveryNodeAreDisjoint(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	tc.CreateSequence("orders", nil)
	var log testcluster.RangeLog
	var wg sync.WaitGroup
	for _, n := range tc.Running() {
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var last int64
				for i := 0; i < 100; i++ {
					r, status, err := testcluster.Reserve(n, "orders", 1000)
					if err != nil || status != http.StatusOK {
						t.Errorf("reserve via %s: status %d err %v", n.ID, status, err)
						return
					}
					if r.Last-r.First+1 != 1000 || r.Sequence != "orders" {
						t.Errorf("bad range %+v", r)
					}
					if r.First <= last {
						t.Errorf("range %+v not above the previous one (last %d) from the same client", r, last)
					}
					last = r.Last
					log.Add(r)
				}
			}()
		}
	}
	wg.Wait()
	log.CheckDisjoint(t)
	if log.Len() != 1200 {
		t.Fatalf("got %d ranges, want 1200", log.Len())
	}
}

// TestCluster_LeaderKilled_NoRangeReissued kills the leader under load and
// checks that no ID was handed out twice and that every range acknowledged
// after the kill lies above every range acknowledged before it began.
func TestCluster_LeaderKilled_NoRangeReissued(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	tc.CreateSequence("orders", nil)
	var log testcluster.RangeLog
	var stop atomic.Bool
	var wg sync.WaitGroup
	var failures atomic.Int64
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load() && i < 100000; i++ {
				nodes := tc.Running()
				n := nodes[i%len(nodes)]
				r, status, err := testcluster.Reserve(n, "orders", 10)
				if err != nil || status != http.StatusOK {
					failures.Add(1)
					time.Sleep(5 * time.Millisecond)
					continue
				}
				log.Add(r)
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	old := tc.Leader(5 * time.Second)
	beforeKill := log.Max()
	tc.Kill(old.ID)
	killedAt := time.Now()
	newLeader := tc.Leader(10 * time.Second)
	// Wait for a success after the kill.
	deadline := time.Now().Add(10 * time.Second)
	n0 := log.Len()
	for log.Len() == n0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("leader %s killed; %s serving; first success after %v", old.ID, newLeader.ID, time.Since(killedAt))
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	log.CheckDisjoint(t)

	// Ranges acknowledged after the kill must lie above everything acked
	// before it: a new leader's blocks start above the old leader's.
	r, status, err := testcluster.Reserve(newLeader, "orders", 1)
	if err != nil || status != http.StatusOK {
		t.Fatalf("reserve after failover: %d %v", status, err)
	}
	if r.First <= beforeKill {
		t.Fatalf("range %+v after failover not above %d", r, beforeKill)
	}
	t.Logf("%d ranges acknowledged, %d failed attempts", log.Len(), failures.Load())
}

// TestCluster_FullRestart_MarksNeverMoveBack kills every node, restarts them
// all from disk, and checks that the first new range lies above every earlier
// one.
func TestCluster_FullRestart_MarksNeverMoveBack(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	tc.CreateSequence("orders", nil)
	var log testcluster.RangeLog
	for i := 0; i < 50; i++ {
		r, status, err := testcluster.Reserve(tc.Running()[i%3], "orders", 7)
		if err != nil || status != http.StatusOK {
			t.Fatalf("reserve: %d %v", status, err)
		}
		log.Add(r)
	}
	before := log.Max()
	for _, n := range tc.Running() {
		tc.Kill(n.ID)
	}
	for _, id := range []string{"n3", "n1", "n2"} {
		tc.Restart(id)
	}
	tc.WaitReady(15 * time.Second)
	var seq api.Sequence
	if status, err := tc.Do(http.MethodGet, tc.URL(tc.Running()[0])+"/v1/sequences/orders", nil, &seq); err != nil || status != 200 {
		t.Fatalf("get sequence: %d %v", status, err)
	}
	if seq.Next == nil || *seq.Next <= before {
		t.Fatalf("after restart next = %v, want > %d", seq.Next, before)
	}
	r, status, err := testcluster.Reserve(tc.Running()[1], "orders", 7)
	if err != nil || status != http.StatusOK {
		t.Fatalf("reserve after restart: %d %v", status, err)
	}
	if r.First <= before {
		t.Fatalf("first range after full restart %+v is not above %d", r, before)
	}
}
