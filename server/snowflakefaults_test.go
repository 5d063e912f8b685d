package server_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/server"
)

// The Snowflake service under faults (issue #32): a clock stepped back on
// one node, a node cut off from the quorum, a node restarted behind its
// worker id's timestamp floor. The fault suite (jepsen/) repeats them on
// real processes under every nemesis.

// nodeClocks gives each node of a test cluster a wall clock the test steps.
type nodeClocks struct {
	mu      sync.Mutex
	offsets map[string]*atomic.Int64
}

func (c *nodeClocks) offset(id string) *atomic.Int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.offsets == nil {
		c.offsets = map[string]*atomic.Int64{}
	}
	o, ok := c.offsets[id]
	if !ok {
		o = new(atomic.Int64)
		c.offsets[id] = o
	}
	return o
}

func (c *nodeClocks) tweak(id string, cfg *server.Config) {
	o := c.offset(id)
	cfg.Cluster.WallClock = func() time.Time { return time.Now().Add(time.Duration(o.Load())) }
}

// postIDs asks n for count IDs of ns and returns the answer or the problem
// with the Retry-After header.
func postIDs(t *testing.T, tc *testcluster.Cluster, n *testcluster.Node, ns string, count int64) (api.SnowflakeIDs, api.Problem, int, string) {
	t.Helper()
	body := strings.NewReader(`{"count":` + strconv.FormatInt(count, 10) + `}`)
	resp, err := http.Post(tc.URL(n)+"/v1/namespaces/"+ns+"/ids", "application/json", body)
	if err != nil {
		t.Fatalf("POST ids to %s: %v", n.ID, err)
	}
	defer resp.Body.Close()
	var out api.SnowflakeIDs
	var prob api.Problem
	if resp.StatusCode == http.StatusOK {
		err = json.NewDecoder(resp.Body).Decode(&out)
	} else {
		err = json.NewDecoder(resp.Body).Decode(&prob)
	}
	if err != nil {
		t.Fatalf("POST ids to %s: %d: %v", n.ID, resp.StatusCode, err)
	}
	return out, prob, resp.StatusCode, resp.Header.Get("Retry-After")
}

// TestSnowflakeIDs_ClockSteppedBack_ThatNodeThatNamespaceOnly: a step
// back of 5 ms on one node is waited out; one of 3 s makes that node answer
// 503 clock-behind with a Retry-After covering it, in the namespace it has
// issued in, while the other nodes go on serving it and a namespace that
// node had not issued in serves at once. Once the clock is set right the
// node serves again, its IDs still above everything it issued before.
func TestSnowflakeIDs_ClockSteppedBack_ThatNodeThatNamespaceOnly(t *testing.T) {
	var clocks nodeClocks
	tc := testcluster.New(t, 3, clocks.tweak)
	createNamespace(t, tc, "orders", api.NamespaceRequest{})
	createNamespace(t, tc, "users", api.NamespaceRequest{})
	nodes := tc.Running()
	stepped := nodes[1]
	last := map[string]int64{}
	take := func(n *testcluster.Node, ns string) {
		t.Helper()
		out, prob, st, _ := postIDs(t, tc, n, ns, 50)
		if st != http.StatusOK {
			t.Fatalf("%s %s: %d %+v", n.ID, ns, st, prob)
		}
		if out.IDs[0] <= last[n.ID+ns] {
			t.Fatalf("%s %s: %d after %d", n.ID, ns, out.IDs[0], last[n.ID+ns])
		}
		last[n.ID+ns] = out.IDs[len(out.IDs)-1]
	}
	for _, n := range nodes {
		take(n, "orders")
	}
	clocks.offset(stepped.ID).Store(int64(-5 * time.Millisecond))
	take(stepped, "orders") // waited out

	clocks.offset(stepped.ID).Store(int64(-3 * time.Second))
	_, prob, st, retry := postIDs(t, tc, stepped, "orders", 1)
	if st != http.StatusServiceUnavailable || prob.Type != api.ProblemClockBehind || prob.Namespace != "orders" || prob.Node != stepped.ID ||
		prob.ClockBehindMs < 2900 || prob.ClockBehindMs > 3100 {
		t.Fatalf("3 s behind: %d %+v", st, prob)
	}
	if secs, err := strconv.Atoi(retry); err != nil || secs < 3 || secs > 4 {
		t.Fatalf("Retry-After %q; want the 3 s the clock is behind, rounded up", retry)
	}
	for _, n := range nodes {
		if n != stepped {
			take(n, "orders") // the other nodes: unaffected
		}
	}
	take(stepped, "users") // a namespace it had not issued in: nothing to stay above

	clocks.offset(stepped.ID).Store(0)
	take(stepped, "orders")
}

