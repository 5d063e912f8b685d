package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
)

// fakeClock is an injectable Clock. Following, it runs with real time;
// frozen, only Advance moves it. Step moves the wall clock alone (a step of
// the host's clock); Advance moves wall and monotonic time together (time
// passing). True is the time without the steps: the cluster's clock.
type fakeClock struct {
	mu      sync.Mutex
	follow  bool
	start   time.Time // real, with a monotonic reading
	wall0   time.Time // wall at start, without a monotonic reading
	wallOff time.Duration
	monoOff time.Duration
}

func newFakeClock(follow bool) *fakeClock {
	now := time.Now()
	return &fakeClock{follow: follow, start: now, wall0: now.Round(0)}
}

func (c *fakeClock) elapsedLocked() time.Duration {
	if c.follow {
		return time.Since(c.start)
	}
	return 0
}

func (c *fakeClock) Now() (time.Time, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.elapsedLocked()
	return c.wall0.Add(e + c.wallOff), e + c.monoOff
}

// True is the clock without the steps (the cluster's).
func (c *fakeClock) True() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall0.Add(c.elapsedLocked() + c.monoOff)
}

// Step moves the wall clock by d (negative: back) and not the monotonic one.
func (c *fakeClock) Step(d time.Duration) {
	c.mu.Lock()
	c.wallOff += d
	c.mu.Unlock()
}

// Advance lets d pass: wall and monotonic clock both move by d.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.wallOff += d
	c.monoOff += d
	c.mu.Unlock()
}

// Offset is how far the wall clock is from the true one.
func (c *fakeClock) Offset() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wallOff - c.monoOff
}

// leaseStandIn is an in-process stand-in for the cluster's namespace and
// lease endpoints, with the FSM's rules (lowest free worker id; an id is
// granted again only after its lease ended and the recycle delay passed;
// token = a growing counter; renew and release need the token and an active
// lease, or 409 lease-lost; a holder's bound is its highest client_time_ms +
// TTL, and the next holder of the id gets the highest bound so far as its
// timestamp floor). Its time is now(), so a test can freeze it.
type leaseStandIn struct {
	srv *httptest.Server
	now func() time.Time

	mu       sync.Mutex
	ns       map[string]api.Namespace
	leases   map[string]map[int64]*api.Lease
	bounds   map[*api.Lease]int64 // the highest client_time_ms + TTL of each lease
	token    uint64
	down     bool          // every lease request: 503
	lostNext int           // answer the next renewals 409 lease-lost
	offset   time.Duration // added to the stand-in's clock (a skewed cluster)
	// floorFor, if set, raises the timestamp floor of a grant of worker
	// to what it returns (nowMs: the stand-in's clock).
	floorFor  func(worker, nowMs int64) int64
	acquires  int
	renewals  int
	releases  int
	grants    []api.Lease
	sent      []sentTime
	holderLog []string
}

// sentTime is the client_time_ms of an acquire or renewal, with the real
// time (Unix ms) the stand-in received it.
type sentTime struct {
	op               string // "acquire" or "renew"
	clientMs, recvMs int64
}

func newLeaseStandIn(now func() time.Time) *leaseStandIn {
	if now == nil {
		now = time.Now
	}
	f := &leaseStandIn{now: now, ns: map[string]api.Namespace{}, leases: map[string]map[int64]*api.Lease{}, bounds: map[*api.Lease]int64{}, token: 100}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /v1/namespaces/{name}", f.create)
	mux.HandleFunc("POST /v1/namespaces/{name}/leases", f.acquire)
	mux.HandleFunc("GET /v1/namespaces/{name}/leases", f.list)
	mux.HandleFunc("PUT /v1/namespaces/{name}/leases/{worker}", f.renew)
	mux.HandleFunc("DELETE /v1/namespaces/{name}/leases/{worker}", f.release)
	mux.HandleFunc("POST /v1/namespaces/{name}/leases/{worker}/revoke", f.revoke)
	f.srv = httptest.NewServer(mux)
	return f
}

func (f *leaseStandIn) URL() string { return f.srv.URL }
func (f *leaseStandIn) Close()      { f.srv.Close() }

func (f *leaseStandIn) set(fn func(f *leaseStandIn)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *leaseStandIn) nowMsLocked() int64 { return f.now().Add(f.offset).UnixMilli() }

