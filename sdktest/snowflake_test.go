package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
)

// Snowflake generators against real 3-node clusters in this process.

func i64p(v int64) *int64 { return &v }

// allURLs lists every node of the cluster, running or not, so that a
// client keeps them all across kills and restarts.
// snowflakeCluster starts a 3-node cluster (skipped under -short) and
// creates a namespace on it; ctx ends after timeout.
func snowflakeCluster(t *testing.T, timeout time.Duration, ns string, req api.NamespaceRequest) (*testcluster.Cluster, []string, *client.Client, context.Context) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	tc := testcluster.New(t, 3, nil)
	urls := allURLs(tc, 3)
	admin := newClient(t, urls)
	ctx := ctxFor(t, timeout)
	if _, _, err := admin.CreateNamespace(ctx, ns, req); err != nil {
		t.Fatal(err)
	}
	return tc, urls, admin, ctx
}

func allURLs(tc *testcluster.Cluster, n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, tc.URL(tc.Node(fmt.Sprintf("n%d", i))))
	}
	return out
}

// span is the range of timestamps (ms) a generator issued under one worker
// id, from its first ID under it to its last.
type span struct {
	gen        string
	worker     int64
	minT, maxT int64
	n          int64
}

// idTracker follows one generator's IDs in O(1) memory: they must strictly
// increase, and it records the span of timestamps under each worker id it
// used (a new span each time the worker id changes).
type idTracker struct {
	name   string
	layout api.Namespace
	mu     sync.Mutex
	last   int64
	spans  []span
	n      int64
	err    error
	lastAt time.Time     // when the last ID came
	gap    time.Duration // the longest time between two IDs since resetGap
}

// resetGap starts measuring the longest time without an ID anew.
func (tr *idTracker) resetGap() {
	tr.mu.Lock()
	tr.gap = 0
	tr.mu.Unlock()
}

func (tr *idTracker) maxGap() time.Duration {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return max(tr.gap, time.Since(tr.lastAt))
}

func (tr *idTracker) add(id int64) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if id <= tr.last && tr.err == nil {
		tr.err = fmt.Errorf("%s: ID %d after %d", tr.name, id, tr.last)
	}
	tr.last = id
	tr.n++
	now := time.Now()
	if !tr.lastAt.IsZero() {
		tr.gap = max(tr.gap, now.Sub(tr.lastAt))
	}
	tr.lastAt = now
	p := client.DecodeSnowflake(tr.layout, id)
	if k := len(tr.spans); k > 0 && tr.spans[k-1].worker == p.WorkerID {
		tr.spans[k-1].maxT = p.TimeMs
		tr.spans[k-1].n++
		return
	}
	tr.spans = append(tr.spans, span{gen: tr.name, worker: p.WorkerID, minT: p.TimeMs, maxT: p.TimeMs, n: 1})
}

// checkSpans fails the test if two generators used one worker id over
// overlapping timestamps: the only way two of their IDs could be equal
// (each generator's own IDs strictly increase).
func checkSpans(t *testing.T, trackers ...*idTracker) {
	t.Helper()
	byWorker := map[int64][]span{}
	for _, tr := range trackers {
		if tr.err != nil {
			t.Fatal(tr.err)
		}
		for _, s := range tr.spans {
			byWorker[s.worker] = append(byWorker[s.worker], s)
		}
	}
	for w, ss := range byWorker {
		sort.Slice(ss, func(i, j int) bool { return ss[i].minT < ss[j].minT })
		for i := 1; i < len(ss); i++ {
			if ss[i].gen != ss[i-1].gen && ss[i].minT <= ss[i-1].maxT {
				t.Fatalf("worker %d used by %s over %d..%d and by %s over %d..%d", w,
					ss[i-1].gen, ss[i-1].minT, ss[i-1].maxT, ss[i].gen, ss[i].minT, ss[i].maxT)
			}
		}
	}
}

func auditClean(t *testing.T, tc *testcluster.Cluster, leases int) {
	t.Helper()
	var check api.AuditCheck
	st, err := tc.Do(http.MethodGet, tc.URL(tc.Running()[0])+"/v1/audit/check", nil, &check)
	if err != nil || st != http.StatusOK || len(check.Violations) != 0 || check.LeasesChecked < leases {
		t.Fatalf("audit check: %d %v %+v", st, err, check)
	}
}

