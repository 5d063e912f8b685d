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

func benchGenerator(b *testing.B, edit func(*api.Namespace)) *client.Snowflake {
	b.Helper()
	f := newLeaseStandIn(nil)
	b.Cleanup(f.Close)
	f.addNamespace("bench", 30*time.Second, time.Minute, edit)
	c, err := client.New([]string{f.URL()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	g, err := c.Snowflake("bench")
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
