package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
)

// The benchmarks measure a Sequence's cache: its refills go to an in-process
// stand-in (fake_test.go) that answers ranges of api.MaxReserveCount IDs, so
// that a refill comes once per 10 M IDs and is fetched ahead. Beside them,
// bwmarrin/snowflake and sony/sonyflake generate IDs in-process in the same
// run (cmd/ticketd-bench/generators_bench_test.go: they live in the
// benchmark's module so that the SDK's module requires neither). Compare the
// ids/s columns of one run of both, from the repository's root:
//
//	go test -run XXX -bench . -benchmem ./client/ ./cmd/ticketd-bench/

func benchSequence(b *testing.B, opts ...client.SequenceOption) *client.Sequence {
	b.Helper()
	f := newFake()
	b.Cleanup(f.Close)
	f.addSequence("bench", 1, api.DefaultMax)
	c, err := client.New([]string{f.URL()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	seq := c.Sequence("bench", append(opts, client.WithRangeSize(api.MaxReserveCount, api.MaxReserveCount))...)
	if _, err := seq.Next(context.Background()); err != nil {
		b.Fatal(err)
	}
	if err := waitFor(5*time.Second, func() bool { return !seq.Stats().Refilling }); err != nil {
		b.Fatal("no prefetch")
	}
	return seq
}

func reportIDs(b *testing.B, perOp int) {
	b.ReportMetric(float64(b.N)*float64(perOp)/b.Elapsed().Seconds(), "ids/s")
}

// benchSequenceNext takes IDs one by one on one goroutine.
func benchSequenceNext(b *testing.B, seq *client.Sequence) {
	ctx := context.Background()
	var sink int64
	for b.Loop() {
		id, err := seq.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		sink += id
	}
	reportIDs(b, 1)
	_ = sink
}

func BenchmarkSequence_Next(b *testing.B) { benchSequenceNext(b, benchSequence(b)) }

func BenchmarkSequence_NextParallel(b *testing.B) { benchSequenceParallel(b, benchSequence(b)) }

// The unordered mode (client.Unordered): each core cuts from a sub-range
// of its own. Its NextParallel at -cpu 2 against its own at -cpu 1 is the
// scaling issue 35 asks for (at least 1.6x on 2 cores).

func BenchmarkSequenceUnordered_Next(b *testing.B) {
	benchSequenceNext(b, benchSequence(b, client.Unordered()))
}

func BenchmarkSequenceUnordered_NextParallel(b *testing.B) {
	benchSequenceParallel(b, benchSequence(b, client.Unordered()))
}

func BenchmarkSequenceUnordered_NextN(b *testing.B) {
	for _, n := range []int{16, 1000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			seq := benchSequence(b, client.Unordered())
			ctx := context.Background()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if rs, err := seq.NextN(ctx, n); err != nil || len(rs) == 0 {
						b.Error(err)
						return
					}
				}
			})
			reportIDs(b, n)
		})
	}
}

func benchSequenceParallel(b *testing.B, seq *client.Sequence) {
	ctx := context.Background()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := seq.Next(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportIDs(b, 1)
}

func BenchmarkSequence_NextN(b *testing.B) {
	for _, n := range []int{16, 100, 1000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			seq := benchSequence(b)
			ctx := context.Background()
			for b.Loop() {
				rs, err := seq.NextN(ctx, n)
				if err != nil || len(rs) == 0 {
					b.Fatal(err)
				}
			}
			reportIDs(b, n)
		})
	}
}
