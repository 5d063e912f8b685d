package server_test

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
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

// leaseTheOnlyWorker creates namespace users with one worker id (2 s TTL,
// 2 s recycle delay) and leases it to proc-a on the leader.
func leaseTheOnlyWorker(t *testing.T, tc *testcluster.Cluster) (*testcluster.Node, api.Lease) {
	t.Helper()
	createNamespace(t, tc, "users", api.NamespaceRequest{MaxWorkers: i64(1), LeaseTTLMs: i64(2000), RecycleDelayMs: i64(2000)})
	leader := tc.Leader(10 * time.Second)
	a, st := acquire(t, tc, leader, "users", "proc-a")
	if st != http.StatusCreated {
		t.Fatalf("acquire: %d", st)
	}
	return leader, a
}

// A leader whose wall clock jumps an hour ahead must not grant a worker id
// that a live holder keeps renewing: lease time is the leader's elapsed
// monotonic time, not its wall clock. When the holder stops renewing, the
// id comes free again after the TTL and the recycle delay.
func TestLeases_LeaderClockJumpsAnHour_GrantsNoWorkerIDInUse(t *testing.T) {
	clocks := newOffsetClocks()
	tc := testcluster.New(t, 3, clocks.tweak)
	leader, a := leaseTheOnlyWorker(t, tc)
	var st int
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
	testkit.Eventually(t, 15*time.Second, 20*time.Millisecond, "worker 0 granted to proc-b", func() bool {
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
	old, a := leaseTheOnlyWorker(t, tc)
	var st int
	if _, prob, st := renew(t, tc, old, a); st != http.StatusOK {
		t.Fatalf("renew: %d %+v", st, prob)
	}
	time.Sleep(1500 * time.Millisecond)
	killed := time.Now()
	tc.Kill(old.ID)
	tc.Leader(10 * time.Second)
	var b api.Lease
	testkit.Eventually(t, 20*time.Second, 20*time.Millisecond, "worker 0 granted to proc-b", func() bool {
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

// A restore ends every lease of the backup; its worker id rests a full
// recycle delay, timed by the restored cluster's leader, and the next
// holder gets a timestamp floor above the old holder's bound.
func TestRestore_LeasesOfTheBackupRestThenCarryTheirFloor(t *testing.T) {
	old := authCluster(t, 1)
	createNamespace(t, old, "users", api.NamespaceRequest{MaxWorkers: i64(1), LeaseTTLMs: i64(2000), RecycleDelayMs: i64(2000)})
	clientMs := time.Now().UnixMilli() + 3_600_000 // a holder whose clock is an hour ahead
	var a api.Lease
	if st, err := old.Do(http.MethodPost, old.URL(old.Running()[0])+"/v1/namespaces/users/leases", api.LeaseRequest{Holder: "proc-a", ClientTimeMs: clientMs}, &a); err != nil || st != http.StatusCreated {
		t.Fatalf("acquire: %d %v", st, err)
	}
	backup := backupOf(t, old)

	fresh := authCluster(t, 1)
	if st, body := restoreInto(t, fresh, backup, 1000); st != http.StatusNoContent {
		t.Fatalf("restore: %d %s", st, body)
	}
	restored := time.Now()
	var list api.LeaseList
	if st, err := fresh.Do(http.MethodGet, fresh.URL(fresh.Running()[0])+"/v1/namespaces/users/leases", nil, &list); err != nil || st != 200 ||
		len(list.Leases) != 1 || list.Leases[0].State != "ended" || list.Leases[0].EndReason != "restored" {
		t.Fatalf("leases after the restore: %d %v %+v", st, err, list)
	}
	var b api.Lease
	var st int
	testkit.Eventually(t, 15*time.Second, 20*time.Millisecond, "worker 0 granted after the restore", func() bool {
		b, st = acquire(t, fresh, fresh.Running()[0], "users", "proc-b")
		return st == http.StatusCreated
	})
	if waited := time.Since(restored); waited < 2*time.Second {
		t.Fatalf("worker %d granted %v after the restore, before the 2 s recycle delay", b.WorkerID, waited)
	}
	if b.TimestampFloorMs != clientMs+2000 {
		t.Fatalf("timestamp floor %d, want the old holder's bound %d", b.TimestampFloorMs, clientMs+2000)
	}
}

// Bad lease requests are answered 400 with a problem naming the field.
func TestLeases_BadRequests_400NamingTheField(t *testing.T) {
	tc := testcluster.New(t, 1, nil)
	createNamespace(t, tc, "users", api.NamespaceRequest{})
	base := tc.URL(tc.Running()[0]) + "/v1/namespaces/users/leases"
	a, _ := acquire(t, tc, tc.Running()[0], "users", "proc-a")
	for _, c := range []struct {
		method, url, body, field string
	}{
		{http.MethodPost, base, `{"holder":""}`, `"holder"`},
		{http.MethodPost, base, `{"holder":"h","request_id":"` + strings.Repeat("r", 129) + `"}`, `"request_id"`},
		{http.MethodPost, base, `{"holder":"h","client_time_ms":-1}`, `"client_time_ms"`},
		{http.MethodPost, base, `{"holder":"h","client_time_ms":"soon"}`, `client_time_ms`},
		{http.MethodPut, base + "/0", `{"token":0}`, `"token"`},
		{http.MethodPut, base + "/0", `{"token":` + strconv.FormatUint(a.Token, 10) + `,"client_time_ms":-5}`, `"client_time_ms"`},
		{http.MethodPut, base + "/x", `{"token":1}`, `worker id "x"`},
	} {
		var prob api.Problem
		st, err := tc.Do(c.method, c.url, c.body, &prob)
		if err != nil || st != http.StatusBadRequest || prob.Type != api.ProblemBadRequest || !strings.Contains(prob.Detail, c.field) {
			t.Errorf("%s %s %s: %d %v %+v (want 400 naming %s)", c.method, c.url, c.body, st, err, prob, c.field)
		}
	}
	if _, _, st := renew(t, tc, tc.Running()[0], a); st != http.StatusOK {
		t.Fatalf("the lease did not survive the bad requests: %d", st)
	}
}
