package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
)

// The unordered mode (client.Unordered): every promise of the default mode
// but order. Tests that need several shards raise GOMAXPROCS to 4 before
// making the Sequence (a Sequence has a shard per P, rounded up to a power
// of two), so that they hold on a machine of any size.

func withProcs(t *testing.T, n int) {
	t.Helper()
	old := runtime.GOMAXPROCS(n)
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
}

// unorderedOnFake is the unordered tests' setup: GOMAXPROCS procs, a
// stand-in serving sequence "s" of 1..max, and an unordered Sequence of it
// that reserves ranges of size IDs; the client and the stand-in close when
// the test ends, and noLeak checks that nothing is left running.
func unorderedOnFake(t *testing.T, procs int, max, size int64, opts ...client.SequenceOption) (*fakeServer, *client.Client, *client.Sequence) {
	t.Helper()
	noLeak(t)
	withProcs(t, procs)
	f := newFake()
	t.Cleanup(f.Close)
	f.addSequence("s", 1, max)
	c := newClient(t, []string{f.URL()})
	opts = append([]client.SequenceOption{client.Unordered(), client.WithRangeSize(size, size)}, opts...)
	return f, c, c.Sequence("s", opts...)
}

// granted is every ID the fake handed out: it serves one sequence from 1,
// in order, so the ranges it answered are 1..sum(counts).
func granted(f *fakeServer) int64 {
	var n int64
	for _, c := range f.rangeCounts() {
		n += c
	}
	return n
}

func TestUnordered_ManyGoroutines_UniqueAndFromGrantedRanges(t *testing.T) {
	f, _, seq := unorderedOnFake(t, 4, api.DefaultMax, 1000) // many refills
	f.set(func(f *fakeServer) { f.delay = 200 * time.Microsecond })
	if seq.Shards() != 4 {
		t.Fatalf("%d shards with GOMAXPROCS 4; want 4", seq.Shards())
	}
	ctx := ctxFor(t, 30*time.Second)

	got := takeOnGoroutines(t, ctx, seq, 8, 5000)
	var all []int64
	for _, ids := range got {
		all = append(all, ids...)
	}
	checkUnique(t, all)
	if top := granted(f); all[0] < 1 || all[len(all)-1] > top {
		t.Fatalf("IDs %d..%d, but the server granted 1..%d", all[0], all[len(all)-1], top)
	}
	if w := seq.Stats().WaitsWhileCached; w != 0 {
		t.Fatalf("%d calls waited on the network while the cache held IDs", w)
	}
	if _, _, maxIn := f.stats(); maxIn != 1 {
		t.Fatalf("the server served up to %d reservations of one Sequence at once; want one refill in flight at most", maxIn)
	}
}

