package client_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
)

// The unordered mode of the Snowflake generator (UnorderedSnowflake): each
// core issues from its own share of a tick's sequence values. The tests run
// with GOMAXPROCS 4 so that a generator has 4 shards on any machine; they
// drive each shard directly (client.NextOnShard) as well as through Next
// and NextN on many goroutines, since which core a goroutine lands on is
// the scheduler's choice.

const unorderedShards = 4

// duplicateIDs is the uniqueness check: the IDs that occur more than once.
func duplicateIDs(ids []int64) []int64 {
	s := slices.Clone(ids)
	slices.Sort(s)
	var dup []int64
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1] && (len(dup) == 0 || dup[len(dup)-1] != s[i]) {
			dup = append(dup, s[i])
		}
	}
	return dup
}

// unorderedSnowflakeOn is the Snowflake unordered tests' setup: a shard per
// P (unorderedShards), a lease stand-in serving namespace "users" with the
// given lease TTL and recycle time (edit, when not nil, changes its layout),
// and a generator of it with opts; with clk (nil: the real clock) both the
// stand-in and the generator read that clock. The client and the stand-in
// close when the test ends.
func unorderedSnowflakeOn(t *testing.T, clk *fakeClock, ttl, recycle time.Duration, edit func(*api.Namespace), opts ...client.SnowflakeOption) (*leaseStandIn, *client.Snowflake) {
	t.Helper()
	withProcs(t, unorderedShards)
	var now func() time.Time
	if clk != nil {
		now = clk.True
		opts = append([]client.SnowflakeOption{client.WithClock(clk)}, opts...)
	}
	f := newLeaseStandIn(now)
	t.Cleanup(f.Close)
	f.addNamespace("users", ttl, recycle, edit)
	c := newClient(t, []string{f.URL()})
	return f, newSnowflake(t, c, "users", opts...)
}

// unorderedWorkload takes IDs from g as a busy server would: goroutines
// calling Next and NextN, and one that takes an ID from every shard in
// turn, so that all shards issue in the same ticks whatever the scheduler
// does. It returns the IDs and, for the turn-taking ones, the shard each
// came from.
func unorderedWorkload(t *testing.T, g *client.Snowflake) (all []int64, fromShard map[int64]int) {
	t.Helper()
	const goroutines, per, rounds = 8, 10_000, 3_000
	shards := client.SnowflakeShards(g)
	var turns []int64
	var wg sync.WaitGroup
	results := goSnowflakeCallers(t, &wg, g, goroutines, per)
	fromShard = map[int64]int{}
	wg.Go(func() {
		for range rounds {
			for k := range shards {
				id, err := client.NextOnShard(g, k)
				if errors.Is(err, client.ErrShardWaits) {
					continue // its share of this tick is used up
				}
				if err != nil {
					t.Error(err)
					return
				}
				turns = append(turns, id)
				fromShard[id] = k
			}
		}
	})
	wg.Wait()
	for _, ids := range results {
		all = append(all, ids...)
	}
	return append(all, turns...), fromShard
}

// TestSnowflakeUnordered_ManyGoroutines_UniqueInTheirShares: in both
// layouts, IDs taken on many goroutines and from every shard in turn are
// unique, carry the lease's worker id and a time of the run, and each
// shard's lie in its own share of the sequence (the top bits).
func TestSnowflakeUnordered_ManyGoroutines_UniqueInTheirShares(t *testing.T) {
	for name, edit := range map[string]func(*api.Namespace){"default": nil, "wide": wideLayout} {
		t.Run(name, func(t *testing.T) {
			noLeak(t)
			_, g := unorderedSnowflakeOn(t, nil, 30*time.Second, time.Minute, edit, client.UnorderedSnowflake())
			l := waitLease(t, g, 5*time.Second)
			if n := client.SnowflakeShards(g); n != unorderedShards {
				t.Fatalf("%d shards with GOMAXPROCS %d", n, unorderedShards)
			}
			start := time.Now().UnixMilli()
			all, fromShard := unorderedWorkload(t, g)
			end := time.Now().UnixMilli()
			if dup := duplicateIDs(all); len(dup) > 0 {
				t.Fatalf("%d IDs handed out twice, such as %d", len(dup), dup[0])
			}
			span := int64(1) << l.Layout.SequenceBits / unorderedShards
			shares := map[int64]int{}
			for _, id := range all {
				p := client.DecodeSnowflake(l.Layout, id)
				if p.WorkerID != l.WorkerID || p.TimeMs < start-1 || p.TimeMs > end || p.Sequence < 0 || p.Sequence >= 1<<l.Layout.SequenceBits {
					t.Fatalf("id %d decodes to %+v; lease worker %d, run %d..%d", id, p, l.WorkerID, start, end)
				}
				shares[p.Sequence/span]++
				if k, ok := fromShard[id]; ok && p.Sequence/span != int64(k) {
					t.Fatalf("shard %d issued %d, sequence %d: outside its share %d..%d", k, id, p.Sequence, int64(k)*span, int64(k+1)*span-1)
				}
			}
			if len(shares) != unorderedShards {
				t.Fatalf("IDs per share %v: want all %d shares used", shares, unorderedShards)
			}
			if st := g.Stats(); st.Issued != int64(len(all)) || st.Acquired != 1 {
				t.Fatalf("stats %+v after %d IDs", st, len(all))
			}
			t.Logf("%d IDs, per share %v", len(all), shares)
		})
	}
}

