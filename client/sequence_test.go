package client_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
)

// checkUnique fails the test if any ID occurs twice in ids (sorted in place).
func checkUnique(t *testing.T, ids []int64) {
	t.Helper()
	slices.Sort(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			t.Fatalf("ID %d was handed out twice", ids[i])
		}
	}
}

// takeOnGoroutines runs goroutines that take perG IDs each from seq, the
// odd ones mixing in NextN(5) every tenth call, and returns each one's IDs
// in the order it got them.
func takeOnGoroutines(t *testing.T, ctx context.Context, seq *client.Sequence, goroutines, perG int) [][]int64 {
	t.Helper()
	got := make([][]int64, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			ids := make([]int64, 0, perG+50)
			for i := 0; i < perG; i++ {
				if g%2 == 1 && i%10 == 0 { // some goroutines mix in NextN
					rs, err := seq.NextN(ctx, 5)
					if err != nil {
						t.Errorf("NextN: %v", err)
						return
					}
					for _, r := range rs {
						for id := range r.All() {
							ids = append(ids, id)
						}
					}
					continue
				}
				id, err := seq.Next(ctx)
				if err != nil {
					t.Errorf("Next: %v", err)
					return
				}
				ids = append(ids, id)
			}
			got[g] = ids
		})
	}
	wg.Wait()
	return got
}

func TestSequence_ManyGoroutines_UniqueAndIncreasingPerGoroutine(t *testing.T) {
	noLeak(t)
	f := newFake()
	defer f.Close()
	f.addSequence("s", 1, api.DefaultMax)
	f.set(func(f *fakeServer) { f.delay = 200 * time.Microsecond })
	c := newClient(t, []string{f.URL()})
	seq := c.Sequence("s", client.WithRangeSize(100, 100)) // many refills
	ctx := ctxFor(t, 30*time.Second)

	got := takeOnGoroutines(t, ctx, seq, 8, 3000)
	var all []int64
	for g, ids := range got {
		for i := 1; i < len(ids); i++ {
			if ids[i] <= ids[i-1] {
				t.Fatalf("goroutine %d got %d after %d: not strictly increasing", g, ids[i], ids[i-1])
			}
		}
		all = append(all, ids...)
	}
	checkUnique(t, all)
	if w := seq.Stats().WaitsWhileCached; w != 0 {
		t.Fatalf("%d calls waited on the network while the cache held IDs", w)
	}
	if _, _, maxIn := f.stats(); maxIn != 1 {
		t.Fatalf("the server served up to %d reservations of one Sequence at once; want one refill in flight at most", maxIn)
	}
}

func TestSequence_Prefetch_RefillsBeforeTheCacheIsEmpty(t *testing.T) {
	noLeak(t)
	f := newFake()
	defer f.Close()
	f.addSequence("s", 1, api.DefaultMax)
	c := newClient(t, []string{f.URL()})
	const size = 100
	seq := c.Sequence("s", client.WithRangeSize(size, size))
	ctx := ctxFor(t, 10*time.Second)

	want := int64(1)
	for round := 0; round < 5; round++ {
		// Wait until the range after the current one has arrived.
		if err := waitFor(5*time.Second, func() bool {
			st := seq.Stats()
			return round == 0 || (!st.Refilling && st.Cached >= size)
		}); err != nil {
			t.Fatalf("round %d: no prefetch: %+v", round, seq.Stats())
		}
		for i := 0; i < size; i++ {
			id, err := seq.Next(ctx)
			if err != nil || id != want {
				t.Fatalf("Next = %d, %v; want %d", id, err, want)
			}
			want++
		}
	}
	st := seq.Stats()
	if st.Waits != 1 {
		t.Fatalf("stats %+v: want exactly one wait (the first Next, on an empty cache)", st)
	}
	if _, ranges, _ := f.stats(); ranges < 5 {
		t.Fatalf("server saw %d reservations, want at least 5", ranges)
	}
}

