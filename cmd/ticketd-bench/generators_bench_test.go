package main

import (
	"testing"

	"github.com/bwmarrin/snowflake"
	"github.com/google/uuid"
	"github.com/sony/sonyflake"
)

// The in-process ID generators the SDK's benchmarks (client/bench_test.go,
// client/snowflake_bench_test.go) are compared with. They live here, in the
// benchmark's module, so that the SDK's module requires none of them; run
// both in one go from the repository's root to compare within one run:
//
//	go test -run XXX -bench 'Snowflake|Sonyflake|UUID|Sequence' -benchmem ./client/ ./cmd/ticketd-bench/

func reportIDs(b *testing.B, perOp int) {
	b.ReportMetric(float64(b.N)*float64(perOp)/b.Elapsed().Seconds(), "ids/s")
}

func BenchmarkSnowflake_Generate(b *testing.B) {
	node, err := snowflake.NewNode(1)
	if err != nil {
		b.Fatal(err)
	}
	var sink int64
	for b.Loop() {
		sink += node.Generate().Int64()
	}
	reportIDs(b, 1)
	_ = sink
}

func BenchmarkSnowflake_GenerateParallel(b *testing.B) {
	node, err := snowflake.NewNode(1)
	if err != nil {
		b.Fatal(err)
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = node.Generate()
		}
	})
	reportIDs(b, 1)
}

func newSonyflake(b *testing.B) *sonyflake.Sonyflake {
	sf, err := sonyflake.New(sonyflake.Settings{MachineID: func() (uint16, error) { return 1, nil }})
	if err != nil {
		b.Fatal(err)
	}
	return sf
}

func BenchmarkSonyflake_NextID(b *testing.B) {
	sf := newSonyflake(b)
	var sink uint64
	for b.Loop() {
		id, err := sf.NextID()
		if err != nil {
			b.Fatal(err)
		}
		sink += id
	}
	reportIDs(b, 1)
	_ = sink
}

func BenchmarkSonyflake_NextIDParallel(b *testing.B) {
	sf := newSonyflake(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := sf.NextID(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportIDs(b, 1)
}

// sony/sonyflake again, under a name the 'Snowflake|UUID' pattern selects
// (BenchmarkSonyflake_* in bench_test.go are the same code).
func BenchmarkSnowflakeSony_NextID(b *testing.B) { BenchmarkSonyflake_NextID(b) }

func BenchmarkSnowflakeSony_NextIDParallel(b *testing.B) { BenchmarkSonyflake_NextIDParallel(b) }

func BenchmarkUUIDv7_New(b *testing.B) {
	var sink byte
	for b.Loop() {
		u, err := uuid.NewV7()
		if err != nil {
			b.Fatal(err)
		}
		sink ^= u[15]
	}
	reportIDs(b, 1)
	_ = sink
}

func BenchmarkUUIDv7_NewParallel(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := uuid.NewV7(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportIDs(b, 1)
}