// TestSnowflakeUnordered_TwoShardsShareAShare_CheckCatchesIt plants the bug
// that the mode's uniqueness rests on not having: shard 1 issues from shard
// 0's share. The workload and check of the test above must then find IDs
// handed out twice.
func TestSnowflakeUnordered_TwoShardsShareAShare_CheckCatchesIt(t *testing.T) {
	noLeak(t)
	_, g := unorderedSnowflakeOn(t, nil, 30*time.Second, time.Minute, wideLayout, client.UnorderedSnowflake())
	waitLease(t, g, 5*time.Second)
	client.PlantSharedShare(g, 0, 1)
	all, _ := unorderedWorkload(t, g)
	dup := duplicateIDs(all)
	if len(dup) == 0 {
		t.Fatalf("two shards issued from one share and the check found no ID twice among %d", len(all))
	}
	t.Logf("the check found %d IDs handed out twice among %d", len(dup), len(all))
}

// TestSnowflakeUnordered_Unreachable_EveryShardStopsAtTheDeadline: the
// lease rules of TestSnowflake_Unreachable_FailStaticUntilTheDeadline_
// ThenFailClosed, shard by shard, on a frozen clock shared with the
// stand-in (1 s TTL, deadline at 900 ms): with the cluster down every shard
// issues until the deadline and refuses from then on, the expiry is
// counted once; a renewal when the cluster is back resumes every shard.
func TestSnowflakeUnordered_Unreachable_EveryShardStopsAtTheDeadline(t *testing.T) {
	noLeak(t)
	clk := newFakeClock(false)
	f, g := unorderedSnowflakeOn(t, clk, time.Second, 2*time.Second, nil, client.WithLeaseWait(0), client.UnorderedSnowflake())
	l := waitLease(t, g, 5*time.Second)
	f.set(func(f *leaseStandIn) { f.down = true })
	var ids []int64
	takeAll := func(when string) {
		t.Helper()
		for k := range unorderedShards {
			id, err := client.NextOnShard(g, k)
			if err != nil {
				t.Fatalf("%s: shard %d: %v", when, k, err)
			}
			ids = append(ids, id)
		}
	}
	takeAll("at the start")
	clk.Advance(899 * time.Millisecond)
	takeAll("just before the deadline")
	clk.Advance(time.Millisecond) // the deadline
	for k := range unorderedShards {
		if id, err := client.NextOnShard(g, k); !errors.Is(err, client.ErrShardHasNoLease) {
			t.Fatalf("shard %d at the deadline = %d, %v; want no lease", k, id, err)
		}
	}
	if id, err := g.Next(ctxFor(t, 5*time.Second)); !errors.Is(err, client.ErrLeaseExpired) {
		t.Fatalf("Next at the deadline = %d, %v; want ErrLeaseExpired", id, err)
	}
	if _, err := g.NextN(ctxFor(t, 5*time.Second), 5); !errors.Is(err, client.ErrLeaseExpired) {
		t.Fatalf("NextN at the deadline: %v", err)
	}
	st := g.Stats()
	if st.Expired != 1 || st.RefusedNoLease != 2 || st.Issued != int64(len(ids)) {
		t.Fatalf("stats at the deadline: %+v (%d IDs)", st, len(ids))
	}
	if l2, ok := g.Lease(); !ok || l2.Valid || l2.WorkerID != l.WorkerID {
		t.Fatalf("lease at the deadline: %+v %v", l2, ok)
	}

	// The cluster is back before the lease ended there: a renewal succeeds
	// and every shard goes on under the same worker id.
	f.set(func(f *leaseStandIn) { f.down = false })
	l2 := waitLease(t, g, 10*time.Second)
	if l2.WorkerID != l.WorkerID || l2.Token != l.Token || !l2.Deadline.After(l.Deadline) {
		t.Fatalf("after the cluster came back: %+v (was %+v)", l2, l)
	}
	takeAll("after the renewal")
	if dup := duplicateIDs(ids); len(dup) > 0 {
		t.Fatalf("IDs handed out twice: %v", dup)
	}
}

