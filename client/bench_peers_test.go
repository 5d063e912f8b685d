package client_test

import (
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
