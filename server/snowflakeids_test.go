package server_test

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/idgen"
	"github.com/ticketd/ticketd/internal/testcluster"
)

// takeIDs asks node n for count IDs of ns (count 0: an empty body, which
// asks for one).
func takeIDs(t *testing.T, tc *testcluster.Cluster, n *testcluster.Node, ns string, count int64) (api.SnowflakeIDs, api.Problem, int) {
	t.Helper()
	var body any
	if count != 0 {
		body = api.SnowflakeIDsRequest{Count: &count}
	}
	var raw map[string]any
	url := tc.URL(n) + "/v1/namespaces/" + ns + "/ids"
	st, err := tc.Do(http.MethodPost, url, body, &raw)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	var out api.SnowflakeIDs
	var prob api.Problem
	if st == http.StatusOK {
		if _, err := tc.Do(http.MethodPost, url, body, &out); err != nil {
			t.Fatal(err)
		}
		return out, prob, st
	}
	_, _ = tc.Do(http.MethodPost, url, body, &prob)
	return out, prob, st
}

// TestSnowflakeIDs_EveryNodeServesFromItsOwnLease: each node of three
// answers from its own worker-id lease (three holders, three worker ids),
// nothing is forwarded, IDs strictly increase per node and never repeat
// across nodes, and ids_text is ids as strings. Each answer names the
// lease it was made under by its grant_seq (issue 47), which the listing
// shows and the audit's record of that grant carries.
func TestSnowflakeIDs_EveryNodeServesFromItsOwnLease(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	createNamespace(t, tc, "orders", api.NamespaceRequest{})
	seen := map[int64]string{}
	workers := map[int64]string{}
	grants := map[string]uint64{}
	for _, n := range tc.Running() {
		var last int64
		for i, count := range []int64{0, 1, 100, api.MaxSnowflakeIDs} {
			out, prob, st := takeIDs(t, tc, n, "orders", count)
			if st != http.StatusOK {
				t.Fatalf("%s count %d: %d %+v", n.ID, count, st, prob)
			}
			if g, ok := grants[n.ID]; out.LeaseGrantSeq == 0 || (ok && g != out.LeaseGrantSeq) {
				t.Fatalf("%s count %d: lease_grant_seq %d (before: %d)", n.ID, count, out.LeaseGrantSeq, g)
			}
			grants[n.ID] = out.LeaseGrantSeq
			want := max(count, 1)
			if int64(len(out.IDs)) != want || len(out.IDsText) != len(out.IDs) || out.Node != n.ID || out.Namespace != "orders" {
				t.Fatalf("%s count %d: %d ids, %d texts, node %q", n.ID, count, len(out.IDs), len(out.IDsText), out.Node)
			}
			if i == 0 {
				if w, ok := workers[out.WorkerID]; ok {
					t.Fatalf("worker %d served by %s and %s", out.WorkerID, w, n.ID)
				}
				workers[out.WorkerID] = n.ID
			}
			for j, id := range out.IDs {
				if id <= last {
					t.Fatalf("%s: %d after %d", n.ID, id, last)
				}
				if out.IDsText[j] != strconv.FormatInt(id, 10) {
					t.Fatalf("ids_text[%d] = %q, ids[%d] = %d", j, out.IDsText[j], j, id)
				}
				if by, dup := seen[id]; dup {
					t.Fatalf("ID %d served by %s and %s", id, by, n.ID)
				}
				seen[id] = n.ID
				last = id
			}
		}
	}
	// Each node holds its own lease, under its own holder name.
	leases := listLeases(t, tc, tc.Running()[0], "orders")
	holders := map[string]bool{}
	for _, l := range leases {
		if l.State == "held" {
			holders[l.Holder] = true
		}
	}
	for _, n := range tc.Running() {
		if !holders[idgen.Holder(n.ID)] {
			t.Fatalf("no lease held by %s: %+v", idgen.Holder(n.ID), leases)
		}
	}
	var audit api.AuditList
	if st, err := tc.Do(http.MethodGet, tc.URL(tc.Running()[0])+"/v1/audit?limit=1000", nil, &audit); err != nil || st != http.StatusOK {
		t.Fatalf("audit: %d %v", st, err)
	}
	for _, n := range tc.Running() {
		var listed, recorded bool
		for _, l := range leases {
			listed = listed || (l.Holder == idgen.Holder(n.ID) && l.GrantSeq == grants[n.ID] && l.State == "held")
		}
		for _, r := range audit.Records {
			recorded = recorded || (r.Seq == grants[n.ID] && r.Kind == "lease" && r.Holder == idgen.Holder(n.ID) && r.Namespace == "orders")
		}
		if !listed || !recorded {
			t.Fatalf("%s answered lease_grant_seq %d: listed %v, the audit's grant record %v (%+v)", n.ID, grants[n.ID], listed, recorded, leases)
		}
	}
}

// TestSnowflakeIDs_BadInputNamesWhatIsWrong: an unknown namespace is 404,
// a count out of range 400, a malformed body 400; each a problem.
func TestSnowflakeIDs_BadInputNamesWhatIsWrong(t *testing.T) {
	tc := testcluster.New(t, 1, nil)
	createNamespace(t, tc, "orders", api.NamespaceRequest{})
	n := tc.Running()[0]
	if _, prob, st := takeIDs(t, tc, n, "nope", 1); st != http.StatusNotFound || prob.Type != api.ProblemNamespaceNotFound || !strings.Contains(prob.Detail, `"nope"`) {
		t.Fatalf("unknown namespace: %d %+v", st, prob)
	}
	for _, count := range []int64{-1, api.MaxSnowflakeIDs + 1} {
		if _, prob, st := takeIDs(t, tc, n, "orders", count); st != http.StatusBadRequest || !strings.Contains(prob.Detail, `"count"`) {
			t.Fatalf("count %d: %d %+v", count, st, prob)
		}
	}
	var prob api.Problem
	st, err := tc.Do(http.MethodPost, tc.URL(n)+"/v1/namespaces/orders/ids", map[string]any{"count": 2, "extra": 1}, &prob)
	if err != nil || st != http.StatusBadRequest || !strings.Contains(prob.Detail, "extra") {
		t.Fatalf("unknown field: %d %v %+v", st, err, prob)
	}
}