// TestSnowflakeUnordered_Close_EveryShardErrClosed: after Close every shard
// refuses with ErrClosed, Next and Wait too, and the lease is released.
func TestSnowflakeUnordered_Close_EveryShardErrClosed(t *testing.T) {
	noLeak(t)
	f, g := unorderedSnowflakeOn(t, nil, time.Second, 2*time.Second, nil, client.UnorderedSnowflake())
	waitLease(t, g, 5*time.Second)
	for k := range unorderedShards {
		if _, err := client.NextOnShard(g, k); err != nil {
			t.Fatalf("shard %d: %v", k, err)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	for k := range unorderedShards {
		if _, err := client.NextOnShard(g, k); !errors.Is(err, client.ErrClosed) {
			t.Fatalf("shard %d after Close: %v", k, err)
		}
	}
	if _, err := g.Next(context.Background()); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
	if _, err := g.NextN(context.Background(), 10); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("NextN after Close: %v", err)
	}
	if err := g.Wait(context.Background()); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Wait after Close: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.releases != 1 {
		t.Fatalf("%d releases", f.releases)
	}
}

// TestSnowflakeUnordered_OneCallerGetsTheWholeTick: the default layout in
// unordered mode is capped by its layout, 4,096 IDs a tick, and one caller
// gets all of them: when its core's share is used up it takes the other
// shards'. On a frozen clock NextN(4096) is served at once, without a
// wait for a tick (SequenceWaits: a caller that waited might have been
// moved to another core meanwhile and found its share there); the next ID
// must wait for the next tick.
func TestSnowflakeUnordered_OneCallerGetsTheWholeTick(t *testing.T) {
	noLeak(t)
	clk := newFakeClock(false)
	_, g := unorderedSnowflakeOn(t, clk, time.Minute, 2*time.Minute, nil, client.UnorderedSnowflake())
	waitLease(t, g, 5*time.Second)
	clk.Advance(time.Millisecond) // past the lease's start
	ids, err := g.NextN(ctxFor(t, 5*time.Second), 4096)
	if err != nil {
		t.Fatalf("NextN(4096) on one tick: %v; stats %+v", err, g.Stats())
	}
	if st := g.Stats(); st.SequenceWaits != 0 {
		t.Fatalf("NextN(4096) waited for a tick: stats %+v", st)
	}
	if !slices.IsSorted(ids) {
		t.Fatal("NextN's IDs, taken from several shares, are not sorted")
	}
	if dup := duplicateIDs(ids); len(dup) > 0 {
		t.Fatalf("IDs handed out twice: %v", dup[:min(len(dup), 5)])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if id, err := g.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the 4,097th ID of a tick = %d, %v; want a wait for the next tick", id, err)
	}
	clk.Advance(time.Millisecond)
	if _, err := g.Next(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatalf("Next on the next tick: %v", err)
	}
}

// TestSnowflakeUnordered_RandomClockSteps_NeverRepeat: the walk of
// TestSnowflake_RandomClockSteps_NeverRepeat with every shard taking IDs
// after each step: each shard's IDs increase, none repeats across shards,
// and every shard waited out small steps back and refused large ones.
func TestSnowflakeUnordered_RandomClockSteps_NeverRepeat(t *testing.T) {
	noLeak(t)
	clk := newFakeClock(true)
	_, g := unorderedSnowflakeOn(t, clk, time.Minute, 2*time.Minute, nil, client.WithMaxClockBackward(3*time.Millisecond), client.UnorderedSnowflake())
	waitLease(t, g, 5*time.Second)
	rng := rand.New(rand.NewPCG(7, 11))
	last := make([]int64, unorderedShards)
	var ids []int64
	refused, waited := 0, 0
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
		for range 1 + rng.IntN(50) {
			for k := range unorderedShards {
				id, err := client.NextOnShard(g, k)
				switch {
				case errors.Is(err, client.ErrClockMovedBackwards):
					refused++
					continue
				case errors.Is(err, client.ErrShardWaits):
					waited++
					continue
				case err != nil:
					t.Fatalf("step %d, shard %d: %v; stats %+v", i, k, err, g.Stats())
				}
				if id <= last[k] {
					t.Fatalf("step %d, shard %d: %d after %d", i, k, id, last[k])
				}
				last[k] = id
				ids = append(ids, id)
			}
		}
	}
	if dup := duplicateIDs(ids); len(dup) > 0 {
		t.Fatalf("%d IDs handed out twice, such as %d", len(dup), dup[0])
	}
	st := g.Stats()
	if refused == 0 || waited == 0 || st.ClockBackwardRefusals != int64(refused) || st.ClockBackwardWaits == 0 || st.ClockForwardJumps == 0 || st.Issued != int64(len(ids)) {
		t.Fatalf("the walk did not exercise every path: refused %d, waited %d, stats %+v", refused, waited, st)
	}
	t.Logf("%d IDs, %d refusals, %d waits; stats %+v", len(ids), refused, waited, st)
}
