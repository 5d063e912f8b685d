package client

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"sync/atomic"
	"unsafe" // Sizeof, and go:linkname
)

// Unordered puts a Sequence in unordered mode: each core takes IDs from a
// sub-range of the cache that no other core touches, so that callers on
// many cores do not pass one cache line between them on every Next.
//
// What it gives up is order. IDs stay unique, and every one still comes
// from a range the cluster granted, but they are not increasing across
// goroutines, nor even within one goroutine: the Go scheduler may move a
// goroutine to another core between two calls, and the other core's
// sub-range may be below the first's; and a core whose own sub-range and
// the cache have run dry takes from other cores' sub-ranges, which may be
// below what it handed out before.
//
// Pick it when the IDs need only be unique and many goroutines on several
// cores call Next all the time: request handlers that each take an ID, for
// example. Keep the default when IDs must increase in the order they were
// taken (an ordered log, "newest first" by ID), or when one goroutine
// calls Next: there the default is faster (one add against the lookup of
// the core's sub-range and the add). The client's README ("Ordered or
// unordered") has the figures.
//
// Everything else holds as in the default mode: the cache is refilled in
// the background before it runs out; a core whose sub-range runs out cuts
// another from the cache, or takes from other cores' sub-ranges before it
// waits on the network; a failover does not stall callers while IDs are
// cached; Close ends every call. What is left in the cores' sub-ranges when
// the process exits is a gap, like the rest of the cache.
func Unordered() SequenceOption {
	return func(c *seqConfig) error {
		c.unordered = true
		return nil
	}
}

// shard is one core's sub-range. It fills 128 bytes so that the pointer
// that every Next of its core reads sits on no line another core writes.
type shard struct {
	cur atomic.Pointer[block]
	_   [128 - unsafe.Sizeof(atomic.Pointer[block]{})]byte
}

// maxShards bounds the shards of one Sequence (and so its memory: 256
// bytes a shard with its block) on machines with very many cores; cores
// beyond it share shards, which stays correct.
const maxShards = 1024

// maxChunk is the largest sub-range a core cuts at once: large enough that
// the lock and the cut's allocation cost well under a nanosecond per ID,
// small enough that the IDs stranded in idle cores' sub-ranges are few
// against a cached range (DefaultMinRangeSize and up, usually millions).
const maxChunk = 4096

// initShards makes a shard per P: GOMAXPROCS, or the number of CPUs if
// that is more, since the runtime raises GOMAXPROCS by itself up to it when
// a container's CPU limit rises (Go 1.25); rounded up to a power of two.
// A shard that no core uses costs 256 bytes and nothing else.
func (s *Sequence) initShards() {
	n := 1
	for n < max(runtime.GOMAXPROCS(0), runtime.NumCPU()) && n < maxShards {
		n *= 2
	}
	s.shards = make([]shard, n)
	s.shardMask = n - 1
	for i := range s.shards {
		s.shards[i].cur.Store(newBlock(0, 0))
	}
}

// The runtime's procPin and procUnpin give the id of the P (the scheduler's
// slot for a core) that the goroutine runs on. They are what sync.Pool uses
// to keep its per-P caches; the runtime keeps them reachable by linkname
// for packages outside the standard library (go.dev/issue/67401) and
// promises not to change them. A sync.Pool token (xsync's Counter) gives
// the same spreading without a linkname, at 10.2 ns against 6.0 ns an add
// on this project's machine: more than the shared line costs on one core.
//
//go:linkname runtime_procPin runtime.procPin
func runtime_procPin() int

//go:linkname runtime_procUnpin runtime.procUnpin
func runtime_procUnpin()

// localShard is the shard of the P the caller runs on. The goroutine may
// move to another P right after; then two cores share a shard for a while,
// which costs speed, never uniqueness: every take is an atomic add.
func (s *Sequence) localShard() *shard {
	p := runtime_procPin()
	runtime_procUnpin()
	return &s.shards[p&s.shardMask]
}

// nextOnShard is Next in unordered mode.
func (s *Sequence) nextOnShard(ctx context.Context, sh *shard) (int64, error) {
	b := sh.cur.Load()
	if i, ok := b.next(); ok {
		return b.first + i, nil
	}
	r, err := s.takeSlow(ctx, 1, func(want int64) (Range, bool) { return s.takeForShardLocked(sh, want) })
	if err != nil {
		return 0, err
	}
	return r.First, nil
}

