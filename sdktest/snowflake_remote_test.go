package sdktest

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/internal/testkit"
)

// TestCluster_SnowflakeRemote_NodeKilled_NoIDTwiceNoError: goroutines take
// server-made Snowflake IDs through one SnowflakeRemote spread over three
// nodes while a follower it fetches from is killed, and then the leader:
// every Next and NextN succeeds (the fetches move to the nodes left), and
// no ID is handed out twice.
func TestCluster_SnowflakeRemote_NodeKilled_NoIDTwiceNoError(t *testing.T) {
	tc, urls, _, ctx := snowflakeCluster(t, 120*time.Second, "orders", api.NamespaceRequest{})
	c := newClient(t, urls)
	r, err := c.SnowflakeRemote("orders", client.WithRemoteBatch(32))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })

	var (
		mu    sync.Mutex
		ids   []int64
		taken atomic.Int64
		stop  atomic.Bool
		errs  = make(chan error, 8)
		wg    sync.WaitGroup
	)
	for g := range 8 {
		wg.Go(func() {
			var mine []int64
			defer func() {
				mu.Lock()
				ids = append(ids, mine...)
				mu.Unlock()
			}()
			for i := 0; !stop.Load(); i++ {
				if g%2 == 1 && i%5 == 0 {
					got, err := r.NextN(ctx, 7)
					if err != nil {
						errs <- fmt.Errorf("NextN after %d IDs: %w", taken.Load(), err)
						return
					}
					mine = append(mine, got...)
					taken.Add(int64(len(got)))
				} else {
					id, err := r.Next(ctx)
					if err != nil {
						errs <- fmt.Errorf("Next after %d IDs: %w", taken.Load(), err)
						return
					}
					mine = append(mine, id)
					taken.Add(1)
				}
				time.Sleep(100 * time.Microsecond) // leave the nodes some CPU
			}
		})
	}
	defer func() { stop.Store(true); wg.Wait() }()
	progress := func(what string) {
		t.Helper()
		before := taken.Load()
		testkit.Eventually(t, 30*time.Second, 5*time.Millisecond, what+": 2,000 more IDs", func() bool {
			select {
			case err := <-errs:
				t.Fatalf("%s: %v", what, err)
			default:
			}
			return taken.Load() >= before+2000
		})
	}
	testkit.Eventually(t, 30*time.Second, 5*time.Millisecond, "IDs from every node", func() bool {
		return len(r.Stats().IDsByEndpoint) == 3
	})
	progress("before any kill")

	leader := tc.Leader(10 * time.Second)
	victims := []string{}
	for i := 1; i <= 3 && len(victims) == 0; i++ {
		if id := fmt.Sprintf("n%d", i); id != leader.ID {
			victims = append(victims, id)
		}
	}
	victims = append(victims, leader.ID)
	for _, id := range victims {
		url := tc.URL(tc.Node(id))
		before := r.Stats()
		if before.IDsByEndpoint[url] == 0 {
			t.Fatalf("%s served no IDs before it was killed: %v", id, before.IDsByEndpoint)
		}
		tc.Kill(id)
		progress("after " + id + " was killed")
		after := r.Stats()
		if after.Failures == before.Failures {
			t.Fatalf("no fetch failed after %s was killed: it was not in use? %+v", id, after)
		}
		t.Logf("%s killed: %d fetch failures moved past, IDs by endpoint %v", id, after.Failures-before.Failures, after.IDsByEndpoint)
		tc.Restart(id)
		tc.WaitReady(30 * time.Second)
		progress("after " + id + " came back")
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkUnique(t, slices.Clone(ids))
	st := r.Stats()
	if st.WaitsWhileCached != 0 || st.Refused != 0 {
		t.Fatalf("stats: %+v", st)
	}
	t.Logf("%d IDs in %d batches, %d waits, %d failures moved past", len(ids), st.Fetches, st.Waits, st.Failures)
}
