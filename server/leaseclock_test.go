package server_test

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/server"
)

// offsetClocks gives every node a wall clock that a test can step.
type offsetClocks struct {
	mu      sync.Mutex
	offsets map[string]*atomic.Int64 // node id -> offset in ns
}

func newOffsetClocks() *offsetClocks { return &offsetClocks{offsets: map[string]*atomic.Int64{}} }

func (c *offsetClocks) tweak(id string, cfg *server.Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	off, ok := c.offsets[id]
	if !ok {
		off = new(atomic.Int64)
		c.offsets[id] = off
	}
	cfg.Cluster.WallClock = func() time.Time { return time.Now().Add(time.Duration(off.Load())) }
}

func (c *offsetClocks) step(id string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offsets[id].Add(int64(d))
}

// A leader whose wall clock jumps an hour ahead must not grant a worker id
// that a live holder keeps renewing: lease time is the leader's elapsed
// monotonic time, not its wall clock. When the holder stops renewing, the
// id comes free again after the TTL and the recycle delay.
func TestLeases_LeaderClockJumpsAnHour_GrantsNoWorkerIDInUse(t *testing.T) {
	clocks := newOffsetClocks()
	tc := testcluster.New(t, 3, clocks.tweak)
	i64 := func(v int64) *int64 { return &v }
	createNamespace(t, tc, "users", api.NamespaceRequest{MaxWorkers: i64(1), LeaseTTLMs: i64(2000), RecycleDelayMs: i64(2000)})
	leader := tc.Leader(10 * time.Second)
	a, st := acquire(t, tc, leader, "users", "proc-a")
	if st != http.StatusCreated {
		t.Fatalf("acquire: %d", st)
	}
	clocks.step(leader.ID, time.Hour)

	// proc-a renews every TTL/4 for three TTLs; proc-b tries to get a
	// worker id all along.
	deadline := time.Now().Add(6 * time.Second)
	nextRenew := time.Now()
	var lastRenewSent time.Time
	for time.Now().Before(deadline) {
		if b, st := acquire(t, tc, leader, "users", "proc-b"); st == http.StatusCreated {
			t.Fatalf("worker %d granted to proc-b while proc-a holds worker %d and renews it", b.WorkerID, a.WorkerID)
		}
		if !time.Now().Before(nextRenew) {
			lastRenewSent = time.Now()
			if _, prob, st := renew(t, tc, leader, a); st != http.StatusOK {
				t.Fatalf("proc-a's renewal failed after the leader's clock jumped: %d %+v", st, prob)
			}
			nextRenew = time.Now().Add(500 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// proc-a stops renewing: the id is granted again, but not before the
	// TTL and the recycle delay have passed since its last renewal.
	var b api.Lease
	waitFor(t, 15*time.Second, "worker 0 granted to proc-b", func() bool {
		b, st = acquire(t, tc, leader, "users", "proc-b")
		return st == http.StatusCreated
	})
	if waited := time.Since(lastRenewSent); waited < 4*time.Second {
		t.Fatalf("worker %d granted again %v after its holder's last renewal (TTL + recycle delay = 4s)", b.WorkerID, waited)
	}
}

// A new leader starts every lease afresh with a full TTL from when it
// begins to serve: a holder that renewed 1.5 s into a 2 s TTL, just before
// the leader died, keeps its worker id for at least TTL + recycle delay
// after the failover, never less.
func TestLeases_NewLeaderRestartsEveryLeaseWithAFullTTL(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	i64 := func(v int64) *int64 { return &v }
	createNamespace(t, tc, "users", api.NamespaceRequest{MaxWorkers: i64(1), LeaseTTLMs: i64(2000), RecycleDelayMs: i64(2000)})
	old := tc.Leader(10 * time.Second)
	a, st := acquire(t, tc, old, "users", "proc-a")
	if st != http.StatusCreated {
		t.Fatalf("acquire: %d", st)
	}
	if _, prob, st := renew(t, tc, old, a); st != http.StatusOK {
		t.Fatalf("renew: %d %+v", st, prob)
	}
	time.Sleep(1500 * time.Millisecond)
	killed := time.Now()
	tc.Kill(old.ID)
	tc.Leader(10 * time.Second)
	var b api.Lease
	waitFor(t, 20*time.Second, "worker 0 granted to proc-b", func() bool {
		b, st = acquire(t, tc, tc.Running()[0], "users", "proc-b")
		return st == http.StatusCreated
	})
	if waited := time.Since(killed); waited < 4*time.Second {
		t.Fatalf("worker %d granted again %v after the failover, before a full TTL and recycle delay (4 s) on the new leader", b.WorkerID, waited)
	}
	var check api.AuditCheck
	if st, err := tc.Do(http.MethodGet, tc.URL(tc.Running()[0])+"/v1/audit/check", nil, &check); err != nil || st != 200 || len(check.Violations) != 0 {
		t.Fatalf("audit check: %d %v %+v", st, err, check)
	}
}
