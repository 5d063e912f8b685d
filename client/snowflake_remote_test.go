package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
)

// idsStandIn is an in-process stand-in for one node's Snowflake service
// (POST /v1/namespaces/{name}/ids): it makes IDs id = seq<<10 | worker from
// a counter of its own, so that the IDs of stand-ins with different worker
// ids never collide and those of one strictly increase. A test can make it
// fail, hang, or answer IDs it answered before (a broken node).
type idsStandIn struct {
	srv    *httptest.Server
	node   string
	worker int64

	mu       sync.Mutex
	ns       string
	seq      int64
	fail     *injected     // answer the next requests with this
	gate     chan struct{} // if set, requests wait until it is closed
	rewind   bool          // answer the next request from the start again
	requests int
	counts   []int64
}

func newIDsStandIn(node string, worker int64) *idsStandIn {
	f := &idsStandIn{node: node, worker: worker, ns: "orders"}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/namespaces/{name}/ids", f.ids)
	f.srv = httptest.NewServer(mux)
	return f
}

func (f *idsStandIn) URL() string { return f.srv.URL }

func (f *idsStandIn) Close() {
	f.set(func(f *idsStandIn) {
		if f.gate != nil {
			close(f.gate)
			f.gate = nil
		}
	})
	f.srv.Close()
}