func TestSequence_Exhausted_ServesEveryIDThenErrExhaustedForever(t *testing.T) {
	noLeak(t)
	f := newFake()
	defer f.Close()
	f.addSequence("s", 1, 2500)
	c := newClient(t, []string{f.URL()})
	seq := c.Sequence("s", client.WithRangeSize(1000, 1000))
	ctx := ctxFor(t, 10*time.Second)

	var last int64
	for i := int64(1); i <= 2500; i++ {
		id, err := seq.Next(ctx)
		if err != nil || id != i {
			t.Fatalf("Next #%d = %d, %v", i, id, err)
		}
		last = id
	}
	for i := 0; i < 3; i++ {
		if id, err := seq.Next(ctx); !errors.Is(err, client.ErrExhausted) {
			t.Fatalf("Next after the last ID %d = %d, %v; want ErrExhausted", last, id, err)
		}
	}
	if _, err := seq.NextN(ctx, 1); !errors.Is(err, client.ErrExhausted) {
		t.Fatalf("NextN after the last ID: %v; want ErrExhausted", err)
	}
	// 1000, 1000, then 1000 refused, 500 served, then 1000..1 refused.
	counts := f.rangeCounts()
	if !slices.Contains(counts, 500) || counts[len(counts)-1] != 1 {
		t.Fatalf("reservation sizes %v: want the size halved down to what is left, then to 1", counts)
	}
}

func TestSequence_NotFound_NotStickyOnceCreated(t *testing.T) {
	noLeak(t)
	f := newFake()
	defer f.Close()
	c := newClient(t, []string{f.URL()})
	seq := c.Sequence("later")
	ctx := ctxFor(t, 10*time.Second)
	if _, err := seq.Next(ctx); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("Next on a missing sequence: %v; want ErrNotFound", err)
	}
	f.addSequence("later", 7, api.DefaultMax)
	if id, err := seq.Next(ctx); err != nil || id != 7 {
		t.Fatalf("Next after creating it = %d, %v; want 7", id, err)
	}
}

func TestSequence_ServerDown_ServesCacheThenUnavailable_RecoversByItself(t *testing.T) {
	noLeak(t)
	f := newFake()
	defer f.Close()
	f.addSequence("s", 1, api.DefaultMax)
	c := newClient(t, []string{f.URL()})
	const size = 10
	seq := c.Sequence("s", client.WithRangeSize(size, size))
	ctx := ctxFor(t, 10*time.Second)

	if _, err := seq.Next(ctx); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(5*time.Second, func() bool { st := seq.Stats(); return !st.Refilling && st.Cached == 2*size-1 }); err != nil {
		t.Fatalf("cache not full: %+v", seq.Stats())
	}
	f.failNext(-1, http.StatusServiceUnavailable, api.ProblemUnavailable, "")
	var last int64
	for i := 0; i < 2*size-1; i++ { // the cache still serves
		id, err := seq.Next(ctx)
		if err != nil {
			t.Fatalf("Next #%d with IDs cached: %v", i, err)
		}
		last = id
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err := seq.Next(short)
	cancel()
	var apiErr *client.APIError
	if !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) ||
		!errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("Next on an empty cache while the server is down: %v; want ErrUnavailable with the last 503", err)
	}
	if w := seq.Stats().WaitsWhileCached; w != 0 {
		t.Fatalf("%d calls waited while IDs were cached", w)
	}

	f.failNext(0, 0, "", "")
	// Nobody calls Next: the background refill recovers on its own.
	if err := waitFor(5*time.Second, func() bool { return seq.Stats().Cached > 0 }); err != nil {
		t.Fatalf("the cache did not refill by itself: %+v", seq.Stats())
	}
	id, err := seq.Next(ctx)
	if err != nil || id <= last {
		t.Fatalf("Next after recovery = %d, %v; want above %d", id, err, last)
	}
}

