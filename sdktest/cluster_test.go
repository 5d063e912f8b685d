package sdktest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
	"github.com/ticketd/ticketd/server"
)

// These tests run real 3-node clusters in this process (Raft over TCP on
// 127.0.0.1, bolt stores in temp dirs, real HTTP) through the SDK.

func TestCluster_ClientCallsAndErrors_RealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	tc := testcluster.New(t, 3, nil)
	leader := tc.Leader(10 * time.Second)
	// Followers first: they forward to the leader.
	var urls []string
	for _, n := range tc.Running() {
		if n.ID != leader.ID {
			urls = append(urls, "http://"+n.HTTPAddr)
		}
	}
	urls = append(urls, "http://"+leader.HTTPAddr)
	c := newClient(t, urls)
	ctx := ctxFor(t, 20*time.Second)

	if _, created, err := c.CreateSequence(ctx, "small", client.SequenceSettings{Start: 10, Max: 109}); err != nil || !created {
		t.Fatalf("CreateSequence = %v, %v", created, err)
	}
	if _, _, err := c.CreateSequence(ctx, "small", client.SequenceSettings{Start: 10}); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("CreateSequence with other settings = %v, want ErrConflict", err)
	}
	r, err := c.Reserve(ctx, "small", 60)
	if err != nil || r.First < 10 || r.Len() != 60 {
		t.Fatalf("Reserve = %+v, %v", r, err)
	}
	if _, err := c.Reserve(ctx, "small", 60); !errors.Is(err, client.ErrExhausted) {
		t.Fatalf("Reserve past max = %v, want ErrExhausted", err)
	}
	if _, err := c.Reserve(ctx, "nope", 1); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("Reserve(nope) = %v, want ErrNotFound", err)
	}
	// RaiseSequence: above the mark, then a no-op, past max refused.
	if _, _, err := c.CreateSequence(ctx, "legacy", client.SequenceSettings{Max: 1 << 40}); err != nil {
		t.Fatal(err)
	}
	if res, err := c.RaiseSequence(ctx, "legacy", 1_000_000); err != nil || !res.Raised || res.Skipped != 1_000_000 || *res.Sequence.Next != 1_000_001 {
		t.Fatalf("RaiseSequence(legacy, 1000000) = %+v, %v", res, err)
	}
	if res, err := c.RaiseSequence(ctx, "legacy", 999); err != nil || res.Raised || res.Skipped != 0 {
		t.Fatalf("RaiseSequence below the mark = %+v, %v; want nothing changed", res, err)
	}
	if r, err := c.Reserve(ctx, "legacy", 5); err != nil || r.First <= 1_000_000 {
		t.Fatalf("Reserve after the raise = %+v, %v", r, err)
	}
	if _, err := c.RaiseSequence(ctx, "legacy", 1<<40+1); !errors.Is(err, client.ErrExhausted) {
		t.Fatalf("RaiseSequence past max = %v, want ErrExhausted", err)
	}
	if _, err := c.RaiseSequence(ctx, "nope", 5); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("RaiseSequence(nope) = %v, want ErrNotFound", err)
	}
	var apiErr *client.APIError
	if _, err := c.SequenceInfo(ctx, "nope"); !errors.As(err, &apiErr) || apiErr.Problem.Type != api.ProblemNotFound {
		t.Fatalf("SequenceInfo(nope) = %v, want the server's not-found problem", err)
	}
	info, err := c.SequenceInfo(ctx, "small")
	if err != nil || info.Start != 10 || info.Max != 109 {
		t.Fatalf("SequenceInfo = %+v, %v", info, err)
	}
	if list, err := c.Sequences(ctx); err != nil || len(list) != 2 || list[0].Name != "legacy" || list[1].Name != "small" {
		t.Fatalf("Sequences = %+v, %v", list, err)
	}
	st, err := c.Cluster(ctx)
	if err != nil || st.Leader != leader.ID || len(st.Members) != 3 {
		t.Fatalf("Cluster = %+v, %v; want leader %s and 3 members", st, err, leader.ID)
	}
	if err := c.RemoveMember(ctx, "n9"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("RemoveMember(n9) = %v, want ErrNotFound", err)
	}

	// A Sequence over the rest of "small": every ID once, then exhausted.
	seq := c.Sequence("small", client.WithRangeSize(16, 16))
	var got []int64
	for len(got) < 100 {
		id, err := seq.Next(ctx)
		if errors.Is(err, client.ErrExhausted) {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if id <= r.Last || id > 109 || (len(got) > 0 && id <= got[len(got)-1]) {
			t.Fatalf("Next = %d after %v (reserved %+v)", id, got, r)
		}
		got = append(got, id)
	}
	if len(got) == 0 || len(got) > 40 {
		t.Fatalf("the Sequence served %d IDs of the 40 left", len(got))
	}
	t.Logf("the Sequence served %d of the 40 IDs left above %d (the server's own blocks may skip some)", len(got), r.Last)
}