func (f *idsStandIn) set(fn func(f *idsStandIn)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// failNext answers the next n requests (all, if n < 0) with status, typ.
func (f *idsStandIn) failNext(n, status int, typ, retryAfter string) {
	f.set(func(f *idsStandIn) { f.fail = &injected{status: status, typ: typ, retryAfter: retryAfter, times: n} })
}

func (f *idsStandIn) requestCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

func (f *idsStandIn) ids(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests++
	inj, gate := f.fail, f.gate
	if inj != nil && inj.times != 0 {
		if inj.times > 0 {
			inj.times--
		}
	} else {
		inj = nil
	}
	f.mu.Unlock()
	if inj != nil {
		writeProblem(w, inj.status, api.Problem{Type: inj.typ, Title: "injected", Detail: "injected by the test",
			Namespace: r.PathValue("name"), Node: f.node, ClockBehindMs: 1500}, inj.retryAfter)
		return
	}
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	var req api.SnowflakeIDsRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Count == nil || *req.Count < 1 || *req.Count > api.MaxSnowflakeIDs {
		badRequest(w, "bad count")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.PathValue("name") != f.ns {
		writeProblem(w, http.StatusNotFound, api.Problem{Type: api.ProblemNamespaceNotFound, Title: "namespace not found"}, "")
		return
	}
	if f.rewind {
		f.rewind, f.seq = false, 0
	}
	out := api.SnowflakeIDs{Namespace: f.ns, Node: f.node, WorkerID: f.worker}
	for range *req.Count {
		f.seq++
		id := f.seq<<10 | f.worker
		out.IDs = append(out.IDs, id)
		out.IDsText = append(out.IDsText, strconv.FormatInt(id, 10))
	}
	f.counts = append(f.counts, *req.Count)
	writeJSON(w, http.StatusOK, out)
}

// idsNodes starts n stand-ins, worker ids 1..n, closed when the test ends.
func idsNodes(t *testing.T, n int) ([]*idsStandIn, []string) {
	t.Helper()
	var nodes []*idsStandIn
	var urls []string
	for i := 1; i <= n; i++ {
		f := newIDsStandIn("n"+strconv.Itoa(i), int64(i))
		t.Cleanup(f.Close)
		nodes = append(nodes, f)
		urls = append(urls, f.URL())
	}
	return nodes, urls
}

func newRemote(t *testing.T, c *client.Client, opts ...client.RemoteOption) *client.SnowflakeRemote {
	t.Helper()
	r, err := c.SnowflakeRemote("orders", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func remoteClient(t *testing.T, urls []string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(urls, append([]client.Option{client.WithBackoff(5*time.Millisecond, 20*time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func mustRemoteNext(t *testing.T, r *client.SnowflakeRemote) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id, err := r.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestSnowflakeRemote_Prefetch_CallersNeverWaitWhileTheBufferHoldsIDs: the
// first Next waits for one batch; crossing the low-water mark starts one
// fetch in the background, and while it hangs every ID still buffered is
// handed out without waiting; the IDs of one batch come in their order.
func TestSnowflakeRemote_Prefetch_CallersNeverWaitWhileTheBufferHoldsIDs(t *testing.T) {
	noLeak(t)
	nodes, urls := idsNodes(t, 1)
	c := remoteClient(t, urls)
	r := newRemote(t, c, client.WithRemoteBatch(10), client.WithRemoteLowWater(4))

	var got []int64
	got = append(got, mustRemoteNext(t, r))
	if st := r.Stats(); st.Waits != 1 || st.Fetches != 1 || st.Cached != 9 {
		t.Fatalf("after the first Next: %+v", st)
	}
	gate := make(chan struct{})
	nodes[0].set(func(f *idsStandIn) { f.gate = gate })
	// Index 6 is the low-water mark's (10-4): taking it starts the fetch,
	// which hangs; the 3 IDs left are handed out all the same.
	for range 9 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		id, err := r.Next(ctx)
		cancel()
		if err != nil {
			t.Fatalf("Next with %d IDs buffered and a fetch in flight: %v", r.Stats().Cached, err)
		}
		got = append(got, id)
	}
	st := r.Stats()
	if !st.Fetching || st.Waits != 1 || st.WaitsWhileCached != 0 || st.Cached != 0 {
		t.Fatalf("with the buffer used up and the fetch hanging: %+v", st)
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("IDs of one batch out of order: %v", got)
		}
	}
	nodes[0].set(func(f *idsStandIn) { f.gate = nil })
	close(gate)
	if err := waitFor(5*time.Second, func() bool { return r.Stats().Cached == 10 }); err != nil {
		t.Fatalf("the prefetch did not land: %+v", r.Stats())
	}
	if id := mustRemoteNext(t, r); id <= got[len(got)-1] {
		t.Fatalf("%d after %d from one node", id, got[len(got)-1])
	}
	if st := r.Stats(); st.Waits != 1 || st.Fetches != 2 {
		t.Fatalf("the prefetched batch made a caller wait: %+v", st)
	}
	if n := nodes[0].requestCount(); n != 2 {
		t.Fatalf("%d requests for 2 batches: more than one fetch at once", n)
	}
}

// TestSnowflakeRemote_EachFailure_MovesToAnotherNode: a 503 of each kind the
// Snowflake service gives, a 500, a node that does not know the route, and
// a node that is down: the fetch moves on to the next node and Next
// succeeds, with the failure counted.
func TestSnowflakeRemote_EachFailure_MovesToAnotherNode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		typ    string
	}{
		{"no-worker-lease", http.StatusServiceUnavailable, api.ProblemNoWorkerLease},
		{"clock-behind", http.StatusServiceUnavailable, api.ProblemClockBehind},
		{"workers-exhausted", http.StatusServiceUnavailable, api.ProblemWorkersExhausted},
		{"unavailable", http.StatusServiceUnavailable, api.ProblemUnavailable},
		{"internal", http.StatusInternalServerError, api.ProblemInternal},
		{"route-not-found", http.StatusNotFound, api.ProblemRouteNotFound},
		{"transport", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, urls := idsNodes(t, 2)
			if tc.status == 0 {
				urls[0] = deadURL()
			} else {
				nodes[0].failNext(-1, tc.status, tc.typ, "")
			}
			c := remoteClient(t, urls)
			for range 3 { // whichever node a fetch asks first
				r := newRemote(t, c, client.WithRemoteBatch(5))
				if id := mustRemoteNext(t, r); id&1023 != 2 {
					t.Fatalf("ID %d is not node 2's", id)
				}
				st := r.Stats()
				if st.IDsByEndpoint[urls[1]] != 5 || len(st.IDsByEndpoint) != 1 {
					t.Fatalf("IDs by endpoint: %v", st.IDsByEndpoint)
				}
				_ = r.Close()
			}
		})
	}
}

// TestSnowflakeRemote_RetryAfter_SkipsThatNodeForThatLong: a node that
// answers 503 with Retry-After is not asked again, by any fetch, until that
// time has passed; the other node serves meanwhile.
func TestSnowflakeRemote_RetryAfter_SkipsThatNodeForThatLong(t *testing.T) {
	noLeak(t)
	nodes, urls := idsNodes(t, 2)
	nodes[0].failNext(-1, http.StatusServiceUnavailable, api.ProblemClockBehind, "2")
	c := remoteClient(t, urls)
	r := newRemote(t, c, client.WithRemoteBatch(1), client.WithRemoteLowWater(1))
	start := time.Now()
	for range 50 { // 50 fetches of one ID, each starting at the next node
		if id := mustRemoteNext(t, r); id&1023 != 2 {
			t.Fatalf("ID %d is not node 2's", id)
		}
	}
	if time.Since(start) < 1900*time.Millisecond {
		if n := nodes[0].requestCount(); n != 1 {
			t.Fatalf("the node asked to be left alone for 2 s was asked %d times", n)
		}
	}
	// Once the time has passed, it is asked again.
	if err := waitFor(5*time.Second, func() bool {
		_ = mustRemoteNext(t, r)
		return nodes[0].requestCount() > 1
	}); err != nil {
		t.Fatalf("the node was never asked again after its Retry-After: %+v", r.Stats())
	}
}

// TestSnowflakeRemote_EveryNodeFailing_GivesUpAtTheCallTimeout: when every
// endpoint fails, Next returns ErrUnavailable at the call's deadline,
// wrapping the last failure with its own sentinel; the fetch goes on in the
// background and serves a later Next once a node recovers.
func TestSnowflakeRemote_EveryNodeFailing_GivesUpAtTheCallTimeout(t *testing.T) {
	noLeak(t)
	for _, tc := range []struct {
		typ  string
		want error
	}{
		{api.ProblemNoWorkerLease, client.ErrNoWorkerLease},
		{api.ProblemWorkersExhausted, client.ErrNoWorkerFree},
		{api.ProblemClockBehind, client.ErrClockMovedBackwards},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			nodes, urls := idsNodes(t, 2)
			for _, n := range nodes {
				n.failNext(-1, http.StatusServiceUnavailable, tc.typ, "")
			}
			c := remoteClient(t, urls)
			r := newRemote(t, c)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			_, err := r.Next(ctx)
			cancel()
			if !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, tc.want) {
				t.Fatalf("Next: %v; want ErrUnavailable and %v", err, tc.want)
			}
			var ae *client.APIError
			if !errors.As(err, &ae) || ae.Problem.Node == "" || ae.Problem.Namespace != "orders" {
				t.Fatalf("the problem's node and namespace are lost: %v", err)
			}
			var cb *client.ClockBehindError
			if tc.typ == api.ProblemClockBehind && (!errors.As(err, &cb) || cb.Behind != 1500*time.Millisecond) {
				t.Fatalf("clock-behind without how far: %v", err)
			}
			if n := nodes[0].requestCount() + nodes[1].requestCount(); n < 4 {
				t.Fatalf("only %d requests in 300 ms: the fetch did not go round again", n)
			}
			nodes[1].failNext(0, 0, "", "")
			_ = mustRemoteNext(t, r)
		})
	}
}

// TestSnowflakeRemote_FinalAnswers_AreReturnedAtOnce: a missing namespace,
// a namespace whose timestamp bits ran out and a refused token end the
// call with their sentinel, without going round the other nodes; bad
// arguments are refused before anything is sent.
func TestSnowflakeRemote_FinalAnswers_AreReturnedAtOnce(t *testing.T) {
	noLeak(t)
	for _, tc := range []struct {
		status int
		typ    string
		want   error
	}{
		{http.StatusNotFound, api.ProblemNamespaceNotFound, client.ErrNamespaceNotFound},
		{http.StatusConflict, api.ProblemTimestampExhausted, client.ErrExhausted},
		{http.StatusUnauthorized, api.ProblemUnauthorized, client.ErrUnauthorized},
	} {
		nodes, urls := idsNodes(t, 2)
		for _, n := range nodes {
			n.failNext(-1, tc.status, tc.typ, "")
		}
		c := remoteClient(t, urls)
		r := newRemote(t, c)
		_, err := r.Next(context.Background())
		if !errors.Is(err, tc.want) || errors.Is(err, client.ErrUnavailable) {
			t.Fatalf("%s: Next: %v; want %v", tc.typ, err, tc.want)
		}
		if n := nodes[0].requestCount() + nodes[1].requestCount(); n != 1 {
			t.Fatalf("%s: %d requests for a final answer", tc.typ, n)
		}
	}

	nodes, urls := idsNodes(t, 1)
	c := remoteClient(t, urls)
	r := newRemote(t, c)
	for _, n := range []int{0, -1, api.MaxSnowflakeIDs + 1} {
		if _, err := r.NextN(context.Background(), n); !errors.Is(err, client.ErrInvalidArgument) {
			t.Fatalf("NextN(%d): %v", n, err)
		}
	}
	for _, bad := range []func() (*client.SnowflakeRemote, error){
		func() (*client.SnowflakeRemote, error) { return c.SnowflakeRemote("") },
		func() (*client.SnowflakeRemote, error) { return c.SnowflakeRemote("a/b") },
		func() (*client.SnowflakeRemote, error) { return c.SnowflakeRemote("orders", nil) },
		func() (*client.SnowflakeRemote, error) { return c.SnowflakeRemote("orders", client.WithRemoteBatch(0)) },
		func() (*client.SnowflakeRemote, error) {
			return c.SnowflakeRemote("orders", client.WithRemoteBatch(api.MaxSnowflakeIDs+1))
		},
		func() (*client.SnowflakeRemote, error) {
			return c.SnowflakeRemote("orders", client.WithRemoteBatch(10), client.WithRemoteLowWater(11))
		},
	} {
		if _, err := bad(); !errors.Is(err, client.ErrInvalidArgument) {
			t.Fatalf("a bad name or option: %v", err)
		}
	}
	if got := nodes[0].requestCount(); got != 0 {
		t.Fatalf("%d requests for calls refused before sending", got)
	}
}

// TestSnowflakeRemote_ConcurrentNext_NoIDTwice: many goroutines taking IDs
// with Next and NextN from three nodes, one of which fails now and then:
// every ID is handed out once, and the fetches are spread over the nodes.
func TestSnowflakeRemote_ConcurrentNext_NoIDTwice(t *testing.T) {
	noLeak(t)
	nodes, urls := idsNodes(t, 3)
	nodes[2].failNext(5, http.StatusServiceUnavailable, api.ProblemNoWorkerLease, "")
	c := remoteClient(t, urls)
	r := newRemote(t, c, client.WithRemoteBatch(64))
	const goroutines, perG = 32, 500
	ids := make([][]int64, goroutines)
	errs := make(chan error, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for len(ids[g]) < perG {
				if len(ids[g])%7 == 3 {
					got, err := r.NextN(ctx, min(1+g%100, perG-len(ids[g])))
					if err != nil {
						errs <- err
						return
					}
					ids[g] = append(ids[g], got...)
					continue
				}
				id, err := r.Next(ctx)
				if err != nil {
					errs <- err
					return
				}
				ids[g] = append(ids[g], id)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := make(map[int64]bool, goroutines*perG)
	for _, l := range ids {
		for _, id := range l {
			if seen[id] {
				t.Fatalf("ID %d handed out twice", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != goroutines*perG {
		t.Fatalf("%d IDs, want %d", len(seen), goroutines*perG)
	}
	st := r.Stats()
	if st.WaitsWhileCached != 0 || len(st.IDsByEndpoint) != 3 {
		t.Fatalf("stats: %+v", st)
	}
}

// TestSnowflakeRemote_RepeatedIDs_AreRefused: a node that answers IDs at or
// below ones it answered before under the same worker id (a broken node) is
// refused, and the fetch moves on: no ID is handed out twice.
func TestSnowflakeRemote_RepeatedIDs_AreRefused(t *testing.T) {
	noLeak(t)
	nodes, urls := idsNodes(t, 2)
	c := remoteClient(t, urls)
	r := newRemote(t, c, client.WithRemoteBatch(4), client.WithRemoteLowWater(0))
	seen := map[int64]bool{}
	take := func() {
		for range 4 {
			id := mustRemoteNext(t, r)
			if seen[id] {
				t.Fatalf("ID %d handed out twice", id)
			}
			seen[id] = true
		}
	}
	take()
	take() // one batch from each node
	for _, n := range nodes {
		n.set(func(f *idsStandIn) { f.rewind = true })
	}
	take() // both rewound: one is refused... and then serves anew above
	take()
	if st := r.Stats(); st.Refused == 0 {
		t.Fatalf("no answer refused: %+v", st)
	}
}

// TestSnowflakeRemote_Close_DiscardsTheBufferAndStopsTheFetch: Close drops
// the buffered IDs, ends the fetch in flight (which hangs) and makes every
// later call return ErrClosed; the Client's Close closes a SnowflakeRemote
// too.
func TestSnowflakeRemote_Close_DiscardsTheBufferAndStopsTheFetch(t *testing.T) {
	noLeak(t)
	nodes, urls := idsNodes(t, 1)
	c := remoteClient(t, urls)
	r := newRemote(t, c, client.WithRemoteBatch(10), client.WithRemoteLowWater(5))
	_ = mustRemoteNext(t, r)
	nodes[0].set(func(f *idsStandIn) { f.gate = make(chan struct{}) })
	for range 5 {
		_ = mustRemoteNext(t, r) // the buffer holds 4; the prefetch hangs
	}
	if err := waitFor(5*time.Second, func() bool { return r.Stats().Fetching }); err != nil {
		t.Fatal("no fetch in flight")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Cached != 0 || st.Fetching {
		t.Fatalf("after Close: %+v", st)
	}
	if _, err := r.Next(context.Background()); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
	if _, err := r.NextN(context.Background(), 3); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("NextN after Close: %v", err)
	}
	_ = r.Close() // idempotent

	nodes[0].set(func(f *idsStandIn) { close(f.gate); f.gate = nil })
	r2 := newRemote(t, c)
	_ = mustRemoteNext(t, r2)
	_ = c.Close()
	if err := waitFor(5*time.Second, func() bool { return r2.Stats().Cached == 0 }); err != nil {
		t.Fatalf("the Client's Close left the buffer: %+v", r2.Stats())
	}
	if _, err := r2.Next(context.Background()); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Next after the Client's Close: %v", err)
	}
	if _, err := c.SnowflakeRemote("orders"); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("SnowflakeRemote on a closed Client: %v", err)
	}
}

// TestSnowflakeRemote_NextN_MoreThanBuffered_FetchesTheRestInOneRequest:
// NextN of more IDs than the buffer holds takes those buffered and asks for
// the rest in one request, and returns n distinct IDs.
func TestSnowflakeRemote_NextN_MoreThanBuffered_FetchesTheRestInOneRequest(t *testing.T) {
	noLeak(t)
	nodes, urls := idsNodes(t, 1)
	c := remoteClient(t, urls)
	r := newRemote(t, c, client.WithRemoteBatch(10), client.WithRemoteLowWater(0))
	_ = mustRemoteNext(t, r) // 9 left
	got, err := r.NextN(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for i, id := range got {
		if seen[id] || (i > 0 && id <= got[i-1]) {
			t.Fatalf("NextN from one node: %d at %d", id, i)
		}
		seen[id] = true
	}
	if len(got) != 1000 {
		t.Fatalf("%d IDs", len(got))
	}
	nodes[0].mu.Lock()
	counts := append([]int64(nil), nodes[0].counts...)
	nodes[0].mu.Unlock()
	if len(counts) != 2 || counts[1] != 991 {
		t.Fatalf("request counts %v, want [10 991]", counts)
	}
}

// TestSnowflakeRemote_MaxAge_OldBatchesAreNotHandedOut: IDs buffered longer
// than the maximum age carry old timestamps, against what a time-sortable
// ID promises (issue 46): the current batch, and one fetched ahead, are
// dropped once that old, and the next call fetches fresh IDs.
func TestSnowflakeRemote_MaxAge_OldBatchesAreNotHandedOut(t *testing.T) {
	noLeak(t)
	nodes, urls := idsNodes(t, 1)
	c := remoteClient(t, urls)
	const maxAge = 150 * time.Millisecond
	r := newRemote(t, c, client.WithRemoteBatch(10), client.WithRemoteLowWater(2), client.WithRemoteMaxAge(maxAge))

	first := mustRemoteNext(t, r)
	time.Sleep(3 * maxAge)
	if st := r.Stats(); st.Cached != 0 || st.Expired != 1 {
		t.Fatalf("a batch older than the maximum age is still buffered: %+v", st)
	}
	second := mustRemoteNext(t, r)
	if second <= first+9<<10 {
		t.Fatalf("%d after %d: the old batch's IDs were handed out", second, first)
	}
	if st := r.Stats(); st.Fetches != 2 || nodes[0].requestCount() != 2 {
		t.Fatalf("want a second fetch after the batch expired: %+v", st)
	}

	// A batch fetched ahead and kept past the maximum age is dropped when
	// it would be installed.
	for range 8 { // down to the low-water mark: the fetch ahead starts
		mustRemoteNext(t, r)
	}
	if err := waitFor(5*time.Second, func() bool { return r.Stats().Cached == 11 }); err != nil {
		t.Fatalf("the prefetch did not land: %+v", r.Stats())
	}
	time.Sleep(3 * maxAge)
	third := mustRemoteNext(t, r)
	if st := r.Stats(); st.Fetches != 4 || st.Expired != 3 {
		t.Fatalf("after the current and the fetched-ahead batch expired: %+v (ID %d)", st, third)
	}
}

func TestSnowflakeRemote_MaxAge_Validated(t *testing.T) {
	c := remoteClient(t, []string{"http://127.0.0.1:1"})
	if _, err := c.SnowflakeRemote("orders", client.WithRemoteMaxAge(-time.Second)); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("a negative maximum age: %v", err)
	}
}
