package server_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
)

// TestCluster_RaiseUnderConcurrentReservations raises a sequence again and
// again through every node while 8 clients reserve from it through every
// node, and kills the leader half way. Most raises land inside the block the
// leader holds in memory (a little above the highest ID acknowledged so
// far), where the state machine's mark does not move and only the issuer's
// cut keeps the promise. Every reservation sent after a raise returned lies
// above the raised value, and no ID is handed out twice.
func TestCluster_RaiseUnderConcurrentReservations(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	tc.CreateSequence("orders", nil)

	type reservation struct {
		sent time.Time
		r    api.Range
	}
	type raised struct {
		done    time.Time
		atLeast int64
	}
	var (
		mu       sync.Mutex
		acked    []reservation
		raises   []raised
		highest  atomic.Int64
		stop     atomic.Bool
		ok, fail atomic.Int64
		wg       sync.WaitGroup
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 3))
			for i := 0; !stop.Load() && i < 50_000; i++ {
				nodes := tc.Running()
				sent := time.Now()
				r, status, err := testcluster.Reserve(nodes[rng.IntN(len(nodes))], "orders", 1+rng.Int64N(100))
				if err != nil || status != http.StatusOK {
					fail.Add(1)
					time.Sleep(5 * time.Millisecond)
					continue
				}
				mu.Lock()
				acked = append(acked, reservation{sent, r})
				mu.Unlock()
				for h := highest.Load(); r.Last > h && !highest.CompareAndSwap(h, r.Last); h = highest.Load() {
				}
				ok.Add(1)
			}
		}()
	}

	rng := rand.New(rand.NewPCG(99, 1))
	raiseOnce := func(i int) {
		t.Helper()
		at := highest.Load() + 1 + rng.Int64N(300) // usually inside the leader's block
		if i%5 == 4 {
			at += 1_000_000 // and now and then far above it
		}
		nodes := tc.Running()
		var res api.RaiseSequenceResult
		testkit.EventuallyErr(t, 15*time.Second, 20*time.Millisecond, fmt.Sprintf("raise %d to %d", i, at), func() error {
			status, err := tc.Do(http.MethodPost, tc.URL(nodes[rng.IntN(len(nodes))])+"/v1/sequences/orders/raise", api.RaiseSequenceRequest{AtLeast: at}, &res)
			if err != nil || status != http.StatusOK {
				return fmt.Errorf("status %d, err %v", status, err)
			}
			return nil
		})
		mu.Lock()
		raises = append(raises, raised{time.Now(), at})
		mu.Unlock()
		if res.Sequence.Next == nil || *res.Sequence.Next <= at {
			t.Errorf("raise to %d answered %+v", at, res)
		}
		time.Sleep(20 * time.Millisecond)
	}
	testkit.Eventually(t, 20*time.Second, 5*time.Millisecond, "first reservations", func() bool { return ok.Load() >= 200 })
	for i := range 15 {
		raiseOnce(i)
	}
	tc.Kill(tc.Leader(5 * time.Second).ID)
	tc.Leader(15 * time.Second)
	for i := 15; i < 30; i++ {
		raiseOnce(i)
	}
	at := ok.Load()
	testkit.Eventually(t, 20*time.Second, 5*time.Millisecond, "reservations after the last raise", func() bool { return ok.Load() >= at+200 })
	stop.Store(true)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	var log testcluster.RangeLog
	checked := 0
	for _, a := range acked {
		log.Add(a.r)
		for _, rs := range raises {
			if a.sent.After(rs.done) {
				checked++
				if a.r.First <= rs.atLeast {
					t.Errorf("range %d..%d, sent %v after a raise to %d returned, lies at or below it", a.r.First, a.r.Last, a.sent.Sub(rs.done), rs.atLeast)
				}
			}
		}
	}
	log.CheckDisjoint(t)
	if checked == 0 {
		t.Fatal("no reservation was sent after a raise returned: the test checked nothing")
	}
	t.Logf("%d ranges acknowledged (%d failed attempts), %d raises, %d (range, earlier raise) pairs checked", len(acked), fail.Load(), len(raises), checked)

	var check api.AuditCheck
	leader := tc.Leader(10 * time.Second)
	if status, err := tc.Do(http.MethodGet, tc.URL(leader)+"/v1/audit/check", nil, &check); err != nil || status != http.StatusOK || len(check.Violations) != 0 {
		t.Fatalf("audit check: %d %v %+v", status, err, check)
	}
}