func TestSequence_Close_StopsRetryingRefill_NoLeak(t *testing.T) {
	noLeak(t)
	f := newFake()
	defer f.Close()
	f.addSequence("s", 1, api.DefaultMax)
	f.failNext(-1, http.StatusServiceUnavailable, api.ProblemUnavailable, "")
	c, err := client.New([]string{f.URL()}, client.WithBackoff(time.Millisecond, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	seq := c.Sequence("s")

	// One caller times out, another is still waiting when Close comes.
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err = seq.Next(short)
	cancel()
	if !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("Next: %v, want ErrUnavailable", err)
	}
	waiting := make(chan error, 1)
	go func() {
		_, err := seq.Next(context.Background())
		waiting <- err
	}()
	if err := waitFor(5*time.Second, func() bool { return seq.Stats().Waits >= 2 }); err != nil {
		t.Fatal("second caller never waited")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waiting:
		if !errors.Is(err, client.ErrClosed) {
			t.Fatalf("the waiting Next got %v; want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not release the waiting Next")
	}
	if st := seq.Stats(); st.Refilling {
		t.Fatalf("a refill is still in flight after Close: %+v", st)
	}
	c.Close() // idempotent; noLeak checks that every goroutine ended
}

func TestSequence_NextN_RangesSpanningCachedRanges(t *testing.T) {
	noLeak(t)
	f := newFake()
	defer f.Close()
	f.addSequence("s", 1, api.DefaultMax)
	c := newClient(t, []string{f.URL()})
	seq := c.Sequence("s", client.WithRangeSize(100, 100))
	ctx := ctxFor(t, 10*time.Second)

	var last int64
	total := 0
	for _, n := range []int{1, 99, 250, 3, 1000, 7} {
		rs, err := seq.NextN(ctx, n)
		if err != nil {
			t.Fatalf("NextN(%d): %v", n, err)
		}
		sum := int64(0)
		for _, r := range rs {
			if r.First <= last || r.Last < r.First {
				t.Fatalf("NextN(%d) = %+v: ranges not increasing after %d", n, rs, last)
			}
			last = r.Last
			sum += r.Len()
		}
		if sum != int64(n) {
			t.Fatalf("NextN(%d) = %+v: %d IDs", n, rs, sum)
		}
		total += n
		id, err := seq.Next(ctx)
		if err != nil || id <= last {
			t.Fatalf("Next after NextN = %d, %v; want above %d", id, err, last)
		}
		last = id
	}
	if total == 0 {
		t.Fatal("nothing taken")
	}
}

func TestSequence_ServerRangeNotIncreasing_Refused(t *testing.T) {
	noLeak(t)
	f := newFake()
	defer f.Close()
	f.addSequence("s", 1, api.DefaultMax)
	logs := &logRecorder{}
	c := newClient(t, []string{f.URL()}, client.WithLogger(slog.New(logs)))
	seq := c.Sequence("s", client.WithRangeSize(10, 10))
	ctx := ctxFor(t, 10*time.Second)
	var ids []int64
	take := func(n int) {
		for i := 0; i < n; i++ {
			id, err := seq.Next(ctx)
			if err != nil && strings.Contains(err.Error(), "refusing") {
				continue // a caller that waited for the refused range is told
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) > 0 && id <= ids[len(ids)-1] {
				t.Fatalf("Next = %d after %d", id, ids[len(ids)-1])
			}
			ids = append(ids, id)
		}
	}
	take(10) // 1..10; 11..20 is fetched ahead meanwhile
	if err := waitFor(5*time.Second, func() bool { return !seq.Stats().Refilling }); err != nil {
		t.Fatal(err)
	}
	f.set(func(f *fakeServer) { f.rewind = true }) // the next range starts at 1 again
	take(50)
	if !logs.has("refill refused") {
		t.Fatal("the non-increasing range was not refused")
	}
}

func TestSizer_FollowsRate_WithinBounds(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	z := client.NewSizer(10*time.Second, 1000, 1_000_000)
	if z.Size(false, 0) != 1000 || z.LowWater() != 0 {
		t.Fatalf("unknown rate: size %d, low water %d; want the minimum and 0", z.Size(false, 0), z.LowWater())
	}
	z.Observe(0, t0)
	z.Observe(5000, t0.Add(time.Millisecond)) // shorter than the sample window: ignored
	if z.Rate() != 0 {
		t.Fatalf("rate %v after a 1 ms sample; want it ignored", z.Rate())
	}
	z.Observe(10_000, t0.Add(time.Second))
	if z.Rate() != 10_000 || z.Size(false, 0) != 100_000 || z.LowWater() != 100_000 {
		t.Fatalf("at 10k/s: rate %v, size %d, low water %d; want 10k, 100k, 100k", z.Rate(), z.Size(false, 0), z.LowWater())
	}
	z.Observe(10_000+1_000_000, t0.Add(2*time.Second)) // 1M/s: capped
	if z.Size(false, 0) != 1_000_000 {
		t.Fatalf("at 1M/s: size %d, want the 1M maximum", z.Size(false, 0))
	}
	z.Observe(1_010_000, t0.Add(3*time.Second)) // idle: the rate halves, not more
	if z.Rate() != 500_000 {
		t.Fatalf("after an idle second: rate %v, want 500k (halved)", z.Rate())
	}
	z2 := client.NewSizer(10*time.Second, 100, 1_000_000)
	if got := z2.Size(true, 400); got != 800 {
		t.Fatalf("after a caller waited: size %d, want 800 (doubled)", got)
	}
	if got := z2.Size(true, 900_000); got != 1_000_000 {
		t.Fatalf("doubling past the maximum: size %d, want 1M", got)
	}
}