// addNamespace creates a namespace directly: the default layout (41/10/12
// bits, 1 ms ticks) unless changed by edit.
func (f *leaseStandIn) addNamespace(name string, ttl, recycle time.Duration, edit func(*api.Namespace)) {
	n := api.Namespace{Name: name, EpochMs: api.DefaultEpochMs, TimestampBits: api.DefaultTimestampBits,
		WorkerBits: api.DefaultWorkerBits, SequenceBits: api.DefaultSequenceBits, TickMs: api.DefaultTickMs,
		MaxWorkers: 1 << api.DefaultWorkerBits, LeaseTTLMs: ttl.Milliseconds(), RecycleDelayMs: recycle.Milliseconds()}
	if edit != nil {
		edit(&n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ns[name] = n
	f.leases[name] = map[int64]*api.Lease{}
}

func leaseEnd(l *api.Lease) int64 {
	if l.ReleasedMs != 0 && l.ReleasedMs < l.ExpiresMs {
		return l.ReleasedMs
	}
	return l.ExpiresMs
}

func (f *leaseStandIn) downLocked(w http.ResponseWriter) bool {
	if f.down {
		writeProblem(w, http.StatusServiceUnavailable, api.Problem{Type: api.ProblemUnavailable, Title: "service unavailable", Detail: "stand-in is down"}, "")
	}
	return f.down
}

func (f *leaseStandIn) create(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	f.mu.Lock()
	_, exists := f.ns[name]
	f.mu.Unlock()
	if !exists {
		f.addNamespace(name, 30*time.Second, time.Minute, nil)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st := http.StatusOK
	if !exists {
		st = http.StatusCreated
	}
	writeJSON(w, st, f.ns[name])
}

func (f *leaseStandIn) view(l *api.Lease) api.Lease {
	v := *l
	n := f.ns[l.Namespace]
	v.TTLMs, v.Layout = n.LeaseTTLMs, n
	return v
}

func (f *leaseStandIn) acquire(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var req api.LeaseRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Holder == "" {
		badRequest(w, "holder")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.downLocked(w) {
		return
	}
	n, ok := f.ns[name]
	if !ok {
		writeProblem(w, http.StatusNotFound, api.Problem{Type: api.ProblemNamespaceNotFound, Title: "namespace not found"}, "")
		return
	}
	f.acquires++
	f.sent = append(f.sent, sentTime{op: "acquire", clientMs: req.ClientTimeMs, recvMs: time.Now().UnixMilli()})
	now := f.nowMsLocked()
	from, to := int64(0), n.MaxWorkers
	if req.WorkerID != nil { // a chosen worker id (issue #16)
		if *req.WorkerID < 0 || *req.WorkerID >= n.MaxWorkers {
			badRequest(w, "worker_id")
			return
		}
		from, to = *req.WorkerID, *req.WorkerID+1
	}
	for wk := from; wk < to; wk++ {
		prev, used := f.leases[name][wk]
		if used && now < leaseEnd(prev)+n.RecycleDelayMs {
			if req.WorkerID != nil {
				state := "ended"
				if now < leaseEnd(prev) {
					state = "held"
				}
				writeProblem(w, http.StatusConflict, api.Problem{Type: api.ProblemWorkerUnavailable, Title: "worker id unavailable",
					Detail: "taken", WorkerID: &wk, Holder: prev.Holder, State: state, EarliestFreeMs: leaseEnd(prev) + n.RecycleDelayMs}, "")
				return
			}
			continue
		}
		f.token++
		l := &api.Lease{Namespace: name, WorkerID: wk, Holder: req.Holder, Token: f.token, GrantedMs: now, ExpiresMs: now + n.LeaseTTLMs,
			GrantSeq: 1000 + f.token} // the audit numbers every grant, not only leases
		if used {
			bound := f.bounds[prev]
			if bound == 0 { // a holder that never sent its clock: the cluster's stamp
				bound = leaseEnd(prev)
			}
			l.TimestampFloorMs = max(prev.TimestampFloorMs, bound)
			delete(f.bounds, prev)
		}
		if f.floorFor != nil {
			l.TimestampFloorMs = max(l.TimestampFloorMs, f.floorFor(wk, now))
		}
		f.boundLocked(l, req.ClientTimeMs)
		f.leases[name][wk] = l
		f.grants = append(f.grants, *l)
		writeJSON(w, http.StatusCreated, f.view(l))
		return
	}
	writeProblem(w, http.StatusConflict, api.Problem{Type: api.ProblemNoWorkerFree, Title: "no worker id free"}, "")
}

// held finds the lease of a renew or release request; it writes the
// problem and returns nil when the lease is not held with the token.
func (f *leaseStandIn) heldLocked(w http.ResponseWriter, r *http.Request, anyToken bool) *api.Lease {
	if anyToken {
		return f.leaseLocked(w, r, api.LeaseTokenRequest{}, true)
	}
	l, _ := f.heldReqLocked(w, r)
	return l
}

// heldReqLocked is heldLocked for a request with a token; it also returns
// the request.
func (f *leaseStandIn) heldReqLocked(w http.ResponseWriter, r *http.Request) (*api.Lease, api.LeaseTokenRequest) {
	var req api.LeaseTokenRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Token == 0 {
		badRequest(w, "token")
		return nil, req
	}
	return f.leaseLocked(w, r, req, false), req
}

func (f *leaseStandIn) leaseLocked(w http.ResponseWriter, r *http.Request, req api.LeaseTokenRequest, anyToken bool) *api.Lease {
	name := r.PathValue("name")
	wk, _ := strconv.ParseInt(r.PathValue("worker"), 10, 64)
	if _, ok := f.ns[name]; !ok {
		writeProblem(w, http.StatusNotFound, api.Problem{Type: api.ProblemNamespaceNotFound, Title: "namespace not found"}, "")
		return nil
	}
	l := f.leases[name][wk]
	if l == nil || (!anyToken && l.Token != req.Token) || f.nowMsLocked() >= leaseEnd(l) {
		writeProblem(w, http.StatusConflict, api.Problem{Type: api.ProblemLeaseLost, Title: "lease lost"}, "")
		return nil
	}
	return l
}

func (f *leaseStandIn) renew(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.downLocked(w) {
		return
	}
	f.renewals++
	if f.lostNext > 0 {
		f.lostNext--
		writeProblem(w, http.StatusConflict, api.Problem{Type: api.ProblemLeaseLost, Title: "lease lost", Detail: "injected"}, "")
		return
	}
	if l, req := f.heldReqLocked(w, r); l != nil {
		l.ExpiresMs = f.nowMsLocked() + f.ns[l.Namespace].LeaseTTLMs
		f.sent = append(f.sent, sentTime{op: "renew", clientMs: req.ClientTimeMs, recvMs: time.Now().UnixMilli()})
		f.boundLocked(l, req.ClientTimeMs)
		writeJSON(w, http.StatusOK, f.view(l))
	}
}

func (f *leaseStandIn) boundLocked(l *api.Lease, clientMs int64) {
	if clientMs > 0 {
		f.bounds[l] = max(f.bounds[l], clientMs+f.ns[l.Namespace].LeaseTTLMs)
	}
}

// sentTimes returns the client times of the acquires and renewals so far.
func (f *leaseStandIn) sentTimes() []sentTime {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent)
}

func (f *leaseStandIn) release(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.downLocked(w) {
		return
	}
	f.releases++
	if l := f.heldLocked(w, r, false); l != nil {
		l.ReleasedMs = f.nowMsLocked()
		writeJSON(w, http.StatusOK, f.view(l))
	}
}

func (f *leaseStandIn) revoke(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l := f.heldLocked(w, r, true); l != nil {
		l.ReleasedMs = f.nowMsLocked()
		writeJSON(w, http.StatusOK, f.view(l))
	}
}

func (f *leaseStandIn) list(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := api.LeaseList{Leases: []api.Lease{}}
	for _, l := range f.leases[r.PathValue("name")] {
		out.Leases = append(out.Leases, f.view(l))
	}
	slices.SortFunc(out.Leases, func(a, b api.Lease) int { return int(a.WorkerID - b.WorkerID) })
	writeJSON(w, http.StatusOK, out)
}

// newSnowflake makes a generator on c and closes it when the test ends.
func newSnowflake(t *testing.T, c *client.Client, ns string, opts ...client.SnowflakeOption) *client.Snowflake {
	t.Helper()
	g, err := c.Snowflake(ns, opts...)
	if err != nil {
		t.Fatalf("Snowflake(%q): %v", ns, err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

func waitLease(t *testing.T, g *client.Snowflake, d time.Duration) client.SnowflakeLease {
	t.Helper()
	if err := g.Wait(ctxFor(t, d)); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	l, ok := g.Lease()
	if !ok {
		t.Fatal("no lease after Wait")
	}
	return l
}

func mustNext(t *testing.T, g *client.Snowflake) int64 {
	t.Helper()
	id, err := g.Next(ctxFor(t, 10*time.Second))
	if err != nil {
		t.Fatalf("Next: %v (stats %+v)", err, g.Stats())
	}
	return id
}

// TestSnowflake_Next_StrictlyIncreasingAndDecodesToItsLease: goroutines
// share a generator; each sees its IDs increase, all are distinct, and each
// decodes to the lease's worker id, a time within the run and a sequence
// within the layout.
func TestSnowflake_Next_StrictlyIncreasingAndDecodesToItsLease(t *testing.T) {
	noLeak(t)
	f := newLeaseStandIn(nil)
	t.Cleanup(f.Close)
	f.addNamespace("users", 30*time.Second, time.Minute, nil)
	c := newClient(t, []string{f.URL()})
	g := newSnowflake(t, c, "users", client.WithHolder("test/1"))
	l := waitLease(t, g, 5*time.Second)
	if l.WorkerID != 0 || l.Token == 0 || l.Holder != "test/1" || l.TTL != 30*time.Second || !l.Valid || l.Layout.SequenceBits != 12 {
		t.Fatalf("lease %+v", l)
	}
	start := time.Now().UnixMilli()
	const goroutines, per = 4, 20_000
	var wg sync.WaitGroup
	results := goSnowflakeCallers(t, &wg, g, goroutines, per)
	wg.Wait()
	end := time.Now().UnixMilli()
	var all []int64
	for i, ids := range results {
		for j := 1; j < len(ids); j++ {
			if ids[j] <= ids[j-1] {
				t.Fatalf("goroutine %d: %d after %d", i, ids[j], ids[j-1])
			}
		}
		all = append(all, ids...)
	}
	checkUnique(t, all)
	for _, id := range all {
		p := client.DecodeSnowflake(l.Layout, id)
		if p.WorkerID != l.WorkerID || p.TimeMs < start-1 || p.TimeMs > end || p.Sequence > 4095 || p.Sequence < 0 {
			t.Fatalf("id %d decodes to %+v; lease worker %d, run %d..%d", id, p, l.WorkerID, start, end)
		}
	}
	if st := g.Stats(); st.Issued != int64(len(all)) || st.Acquired != 1 {
		t.Fatalf("stats %+v after %d IDs", st, len(all))
	}
}

// TestSnowflake_SequenceUsedUp_WaitsForTheNextTick: with 2 sequence bits a
// tick holds 4 IDs; the fifth waits for the next tick.
func TestSnowflake_SequenceUsedUp_WaitsForTheNextTick(t *testing.T) {
	noLeak(t)
	f := newLeaseStandIn(nil)
	t.Cleanup(f.Close)
	f.addNamespace("tiny", 30*time.Second, time.Minute, func(n *api.Namespace) { n.TimestampBits, n.SequenceBits = 51, 2 })
	c := newClient(t, []string{f.URL()})
	g := newSnowflake(t, c, "tiny")
	l := waitLease(t, g, 5*time.Second)
	var ids []int64
	for range 50 {
		ids = append(ids, mustNext(t, g))
	}
	batch, err := g.NextN(ctxFor(t, 5*time.Second), 30)
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, batch...)
	perTick := map[int64]int{}
	for i, id := range ids {
		if i > 0 && id <= ids[i-1] {
			t.Fatalf("%d after %d", id, ids[i-1])
		}
		p := client.DecodeSnowflake(l.Layout, id)
		perTick[p.TimeMs]++
		if p.Sequence > 3 || p.WorkerID != l.WorkerID {
			t.Fatalf("%+v", p)
		}
	}
	for tick, n := range perTick {
		if n > 4 {
			t.Fatalf("tick %d has %d IDs; the layout allows 4", tick, n)
		}
	}
	if len(perTick) < 20 || g.Stats().SequenceWaits == 0 {
		t.Fatalf("%d IDs over %d ticks, stats %+v", len(ids), len(perTick), g.Stats())
	}
}

// TestSnowflake_ClockSteppedBack_SmallWaitedOutLargeRefused: a step back of
// 5 ms is waited out; one of 1 s refuses with ErrClockMovedBackwards (and
// counts it) until the clock is set right, or until time has caught up with
// the timestamps already issued. No ID repeats; they keep increasing.
func TestSnowflake_ClockSteppedBack_SmallWaitedOutLargeRefused(t *testing.T) {
	noLeak(t)
	clk := newFakeClock(true)
	f := newLeaseStandIn(clk.True)
	t.Cleanup(f.Close)
	f.addNamespace("users", time.Minute, 2*time.Minute, nil) // no renewal during the test
	c := newClient(t, []string{f.URL()})
	g := newSnowflake(t, c, "users", client.WithClock(clk))
	l := waitLease(t, g, 5*time.Second)
	ctx := ctxFor(t, 10*time.Second)
	var ids []int64
	next := func() {
		t.Helper()
		id, err := g.Next(ctx)
		if err != nil {
			t.Fatalf("Next: %v; stats %+v", err, g.Stats())
		}
		if len(ids) > 0 && id <= ids[len(ids)-1] {
			t.Fatalf("%d after %d", id, ids[len(ids)-1])
		}
		ids = append(ids, id)
	}
	for range 1000 {
		next()
	}

	clk.Step(-5 * time.Millisecond)
	before := ids[len(ids)-1]
	next()
	st := g.Stats()
	if st.ClockBackwardSteps != 1 || st.ClockBackwardRefusals != 0 {
		t.Fatalf("after a 5 ms step back: %+v", st)
	}
	if client.DecodeSnowflake(l.Layout, ids[len(ids)-1]).TimeMs < client.DecodeSnowflake(l.Layout, before).TimeMs {
		t.Fatal("an ID's timestamp went back")
	}

	clk.Step(-time.Second)
	for range 3 {
		if id, err := g.Next(ctx); !errors.Is(err, client.ErrClockMovedBackwards) {
			t.Fatalf("Next after a 1 s step back = %d, %v; want ErrClockMovedBackwards", id, err)
		} else if cb := (*client.ClockBehindError)(nil); !errors.As(err, &cb) || cb.Behind < 990*time.Millisecond || cb.Behind > time.Second+time.Millisecond {
			// How long until the clock has passed the last ID's tick: the
			// step, less the time since that ID (a frozen clock: none).
			t.Fatalf("Next after a 1 s step back: %v; want a *ClockBehindError of about 1 s", err)
		}
	}
	if st := g.Stats(); st.ClockBackwardRefusals != 3 || st.Issued != int64(len(ids)) {
		t.Fatalf("stats after refusals: %+v", st)
	}
	clk.Step(time.Second) // the clock is set right
	next()

	// A step back, then time passes until the wall clock has passed
	// every timestamp issued: the generator follows the clock again.
	clk.Step(-time.Second)
	if _, err := g.Next(ctx); !errors.Is(err, client.ErrClockMovedBackwards) {
		t.Fatalf("Next = %v; want ErrClockMovedBackwards", err)
	}
	clk.Advance(time.Second + 5*time.Millisecond)
	next()
	last := client.DecodeSnowflake(l.Layout, ids[len(ids)-1])
	wall, _ := clk.Now()
	if d := last.Time.Sub(wall); d > time.Millisecond || d < -time.Second {
		t.Fatalf("after catching up the ID's time %v is %v from the wall clock", last.Time, d)
	}
	for range 1000 {
		next()
	}
	checkUnique(t, ids)
	t.Logf("stats %+v", g.Stats())
}

// TestSnowflake_RandomClockSteps_NeverRepeat: a random walk of the wall
// clock (small and large steps back, steps forward, resets) between calls;
// Next either issues an ID above all before or refuses with
// ErrClockMovedBackwards.
func TestSnowflake_RandomClockSteps_NeverRepeat(t *testing.T) {
	noLeak(t)
	clk := newFakeClock(true)
	f := newLeaseStandIn(clk.True)
	t.Cleanup(f.Close)
	f.addNamespace("users", time.Minute, 2*time.Minute, nil)
	c := newClient(t, []string{f.URL()})
	g := newSnowflake(t, c, "users", client.WithClock(clk), client.WithMaxClockBackward(3*time.Millisecond))
	waitLease(t, g, 5*time.Second)
	rng := rand.New(rand.NewPCG(7, 11))
	ctx := ctxFor(t, 60*time.Second)
	var last int64
	ids := make([]int64, 0, 40_000)
	refused := 0
	for i := range 400 {
		switch r := rng.IntN(10); {
		case r < 4:
			clk.Step(-time.Duration(rng.Int64N(int64(3 * time.Millisecond))))
		case r < 6:
			clk.Step(-time.Duration(4*int64(time.Millisecond) + rng.Int64N(int64(500*time.Millisecond))))
		case r < 9:
			clk.Step(time.Duration(rng.Int64N(int64(300 * time.Millisecond))))
		default:
			clk.Step(-clk.Offset())
		}
		if off := clk.Offset(); off > 10*time.Second || off < -10*time.Second {
			clk.Step(-off)
		}
		for range 1 + rng.IntN(200) {
			id, err := g.Next(ctx)
			if errors.Is(err, client.ErrClockMovedBackwards) {
				refused++
				break
			}
			if err != nil {
				t.Fatalf("step %d: %v; stats %+v", i, err, g.Stats())
			}
			if id <= last {
				t.Fatalf("step %d: %d after %d", i, id, last)
			}
			last = id
			ids = append(ids, id)
		}
	}
	checkUnique(t, ids)
	st := g.Stats()
	if refused == 0 || st.ClockBackwardRefusals != int64(refused) || st.ClockBackwardWaits == 0 || st.ClockForwardJumps == 0 {
		t.Fatalf("the walk did not exercise every path: refused %d, stats %+v", refused, st)
	}
	t.Logf("%d IDs, %d refusals; stats %+v", len(ids), refused, st)
}

// TestSnowflake_Unreachable_FailStaticUntilTheDeadline_ThenFailClosed runs
// on a frozen clock, shared with the stand-in, so that the deadline is
// exact: the lease was granted at monotonic 0 with a 1 s TTL and the
// default margin of 100 ms. With the cluster down the generator issues until
// 900 ms and refuses from then on; when the cluster is back a renewal resumes
// the same worker id. A renewal answered lease-lost stops it at once and it
// acquires another worker id.
func TestSnowflake_Unreachable_FailStaticUntilTheDeadline_ThenFailClosed(t *testing.T) {
	noLeak(t)
	clk := newFakeClock(false)
	f := newLeaseStandIn(clk.True)
	t.Cleanup(f.Close)
	f.addNamespace("users", time.Second, 2*time.Second, nil)
	c := newClient(t, []string{f.URL()})
	g := newSnowflake(t, c, "users", client.WithClock(clk), client.WithLeaseWait(0))
	l := waitLease(t, g, 5*time.Second)
	wall0, _ := clk.Now()
	if want := wall0.Add(900 * time.Millisecond); !l.Deadline.Equal(want) {
		t.Fatalf("deadline %v, want %v (send time + TTL - TTL/10)", l.Deadline, want)
	}
	f.set(func(f *leaseStandIn) { f.down = true })
	ids := []int64{mustNext(t, g)}

	clk.Advance(899 * time.Millisecond) // fail-static: still before the deadline
	ids = append(ids, mustNext(t, g))
	clk.Advance(time.Millisecond) // the deadline
	for range 3 {
		if id, err := g.Next(ctxFor(t, 5*time.Second)); !errors.Is(err, client.ErrLeaseExpired) {
			t.Fatalf("Next at the deadline = %d, %v; want ErrLeaseExpired", id, err)
		}
	}
	if _, err := g.NextN(ctxFor(t, 5*time.Second), 5); !errors.Is(err, client.ErrLeaseExpired) {
		t.Fatalf("NextN at the deadline: %v", err)
	}
	st := g.Stats()
	if st.Expired != 1 || st.RefusedNoLease != 4 || st.Issued != 2 {
		t.Fatalf("stats at the deadline: %+v", st)
	}
	if l2, ok := g.Lease(); !ok || l2.Valid || l2.WorkerID != l.WorkerID {
		t.Fatalf("lease at the deadline: %+v %v", l2, ok)
	}

	// The cluster is back before the lease ended there (stand-in time
	// 900 ms < 1000 ms): a renewal succeeds and the same worker id goes on.
	f.set(func(f *leaseStandIn) { f.down = false })
	l2 := waitLease(t, g, 10*time.Second)
	if l2.WorkerID != l.WorkerID || l2.Token != l.Token || !l2.Deadline.After(l.Deadline) {
		t.Fatalf("after the cluster came back: %+v (was %+v)", l2, l)
	}
	ids = append(ids, mustNext(t, g))

	// Lease lost: stop at once, acquire another worker id (the old one is
	// still held on the stand-in's frozen clock).
	renewed := g.Stats().Renewed
	f.set(func(f *leaseStandIn) { f.lostNext = 1 })
	if err := waitFor(10*time.Second, func() bool { return g.Stats().LeasesLost == 1 }); err != nil {
		t.Fatalf("the lost lease was not noticed: %+v", g.Stats())
	}
	l3 := waitLease(t, g, 10*time.Second)
	if l3.WorkerID == l.WorkerID || l3.Token <= l.Token || g.Stats().Renewed < renewed {
		t.Fatalf("after lease-lost: %+v (was %+v)", l3, l)
	}
	clk.Advance(time.Millisecond) // a new worker id starts on a later tick
	ids = append(ids, mustNext(t, g))
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("IDs not increasing: %v", ids)
		}
	}
	if p := client.DecodeSnowflake(l3.Layout, ids[len(ids)-1]); p.WorkerID != l3.WorkerID {
		t.Fatalf("the last ID decodes to %+v; want worker %d", p, l3.WorkerID)
	}
}

// TestSnowflake_ClusterClockAnHourOff_StillIssues: the cluster's stamps are
// an hour ahead of this host's clock, or an hour behind. The generator does
// not compare its clock with the cluster's any more (#18): it issues at once
// and goes on across renewals under the same worker id, with timestamps of
// its own clock.
func TestSnowflake_ClusterClockAnHourOff_StillIssues(t *testing.T) {
	for _, off := range []time.Duration{time.Hour, -time.Hour} {
		t.Run("cluster"+off.String(), func(t *testing.T) {
			noLeak(t)
			f := newLeaseStandIn(nil)
			t.Cleanup(f.Close)
			f.addNamespace("users", time.Second, 2*time.Second, nil)
			f.set(func(f *leaseStandIn) { f.offset = off })
			c := newClient(t, []string{f.URL()})
			g := newSnowflake(t, c, "users", client.WithLeaseWait(0))
			l := waitLease(t, g, 5*time.Second)
			before := time.Now().UnixMilli()
			a := mustNext(t, g)
			if err := waitFor(5*time.Second, func() bool { return g.Stats().Renewed >= 2 }); err != nil {
				t.Fatalf("no renewals: %+v", g.Stats())
			}
			b := mustNext(t, g)
			after := time.Now().UnixMilli()
			for _, id := range []int64{a, b} {
				if p := client.DecodeSnowflake(l.Layout, id); p.WorkerID != l.WorkerID || p.TimeMs < before-1 || p.TimeMs > after {
					t.Fatalf("ID %d decodes to %+v; want worker %d and this host's time %d..%d", id, p, l.WorkerID, before, after)
				}
			}
			if st := g.Stats(); b <= a || st.ClockBackwardRefusals != 0 || st.LeasesLost != 0 || st.Acquired != 1 || st.LastError != nil {
				t.Fatalf("IDs %d then %d; stats %+v", a, b, st)
			}
		})
	}
}

// TestSnowflake_LeaseRequests_CarryTheClientSendTime: every acquire and
// renewal carries client_time_ms, the generator's wall clock when it sent
// the request, rounded up to the ms: exactly its (frozen, an hour fast)
// clock, whatever the cluster's reads, and the deadline it counts from that
// send time stays below the bound the cluster records (client_time_ms +
// TTL). With the system clock it lies between the send and the receipt.
func TestSnowflake_LeaseRequests_CarryTheClientSendTime(t *testing.T) {
	t.Run("injected clock", func(t *testing.T) {
		noLeak(t)
		clk := newFakeClock(false)
		clk.Step(time.Hour) // the cluster runs on real time: an hour behind this host
		f := newLeaseStandIn(nil)
		t.Cleanup(f.Close)
		const ttl = 600 * time.Millisecond // a renewal every 200 ms
		f.addNamespace("users", ttl, 2*ttl, nil)
		c := newClient(t, []string{f.URL()})
		g := newSnowflake(t, c, "users", client.WithClock(clk))
		l := waitLease(t, g, 5*time.Second)
		w0, _ := clk.Now()
		sent := f.sentTimes()
		if len(sent) == 0 || sent[0].op != "acquire" || sent[0].clientMs != ceilMs(w0) {
			t.Fatalf("acquire sent %+v; want client_time_ms %d (the clock %v rounded up to the ms)", sent, ceilMs(w0), w0)
		}
		if bound := time.UnixMilli(sent[0].clientMs).Add(ttl); !l.Deadline.Before(bound) {
			t.Fatalf("deadline %v is not below the cluster's bound %v", l.Deadline, bound)
		}
		clk.Advance(100 * time.Millisecond)
		w1, _ := clk.Now()
		if err := waitFor(5*time.Second, func() bool {
			s := f.sentTimes()
			return s[len(s)-1].op == "renew" && s[len(s)-1].clientMs == ceilMs(w1)
		}); err != nil {
			t.Fatalf("no renewal carried client_time_ms %d: %+v", ceilMs(w1), f.sentTimes())
		}
		for _, s := range f.sentTimes() {
			if s.clientMs != ceilMs(w0) && s.clientMs != ceilMs(w1) {
				t.Fatalf("%s sent client_time_ms %d; the clock read only %v and %v", s.op, s.clientMs, w0, w1)
			}
		}
	})
	t.Run("system clock", func(t *testing.T) {
		noLeak(t)
		f := newLeaseStandIn(nil)
		t.Cleanup(f.Close)
		f.addNamespace("users", 600*time.Millisecond, 1200*time.Millisecond, nil)
		c := newClient(t, []string{f.URL()})
		start := time.Now().UnixMilli()
		g := newSnowflake(t, c, "users")
		waitLease(t, g, 5*time.Second)
		if err := waitFor(5*time.Second, func() bool { return g.Stats().Renewed >= 2 }); err != nil {
			t.Fatalf("no renewals: %+v", g.Stats())
		}
		ops := map[string]int{}
		for _, s := range f.sentTimes() {
			ops[s.op]++
			if s.clientMs < start || s.clientMs > s.recvMs+1 || s.recvMs-s.clientMs > 1000 {
				t.Fatalf("%s sent client_time_ms %d, received at %d (test started %d)", s.op, s.clientMs, s.recvMs, start)
			}
		}
		if ops["acquire"] != 1 || ops["renew"] < 2 {
			t.Fatalf("requests %v", ops)
		}
	})
}

// ceilMs is t in Unix ms, rounded up.
func ceilMs(t time.Time) int64 {
	return (t.UnixNano() + 999_999) / 1e6
}

// TestSnowflake_TimestampFloor_NoTickAtOrBelowIt: with 10 ms ticks and a
// frozen clock shared with the stand-in, a grant's floor lies 25 ms ahead
// of the clock. Next refuses (ErrClockMovedBackwards: more than the 10 ms
// it waits out), and issues nothing while the clock is at the floor or in
// the tick that contains it; the first ID it issues is of the first tick
// that starts after the floor.
func TestSnowflake_TimestampFloor_NoTickAtOrBelowIt(t *testing.T) {
	noLeak(t)
	clk := newFakeClock(false)
	f := newLeaseStandIn(clk.True)
	t.Cleanup(f.Close)
	const tickMs = 10
	f.addNamespace("users", 10*time.Second, 20*time.Second, func(n *api.Namespace) { n.TickMs = tickMs })
	var floor int64
	f.set(func(f *leaseStandIn) {
		f.floorFor = func(_, nowMs int64) int64 {
			floor = nowMs + 25
			for (floor-api.DefaultEpochMs)%tickMs == 0 { // not on a tick's start: the tick that holds it must be skipped too
				floor++
			}
			return floor
		}
	})
	c := newClient(t, []string{f.URL()})
	g := newSnowflake(t, c, "users", client.WithClock(clk))
	l := waitLease(t, g, 5*time.Second)
	if l.TimestampFloorMs != floor {
		t.Fatalf("lease %+v; want the floor %d", l, floor)
	}
	_, err := g.Next(ctxFor(t, 5*time.Second))
	if !errors.Is(err, client.ErrClockMovedBackwards) || !strings.Contains(err.Error(), "timestamp floor") {
		t.Fatalf("Next 25 ms behind the floor: %v; want ErrClockMovedBackwards naming the floor", err)
	}
	if cb := (*client.ClockBehindError)(nil); !errors.As(err, &cb) || cb.Behind < 25*time.Millisecond || cb.Behind > 25*time.Millisecond+time.Duration(tickMs)*time.Millisecond {
		t.Fatalf("Next 25 ms behind the floor: %v; want a *ClockBehindError of 25 ms to a tick more", err)
	}
	// At the floor, and at the last nanosecond of the tick that holds it:
	// the waits are short, so Next waits (for ever on a frozen clock).
	above := api.DefaultEpochMs + ((floor-api.DefaultEpochMs)/tickMs+1)*tickMs
	wall, _ := clk.Now()
	clk.Advance(time.UnixMilli(floor).Sub(wall))
	for _, step := range []time.Duration{0, time.Duration(above-floor)*time.Millisecond - 1} {
		clk.Advance(step)
		if id, err := g.Next(ctxFor(t, 50*time.Millisecond)); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Next at %v (floor %d) = %d, %v; want it to wait", time.Unix(0, wallNs(clk)), floor, id, err)
		}
	}
	clk.Advance(1) // the first tick that starts after the floor
	id := mustNext(t, g)
	if p := client.DecodeSnowflake(l.Layout, id); p.TimeMs != above || p.TimeMs <= floor || p.WorkerID != l.WorkerID {
		t.Fatalf("first ID %d decodes to %+v; want the tick starting at %d, after the floor %d", id, p, above, floor)
	}
	if st := g.Stats(); st.Issued != 1 || st.ClockBackwardRefusals != 1 || st.ClockBackwardWaits == 0 || st.FloorGiveUps != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func wallNs(c *fakeClock) int64 {
	w, _ := c.Now()
	return w.UnixNano()
}

// TestSnowflake_TimestampFloorJustAhead_WaitedOut: a floor 5 ms ahead of the
// clock (within WithMaxClockBackward) is waited out by Next.
func TestSnowflake_TimestampFloorJustAhead_WaitedOut(t *testing.T) {
	noLeak(t)
	f := newLeaseStandIn(nil)
	t.Cleanup(f.Close)
	f.addNamespace("users", 10*time.Second, 20*time.Second, nil)
	var floor int64
	f.set(func(f *leaseStandIn) { f.floorFor = func(_, nowMs int64) int64 { floor = nowMs + 5; return floor } })
	c := newClient(t, []string{f.URL()})
	g := newSnowflake(t, c, "users")
	l := waitLease(t, g, 5*time.Second)
	id := mustNext(t, g)
	if p := client.DecodeSnowflake(l.Layout, id); p.TimeMs <= floor {
		t.Fatalf("ID %d decodes to %+v; want a time after the floor %d", id, p, floor)
	}
}

// TestSnowflake_TimestampFloorOutOfReach_GivesTheLeaseBack: worker 0's floor
// lies an hour ahead, past the lease's deadline: the generator releases it
// at once and issues under worker 1, whose floor is fine.
func TestSnowflake_TimestampFloorOutOfReach_GivesTheLeaseBack(t *testing.T) {
	noLeak(t)
	f := newLeaseStandIn(nil)
	t.Cleanup(f.Close)
	f.addNamespace("users", time.Second, 2*time.Second, nil)
	f.set(func(f *leaseStandIn) {
		f.floorFor = func(wk, nowMs int64) int64 {
			if wk == 0 {
				return nowMs + time.Hour.Milliseconds()
			}
			return 0
		}
	})
	c := newClient(t, []string{f.URL()})
	g := newSnowflake(t, c, "users")
	l := waitLease(t, g, 5*time.Second)
	id := mustNext(t, g)
	if p := client.DecodeSnowflake(l.Layout, id); l.WorkerID != 1 || p.WorkerID != 1 || l.TimestampFloorMs != 0 {
		t.Fatalf("lease %+v, ID %+v; want worker 1", l, p)
	}
	st := g.Stats()
	f.mu.Lock()
	releases, grants := f.releases, len(f.grants)
	released := f.leases["users"][0].ReleasedMs != 0
	f.mu.Unlock()
	if st.FloorGiveUps != 1 || st.Acquired != 1 || releases != 1 || grants != 2 || !released {
		t.Fatalf("stats %+v; stand-in: %d releases, %d grants, worker 0 released: %v", st, releases, grants, released)
	}
}

// TestSnowflake_EveryFloorOutOfReach_KeepsTheFourthAndWaitsForTheClock:
// every grant's floor lies 2 s ahead, past the deadline of a 1 s lease. The
// generator gives back three leases in a row, then keeps the fourth and
// refuses with ErrClockMovedBackwards until its clock has passed the floor
// (its renewals meanwhile carry the deadline past it); then it issues IDs
// above the floor under that worker id.
func TestSnowflake_EveryFloorOutOfReach_KeepsTheFourthAndWaitsForTheClock(t *testing.T) {
	noLeak(t)
	f := newLeaseStandIn(nil)
	t.Cleanup(f.Close)
	f.addNamespace("users", time.Second, 2*time.Second, nil)
	f.set(func(f *leaseStandIn) { f.floorFor = func(_, nowMs int64) int64 { return nowMs + 2000 } })
	c := newClient(t, []string{f.URL()})
	g := newSnowflake(t, c, "users", client.WithLeaseWait(5*time.Second))
	l := waitLease(t, g, 5*time.Second)
	if l.WorkerID != 3 || l.TimestampFloorMs == 0 || !l.Valid {
		t.Fatalf("lease %+v; want worker 3 (0, 1 and 2 given back)", l)
	}
	_, err := g.Next(ctxFor(t, 5*time.Second))
	if !errors.Is(err, client.ErrClockMovedBackwards) || !strings.Contains(err.Error(), "timestamp floor") {
		t.Fatalf("Next under a floor 2 s ahead: %v; want ErrClockMovedBackwards naming the floor", err)
	}
	if st := g.Stats(); st.FloorGiveUps != 3 || st.Acquired != 1 || st.Issued != 0 || !errors.Is(st.LastError, client.ErrClockMovedBackwards) {
		t.Fatalf("stats %+v", st)
	}
	var id int64
	if err := waitFor(10*time.Second, func() bool {
		id, err = g.Next(ctxFor(t, 5*time.Second))
		return err == nil
	}); err != nil {
		t.Fatalf("Next never issued after the clock passed the floor: %v; stats %+v", err, g.Stats())
	}
	if p := client.DecodeSnowflake(l.Layout, id); p.WorkerID != 3 || p.TimeMs <= l.TimestampFloorMs {
		t.Fatalf("ID %d decodes to %+v; want worker 3 after the floor %d", id, p, l.TimestampFloorMs)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.releases != 3 {
		t.Fatalf("%d releases; want 3", f.releases)
	}
}

// TestSnowflake_NamespaceMissing_NoWorkerFree_TypedErrorsThenRecovers.
func TestSnowflake_NamespaceMissing_NoWorkerFree_TypedErrorsThenRecovers(t *testing.T) {
	noLeak(t)
	f := newLeaseStandIn(nil)
	t.Cleanup(f.Close)
	c := newClient(t, []string{f.URL()})
	g := newSnowflake(t, c, "users", client.WithLeaseWait(0))
	err := g.Wait(ctxFor(t, 300*time.Millisecond))
	if !errors.Is(err, client.ErrLeaseExpired) || !errors.Is(err, client.ErrNamespaceNotFound) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on a missing namespace: %v", err)
	}
	if _, err := g.Next(context.Background()); !errors.Is(err, client.ErrLeaseExpired) || !errors.Is(err, client.ErrNamespaceNotFound) {
		t.Fatalf("Next on a missing namespace: %v", err)
	}
	f.addNamespace("users", time.Second, 2*time.Second, func(n *api.Namespace) { n.MaxWorkers = 1 })
	first := waitLease(t, g, 10*time.Second) // retried in the background
	a := mustNext(t, g)

	h := newSnowflake(t, c, "users", client.WithLeaseWait(0))
	if err := h.Wait(ctxFor(t, 300*time.Millisecond)); !errors.Is(err, client.ErrNoWorkerFree) {
		t.Fatalf("Wait with every worker id taken: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// The released id rests 2 s, then goes to h, whose IDs are above g's.
	second := waitLease(t, h, 10*time.Second)
	b := mustNext(t, h)
	if second.WorkerID != first.WorkerID || second.GrantedMs < first.GrantedMs+2000 || b <= a {
		t.Fatalf("second lease %+v after %+v; IDs %d then %d", second, first, a, b)
	}
}

// TestSnowflake_Close_ReleasesTheLease_ErrClosed_NoLeak: Close releases the
// worker id, later calls get ErrClosed; Client.Close closes generators too.
func TestSnowflake_Close_ReleasesTheLease_ErrClosed_NoLeak(t *testing.T) {
	noLeak(t)
	f := newLeaseStandIn(nil)
	t.Cleanup(f.Close)
	f.addNamespace("users", time.Second, 2*time.Second, nil)
	c, err := client.New([]string{f.URL()})
	if err != nil {
		t.Fatal(err)
	}
	g1, _ := c.Snowflake("users")
	g2, _ := c.Snowflake("users")
	for _, g := range []*client.Snowflake{g1, g2} {
		waitLease(t, g, 5*time.Second)
		mustNext(t, g)
	}
	if err := g1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g1.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	if _, err := g1.Next(context.Background()); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
	if err := g1.Wait(context.Background()); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Wait after Close: %v", err)
	}
	c.Close() // closes g2 and releases its lease
	if _, err := g2.Next(context.Background()); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Next after Client.Close: %v", err)
	}
	_ = g2.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range f.leases["users"] {
		if l.ReleasedMs == 0 {
			t.Fatalf("lease %+v not released", l)
		}
	}
	if f.releases != 2 {
		t.Fatalf("%d releases", f.releases)
	}
	if _, err := c.Snowflake("users"); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Snowflake on a closed Client: %v", err)
	}
}

func TestSnowflake_BadArguments_InvalidArgument(t *testing.T) {
	noLeak(t)
	f := newLeaseStandIn(nil)
	t.Cleanup(f.Close)
	f.addNamespace("users", time.Second, 2*time.Second, nil)
	c := newClient(t, []string{f.URL()})
	for name, opts := range map[string][]client.SnowflakeOption{
		"nil option":     {nil},
		"empty holder":   {client.WithHolder("")},
		"nil clock":      {client.WithClock(nil)},
		"negative wait":  {client.WithLeaseWait(-1)},
		"zero margin":    {client.WithSafetyMargin(0)},
		"huge backwards": {client.WithMaxClockBackward(time.Hour)},
	} {
		if _, err := c.Snowflake("users", opts...); !errors.Is(err, client.ErrInvalidArgument) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := c.Snowflake("bad name"); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("bad name: %v", err)
	}
	g := newSnowflake(t, c, "users")
	if _, err := g.NextN(context.Background(), 0); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("NextN(0): %v", err)
	}
	var nilCtx context.Context
	if err := g.Wait(nilCtx); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("Wait(nil): %v", err)
	}
	// A margin of half the TTL or more is refused when the lease shows the
	// TTL; the lease is given back.
	h := newSnowflake(t, c, "users", client.WithSafetyMargin(500*time.Millisecond))
	if err := h.Wait(ctxFor(t, 5*time.Second)); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("Wait with a margin of half the TTL: %v", err)
	}
	if _, err := h.Next(context.Background()); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("Next with a margin of half the TTL: %v", err)
	}
}