// takeRoundRobin takes n IDs, one from each shard in turn, as callers on
// every core would: the procedure that shows whether two cores were ever
// given the same sub-range.
func takeRoundRobin(ctx context.Context, seq *client.Sequence, n int) ([]int64, error) {
	ids := make([]int64, 0, n)
	for i := range n {
		id, err := seq.NextOnShard(ctx, i%seq.Shards())
		if err != nil {
			return ids, fmt.Errorf("NextOnShard #%d: %w", i, err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// The counterpart of TestUnordered_Planted_ShareSubRange_Caught (fault
// build): the same procedure finds no ID twice.
func TestUnordered_EveryShardInTurn_NoIDTwice(t *testing.T) {
	_, _, seq := unorderedOnFake(t, 4, api.DefaultMax, 1000)
	ids, err := takeRoundRobin(ctxFor(t, 10*time.Second), seq, 20_000)
	if err != nil {
		t.Fatal(err)
	}
	if d := len(duplicateIDs(ids)); d != 0 {
		t.Fatalf("%d IDs handed out twice", d)
	}
}

// A core whose sub-range runs out while the cache and the server have
// nothing takes from the other cores' sub-ranges before it waits: every
// cached ID is served, with no wait, before the first ErrUnavailable.
func TestUnordered_ShardRunsOut_TakesFromOtherShardsBeforeWaiting(t *testing.T) {
	const size = 100
	f, _, seq := unorderedOnFake(t, 2, api.DefaultMax, size)
	ctx := ctxFor(t, 10*time.Second)

	ids := make([]int64, 0, 2*size)
	first, err := seq.NextOnShard(ctx, 0) // waits for 1..100, then 101..200 is fetched ahead
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, first)
	if err := waitFor(5*time.Second, func() bool { st := seq.Stats(); return !st.Refilling && st.Cached == 2*size-1 }); err != nil {
		t.Fatalf("cache not full: %+v", seq.Stats())
	}
	f.failNext(-1, http.StatusServiceUnavailable, api.ProblemUnavailable, "")
	id, err := seq.NextOnShard(ctx, 1) // shard 1 cuts a sub-range of its own
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, id)
	for len(ids) < 2*size { // shard 0 alone takes the rest, shard 1's included
		id, err := seq.NextOnShard(ctx, 0)
		if err != nil {
			t.Fatalf("NextOnShard(0) after %d IDs with %d cached: %v", len(ids), seq.Stats().Cached, err)
		}
		ids = append(ids, id)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = seq.NextOnShard(short, 0)
	cancel()
	if !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("Next with the cache empty and the server down: %v; want ErrUnavailable", err)
	}
	if d := len(duplicateIDs(ids)); d != 0 {
		t.Fatalf("%d IDs twice", d)
	}
	slices.Sort(ids)
	if ids[0] != 1 || ids[len(ids)-1] != 2*size {
		t.Fatalf("served %d..%d; want every ID of 1..%d", ids[0], ids[len(ids)-1], 2*size)
	}
	if st := seq.Stats(); st.WaitsWhileCached != 0 || st.Waits != 2 {
		t.Fatalf("stats %+v: want two waits (the first call, and the last on an empty cache), none while cached", st)
	}
	f.failNext(0, 0, "", "")
}

func TestUnordered_Exhausted_ServesEveryIDThenErrExhaustedForever(t *testing.T) {
	_, _, seq := unorderedOnFake(t, 4, 2500, 1000)
	ctx := ctxFor(t, 10*time.Second)

	ids, err := takeRoundRobin(ctx, seq, 2500) // strands sub-ranges in every shard on the way
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	for i, id := range ids {
		if id != int64(i+1) {
			t.Fatalf("sorted IDs[%d] = %d: want every ID of 1..2500 once", i, id)
		}
	}
	for k := range seq.Shards() {
		if id, err := seq.NextOnShard(ctx, k); !errors.Is(err, client.ErrExhausted) {
			t.Fatalf("Next on shard %d after the last ID = %d, %v; want ErrExhausted", k, id, err)
		}
	}
	if _, err := seq.NextN(ctx, 1); !errors.Is(err, client.ErrExhausted) {
		t.Fatalf("NextN after the last ID: %v; want ErrExhausted", err)
	}
}

func TestUnordered_NextN_SortedDisjointRightCount(t *testing.T) {
	_, _, seq := unorderedOnFake(t, 4, api.DefaultMax, 100)
	ctx := ctxFor(t, 10*time.Second)

	var all []int64
	for i, n := range []int{1, 99, 250, 3, 1000, 7, 5000, 2} {
		if _, err := seq.NextOnShard(ctx, i); err != nil { // leave sub-ranges in other shards
			t.Fatal(err)
		}
		rs, err := seq.NextN(ctx, n)
		if err != nil {
			t.Fatalf("NextN(%d): %v", n, err)
		}
		sum := int64(0)
		for j, r := range rs {
			if r.Last < r.First || (j > 0 && r.First <= rs[j-1].Last+1) {
				t.Fatalf("NextN(%d) = %+v: not sorted, disjoint and merged", n, rs)
			}
			sum += r.Len()
			for id := range r.All() {
				all = append(all, id)
			}
		}
		if sum != int64(n) {
			t.Fatalf("NextN(%d) = %+v: %d IDs", n, rs, sum)
		}
	}
	checkUnique(t, all)
}

func TestUnordered_Close_EveryCallErrClosed_CacheDropped(t *testing.T) {
	_, c, seq := unorderedOnFake(t, 4, api.DefaultMax, 1000)
	ctx := ctxFor(t, 10*time.Second)
	if _, err := takeRoundRobin(ctx, seq, 100); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if st := seq.Stats(); st.Cached != 0 || st.Refilling {
		t.Fatalf("after Close: %+v; want nothing cached and no refill", st)
	}
	for k := range seq.Shards() {
		if _, err := seq.NextOnShard(ctx, k); !errors.Is(err, client.ErrClosed) {
			t.Fatalf("Next on shard %d after Close: %v; want ErrClosed", k, err)
		}
	}
	if _, err := seq.NextN(ctx, 10); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("NextN after Close: %v; want ErrClosed", err)
	}
}

func TestUnordered_Prefetch_RefillsBeforeTheCacheIsEmpty(t *testing.T) {
	const size = 1000
	_, _, seq := unorderedOnFake(t, 4, api.DefaultMax, size)
	ctx := ctxFor(t, 10*time.Second)
	for round := 0; round < 5; round++ {
		if err := waitFor(5*time.Second, func() bool {
			st := seq.Stats()
			return round == 0 || (!st.Refilling && st.Cached >= size)
		}); err != nil {
			t.Fatalf("round %d: no prefetch: %+v", round, seq.Stats())
		}
		if _, err := takeRoundRobin(ctx, seq, size); err != nil {
			t.Fatal(err)
		}
	}
	if st := seq.Stats(); st.Waits != 1 {
		t.Fatalf("stats %+v: want exactly one wait (the first Next, on an empty cache)", st)
	}
}
