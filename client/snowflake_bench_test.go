package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
)

// The Snowflake generator beside bwmarrin/snowflake, sony/sonyflake and
// uuid.NewV7 (in the benchmark's module,
// cmd/ticketd-bench/generators_bench_test.go), in one run from the
// repository's root:
//
//	go test -run XXX -bench 'Snowflake|UUID' -benchmem ./client/ ./cmd/ticketd-bench/
//
// The generator's lease comes from an in-process stand-in (snowflake_test.go)
// with a 30 s TTL: a renewal every 10 s, off the hot path. With the default
// layout (12 sequence bits, 1 ms ticks) a generator is capped at 4,096 IDs
// per millisecond, as bwmarrin/snowflake is; the "wide" benchmarks use 20
// sequence bits (about 10^9 IDs/s) so that they measure the cost of Next
// itself rather than the wait for the next tick.

func benchGenerator(b *testing.B, edit func(*api.Namespace), opts ...client.SnowflakeOption) *client.Snowflake {
	b.Helper()
	f := newLeaseStandIn(nil)
	b.Cleanup(f.Close)
	f.addNamespace("bench", 30*time.Second, time.Minute, edit)
	c, err := client.New([]string{f.URL()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	g, err := c.Snowflake("bench", opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = g.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Wait(ctx); err != nil {
		b.Fatal(err)
	}
	return g
}

func wideLayout(n *api.Namespace) {
	n.TimestampBits, n.WorkerBits, n.SequenceBits, n.MaxWorkers = 41, 2, 20, 4
}

func benchNext(b *testing.B, g *client.Snowflake) {
	ctx := context.Background()
	var sink int64
	for b.Loop() {
		id, err := g.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		sink += id
	}
	reportIDs(b, 1)
	_ = sink
}

func benchNextParallel(b *testing.B, g *client.Snowflake) {
	ctx := context.Background()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := g.Next(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportIDs(b, 1)
}

func BenchmarkSnowflakeLease_Next(b *testing.B) { benchNext(b, benchGenerator(b, nil)) }

func BenchmarkSnowflakeLease_NextParallel(b *testing.B) { benchNextParallel(b, benchGenerator(b, nil)) }

func BenchmarkSnowflakeLease_NextWide(b *testing.B) { benchNext(b, benchGenerator(b, wideLayout)) }

func BenchmarkSnowflakeLease_NextWideParallel(b *testing.B) {
	benchNextParallel(b, benchGenerator(b, wideLayout))
}

// The unordered mode (UnorderedSnowflake): each core issues from its own
// share of the sequence under its own lock. Run with -cpu 1,2: on one core
// it costs what the default mode does; on two, both cores read the clock
// and issue at once.
func BenchmarkSnowflakeLease_NextWideUnordered(b *testing.B) {
	benchNext(b, benchGenerator(b, wideLayout, client.UnorderedSnowflake()))
}

func BenchmarkSnowflakeLease_NextWideParallelUnordered(b *testing.B) {
	benchNextParallel(b, benchGenerator(b, wideLayout, client.UnorderedSnowflake()))
}

// The default layout in unordered mode stays capped by its layout (4,096
// IDs a millisecond), as in the default mode.
func BenchmarkSnowflakeLease_NextParallelUnordered(b *testing.B) {
	benchNextParallel(b, benchGenerator(b, nil, client.UnorderedSnowflake()))
}

func BenchmarkSnowflakeLease_NextN100Wide(b *testing.B) {
	g := benchGenerator(b, wideLayout)
	ctx := context.Background()
	for b.Loop() {
		if _, err := g.NextN(ctx, 100); err != nil {
			b.Fatal(err)
		}
	}
	reportIDs(b, 100)
}

// BenchmarkSnowflakeRemote_Next_FullBuffer measures Next while the buffer
// holds IDs: one atomic add, and a lock once per batch to install the batch
// fetched ahead. The fetches (of 10,000 IDs from an in-process stand-in,
// snowflake_remote_test.go) mostly run with the timer stopped: the loop
// takes only the IDs buffered, then waits, untimed, for the next batch (the
// fetch that installing a batch starts overlaps the timed loop). A Next that
// had to wait for the network would show in the waits metric.
func BenchmarkSnowflakeRemote_Next_FullBuffer(b *testing.B) {
	f := newIDsStandIn("n1", 1)
	b.Cleanup(f.Close)
	c, err := client.New([]string{f.URL()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	// The low-water mark at the batch size: each batch starts the next
	// fetch as it is installed, so the wait below finds two batches.
	r, err := c.SnowflakeRemote("orders", client.WithRemoteBatch(api.MaxSnowflakeIDs), client.WithRemoteLowWater(api.MaxSnowflakeIDs))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.Close() })
	ctx := context.Background()
	if _, err := r.Next(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		b.StopTimer()
		var buffered int64
		if err := waitFor(10*time.Second, func() bool {
			st := r.Stats()
			buffered = st.Cached
			return !st.Fetching && st.Cached > api.MaxSnowflakeIDs // a batch fetched ahead
		}); err != nil {
			b.Fatal(err)
		}
		waits := r.Stats().Waits
		b.StartTimer()
		for ; buffered > 1 && i < b.N; buffered, i = buffered-1, i+1 {
			if _, err := r.Next(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		if w := r.Stats().Waits; w != waits {
			b.Fatalf("%d Next calls waited on the network with IDs buffered", w-waits)
		}
		b.StartTimer()
	}
}
