package server_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
)

func createNamespace(t *testing.T, tc *testcluster.Cluster, name string, req api.NamespaceRequest) api.Namespace {
	t.Helper()
	var ns api.Namespace
	st, err := tc.Do(http.MethodPut, tc.URL(tc.Running()[0])+"/v1/namespaces/"+name, req, &ns)
	if err != nil || (st != http.StatusCreated && st != http.StatusOK) {
		t.Fatalf("create namespace %s: %d %v", name, st, err)
	}
	return ns
}

func acquire(t *testing.T, tc *testcluster.Cluster, n *testcluster.Node, ns, holder string) (api.Lease, int) {
	t.Helper()
	var l api.Lease
	st, err := tc.Do(http.MethodPost, tc.URL(n)+"/v1/namespaces/"+ns+"/leases", api.LeaseRequest{Holder: holder}, &l)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	return l, st
}

func renew(t *testing.T, tc *testcluster.Cluster, n *testcluster.Node, l api.Lease) (api.Lease, api.Problem, int) {
	t.Helper()
	var out api.Lease
	var prob api.Problem
	url := tc.URL(n) + "/v1/namespaces/" + l.Namespace + "/leases/" + strconv.FormatInt(l.WorkerID, 10)
	st, err := tc.Do(http.MethodPut, url, api.LeaseTokenRequest{Token: l.Token}, &out)
	if err != nil {
		t.Fatalf("renew: %v", err)
	}
	if st != http.StatusOK {
		_, _ = tc.Do(http.MethodPut, url, api.LeaseTokenRequest{Token: l.Token}, &prob)
	}
	return out, prob, st
}

func TestNamespaces_LayoutValidatedOverHTTP(t *testing.T) {
	tc := testcluster.New(t, 1, nil)
	u8 := func(v uint8) *uint8 { return &v }
	i64 := func(v int64) *int64 { return &v }
	for name, req := range map[string]api.NamespaceRequest{
		"workers do not fit":  {WorkerBits: u8(4), SequenceBits: u8(18), MaxWorkers: i64(17)},
		"bits do not add up":  {SequenceBits: u8(13)},
		"under 10 years left": {TimestampBits: u8(38), SequenceBits: u8(15)},
	} {
		var prob api.Problem
		st, err := tc.Do(http.MethodPut, tc.URL(tc.Running()[0])+"/v1/namespaces/bad", req, &prob)
		if err != nil || st != http.StatusBadRequest || prob.Type != api.ProblemBadRequest {
			t.Errorf("%s: %d %v %+v", name, st, err, prob)
		}
	}
	ns := createNamespace(t, tc, "users", api.NamespaceRequest{})
	if ns.TimestampBits != 41 || ns.WorkerBits != 10 || ns.SequenceBits != 12 || ns.MaxWorkers != 1024 || ns.YearsLeft < 40 {
		t.Fatalf("defaults: %+v", ns)
	}
}

// Leases survive a leader failover and a full-cluster restart: the holder
// keeps renewing with its token, and a second acquirer never gets its id.
func TestLeases_FailoverAndFullRestart_NeverShareAWorkerID(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	i64 := func(v int64) *int64 { return &v }
	createNamespace(t, tc, "users", api.NamespaceRequest{MaxWorkers: i64(4), LeaseTTLMs: i64(60_000)})
	a, st := acquire(t, tc, tc.Running()[0], "users", "proc-a")
	if st != http.StatusCreated {
		t.Fatalf("acquire: %d", st)
	}
	if a.Layout.WorkerBits != 10 || a.TTLMs != 60_000 {
		t.Fatalf("lease answer lacks the layout: %+v", a)
	}
	l := tc.Leader(10 * time.Second)
	tc.Kill(l.ID)
	tc.Leader(10 * time.Second)
	testkit.Eventually(t, 10*time.Second, 20*time.Millisecond, "a renewal after the failover", func() bool {
		_, _, st := renew(t, tc, tc.Running()[0], a)
		return st == http.StatusOK
	})
	tc.Restart(l.ID)
	for _, n := range tc.Running() {
		tc.Kill(n.ID)
	}
	for _, id := range []string{"n2", "n3", "n1"} {
		tc.Restart(id)
	}
	tc.WaitReady(20 * time.Second)
	if _, prob, st := renew(t, tc, tc.Running()[1], a); st != http.StatusOK {
		t.Fatalf("renew after full restart: %d %+v", st, prob)
	}
	seen := map[int64]string{a.WorkerID: "proc-a"}
	for i := 0; i < 3; i++ {
		b, st := acquire(t, tc, tc.Running()[i%3], "users", "proc-"+strconv.Itoa(i))
		if st != http.StatusCreated {
			t.Fatalf("acquire %d: %d", i, st)
		}
		if holder, taken := seen[b.WorkerID]; taken {
			t.Fatalf("worker %d granted to %s while %s holds it", b.WorkerID, b.Holder, holder)
		}
		seen[b.WorkerID] = b.Holder
	}
	var prob api.Problem
	st, err := tc.Do(http.MethodPost, tc.URL(tc.Running()[0])+"/v1/namespaces/users/leases", api.LeaseRequest{Holder: "one-too-many"}, &prob)
	if err != nil || st != http.StatusConflict || prob.Type != api.ProblemNoWorkerFree {
		t.Fatalf("fifth acquire: %d %v %+v", st, err, prob)
	}
	var check api.AuditCheck
	if st, err := tc.Do(http.MethodGet, tc.URL(tc.Running()[0])+"/v1/audit/check", nil, &check); err != nil || st != 200 || len(check.Violations) != 0 || check.LeasesChecked != 4 {
		t.Fatalf("audit check: %d %v %+v", st, err, check)
	}
}

