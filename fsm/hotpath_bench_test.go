package fsm_test

// Hot-path micro-benchmarks of the state machine for scripts/bench.sh
// (go test -run XXX -bench . -count 6 ./fsm/ | benchstat). A reservation
// reaches the FSM only when the leader's block runs low, so these bound the
// cost of a block, not of a request; the per-request path is in issuer/ and
// httpapi/.

import (
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/fsm"
)

// BenchmarkHotFSMApplyReserve applies ReserveBlock entries (decode, look
// the sequence up, move the mark) with 1 and 1000 sequences in the FSM.
func BenchmarkHotFSMApplyReserve(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprintf("sequences=%d", n), func(b *testing.B) {
			a := newApplier(b)
			for i := 0; i < n; i++ {
				a.mustCreate(fmt.Sprintf("seq-%04d", i), 1, math.MaxInt64)
			}
			data := fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: fmt.Sprintf("seq-%04d", n/2), Count: 1 << 20, Min: 1})
			l := &raft.Log{Term: 1, Type: raft.LogCommand, Data: data}
			b.ReportAllocs()
			var resp any
			for i := 0; b.Loop(); i++ {
				l.Index = a.index + uint64(i) + 1
				resp = a.f.Apply(l)
			}
			b.StopTimer()
			if _, ok := resp.(fsm.Block); !ok {
				b.Fatalf("last response %#v, want a Block", resp)
			}
		})
	}
}

// BenchmarkHotFSMApplyReserveWithReaders is Apply while other goroutines
// read the sequence (the issuer and GET /v1/sequences do): the FSM's lock
// under contention.
func BenchmarkHotFSMApplyReserveWithReaders(b *testing.B) {
	a := newApplier(b)
	a.mustCreate("orders", 1, math.MaxInt64)
	data := fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "orders", Count: 1 << 20, Min: 1})
	l := &raft.Log{Term: 1, Type: raft.LogCommand, Data: data}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					if _, ok := a.f.Sequence("orders"); !ok {
						panic("sequence vanished")
					}
				}
			}
		}()
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		l.Index = a.index + uint64(i) + 1
		a.f.Apply(l)
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
}

// BenchmarkHotFSMEncodeReserve is the leader's side of a block: encoding
// the command it proposes.
func BenchmarkHotFSMEncodeReserve(b *testing.B) {
	c := fsm.ReserveBlock{Name: "orders", Count: 1 << 20, Min: 1000}
	b.ReportAllocs()
	var out []byte
	for b.Loop() {
		out = fsm.EncodeReserveBlock(c)
	}
	b.SetBytes(int64(len(out)))
}

// BenchmarkHotFSMSequenceRead is the read the issuer makes when it first
// serves a sequence in a term, and every GET of a sequence.
func BenchmarkHotFSMSequenceRead(b *testing.B) {
	a := newApplier(b)
	for i := 0; i < 1000; i++ {
		a.mustCreate(fmt.Sprintf("seq-%04d", i), 1, math.MaxInt64)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := a.f.Sequence("seq-0500"); !ok {
			b.Fatal("missing")
		}
	}
}