func TestSnowflake_Next_NoAllocation(t *testing.T) {
	noLeak(t)
	f := newLeaseStandIn(nil)
	t.Cleanup(f.Close)
	f.addNamespace("users", time.Minute, 2*time.Minute, func(n *api.Namespace) { n.TimestampBits, n.SequenceBits = 41, 20; n.WorkerBits = 2; n.MaxWorkers = 4 })
	c := newClient(t, []string{f.URL()})
	g := newSnowflake(t, c, "users")
	waitLease(t, g, 5*time.Second)
	ctx := context.Background()
	if a := testing.AllocsPerRun(10_000, func() { _, _ = g.Next(ctx) }); a != 0 {
		t.Fatalf("Next allocates %.1f times per call", a)
	}
}

// TestSnowflake_LeaseTraffic_Report measures the lease requests one
// generator sends: a grant, a renewal every TTL/3, a release. The rate is
// logged (3 × 3600 / TTL_s renewals per hour), not asserted: it is timing.
func TestSnowflake_LeaseTraffic_Report(t *testing.T) {
	noLeak(t)
	f := newLeaseStandIn(nil)
	t.Cleanup(f.Close)
	const ttl = 1200 * time.Millisecond
	f.addNamespace("users", ttl, 2*ttl, nil)
	c := newClient(t, []string{f.URL()})
	g := newSnowflake(t, c, "users")
	waitLease(t, g, 5*time.Second)
	start := time.Now()
	time.Sleep(3 * ttl)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	f.mu.Lock()
	acq, ren, rel := f.acquires, f.renewals, f.releases
	f.mu.Unlock()
	if acq != 1 || rel != 1 || ren < 1 {
		t.Fatalf("%d grants, %d renewals, %d releases", acq, ren, rel)
	}
	perHour := float64(ren) / elapsed.Hours()
	t.Logf("TTL %v: %d renewals in %v = %.0f per hour (3 × 3600 / TTL_s = %.0f); at the default TTL of 30 s: %d per hour, %.2f per second",
		ttl, ren, elapsed.Round(time.Millisecond), perHour, 3*3600/ttl.Seconds(), 3*3600/30, 3.0/30)
}