// seqMode is one of a Sequence's two modes; the failover tests run in each.
type seqMode struct {
	name string
	// ordered: IDs increase per goroutine (the default mode). In
	// unordered mode only uniqueness holds (client.Unordered).
	ordered bool
	opts    []client.SequenceOption
}

var seqModes = []seqMode{
	{"ordered", true, nil},
	{"unordered", false, []client.SequenceOption{client.Unordered()}},
}

// unorderedProcs is the GOMAXPROCS the unordered subtests run with at
// least: an unordered Sequence has one sub-range per P, so on a machine
// with fewer cores (CI's and the project's have 2) more Ps give more
// sub-ranges, and goroutines moving between them, to exercise.
const unorderedProcs = 4

// setMode prepares the test for m: in unordered mode it raises GOMAXPROCS
// to unorderedProcs until the test ends.
func setMode(t *testing.T, m seqMode) {
	if m.ordered {
		return
	}
	if prev := runtime.GOMAXPROCS(0); prev < unorderedProcs {
		runtime.GOMAXPROCS(unorderedProcs)
		t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	}
	t.Logf("unordered mode with GOMAXPROCS %d on %d CPUs", runtime.GOMAXPROCS(0), runtime.NumCPU())
}

// TestCluster_LeaderKilledRestartedThenAnotherKilled_TwoClientsNoDuplicateNoWaitWhileCached
// runs 8 goroutines that call Next on two Sequences of one sequence, each
// from its own Client (two "processes"), while the leader is killed, then
// restarted, then the new leader killed. Each fault phase lasts until both
// Sequences have refilled through it. No ID may repeat, no call may fail,
// and no call may wait on the network while its cache holds IDs; in the
// default mode IDs must also increase per goroutine and Sequence. Both
// modes run, as subtests. The longest wall-clock wait of a Next is logged,
// not asserted (performance claims are benchmarks).
func TestCluster_LeaderKilledRestartedThenAnotherKilled_TwoClientsNoDuplicateNoWaitWhileCached(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	for _, m := range seqModes {
		t.Run(m.name, func(t *testing.T) { leaderKilledRestartedThenAnotherKilled(t, m) })
	}
}