// blockable is an HTTP transport that fails every request while blocked:
// a generator cut off from the cluster while the cluster runs on.
type blockable struct {
	blocked atomic.Bool
	next    http.RoundTripper
}

func (b *blockable) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.blocked.Load() {
		return nil, errors.New("blocked by the test")
	}
	return b.next.RoundTrip(r)
}

// runGenerator calls Next on g in a loop until stop, recording into tr;
// refusals (no lease, clock) are counted, any other error fails the test.
func runGenerator(t *testing.T, g *client.Snowflake, tr *idTracker, stop *atomic.Bool, refused *atomic.Int64) {
	for !stop.Load() {
		for range 64 {
			id, err := g.Next(context.Background())
			switch {
			case err == nil:
				tr.add(id)
			case errors.Is(err, client.ErrLeaseExpired):
				refused.Add(1)
			case errors.Is(err, client.ErrClosed):
				return
			default:
				t.Errorf("%s: Next: %v", tr.name, err)
				return
			}
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// TestCluster_Snowflake_NeverShareAWorkerID_AcrossExpiryFailoverAndFullRestart:
// generators in separate clients ("processes") issue IDs continuously while
// (1) one of them is cut off from the cluster until its lease expires there
// and its worker id is granted to a newcomer, (2) the leader is killed, (3)
// every node is killed and restarted. No two generators ever use one
// worker id over overlapping timestamps, each one's IDs strictly increase,
// and the cluster's uniqueness probe stays clean.
func TestCluster_Snowflake_NeverShareAWorkerID_AcrossExpiryFailoverAndFullRestart(t *testing.T) {
	// TTL 1 s (the least the server allows), recycle 2 s, 3 worker ids:
	// the cut-off generator's id is the only one free for a newcomer.
	tc, urls, _, _ := snowflakeCluster(t, 120*time.Second, "users", api.NamespaceRequest{MaxWorkers: i64p(3), LeaseTTLMs: i64p(1000), RecycleDelayMs: i64p(2000)})
	cut := &blockable{next: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(cut.next.(*http.Transport).CloseIdleConnections)
	clients := []*client.Client{newClient(t, urls), newClient(t, urls), newClient(t, urls, client.WithHTTPClient(&http.Client{Transport: cut}))}
	var (
		gens     []*client.Snowflake
		trackers []*idTracker
		stop     atomic.Bool
		refused  atomic.Int64
		wg       sync.WaitGroup
	)
	start := func(name string, c *client.Client) *client.Snowflake {
		g := newSnowflake(t, c, "users", client.WithHolder(name), client.WithLeaseWait(0))
		l := waitLease(t, g, 20*time.Second)
		tr := &idTracker{name: name, layout: l.Layout}
		gens, trackers = append(gens, g), append(trackers, tr)
		wg.Go(func() { runGenerator(t, g, tr, &stop, &refused) })
		return g
	}
	defer func() { stop.Store(true); wg.Wait() }()
	a, b, cg := start("a", clients[0]), start("b", clients[1]), start("c", clients[2])
	la, _ := a.Lease()
	lb, _ := b.Lease()
	lc, _ := cg.Lease()
	if la.WorkerID == lb.WorkerID || lb.WorkerID == lc.WorkerID || la.WorkerID == lc.WorkerID {
		t.Fatalf("two generators got one worker id: %d %d %d", la.WorkerID, lb.WorkerID, lc.WorkerID)
	}
	progress := func(what string) {
		t.Helper()
		before := make([]int64, len(gens))
		for i, g := range gens {
			before[i] = g.Stats().Issued
		}
		testkit.Eventually(t, 30*time.Second, 5*time.Millisecond, what+": every generator with a lease to issue again", func() bool {
			for i, g := range gens {
				if _, ok := g.Lease(); ok && g.Stats().Issued <= before[i] {
					return false
				}
			}
			return true
		})
	}

	// (1) Lease expiry: c is cut off. It stops at its own deadline
	// (fail-closed); the cluster expires its lease, and after the recycle
	// delay grants worker lc to a newcomer d. When c is reconnected its
	// renewal is answered lease-lost and it takes another worker id.
	cut.blocked.Store(true)
	testkit.EventuallyErr(t, 20*time.Second, 5*time.Millisecond, "the cut-off generator to stop at its deadline", func() error {
		if st := cg.Stats(); st.Expired < 1 {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
	d := start("d", newClient(t, urls)) // waits until a worker id is free: lc, after its recycle delay
	ld, _ := d.Lease()
	if ld.WorkerID != lc.WorkerID {
		t.Fatalf("newcomer got worker %d; want the expired %d", ld.WorkerID, lc.WorkerID)
	}
	if lost, ok := cg.Lease(); ok && lost.Valid {
		t.Fatalf("the cut-off generator still holds a valid lease of worker %d while it is granted to d", lost.WorkerID)
	}
	cut.blocked.Store(false)
	// c's renewal is refused; no id is free until d... a is released
	// below, so c waits meanwhile (refusing Next: ErrLeaseExpired).
	testkit.EventuallyErr(t, 20*time.Second, 5*time.Millisecond, "the reconnected generator to learn its lease was lost", func() error {
		if st := cg.Stats(); st.LeasesLost < 1 {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
	if err := a.Close(); err != nil { // frees worker la (after its recycle delay) for c
		t.Fatalf("Close: %v", err)
	}
	if err := cg.Wait(ctxFor(t, 20*time.Second)); err != nil {
		t.Fatalf("c did not get a new lease: %v", err)
	}
	if lc2, _ := cg.Lease(); lc2.WorkerID == lc.WorkerID {
		t.Fatalf("c got its old worker id %d back while d holds it", lc.WorkerID)
	}
	gens = gens[1:] // a is closed
	progress("after the expiry")

	// (2) Leader failover.
	live := trackers[1:] // b, c, d: a is closed
	for _, tr := range live {
		tr.resetGap()
	}
	leader := tc.Leader(10 * time.Second)
	tc.Kill(leader.ID)
	tc.Leader(10 * time.Second)
	progress("after the leader was killed")
	for _, tr := range live {
		t.Logf("leader failover: %s went at most %v without an ID", tr.name, tr.maxGap().Round(time.Millisecond))
	}
	tc.Restart(leader.ID)
	tc.WaitReady(20 * time.Second)

	// (3) Full-cluster restart, down for longer than the leases: every
	// generator (each holding a valid lease when the nodes go) stops at its
	// deadline, then takes a new lease.
	for _, g := range gens {
		if err := g.Wait(ctxFor(t, 30*time.Second)); err != nil {
			t.Fatalf("%s before the full restart: %v", g.Holder(), err)
		}
	}
	for _, tr := range live {
		tr.resetGap()
	}
	killed := time.Now()
	for _, n := range tc.Running() {
		tc.Kill(n.ID)
	}
	testkit.Eventually(t, 20*time.Second, 5*time.Millisecond, "every generator's lease to lapse after every node was killed", func() bool {
		for _, g := range gens {
			if l, ok := g.Lease(); ok && l.Valid {
				return false
			}
		}
		return true
	})
	stopped := make([]int64, len(gens))
	for i, g := range gens {
		stopped[i] = g.Stats().Issued
	}
	time.Sleep(100 * time.Millisecond)
	for i, g := range gens {
		if n := g.Stats().Issued; n != stopped[i] {
			t.Fatalf("%s issued %d IDs without a valid lease", g.Holder(), n-stopped[i])
		}
	}
	restarted := time.Now()
	for _, id := range []string{"n3", "n1", "n2"} {
		tc.Restart(id)
	}
	tc.WaitReady(30 * time.Second)
	for _, g := range gens {
		if err := g.Wait(ctxFor(t, 30*time.Second)); err != nil {
			t.Fatalf("%s after the restart: %v", g.Holder(), err)
		}
	}
	progress("after the full restart")
	for _, tr := range live {
		t.Logf("full restart (nodes down %v): %s went at most %v without an ID", restarted.Sub(killed).Round(time.Millisecond), tr.name, tr.maxGap().Round(time.Millisecond))
	}

	stop.Store(true)
	wg.Wait()
	checkSpans(t, trackers...)
	var held []int64
	for _, g := range gens {
		l, ok := g.Lease()
		if !ok {
			t.Fatalf("%s holds no lease at the end", g.Holder())
		}
		held = append(held, l.WorkerID)
	}
	sort.Slice(held, func(i, j int) bool { return held[i] < held[j] })
	for i := 1; i < len(held); i++ {
		if held[i] == held[i-1] {
			t.Fatalf("two generators hold worker %d at the end", held[i])
		}
	}
	auditClean(t, tc, 4)
	for _, tr := range trackers {
		t.Logf("%s: %d IDs, worker spans %+v", tr.name, tr.n, tr.spans)
	}
	for _, g := range gens {
		t.Logf("%s: %+v", g.Holder(), g.Stats())
	}
	t.Logf("Next refused with ErrLeaseExpired %d times in all (fail-closed while without a lease)", refused.Load())
}

// TestCluster_Snowflake_RevokedGenerator_StopsBeforeTheIDIsReissued: an
// operator revokes a's worker id mid-stream. a's next renewal is answered
// lease-lost and a moves to the other worker id; the revoked id goes to
// nobody until its recycle delay has passed (b, asking all along, gets it
// only then); every ID a issued under it carries a timestamp below the
// revocation time + TTL (a's deadline could not be later: its last
// successful renewal was sent before the revocation), every ID b issues
// under it one above b's grant, so none can be equal.
func TestCluster_Snowflake_RevokedGenerator_StopsBeforeTheIDIsReissued(t *testing.T) {
	const ttl, recycle = 2000, 4000 // 2 s: robust to a busy machine; the revoke lands on a held lease
	tc, urls, admin, ctx := snowflakeCluster(t, 60*time.Second, "users", api.NamespaceRequest{MaxWorkers: i64p(2), LeaseTTLMs: i64p(ttl), RecycleDelayMs: i64p(recycle)})
	a := newSnowflake(t, newClient(t, urls), "users", client.WithHolder("a"))
	la := waitLease(t, a, 20*time.Second)
	tra := &idTracker{name: "a", layout: la.Layout}
	var stop atomic.Bool
	var refused atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() { runGenerator(t, a, tra, &stop, &refused) })
	defer func() { stop.Store(true); wg.Wait() }()
	testkit.Eventually(t, 10*time.Second, 5*time.Millisecond, "a to issue 10,000 IDs", func() bool { return a.Stats().Issued > 10_000 })

	revoked, err := admin.RevokeLease(ctx, "users", la.WorkerID)
	if err != nil || revoked.Token != la.Token || revoked.ReleasedMs == 0 {
		t.Fatalf("revoke: %+v %v", revoked, err)
	}
	r := revoked.ReleasedMs
	testkit.EventuallyErr(t, 10*time.Second, 5*time.Millisecond, "a to notice the revocation", func() error {
		if st := a.Stats(); st.LeasesLost < 1 {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
	// a stopped issuing under the revoked id at once and took the other
	// one (the revoked one rests).
	la2 := waitLease(t, a, 10*time.Second)
	if la2.WorkerID == la.WorkerID {
		t.Fatalf("a got the revoked worker %d back at once", la.WorkerID)
	}
	// b asks for a lease from now on; the only id it can get is the
	// revoked one, after its recycle delay.
	b := newSnowflake(t, newClient(t, urls), "users", client.WithHolder("b"))
	lb := waitLease(t, b, 20*time.Second)
	if lb.WorkerID != la.WorkerID || lb.GrantedMs < r+recycle {
		t.Fatalf("b got worker %d at %d; want the revoked %d no earlier than %d (revoked at %d + recycle %d)",
			lb.WorkerID, lb.GrantedMs, la.WorkerID, r+recycle, r, recycle)
	}
	// a's state by then: on the other worker id (or none), never the revoked one.
	if l, ok := a.Lease(); ok && l.WorkerID == la.WorkerID {
		t.Fatalf("a holds worker %d again while b has it", l.WorkerID)
	}
	if id, err := a.Next(ctx); err == nil && client.DecodeSnowflake(la.Layout, id).WorkerID == la.WorkerID {
		t.Fatalf("a issued %d under the revoked worker id after b got it", id)
	}
	trb := &idTracker{name: "b", layout: lb.Layout}
	for range 10_000 {
		id, err := b.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		trb.add(id)
	}
	stop.Store(true)
	wg.Wait()
	if tra.err != nil {
		t.Fatal(tra.err)
	}
	var maxA int64 = -1
	for _, s := range tra.spans {
		if s.worker == la.WorkerID {
			maxA = max(maxA, s.maxT)
		}
	}
	if maxA < 0 || maxA >= r+ttl {
		t.Fatalf("a's last timestamp under worker %d is %d; want below the revocation %d + TTL %d", la.WorkerID, maxA, r, ttl)
	}
	if minB := trb.spans[0].minT; minB < lb.GrantedMs || minB <= maxA {
		t.Fatalf("b's first timestamp %d is not above a's last %d and b's grant %d", minB, maxA, lb.GrantedMs)
	}
	// A cluster that hands out timestamp floors bounds a by its own clock:
	// b's floor is above a's every timestamp, and b stays above the floor.
	if fl := lb.TimestampFloorMs; fl != 0 && (fl <= maxA || trb.spans[0].minT <= fl) {
		t.Fatalf("b's timestamp floor %d: a's last timestamp %d, b's first %d; want a's < floor < b's", fl, maxA, trb.spans[0].minT)
	} else if fl == 0 {
		t.Log("the cluster handed out no timestamp floor")
	}
	checkSpans(t, tra, trb)
	auditClean(t, tc, 3)
	t.Logf("revoked at %d; a's last ID under worker %d at %d (%d ms later); b granted it at %d (%d ms after the revocation); a: %+v",
		r, la.WorkerID, maxA, maxA-r, lb.GrantedMs, lb.GrantedMs-r, a.Stats())
}

// TestCluster_Snowflake_TenGeneratorsMillionIDsEach_NoDuplicate: ten
// generators (ten clients) take 1,000,000 IDs each, concurrently. Each one's
// IDs strictly increase (checked as they come: no generator can repeat
// itself), every ID decodes to a worker id its generator held, and no two
// generators held one worker id: IDs of different worker ids differ in
// their worker bits, so there is no duplicate among the 10 M, with O(1)
// memory per generator. A sample of IDs round-trips through the server's
// inspect endpoint, which names the holder.
func TestCluster_Snowflake_TenGeneratorsMillionIDsEach_NoDuplicate(t *testing.T) {
	// 10 s leases: a renewal every 3.3 s during the run. (The claim here is
	// uniqueness: a lease that lapses on this busy machine is waited for and
	// the run goes on, under whatever worker id comes next.)
	tc, urls, admin, ctx := snowflakeCluster(t, 180*time.Second, "orders", api.NamespaceRequest{LeaseTTLMs: i64p(10_000)})
	const gens, per = 10, 1_000_000
	trackers := make([]*idTracker, gens)
	generators := make([]*client.Snowflake, gens)
	samples := make([][]int64, gens)
	start := time.Now()
	var wg sync.WaitGroup
	var lapses atomic.Int64
	// retry waits for a lease after ErrLeaseExpired; false on any other error.
	retry := func(g *client.Snowflake, err error) bool {
		if !errors.Is(err, client.ErrLeaseExpired) {
			return false
		}
		lapses.Add(1)
		return g.Wait(ctx) == nil
	}
	for i := range gens {
		g := newSnowflake(t, newClient(t, urls), "orders", client.WithHolder(fmt.Sprintf("host-%d/pid-%d", i, 1000+i)))
		l := waitLease(t, g, 20*time.Second)
		generators[i], trackers[i] = g, &idTracker{name: g.Holder(), layout: l.Layout}
		wg.Go(func() {
			tr := trackers[i]
			for tr.n < per {
				if tr.n%10 == 0 { // one call in ten a batch, the rest single IDs
					ids, err := g.NextN(ctx, int(min(256, per-tr.n)))
					if err != nil && retry(g, err) {
						continue
					}
					if err != nil {
						t.Errorf("%s: NextN: %v", tr.name, err)
						return
					}
					for _, id := range ids {
						tr.add(id)
					}
					continue
				}
				id, err := g.Next(ctx)
				if err != nil && retry(g, err) {
					continue
				}
				if err != nil {
					t.Errorf("%s: Next: %v", tr.name, err)
					return
				}
				tr.add(id)
				if tr.n%100_003 == 0 {
					samples[i] = append(samples[i], id)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if t.Failed() {
		return
	}
	checkSpans(t, trackers...)
	workers := map[int64]string{}
	var total int64
	for i, tr := range trackers {
		total += tr.n
		l, _ := generators[i].Lease()
		for _, s := range tr.spans {
			if other, ok := workers[s.worker]; ok && other != tr.name {
				t.Fatalf("worker %d used by %s and %s", s.worker, other, tr.name)
			}
			workers[s.worker] = tr.name
			if s.minT < start.UnixMilli()-1 || s.maxT > time.Now().UnixMilli() {
				t.Fatalf("%s: timestamps %d..%d outside the run", tr.name, s.minT, s.maxT)
			}
		}
		if tr.n != per || tr.spans[len(tr.spans)-1].worker != l.WorkerID {
			t.Fatalf("%s: %d IDs over worker spans %+v; lease %+v", tr.name, tr.n, tr.spans, l)
		}
	}
	if total != gens*per {
		t.Fatalf("%d IDs", total)
	}
	// Inspect round trip, through a follower or the leader alike.
	for i, ids := range samples {
		l, _ := generators[i].Lease()
		for _, id := range ids {
			p := client.DecodeSnowflake(l.Layout, id)
			in, err := admin.InspectSnowflake(ctx, "orders", id)
			if err != nil {
				t.Fatal(err)
			}
			sameLease := p.WorkerID == l.WorkerID && len(trackers[i].spans) == 1 // else an earlier lease
			if in.ID != id || in.WorkerID != p.WorkerID || in.Sequence != p.Sequence || in.TimeMs != p.TimeMs ||
				in.Holder != generators[i].Holder() || (sameLease && !in.Found) {
				t.Fatalf("inspect %d = %+v; want worker %d seq %d time %d holder %s", id, in, p.WorkerID, p.Sequence, p.TimeMs, generators[i].Holder())
			}
		}
	}
	auditClean(t, tc, gens)
	t.Logf("%d generators × %d IDs = %d IDs in %v (%.1f M IDs/s in all), no duplicate; %d calls waited for a lapsed lease",
		gens, per, total, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds()/1e6, lapses.Load())
}

// loseFirstGrant is an HTTP transport that delivers the first lease acquire
// to the cluster and then answers the client 503, as if the answer of a
// grant that committed were lost (a leader that failed over right after, a
// cut connection).
type loseFirstGrant struct {
	next http.RoundTripper
	done atomic.Bool
	lost atomic.Pointer[api.Lease]
}

func (l *loseFirstGrant) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(r)
	if err != nil || r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/leases") || !l.done.CompareAndSwap(false, true) {
		return resp, err
	}
	var granted api.Lease
	_ = json.NewDecoder(resp.Body).Decode(&granted)
	resp.Body.Close()
	l.lost.Store(&granted)
	body := `{"type":"` + api.ProblemUnavailable + `","title":"service unavailable","status":503}`
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/problem+json"}, "Retry-After": {"0"}},
		Body:   io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
}

// An acquire whose grant committed but whose answer was lost is retried with
// its request id, and gets the lease it already had: one worker id, one
// grant in the cluster's audit.
func TestCluster_Snowflake_LostAcquireAnswer_RetryGetsTheSameLease(t *testing.T) {
	tc, urls, _, _ := snowflakeCluster(t, 60*time.Second, "users", api.NamespaceRequest{MaxWorkers: i64p(4)})
	lossy := &loseFirstGrant{next: http.DefaultTransport.(*http.Transport).Clone()}
	g := newSnowflake(t, newClient(t, urls, client.WithHTTPClient(&http.Client{Transport: lossy})), "users", client.WithHolder("gen-1"))
	l := waitLease(t, g, 20*time.Second)
	lost := lossy.lost.Load()
	if lost == nil || lost.Token == 0 {
		t.Fatalf("the first acquire was not granted and lost: %+v", lost)
	}
	if l.WorkerID != lost.WorkerID || l.Token != lost.Token {
		t.Fatalf("the retry got worker %d token %d; the lost grant was worker %d token %d", l.WorkerID, l.Token, lost.WorkerID, lost.Token)
	}
	var check api.AuditCheck
	if st, err := tc.Do(http.MethodGet, tc.URL(tc.Running()[0])+"/v1/audit/check", nil, &check); err != nil || st != http.StatusOK || check.LeasesChecked != 1 {
		t.Fatalf("audit: %d %v %+v (want exactly one grant)", st, err, check)
	}
}

// TestCluster_Snowflake_HolderClockAnHourFast_NextHolderStaysAboveIt: a's
// clock runs an hour fast; it issues IDs under the namespace's only worker
// id and closes. b, on a true clock, gets that id after its recycle delay
// with a timestamp floor above every timestamp a used, an hour ahead of b's
// clock and past b's lease deadline: b gives the lease back three times (the
// only id comes back each time after its rest), keeps the fourth and refuses
// with ErrClockMovedBackwards rather than issue an ID below a's.
func TestCluster_Snowflake_HolderClockAnHourFast_NextHolderStaysAboveIt(t *testing.T) {
	tc, urls, _, ctx := snowflakeCluster(t, 60*time.Second, "users", api.NamespaceRequest{MaxWorkers: i64p(1), LeaseTTLMs: i64p(1000), RecycleDelayMs: i64p(1000)})
	fast := aheadClock{start: time.Now(), ahead: time.Hour}
	a := newSnowflake(t, newClient(t, urls), "users", client.WithHolder("a"), client.WithClock(fast))
	la := waitLease(t, a, 20*time.Second)
	var maxA int64
	for range 1000 {
		id, err := a.Next(ctx)
		if err != nil {
			t.Fatalf("a: %v", err)
		}
		maxA = max(maxA, client.DecodeSnowflake(la.Layout, id).TimeMs)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	b := newSnowflake(t, newClient(t, urls), "users", client.WithHolder("b"))
	lb := waitLease(t, b, 30*time.Second)
	if lb.WorkerID != la.WorkerID || lb.TimestampFloorMs <= maxA {
		t.Fatalf("b's lease %+v; want worker %d with a floor above a's last timestamp %d", lb, la.WorkerID, maxA)
	}
	for range 3 {
		if id, err := b.Next(ctx); !errors.Is(err, client.ErrClockMovedBackwards) {
			t.Fatalf("b.Next = %d, %v; want ErrClockMovedBackwards (floor %d, a's last timestamp %d)", id, err, lb.TimestampFloorMs, maxA)
		}
	}
	if st := b.Stats(); st.FloorGiveUps != 3 || st.Issued != 0 {
		t.Fatalf("b's stats %+v", st)
	}
	auditClean(t, tc, 5)
	t.Logf("a issued up to %d (an hour fast); b holds worker %d with floor %d and refuses: %+v", maxA, lb.WorkerID, lb.TimestampFloorMs, b.Stats())
}

// aheadClock is a client.Clock that runs with real time, its wall clock
// ahead by a fixed amount (a host whose clock is wrong).
type aheadClock struct {
	start time.Time // with a monotonic reading
	ahead time.Duration
}

func (c aheadClock) Now() (time.Time, time.Duration) {
	elapsed := time.Since(c.start)
	return c.start.Round(0).Add(elapsed + c.ahead), elapsed
}

// TestSnowflake_Shard_ChosenWorkerID_OnARealCluster (issue #16): a namespace
// made with the "instagram" preset; a generator leases shard 17 with
// WithWorkerID; a second one asking for shard 17 gets a typed
// *WorkerUnavailableError naming the first holder, and the shard once the
// first generator has closed and the recycle delay has passed; its IDs
// inspect as shard 17 on the cluster and decode to it in the SDK.
func TestSnowflake_Shard_ChosenWorkerID_OnARealCluster(t *testing.T) {
	_, urls, admin, ctx := snowflakeCluster(t, 60*time.Second, "posts",
		api.NamespaceRequest{Preset: api.PresetInstagram, LeaseTTLMs: i64p(1000), RecycleDelayMs: i64p(1000)})
	a := newSnowflake(t, newClient(t, urls), "posts", client.WithHolder("db-a"), client.WithWorkerID(17))
	if l := waitLease(t, a, 10*time.Second); l.WorkerID != 17 || l.Layout.WorkerRole != api.WorkerRoleShard {
		t.Fatalf("lease %+v", l)
	}
	b := newSnowflake(t, newClient(t, urls), "posts", client.WithHolder("db-b"), client.WithWorkerID(17))
	err := b.Wait(ctxFor(t, time.Second))
	var wu *client.WorkerUnavailableError
	if !errors.As(err, &wu) || !errors.Is(err, client.ErrWorkerUnavailable) || wu.Holder != "db-a" || wu.WorkerID != 17 {
		t.Fatalf("second generator on shard 17: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	l := waitLease(t, b, 20*time.Second)
	if l.WorkerID != 17 {
		t.Fatalf("lease %+v", l)
	}
	id, err := b.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p := client.DecodeSnowflake(l.Layout, id); p.WorkerID != 17 {
		t.Fatalf("ID %d decodes to %+v", id, p)
	}
	in, err := admin.InspectSnowflake(ctx, "posts", id)
	if err != nil || in.Shard == nil || *in.Shard != 17 || in.Holder != "db-b" || !in.Found {
		t.Fatalf("inspect %d: %+v %v", id, in, err)
	}
}