// nextNOnShard is NextN in unordered mode: its ranges are sorted, since a
// range taken from another core's sub-range may be below the caller's.
func (s *Sequence) nextNOnShard(ctx context.Context, sh *shard, want int64) ([]Range, error) {
	r, _, ok := sh.cur.Load().take(want)
	if ok && r.Len() == want {
		return []Range{r}, nil
	}
	var out []Range
	if ok {
		out = append(make([]Range, 0, 2), r)
		want -= r.Len()
	}
	take := func(want int64) (Range, bool) { return s.takeForShardLocked(sh, want) }
	for want > 0 {
		r, err := s.takeSlow(ctx, want, take)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
		want -= r.Len()
	}
	slices.SortFunc(out, func(a, b Range) int { return cmp.Compare(a.First, b.First) })
	merged := out[:1]
	for _, r := range out[1:] {
		if last := &merged[len(merged)-1]; last.Last+1 == r.First {
			last.Last = r.Last
		} else {
			merged = append(merged, r)
		}
	}
	return merged, nil
}

// takeForShardLocked cuts up to want IDs for a caller whose shard sh was
// used up, in this order: from sh, if another caller refilled it in the
// meantime; from the cache, cutting a new sub-range for sh with the
// caller's IDs at its front; from another core's sub-range. Only when all
// three are empty does the caller wait on the network, so a core never
// waits while another holds IDs.
func (s *Sequence) takeForShardLocked(sh *shard, want int64) (Range, bool) {
	if r, _, ok := sh.cur.Load().take(want); ok {
		return r, true
	}
	// A NextN caller cuts a sub-range of up to 8 of its calls, so that it
	// too comes back to the lock once per several calls; never more than
	// maxChunk besides what it takes.
	chunk := max(s.chunkLocked(), min(8*want, maxChunk))
	if want < maxChunk {
		if r, triggered, ok := s.cutLocked(want + chunk); ok {
			r = s.keepRestLocked(sh, r, want)
			if triggered { // after the sub-range is in sh: see handedOutLocked
				s.prefetchLocked()
			}
			return r, true
		}
	} else if r, ok := s.takeLocked(want); ok {
		return r, true
	}
	// The cache is dry: take half of what another core has left (up to a
	// chunk), so that this core comes back to the lock once per sub-range
	// rather than once per ID, and the two share what is left.
	for i := range s.shards {
		b := s.shards[i].cur.Load()
		left := b.remaining()
		if left <= 0 {
			continue
		}
		if r, _, ok := b.take(max(want, min(left/2, chunk))); ok {
			return s.keepRestLocked(sh, r, want), true
		}
	}
	return Range{}, false
}

// keepRestLocked returns the first want IDs of r (all of r if it holds
// fewer) and makes the rest sh's sub-range.
func (s *Sequence) keepRestLocked(sh *shard, r Range, want int64) Range {
	got := min(want, r.Len())
	if rest := r.Len() - got; rest > 0 {
		s.installShardLocked(sh, r.First+got, rest)
	}
	return Range{First: r.First, Last: r.First + got - 1}
}

// installShardLocked gives sh the sub-range first..first+n-1. Its old
// block is used up (or was taken from since: its IDs are a gap).
func (s *Sequence) installShardLocked(sh *shard, first, n int64) {
	sh.cur.Store(newBlock(first, n))
	if s.cfg.faults.shareSubRange() {
		// Planted: the next core gets the same sub-range as well.
		next := &s.shards[(s.shardIndex(sh)+1)&s.shardMask]
		next.cur.Store(newBlock(first, n))
	}
}

func (s *Sequence) shardIndex(sh *shard) int {
	for i := range s.shards {
		if &s.shards[i] == sh {
			return i
		}
	}
	return 0
}

// chunkLocked is the size of the sub-range a core cuts: maxChunk, or less
// while the current range is small, so that every core gets a share of it.
func (s *Sequence) chunkLocked() int64 {
	n := s.cur.Load().n
	if s.nxt != nil {
		n = max(n, s.nxt.n)
	}
	return max(1, min(maxChunk, n/int64(2*len(s.shards))))
}
