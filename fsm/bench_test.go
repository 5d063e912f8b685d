package fsm_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/fsm"
)

// BenchmarkApplyReserveBlock measures the FSM's part of one reservation: decode
// the entry, compute the block from the mark, move the mark.
func BenchmarkApplyReserveBlock(b *testing.B) {
	f := fsm.New()
	f.Apply(logEntry(1, 1, fsm.EncodeCreateSequence(fsm.CreateSequence{Name: "orders", Start: 1, Max: math.MaxInt64})))
	data := fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "orders", Count: 1000, Min: 1})
	l := &raft.Log{Term: 1, Type: raft.LogCommand, Data: data}
	b.ReportAllocs()
	var resp any
	for i := 0; b.Loop(); i++ {
		l.Index = uint64(i) + 2
		resp = f.Apply(l)
	}
	b.StopTimer()
	if _, ok := resp.(fsm.Block); !ok {
		b.Fatalf("last response %#v, want a Block", resp)
	}
}

// BenchmarkSnapshotPersist measures Snapshot (the copy taken under the lock)
// plus Persist (header and JSON into the sink).
func BenchmarkSnapshotPersist(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("sequences=%d", n), func(b *testing.B) {
			a := newApplier(b)
			for i := 0; i < n; i++ {
				name := fmt.Sprintf("seq-%04d", i)
				a.mustCreate(name, 1, math.MaxInt64)
				a.mustReserve(name, int64(1+i), 1)
			}
			for i := 0; i < 5; i++ {
				id := fmt.Sprintf("node-%d", i)
				a.apply(fsm.EncodeSetMember(fsm.SetMember{ID: id, RaftAddr: id + ":7000", HTTPAddr: id + ":8080"}))
			}
			sink := &memSink{id: "bench"}
			b.ReportAllocs()
			for b.Loop() {
				sink.reset()
				snap, err := a.f.Snapshot()
				if err != nil {
					b.Fatal(err)
				}
				if err := snap.Persist(sink); err != nil {
					b.Fatal(err)
				}
				snap.Release()
			}
			b.SetBytes(int64(sink.buf.Len()))
		})
	}
}