func TestLeases_RevokedLease_RenewFailsWithLeaseLost(t *testing.T) {
	tc := testcluster.New(t, 1, nil)
	createNamespace(t, tc, "users", api.NamespaceRequest{})
	n := tc.Running()[0]
	a, _ := acquire(t, tc, n, "users", "proc-a")
	st, err := tc.Do(http.MethodPost, tc.URL(n)+"/v1/namespaces/users/leases/"+strconv.FormatInt(a.WorkerID, 10)+"/revoke", nil, nil)
	if err != nil || st != http.StatusOK {
		t.Fatalf("revoke: %d %v", st, err)
	}
	_, prob, st := renew(t, tc, n, a)
	if st != http.StatusConflict || prob.Type != api.ProblemLeaseLost {
		t.Fatalf("renew after revoke: %d %+v", st, prob)
	}
	// The revoked id rests for the recycle delay: the next acquire gets
	// another one.
	b, _ := acquire(t, tc, n, "users", "proc-b")
	if b.WorkerID == a.WorkerID {
		t.Fatalf("revoked worker %d handed out again at once", a.WorkerID)
	}
}

func TestInspect_RangeAndSnowflakeIDsRoundTrip(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	tc.CreateSequence("orders", nil)
	createNamespace(t, tc, "users", api.NamespaceRequest{})
	l := tc.Leader(10 * time.Second)
	r, st, err := testcluster.Reserve(tc.Running()[0], "orders", 50)
	if err != nil || st != 200 {
		t.Fatalf("reserve: %d %v", st, err)
	}
	var ri api.RangeInspection
	if st, err := tc.Do(http.MethodGet, tc.URL(tc.Running()[1])+"/v1/inspect/sequence/orders/"+strconv.FormatInt(r.First+7, 10), nil, &ri); err != nil || st != 200 {
		t.Fatalf("inspect range: %d %v", st, err)
	}
	if !ri.Issued || ri.Block == nil || ri.Block.First > r.First+7 || ri.Block.Last < r.First+7 || ri.Block.Leader != l.ID || ri.Block.Index == 0 || ri.Block.TimeMs == 0 {
		t.Fatalf("inspection %+v (block %+v) for %+v from leader %s", ri, ri.Block, r, l.ID)
	}
	if st, _ := tc.Do(http.MethodGet, tc.URL(l)+"/v1/inspect/sequence/orders/99999999999", nil, &ri); st != 200 || ri.Issued || ri.Block != nil {
		t.Fatalf("an ID never issued: %d %+v", st, ri)
	}

	lease, _ := acquire(t, tc, l, "users", "host-7/pid-42")
	layout := fsm.Namespace{EpochMs: lease.Layout.EpochMs, TimestampBits: lease.Layout.TimestampBits, WorkerBits: lease.Layout.WorkerBits, SequenceBits: lease.Layout.SequenceBits, TickMs: lease.Layout.TickMs}
	id := layout.Compose(lease.GrantedMs+5, lease.WorkerID, 99)
	var si api.SnowflakeInspection
	if st, err := tc.Do(http.MethodGet, tc.URL(tc.Running()[2])+"/v1/inspect/snowflake/users/"+strconv.FormatInt(id, 10), nil, &si); err != nil || st != 200 {
		t.Fatalf("inspect snowflake: %d %v", st, err)
	}
	if si.TimeMs != lease.GrantedMs+5 || si.WorkerID != lease.WorkerID || si.Sequence != 99 || si.Holder != "host-7/pid-42" || !si.Found {
		t.Fatalf("snowflake inspection %+v for lease %+v", si, lease)
	}
}
