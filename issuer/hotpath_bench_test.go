package issuer_test

// Hot-path micro-benchmarks of the leader's issuing for scripts/bench.sh
// (go test -run XXX -bench . -count 6 ./issuer/ | benchstat): cutting a
// range from the block in memory, the per-request path of every
// reservation. The Proposer applies to a real FSM at once and confirms
// leadership at once, so what is measured is the issuer alone; in a cluster
// the quorum check (one round trip to a majority, shared by the requests
// that arrive during it) comes on top.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/issuer"
)

// instantProposer is a single-node cluster whose log commits at once.
type instantProposer struct {
	mu    sync.Mutex
	f     *fsm.FSM
	index uint64
}

func newInstantProposer(b *testing.B, names ...string) *instantProposer {
	p := &instantProposer{f: fsm.New()}
	for _, n := range names {
		if _, err := p.apply(fsm.EncodeCreateSequence(fsm.CreateSequence{Name: n, Start: 1, Max: math.MaxInt64})); err != nil {
			b.Fatal(err)
		}
	}
	return p
}

func (p *instantProposer) apply(data []byte) (any, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.index++
	resp := p.f.Apply(&raft.Log{Index: p.index, Term: 1, Type: raft.LogCommand, Data: data})
	if err, ok := resp.(error); ok {
		return nil, err
	}
	return resp, nil
}

func (p *instantProposer) ReserveBlocks(_ context.Context, reqs []fsm.BlockRequest) ([]fsm.BlockOutcome, error) {
	out := make([]fsm.BlockOutcome, len(reqs))
	for i, r := range reqs {
		resp, err := p.apply(fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: r.Name, Count: r.Count, Min: r.Min}))
		if err != nil {
			out[i].Err = err
			continue
		}
		out[i].Block = resp.(fsm.Block)
	}
	return out, nil
}

func (p *instantProposer) VerifyLeader(context.Context) (uint64, error) { return 1, nil }

func (p *instantProposer) Sequence(name string) (fsm.Sequence, bool) { return p.f.Sequence(name) }

func newServingIssuer(b *testing.B) *issuer.Issuer {
	is := issuer.New(newInstantProposer(b, "orders"), issuer.DefaultConfig())
	is.Acquire(1)
	return is
}

// BenchmarkHotIssuerReserve is one goroutine reserving count IDs at a time.
func BenchmarkHotIssuerReserve(b *testing.B) {
	for _, count := range []int64{1, 1000} {
		b.Run(fmt.Sprintf("count=%d", count), func(b *testing.B) {
			is := newServingIssuer(b)
			ctx := context.Background()
			var last int64
			b.ReportAllocs()
			for b.Loop() {
				r, err := is.Reserve(ctx, "orders", count)
				if err != nil {
					b.Fatal(err)
				}
				if r.First <= last {
					b.Fatalf("range %+v not above %d", r, last)
				}
				last = r.Last
			}
		})
	}
}

// BenchmarkHotIssuerReserveParallel is GOMAXPROCS goroutines reserving
// from one sequence: the sequence's mutex under contention.
//
// In this tight loop a goroutine can use up a fresh block (the first ones
// hold about one request of 1,000) before the one that waited for it wakes,
// and a waiter that loses that race maxTakeAttempts times gets ErrContended.
// Over HTTP a request takes tens of microseconds, not 40 ns, and that race
// is not seen; here it is counted (contended/op) rather than failing the
// run.
func BenchmarkHotIssuerReserveParallel(b *testing.B) {
	for _, count := range []int64{1, 1000} {
		b.Run(fmt.Sprintf("count=%d", count), func(b *testing.B) {
			is := newServingIssuer(b)
			var failed atomic.Bool
			var contended atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					if _, err := is.Reserve(ctx, "orders", count); err != nil {
						if errors.Is(err, issuer.ErrContended) {
							contended.Add(1)
							continue
						}
						failed.Store(true)
						return
					}
				}
			})
			if failed.Load() {
				b.Fatal("a reservation failed")
			}
			b.ReportMetric(float64(contended.Load())/float64(b.N), "contended/op")
		})
	}
}