// TestSnowflakeIDs_WorkersExhausted_503NamingTheNamespace: a namespace of
// two worker ids, both held by others: the node answers workers-exhausted.
func TestSnowflakeIDs_WorkersExhausted_503NamingTheNamespace(t *testing.T) {
	tc := testcluster.New(t, 1, nil)
	i64 := func(v int64) *int64 { return &v }
	createNamespace(t, tc, "tiny", api.NamespaceRequest{MaxWorkers: i64(2), LeaseTTLMs: i64(60_000)})
	n := tc.Running()[0]
	for _, h := range []string{"a", "b"} {
		if _, st := acquire(t, tc, n, "tiny", h); st != http.StatusCreated {
			t.Fatalf("acquire %s: %d", h, st)
		}
	}
	_, prob, st := takeIDs(t, tc, n, "tiny", 1)
	if st != http.StatusServiceUnavailable || prob.Type != api.ProblemWorkersExhausted || prob.Namespace != "tiny" || prob.Node != n.ID {
		t.Fatalf("all workers held: %d %+v", st, prob)
	}
}

// TestSnowflakeIDs_ShutdownReleasesTheLease: a graceful shutdown gives the
// node's worker id back at once (ended, released), not after its TTL.
func TestSnowflakeIDs_ShutdownReleasesTheLease(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	createNamespace(t, tc, "orders", api.NamespaceRequest{})
	leader := tc.Leader(10 * time.Second)
	var follower *testcluster.Node
	for _, n := range tc.Running() {
		if n != leader {
			follower = n
			break
		}
	}
	out, prob, st := takeIDs(t, tc, follower, "orders", 1)
	if st != http.StatusOK {
		t.Fatalf("take: %d %+v", st, prob)
	}
	if err := follower.Srv.Shutdown(t.Context()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	for _, l := range listLeases(t, tc, leader, "orders") {
		if l.WorkerID == out.WorkerID && (l.State != "ended" || l.EndReason != "released" || l.Holder != idgen.Holder(follower.ID)) {
			t.Fatalf("lease after shutdown: %+v", l)
		}
	}
}

func listLeases(t *testing.T, tc *testcluster.Cluster, n *testcluster.Node, ns string) []api.Lease {
	t.Helper()
	var out api.LeaseList
	if st, err := tc.Do(http.MethodGet, tc.URL(n)+"/v1/namespaces/"+ns+"/leases", nil, &out); err != nil || st != http.StatusOK {
		t.Fatalf("list leases: %d %v", st, err)
	}
	return out.Leases
}

// TestSnowflakeIDs_ConcurrentRequestsNeverRepeat: many callers on every
// node at once.
func TestSnowflakeIDs_ConcurrentRequestsNeverRepeat(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	createNamespace(t, tc, "orders", api.NamespaceRequest{})
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for _, n := range tc.Running() {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := client.New([]string{tc.URL(n)})
				if err != nil {
					t.Error(err)
					return
				}
				defer c.Close()
				for range 50 {
					count := int64(37)
					var out api.SnowflakeIDs
					st, err := tc.Do(http.MethodPost, tc.URL(n)+"/v1/namespaces/orders/ids", api.SnowflakeIDsRequest{Count: &count}, &out)
					if err != nil || st != http.StatusOK {
						t.Errorf("%s: %d %v", n.ID, st, err)
						return
					}
					mu.Lock()
					for _, id := range out.IDs {
						if seen[id] {
							t.Errorf("ID %d twice", id)
						}
						seen[id] = true
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if len(seen) != 3*4*50*37 {
		t.Fatalf("%d distinct IDs", len(seen))
	}
}

// TestSnowflakeIDs_RemovedNode_ItsLeasesAreRevoked: a node taken out of the
// cluster while it is down hands its worker id back at once (revoked), not
// a TTL later.
func TestSnowflakeIDs_RemovedNode_ItsLeasesAreRevoked(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	i64 := func(v int64) *int64 { return &v }
	createNamespace(t, tc, "orders", api.NamespaceRequest{LeaseTTLMs: i64(600_000)})
	leader := tc.Leader(10 * time.Second)
	var gone *testcluster.Node
	for _, n := range tc.Running() {
		if n != leader {
			gone = n
		}
	}
	out, prob, st := takeIDs(t, tc, gone, "orders", 1)
	if st != http.StatusOK {
		t.Fatalf("take: %d %+v", st, prob)
	}
	tc.Kill(gone.ID)
	if st, err := tc.Do(http.MethodDelete, tc.URL(leader)+"/v1/cluster/members/"+gone.ID, nil, nil); err != nil || st/100 != 2 {
		t.Fatalf("remove %s: %d %v", gone.ID, st, err)
	}
	for _, l := range listLeases(t, tc, leader, "orders") {
		if l.WorkerID == out.WorkerID && (l.State != "ended" || l.EndReason != "revoked") {
			t.Fatalf("the removed node's lease: %+v; want ended, revoked", l)
		}
	}
}
