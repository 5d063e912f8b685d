package client_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// The peers of the Sequence benchmarks, measured in the same run so that
// the figures compare as ratios (only ratios within one run compare on a
// shared machine):
//
//   - Peer_AtomicAdd: one atomic.Int64.Add on one counter, the floor of an
//     ordered Next (which is that add plus a bounds check). In parallel it
//     shows what one cache line moving between cores costs.
//   - Peer_AtomicAddBehindCall: the same add behind a method of Next's
//     shape, Next(ctx) (int64, error), called as Next is, not inlined
//     (issue 48). Go's inliner cannot inline Sequence.Next: any call its
//     fast path keeps for the way out (a refill, the unordered mode) costs
//     57 of the budget of 80, and the two atomics and a compare take the
//     rest and more (go build -gcflags=-m=2 reports cost 126). So the
//     call, its two results and the caller's error check are the price
//     of the API, not of the cache, and this peer is what the cache
//     itself is measured against.
//   - Peer_StripedCounter: a striped counter in the design of xsync's
//     Counter (github.com/puzpuzpuz/xsync): a stripe per core rounded up to
//     a power of two, each on its own cache line, picked through a sync.Pool
//     token (the pool is per P). It is the usual answer to a contended
//     counter and the ceiling an unordered Sequence is measured against.
//
// Run them with -cpu 1,2: at -cpu 1 the parallel benchmarks measure one
// goroutine, at -cpu 2 two cores.

func BenchmarkPeer_AtomicAdd(b *testing.B) {
	var n atomic.Int64
	for b.Loop() {
		n.Add(1)
	}
	reportIDs(b, 1)
}

// addBehindCall is a bare atomic add with Sequence.Next's signature.
type addBehindCall struct{ n atomic.Int64 }

//go:noinline
func (a *addBehindCall) Next(context.Context) (int64, error) { return a.n.Add(1), nil }

func BenchmarkPeer_AtomicAddBehindCall(b *testing.B) {
	var a addBehindCall
	ctx := context.Background()
	var sink int64
	for b.Loop() {
		id, err := a.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		sink += id
	}
	reportIDs(b, 1)
	_ = sink
}

func BenchmarkPeer_AtomicAddParallel(b *testing.B) {
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n.Add(1)
		}
	})
	reportIDs(b, 1)
}

func BenchmarkPeer_StripedCounterParallel(b *testing.B) {
	c := newStripedCounter()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.add(1)
		}
	})
	reportIDs(b, 1)
	if got := c.value(); got != int64(b.N) {
		b.Fatalf("striped counter holds %d, want %d", got, b.N)
	}
}

type counterStripe struct {
	n atomic.Int64
	_ [120]byte // a stripe per 128 bytes: the line and its prefetched neighbour
}

type stripedCounter struct {
	stripes []counterStripe
	mask    uint32
	tokens  sync.Pool
	nextTok atomic.Uint32
}

type stripeToken struct{ idx uint32 }

func newStripedCounter() *stripedCounter {
	n := 1
	for n < runtime.GOMAXPROCS(0) {
		n *= 2
	}
	return &stripedCounter{stripes: make([]counterStripe, n), mask: uint32(n - 1)}
}

func (c *stripedCounter) add(d int64) {
	t, ok := c.tokens.Get().(*stripeToken)
	if !ok {
		t = &stripeToken{idx: c.nextTok.Add(1)}
	}
	c.stripes[t.idx&c.mask].n.Add(d)
	c.tokens.Put(t)
}

func (c *stripedCounter) value() int64 {
	var v int64
	for i := range c.stripes {
		v += c.stripes[i].n.Load()
	}
	return v
}
