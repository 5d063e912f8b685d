package server_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
)

// TestCluster_ManySequences_BatchedBlocksDisjointThroughAFailover drives
// 16 clients over 300 sequences through every node while the leader is
// killed: the blocks of sequences waiting at the same time are committed
// together (type-11 entries, seen in the audit as several blocks at one
// index), no ID is handed out twice in any sequence, and every node's state
// agrees at the end.
func TestCluster_ManySequences_BatchedBlocksDisjointThroughAFailover(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	const sequences = 300
	names := make([]string, sequences)
	for i := range names {
		names[i] = fmt.Sprintf("table-%03d", i)
		tc.CreateSequence(names[i], nil)
	}
	logs := make([]testcluster.RangeLog, sequences)
	var stop atomic.Bool
	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 17))
			for i := 0; !stop.Load() && i < 20000; i++ {
				nodes := tc.Running()
				k := rng.IntN(sequences)
				r, status, err := testcluster.Reserve(nodes[rng.IntN(len(nodes))], names[k], 1000)
				if err != nil || status != http.StatusOK {
					failed.Add(1)
					time.Sleep(5 * time.Millisecond)
					continue
				}
				if r.Sequence != names[k] || r.Last-r.First+1 != 1000 {
					t.Errorf("reserve %s: bad range %+v", names[k], r)
					return
				}
				logs[k].Add(r)
				ok.Add(1)
			}
		}()
	}
	testkit.Eventually(t, 20*time.Second, 10*time.Millisecond, "2,000 reservations", func() bool { return ok.Load() >= 2000 })
	old := tc.Leader(5 * time.Second)
	batched := batchedEntries(old.Srv.Node().FSM())
	tc.Kill(old.ID)
	tc.Leader(10 * time.Second)
	before := ok.Load()
	testkit.Eventually(t, 20*time.Second, 10*time.Millisecond, "2,000 more reservations after the kill", func() bool { return ok.Load() >= before+2000 })
	stop.Store(true)
	wg.Wait()
	for i := range logs {
		logs[i].CheckDisjoint(t)
	}
	if batched == 0 {
		t.Fatalf("no entry granted blocks of several sequences before the kill (audit of %s)", old.ID)
	}
	// Every running node ends with the same marks (prefetches still in
	// flight when the clients stopped may move them for a moment).
	leader := tc.Leader(5 * time.Second)
	for _, n := range tc.Running() {
		testkit.Eventually(t, 10*time.Second, 10*time.Millisecond, n.ID+" caught up", func() bool {
			want := leader.Srv.Node().FSM().Sequences()
			got := n.Srv.Node().FSM().Sequences()
			if len(got) != len(want) {
				return false
			}
			for i := range got {
				if got[i] != want[i] {
					return false
				}
			}
			return true
		})
	}
	t.Logf("%d reservations, %d failed attempts; %d entries of several blocks before the kill", ok.Load(), failed.Load(), batched)
}

// batchedEntries counts the log entries whose audit records hold blocks of
// more than one sequence.
func batchedEntries(f *fsm.FSM) int {
	perIndex := map[uint64]int{}
	for _, r := range f.Audit(0, fsm.AuditRetention) {
		if r.Kind == fsm.AuditBlock {
			perIndex[r.Index]++
		}
	}
	n := 0
	for _, c := range perIndex {
		if c > 1 {
			n++
		}
	}
	return n
}