// TestSnowflakeIDs_CutOffNode_StopsBeforeTheClusterEndsItsLease: a follower
// cut off from the others goes on serving from its lease for a while
// (fail-static), then refuses with no-worker-lease saying why, before the
// leader ends its lease (and so long before the recycle delay lets anyone
// else have the worker id). Healed, it serves again.
func TestSnowflakeIDs_CutOffNode_StopsBeforeTheClusterEndsItsLease(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	i64 := func(v int64) *int64 { return &v }
	createNamespace(t, tc, "orders", api.NamespaceRequest{LeaseTTLMs: i64(2000), RecycleDelayMs: i64(4000)})
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
	isolated := time.Now()
	var lastOK time.Time
	served := 0
	for deadline := time.Now().Add(15 * time.Second); ; {
		if time.Now().After(deadline) {
			t.Fatalf("the cut-off node still serves %v after the cut (%d answers)", time.Since(isolated), served)
		}
		_, p, st, _ := postIDs(t, tc, cut, "orders", 1)
		if st == http.StatusOK {
			lastOK = time.Now()
			served++
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if st != http.StatusServiceUnavailable || p.Type != api.ProblemNoWorkerLease || !strings.Contains(p.Detail, "deadline") || p.Node != cut.ID {
			t.Fatalf("cut off: %d %+v; want 503 no-worker-lease saying the lease passed its deadline", st, p)
		}
		prob = p
		break
	}
	if served == 0 {
		t.Fatal("the cut-off node stopped at once; a valid lease should have served on (fail-static)")
	}
	t.Logf("cut off: served %d answers for %v, then: %s", served, lastOK.Sub(isolated).Round(time.Millisecond), prob.Detail)

	// The leader ends the lease only after its TTL without a renewal:
	// after the cut-off node had stopped.
	var ended api.Lease
	for deadline := time.Now().Add(15 * time.Second); ended.State != "ended"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the leader never ended the cut-off node's lease")
		}
		for _, l := range listLeases(t, tc, leader, "orders") {
			if l.WorkerID == first.WorkerID && l.State == "ended" {
				ended = l
			}
		}
	}
	if ended.EndReason != "expired" || ended.ReleasedMs <= lastOK.UnixMilli() {
		t.Fatalf("lease %+v ended at %d; the cut-off node served until %d", ended, ended.ReleasedMs, lastOK.UnixMilli())
	}

	tc.Net.Heal(cut.ID)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, _, st, _ := postIDs(t, tc, cut, "orders", 1)
		if st == http.StatusOK {
			if out.IDs[0] <= first.IDs[0] {
				t.Fatalf("healed: %d after %d", out.IDs[0], first.IDs[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("healed node still refuses: %d", st)
		}
	}
}

// TestSnowflakeIDs_RestartedNodeBehindItsFloor_NeverServesBelowIt: a
// namespace of one worker id. The node issues under it, is killed, and comes
// back with its wall clock 3 s behind. When the worker id is granted again
// it carries a timestamp floor above everything the first tenure could
// issue; the node refuses (clock-behind) or waits until its clock has passed
// the floor, and every ID it serves is above the floor and above every ID
// of the first tenure.
func TestSnowflakeIDs_RestartedNodeBehindItsFloor_NeverServesBelowIt(t *testing.T) {
	var clocks nodeClocks
	tc := testcluster.New(t, 1, clocks.tweak)
	i64 := func(v int64) *int64 { return &v }
	ns := createNamespace(t, tc, "solo", api.NamespaceRequest{MaxWorkers: i64(1), LeaseTTLMs: i64(1000), RecycleDelayMs: i64(1000)})
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
	clocks.offset(n.ID).Store(int64(-3 * time.Second))
	tc.Restart(n.ID)
	tc.WaitReady(10 * time.Second)

	refusals := map[string]int{}
	var after []int64
	for deadline := time.Now().Add(30 * time.Second); len(after) < 500; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the restarted node served %d IDs in 30 s; refusals %v", len(after), refusals)
		}
		out, prob, st, _ := postIDs(t, tc, n, "solo", 100)
		if st != http.StatusOK {
			refusals[prob.Type]++
			continue
		}
		after = append(after, out.IDs...)
	}
	var floor int64
	for _, l := range listLeases(t, tc, n, "solo") {
		if l.State == "held" {
			floor = l.TimestampFloorMs
		}
	}
	if floor == 0 {
		t.Fatal("the second tenure of the worker id carries no timestamp floor")
	}
	for _, id := range after {
		d := client.DecodeSnowflake(ns, id)
		if id <= before || d.TimeMs <= floor {
			t.Fatalf("ID %d (time %d) after the restart: at or below the first tenure's last ID %d or the floor %d", id, d.TimeMs, before, floor)
		}
	}
	t.Logf("second tenure: floor %d, %d IDs all above it; refusals while the clock was behind: %v", floor, len(after), refusals)
}

// TestSnowflakeIDs_TimestampBitsRanOut_409: a namespace whose timestamp
// bits last about 17 years, on a node whose clock reads 20 years later:
// 409 timestamp-exhausted naming the namespace, and no ID.
func TestSnowflakeIDs_TimestampBitsRanOut_409(t *testing.T) {
	var clocks nodeClocks
	tc := testcluster.New(t, 1, clocks.tweak)
	u8 := func(v uint8) *uint8 { return &v }
	i64 := func(v int64) *int64 { return &v }
	createNamespace(t, tc, "short", api.NamespaceRequest{TimestampBits: u8(39), WorkerBits: u8(10), SequenceBits: u8(14), LeaseTTLMs: i64(3000)})
	n := tc.Running()[0]
	if _, prob, st, _ := postIDs(t, tc, n, "short", 1); st != http.StatusOK {
		t.Fatalf("today: %d %+v", st, prob)
	}
	// The jump puts the lease's wall deadline behind the clock: the node
	// issues again after its next renewal (no-worker-lease meanwhile).
	clocks.offset(n.ID).Store(int64(20 * 365 * 24 * time.Hour))
	out, prob, st, _ := postIDs(t, tc, n, "short", 5)
	for deadline := time.Now().Add(10 * time.Second); st == http.StatusServiceUnavailable && prob.Type == api.ProblemNoWorkerLease && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		out, prob, st, _ = postIDs(t, tc, n, "short", 5)
	}
	if st != http.StatusConflict || prob.Type != api.ProblemTimestampExhausted || prob.Namespace != "short" || len(out.IDs) != 0 ||
		!strings.Contains(prob.Detail, "ran out") {
		t.Fatalf("20 years on: %d %+v", st, prob)
	}
}