// goSnowflakeCallers starts goroutines on wg that take per IDs each from g,
// with a NextN(100) every thousand; once wg is done, results[i] holds the
// IDs of goroutine i in the order it got them.
func goSnowflakeCallers(t *testing.T, wg *sync.WaitGroup, g *client.Snowflake, goroutines, per int) (results [][]int64) {
	results = make([][]int64, goroutines)
	for i := range goroutines {
		wg.Go(func() {
			ids := make([]int64, 0, per)
			for len(ids) < per {
				if len(ids)%1000 == 0 {
					batch, err := g.NextN(context.Background(), 100)
					if err != nil {
						t.Error(err)
						return
					}
					ids = append(ids, batch...)
					continue
				}
				id, err := g.Next(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				ids = append(ids, id)
			}
			results[i] = ids
		})
	}
	return results
}

// TestSnowflake_NextNWithGrant_NamesTheLease (issue 47): the IDs of a call
// are named by their lease's grant_seq, and after the lease is lost the new
// one's name comes with the IDs made under it.
func TestSnowflake_NextNWithGrant_NamesTheLease(t *testing.T) {
	noLeak(t)
	f := newLeaseStandIn(nil)
	t.Cleanup(f.Close)
	f.addNamespace("users", 3*time.Second, 3*time.Second, nil)
	c := newClient(t, []string{f.URL()})
	g := newSnowflake(t, c, "users", client.WithHolder("test/1"))
	l := waitLease(t, g, 5*time.Second)
	ids, seq, err := g.NextNWithGrant(context.Background(), 100)
	if err != nil || len(ids) != 100 || seq != 1000+l.Token || l.GrantSeq != seq {
		t.Fatalf("NextNWithGrant: %d IDs, grant %d, %v; lease %+v", len(ids), seq, err, l)
	}
	// The cluster says the lease is lost at the next renewal (1 s, a
	// third of the TTL): a new lease, a new name.
	f.set(func(f *leaseStandIn) { f.lostNext = 1 })
	deadline := time.Now().Add(10 * time.Second)
	for {
		ids, seq, err := g.NextNWithGrant(context.Background(), 1)
		if nl, ok := g.Lease(); err == nil && ok && nl.Token != l.Token {
			if w := client.DecodeSnowflake(nl.Layout, ids[0]).WorkerID; seq != 1000+nl.Token || nl.GrantSeq != seq || w != nl.WorkerID {
				t.Fatalf("after the loss: grant %d, worker %d; new lease %+v", seq, w, nl)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new lease within 10 s (last: %d, %v)", seq, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