func leaderKilledRestartedThenAnotherKilled(t *testing.T, m seqMode) {
	setMode(t, m)
	tc := testcluster.New(t, 3, nil)
	urls := tc.URLs()
	c1, c2 := newClient(t, urls), newClient(t, urls)
	ctx := ctxFor(t, 90*time.Second)
	if _, _, err := c1.CreateSequence(ctx, "ids", client.SequenceSettings{}); err != nil {
		t.Fatal(err)
	}
	// A 4 s coverage instead of the default 10 s makes refills frequent
	// enough for each fault phase to see one, while the cache still
	// outlasts an election. (Uncapped ranges: an unordered Sequence that
	// read its rate too high, as one did before f5e9035, would make ranges
	// that last minutes, and a fault phase would wait in vain for a refill.)
	opts := append([]client.SequenceOption{client.WithCoverage(4 * time.Second)}, m.opts...)
	seqs := []*client.Sequence{c1.Sequence("ids", opts...), c2.Sequence("ids", opts...)}
	for _, s := range seqs { // the first call of a Sequence waits: its cache is empty
		if _, err := s.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}

	const goroutines, perRound, maxRounds = 8, 16, 60_000
	var (
		stop      atomic.Bool
		faults    atomic.Bool // a fault phase is on
		wg        sync.WaitGroup
		mu        sync.Mutex
		all       []int64
		maxWait   time.Duration
		maxFault  time.Duration
		slowCalls int // calls over 5 ms
		calls     int
	)
	for g := range goroutines {
		wg.Go(func() {
			var (
				ids       = make([]int64, 0, 1<<16)
				last      [2]int64
				myMax     time.Duration
				myFault   time.Duration
				mySlow, n int
			)
			defer func() {
				mu.Lock()
				all = append(all, ids...)
				maxWait, maxFault = max(maxWait, myMax), max(maxFault, myFault)
				slowCalls += mySlow
				calls += n
				mu.Unlock()
			}()
			for round := 0; round < maxRounds && !stop.Load(); round++ {
				for k := 0; k < perRound; k++ {
					i := (g + k) % 2
					start := time.Now()
					id, err := seqs[i].Next(ctx)
					d := time.Since(start)
					if err != nil {
						t.Errorf("goroutine %d: Next on Sequence %d: %v", g, i, err)
						return
					}
					if m.ordered && id <= last[i] {
						t.Errorf("goroutine %d: Sequence %d gave %d after %d", g, i, id, last[i])
						return
					}
					last[i] = id
					ids = append(ids, id)
					n++
					myMax = max(myMax, d)
					if faults.Load() {
						myFault = max(myFault, d)
					}
					if d > 5*time.Millisecond {
						mySlow++
					}
				}
				time.Sleep(time.Millisecond) // ~100k IDs/s in all: a busy service, not a spin loop
			}
		})
	}
	defer func() { // also on t.Fatal: stop the callers before the cluster goes
		stop.Store(true)
		wg.Wait()
	}()

	// refilledThrough waits until both Sequences have received a range
	// since the fault.
	refilledThrough := func(what string) {
		t.Helper()
		before := []int64{seqs[0].Stats().Refills, seqs[1].Stats().Refills}
		start := time.Now()
		testkit.EventuallyErr(t, 30*time.Second, 5*time.Millisecond, what+": both Sequences to refill", func() error {
			if s0, s1 := seqs[0].Stats(), seqs[1].Stats(); s0.Refills <= before[0] || s1.Refills <= before[1] {
				return fmt.Errorf("%+v, %+v", s0, s1)
			}
			return nil
		})
		t.Logf("%s: both Sequences refilled %v later; %+v", what, time.Since(start).Round(time.Millisecond), seqs[0].Stats())
	}

	testkit.EventuallyErr(t, 10*time.Second, 5*time.Millisecond, "warm-up: 3 refills of each Sequence", func() error {
		if s0, s1 := seqs[0].Stats(), seqs[1].Stats(); s0.Refills < 3 || s1.Refills < 3 {
			return fmt.Errorf("%+v %+v", s0, s1)
		}
		return nil
	})
	faults.Store(true)
	first := tc.Leader(10 * time.Second)
	tc.Kill(first.ID)
	t.Logf("killed the leader %s", first.ID)
	refilledThrough("leader killed")

	tc.Restart(first.ID)
	tc.WaitReady(20 * time.Second)
	t.Logf("restarted %s", first.ID)
	refilledThrough("old leader restarted")

	second := tc.Leader(10 * time.Second)
	if second.ID == first.ID { // unlikely: then kill a follower
		for _, n := range tc.Running() {
			if n.ID != first.ID {
				second = n
				break
			}
		}
	}
	tc.Kill(second.ID)
	t.Logf("killed %s (the leader now is %s)", second.ID, tc.Leader(10*time.Second).ID)
	refilledThrough("second leader killed")

	stop.Store(true)
	wg.Wait()
	if t.Failed() {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	checkUnique(t, all)
	for i, s := range seqs {
		if w := s.Stats().WaitsWhileCached; w != 0 {
			t.Fatalf("Sequence %d: %d Next calls waited on the network while its cache held IDs", i, w)
		}
	}
	st := []client.SequenceStats{seqs[0].Stats(), seqs[1].Stats()}
	t.Logf("%s: %d IDs from %d Next calls, no duplicate; longest Next wait %v (during the faults %v); calls over 5 ms: %d; "+
		"waits on an empty cache after the first call: %d and %d; refills %d and %d; last range sizes %d and %d",
		m.name, len(all), calls, maxWait, maxFault, slowCalls, st[0].Waits-1, st[1].Waits-1, st[0].Refills, st[1].Refills, st[0].RangeSize, st[1].RangeSize)
}

// TestCluster_AllNodesDown_NextServesCacheThenUnavailable_RecoversByItself
// kills every node: 8 goroutines calling Next serve exactly the IDs cached,
// each once (in increasing order per goroutine in the default mode), then
// get ErrUnavailable when their contexts end, and none waited while IDs
// were cached; when the nodes come back the cache refills on its own and
// Next goes on above every ID served before (the outage emptied the cache,
// so in both modes the next ID is from a new range). Both modes run, as
// subtests.
func TestCluster_AllNodesDown_NextServesCacheThenUnavailable_RecoversByItself(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	for _, m := range seqModes {
		t.Run(m.name, func(t *testing.T) { allNodesDownThenBack(t, m) })
	}
}

func allNodesDownThenBack(t *testing.T, m seqMode) {
	setMode(t, m)
	tc := testcluster.New(t, 3, nil)
	c := newClient(t, tc.URLs())
	ctx := ctxFor(t, 60*time.Second)
	if _, _, err := c.CreateSequence(ctx, "down", client.SequenceSettings{}); err != nil {
		t.Fatal(err)
	}
	const size = 500
	seq := c.Sequence("down", append([]client.SequenceOption{client.WithRangeSize(size, size)}, m.opts...)...)
	first, err := seq.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyErr(t, 10*time.Second, 5*time.Millisecond, "a full cache", func() error {
		if st := seq.Stats(); st.Refilling || st.Cached != 2*size-1 {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})

	var ids []string
	for _, n := range tc.Running() {
		ids = append(ids, n.ID)
		tc.Kill(n.ID)
	}
	const goroutines = 8
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		served   = []int64{first}
		firstErr error
	)
	for g := range goroutines {
		wg.Go(func() {
			last := first
			var got []int64
			defer func() {
				mu.Lock()
				served = append(served, got...)
				mu.Unlock()
			}()
			for range 10 * size { // bounded; the cache holds 2*size-1
				short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				id, err := seq.Next(short)
				cancel()
				if err != nil {
					if !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("goroutine %d: Next with every node down: %v; want ErrUnavailable and DeadlineExceeded", g, err)
					}
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				if m.ordered && id <= last {
					t.Errorf("goroutine %d: Next = %d after %d", g, id, last)
					return
				}
				last = id
				got = append(got, id)
			}
			t.Errorf("goroutine %d: %d IDs with every node down and no error", g, len(got))
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%s: %d goroutines served %d IDs from the cache, then: %v", m.name, goroutines, len(served)-1, firstErr)
	if len(served)-1 != 2*size-1 {
		t.Fatalf("served %d IDs with every node down; want exactly the %d cached", len(served)-1, 2*size-1)
	}
	checkUnique(t, served) // sorts it
	highest := served[len(served)-1]
	if w := seq.Stats().WaitsWhileCached; w != 0 {
		t.Fatalf("%d Next calls waited while IDs were cached", w)
	}
	if _, err := c.Reserve(ctxFor(t, 300*time.Millisecond), "down", 1); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("Reserve with every node down: %v; want ErrUnavailable", err)
	}

	slices.Reverse(ids)
	for _, id := range ids {
		tc.Restart(id)
	}
	t.Logf("restarted %v", ids)
	// Nobody calls Next: the background refill must recover by itself.
	testkit.EventuallyErr(t, 30*time.Second, 5*time.Millisecond, "a refill after the restart", func() error {
		if st := seq.Stats(); st.Cached == 0 {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
	id, err := seq.Next(ctx)
	if err != nil || id <= highest {
		t.Fatalf("Next after recovery = %d, %v; want above %d", id, err, highest)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := seq.Next(ctx); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Next after Close: %v, want ErrClosed", err)
	}
}

// TestCluster_BearerTokens_401And403AreErrUnauthorized_NeverRetried runs a
// cluster that requires tokens: the right token works, a missing or wrong
// one is ErrUnauthorized (401), a token without the scope is ErrUnauthorized
// (403), and none of them is retried.
func TestCluster_BearerTokens_401And403AreErrUnauthorized_NeverRetried(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	const admin, reserve = "admin-0123456789abcdef0123456789", "reserve-0123456789abcdef0123456789"
	tokens := testcluster.Tokens(t, admin, reserve)
	tc := testcluster.NewWithOptions(t, 3, testcluster.Options{
		Token: admin,
		Tweak: func(id string, cfg *server.Config) { cfg.Tokens = tokens },
	})
	urls := tc.URLs()
	ctx := ctxFor(t, 20*time.Second)

	adm := newClient(t, urls, client.WithBearerToken(admin))
	if _, _, err := adm.CreateSequence(ctx, "auth", client.SequenceSettings{}); err != nil {
		t.Fatalf("CreateSequence with the admin token: %v", err)
	}
	res := newClient(t, urls, client.WithBearerToken(reserve))
	if _, err := res.Reserve(ctx, "auth", 3); err != nil {
		t.Fatalf("Reserve with the reserve token: %v", err)
	}
	if _, err := res.Sequence("auth").Next(ctx); err != nil {
		t.Fatalf("Next with the reserve token: %v", err)
	}

	check := func(what string, err error, status int, typ string) {
		t.Helper()
		var apiErr *client.APIError
		if !errors.Is(err, client.ErrUnauthorized) || !errors.As(err, &apiErr) || apiErr.StatusCode != status || apiErr.Problem.Type != typ {
			t.Fatalf("%s: %v; want ErrUnauthorized, %d %s", what, err, status, typ)
		}
		if errors.Is(err, client.ErrUnavailable) {
			t.Fatalf("%s: %v was retried until the context ended; a %d is final", what, err, status)
		}
	}
	_, err := newClient(t, urls).Reserve(ctx, "auth", 1)
	check("Reserve without a token", err, http.StatusUnauthorized, api.ProblemUnauthorized)
	_, err = newClient(t, urls, client.WithBearerToken("wrong-0123456789abcdef0123456789")).Sequence("auth").Next(ctx)
	check("Next with a wrong token", err, http.StatusUnauthorized, api.ProblemUnauthorized)
	_, _, err = res.CreateSequence(ctx, "other", client.SequenceSettings{})
	check("CreateSequence with the reserve token", err, http.StatusForbidden, api.ProblemForbidden)
}
