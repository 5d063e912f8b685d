package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ticketd/ticketd/api"
)

// Defaults of the SequenceOptions.
const (
	// DefaultCoverage is the outage a Sequence's cache is sized to ride
	// out at the observed rate.
	DefaultCoverage = 10 * time.Second
	// DefaultMinRangeSize is the smallest range a Sequence reserves.
	DefaultMinRangeSize int64 = 1000
	// DefaultMaxRangeSize is the largest range a Sequence reserves: the
	// most one reservation may ask for.
	DefaultMaxRangeSize = api.MaxReserveCount
)

// SequenceOption configures a Sequence; pass them to Client.Sequence. A bad
// option makes the Sequence's Next and NextN return ErrInvalidArgument.
type SequenceOption func(*seqConfig) error

type seqConfig struct {
	coverage         time.Duration
	minSize, maxSize int64
	unordered        bool
	faults           seqFaults // planted bugs (sequence_faults.go; none in other builds)
}

// WithCoverage sets the outage the cache should ride out: a refill starts
// while the cache still holds at least d worth of IDs at the observed rate,
// and ranges are sized to hold d worth (within the WithRangeSize bounds).
// Default DefaultCoverage.
func WithCoverage(d time.Duration) SequenceOption {
	return func(c *seqConfig) error {
		if d <= 0 {
			return invalidf("WithCoverage: want a positive duration, got %v", d)
		}
		c.coverage = d
		return nil
	}
}

// WithRangeSize bounds the size of the ranges a Sequence reserves: 1 <= min
// <= max <= api.MaxReserveCount. Defaults DefaultMinRangeSize,
// DefaultMaxRangeSize. The cache holds at most two ranges (and, in
// unordered mode, the cores' sub-ranges cut from them), so above about
// 2·max/coverage IDs per second it covers less than the coverage.
func WithRangeSize(min, max int64) SequenceOption {
	return func(c *seqConfig) error {
		if min < 1 || max < min || max > api.MaxReserveCount {
			return invalidf("WithRangeSize: want 1 <= min <= max <= %d, got min %d, max %d", api.MaxReserveCount, min, max)
		}
		c.minSize, c.maxSize = min, max
		return nil
	}
}

// Sequence hands out the IDs of one sequence from a local cache of ranges.
// Make it with Client.Sequence once per sequence and process, and share it:
// it is safe for concurrent use, and every Sequence holds its own cache.
//
// # The cache
//
// The cache is a double buffer: the current range, which Next cuts with one
// atomic add, and at most one range fetched ahead. (In unordered mode the
// cores cut sub-ranges from the current range, and Next adds on its core's
// own; see Unordered.) When the current range
// falls below the low-water mark (the coverage's worth of IDs at the
// observed rate), a background goroutine reserves the next one; however
// many goroutines call Next, one reservation at most is in flight. Its size
// follows the rate: enough IDs for the coverage, within the size bounds,
// and doubled when callers had to wait.
//
// Next and NextN wait on the network only when the cache is empty: on the
// first call, when the rate outgrows the cache, or when an outage lasts
// longer than the cache. The background refill retries (with backoff, over
// every endpoint) until it succeeds or the Client is closed, so a Sequence
// recovers by itself when the cluster comes back.
//
// # Order and gaps
//
// IDs from one Sequence are unique and strictly increasing in the order the
// calls take them: per goroutine, and across goroutines in the order of the
// atomic operations that cut them. In unordered mode (Unordered) they are
// unique and nothing more, which lets Next scale with cores. Ranges of two Sequences (in one process
// or in two) never overlap, but they interleave. IDs are not dense: the
// unused rest of the cache is lost when the process exits or the Client is
// closed, and an outage may waste ranges on the server.
type Sequence struct {
	// cur is the range Next cuts from; replaced, never mutated, except
	// for its used counter. In unordered mode the cores cut their
	// sub-ranges from it (unordered.go).
	cur atomic.Pointer[block]
	// shards are the cores' sub-ranges in unordered mode (nil otherwise),
	// indexed by the P the caller runs on, masked with shardMask.
	shards    []shard
	shardMask int

	c       *Client
	name    string
	cfg     seqConfig
	initErr error // bad name, bad option, closed client: returned by every call

	mu       sync.Mutex
	nxt      *block  // the range fetched ahead, or nil
	inflight *refill // the reservation in flight, or nil
	closed   bool
	sticky   error // ErrExhausted or ErrClosed, once seen
	highest  int64 // Last of the newest range received
	retired  int64 // IDs of the ranges used up
	sizer    sizer
	ranDry   bool  // a caller waited since the last range was sized
	lastSize int64 // size of the last reservation asked for

	refills          int64
	waits            int64
	waitsWhileCached int64 // must stay zero; see waitLocked
}

// block is one range of the cache, or one core's sub-range of it in
// unordered mode: first, first+1, ... first+n-1. Callers take IDs by adding
// to used; used may run past n, which means the block is used up.
type block struct {
	used atomic.Int64
	// fastEnd bounds the indices Next returns with no further check: the
	// trigger until the refill it starts has been started, then n. It only
	// grows, so a stale read is safe; keeping the trigger out of the hot
	// path leaves Next one compare after its add.
	fastEnd atomic.Int64
	first   int64
	n       int64
	trigger int64 // the index whose taker starts the next refill; -1: none

	// A block takes 128 bytes, so that two blocks never share a cache
	// line, nor the pair of lines that the adjacent-line prefetcher moves
	// together: in unordered mode each core adds to its own block's used,
	// and a shared line would bring back the traffic the mode removes.
	_ [128 - 5*8]byte
}

// newBlock is a block of first..first+n-1 with no trigger yet.
func newBlock(first, n int64) *block {
	b := &block{first: first, n: n, trigger: -1}
	b.fastEnd.Store(n)
	return b
}

// setTrigger makes index t start the next refill (-1: none); only before
// b is published.
func (b *block) setTrigger(t int64) {
	b.trigger = t
	if t >= 0 && t < b.n {
		b.fastEnd.Store(t)
	} else {
		b.fastEnd.Store(b.n)
	}
}

// triggerPassed lifts fastEnd once the trigger's taker started the refill.
func (b *block) triggerPassed() { b.fastEnd.Store(b.n) }

// take cuts up to want IDs from b. triggered reports that the cut crossed
// b's low-water mark, so the caller must start a refill.
//
// A used-up block's counter keeps growing with every call that finds it
// used up; a closed or exhausted Sequence keeps an empty block for good.
// Left alone, 2^64 of growth (NextN of 10 million, 1.8e12 times) would bring
// it back around below n and hand the block's IDs out again; so a caller that
// finds it past counterReset sets it back to n, which still means used up.
// Adds in between only raise it, so it never drops below n once it reached
// it: no ID is handed out twice.
func (b *block) take(want int64) (r Range, triggered, ok bool) {
	i := b.used.Add(want) - want
	if uint64(i) >= uint64(b.n) {
		b.usedUp(i)
		return Range{}, false, false
	}
	got := min(want, b.n-i)
	return Range{First: b.first + i, Last: b.first + i + got - 1}, i <= b.trigger && b.trigger < i+got, true
}

// counterReset is far above any n (at most 2^63-1 IDs, in ranges of far
// fewer) and far below 2^64 minus what the calls between two resets can add.
const counterReset = 1 << 62

// usedUp is called with the counter value i that a caller found at or past
// n (as unsigned).
func (b *block) usedUp(i int64) {
	if uint64(i) >= counterReset {
		b.used.Store(b.n)
	}
}

// next takes one ID: its index in b, and false if b is used up; small
// enough to be inlined.
func (b *block) next() (int64, bool) {
	i := b.used.Add(1) - 1
	if uint64(i) < uint64(b.n) {
		return i, true
	}
	b.usedUp(i)
	return 0, false
}

// taken is how many of b's IDs were handed out.
func (b *block) taken() int64 {
	if u := b.used.Load(); uint64(u) < uint64(b.n) {
		return u
	}
	return b.n
}

func (b *block) remaining() int64 { return b.n - b.taken() }

// refill is one background reservation; done is closed when it ends.
type refill struct {
	done    chan struct{}
	err     error // set before done is closed
	lastErr error // the latest retried failure (guarded by Sequence.mu)
}

// Sequence returns a generator of the IDs of the named sequence, served
// from a local cache (see Sequence). It sends nothing until the first Next.
// A bad name or option, or a closed Client, makes its calls return the
// error.
func (c *Client) Sequence(name string, opts ...SequenceOption) *Sequence {
	s := &Sequence{c: c, name: name, cfg: seqConfig{
		coverage: DefaultCoverage, minSize: DefaultMinRangeSize, maxSize: DefaultMaxRangeSize,
	}}
	s.cur.Store(newBlock(0, 0))
	s.initErr = s.init(opts)
	if s.initErr == nil && s.cfg.unordered {
		s.initShards()
	}
	if s.initErr == nil {
		s.initErr = c.register(s)
	}
	s.sizer = sizer{coverage: s.cfg.coverage.Seconds(), min: s.cfg.minSize, max: s.cfg.maxSize}
	return s
}

func (s *Sequence) init(opts []SequenceOption) error {
	if s.c == nil || s.c.ctx == nil {
		return invalidf("the Client is nil or was not made by client.New")
	}
	if err := api.ValidateSequenceName(s.name); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	for i, o := range opts {
		if o == nil {
			return invalidf("sequence option %d is nil", i)
		}
		if err := o(&s.cfg); err != nil {
			return err
		}
	}
	return nil
}

// Name is the sequence's name.
func (s *Sequence) Name() string { return s.name }

// Next returns the next ID. While the cache holds IDs it costs one atomic
// add and never touches the network; ctx only bounds the wait when the cache
// is empty (together with the Client's call timeout). Errors: ErrUnavailable
// when ctx ends first (the cache is refilled in the background all the
// same), ErrExhausted once the sequence is used up and the cache is empty,
// ErrNotFound, ErrUnauthorized, ErrInvalidArgument (bad name or option),
// ErrClosed.
//
// In unordered mode (see Unordered) the add is on the calling core's own
// sub-range.
func (s *Sequence) Next(ctx context.Context) (int64, error) {
	if s.shards != nil {
		return s.nextOnShard(ctx, s.localShard())
	}
	b := s.cur.Load()
	i := b.used.Add(1) - 1
	if uint64(i) < uint64(b.fastEnd.Load()) {
		return b.first + i, nil
	}
	return s.nextPastFastEnd(ctx, b, i)
}

// nextPastFastEnd is Next's way out of the hot path: index i of b was at
// or past fastEnd, so it is the trigger (start the refill), an index after
// it that a caller took before fastEnd was lifted, or past the end.
func (s *Sequence) nextPastFastEnd(ctx context.Context, b *block, i int64) (int64, error) {
	if uint64(i) < uint64(b.n) {
		if i == b.trigger {
			s.prefetch()
			b.triggerPassed()
		}
		return b.first + i, nil
	}
	b.usedUp(i)
	r, err := s.takeSlow(ctx, 1, s.takeLocked)
	if err != nil {
		return 0, err
	}
	return r.First, nil
}

// NextN takes n IDs (1 <= n <= api.MaxReserveCount) at once, as increasing
// disjoint ranges: one range unless the n IDs straddle the end of a cached
// range (or, in unordered mode, of a core's sub-range). Like Next, it costs one atomic add when the current range holds
// them. On error it returns no IDs (those it had cut are skipped: gaps).
// For a large batch from the server directly, use Client.Reserve.
//
// In unordered mode the ranges are disjoint and sorted, but a later call's
// may be below an earlier one's (see Unordered).
func (s *Sequence) NextN(ctx context.Context, n int) ([]Range, error) {
	if n <= 0 || int64(n) > api.MaxReserveCount {
		return nil, invalidf("NextN: n must be between 1 and %d, got %d", api.MaxReserveCount, n)
	}
	if s.shards != nil {
		return s.nextNOnShard(ctx, s.localShard(), int64(n))
	}
	want := int64(n)
	var out []Range
	b := s.cur.Load()
	r, triggered, ok := b.take(want)
	if ok {
		if triggered {
			s.prefetch()
			b.triggerPassed()
		}
		if r.Len() == want {
			return []Range{r}, nil
		}
		out = append(make([]Range, 0, 2), r)
		want -= r.Len()
	}
	for want > 0 {
		r, err := s.takeSlow(ctx, want, s.takeLocked)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && out[len(out)-1].Last+1 == r.First {
			out[len(out)-1].Last = r.Last
		} else {
			out = append(out, r)
		}
		want -= r.Len()
	}
	return out, nil
}

// takeSlow cuts up to want IDs with take (called with s.mu held) when the
// hot path found nothing: take installs the range fetched ahead, or
// takeSlow waits for a refill.
func (s *Sequence) takeSlow(ctx context.Context, want int64, take func(int64) (Range, bool)) (Range, error) {
	if s.initErr != nil {
		return Range{}, s.initErr
	}
	if ctx == nil {
		return Range{}, invalidf("nil context")
	}
	waited := false
	for {
		s.mu.Lock()
		if r, ok := take(want); ok {
			s.mu.Unlock()
			return r, nil
		}
		if s.sticky != nil {
			err := s.sticky
			s.mu.Unlock()
			return Range{}, err
		}
		a := s.inflight
		if a == nil {
			if a = s.startRefillLocked(); a == nil {
				s.mu.Unlock()
				return Range{}, ErrClosed
			}
		}
		if !waited {
			waited = true
			s.waitLocked()
			var cancel context.CancelFunc
			ctx, cancel = s.c.withCallTimeout(ctx)
			defer cancel()
		}
		s.mu.Unlock()
		select {
		case <-a.done:
			if a.err != nil {
				return Range{}, a.err
			}
		case <-ctx.Done():
			s.mu.Lock()
			last := a.lastErr
			s.mu.Unlock()
			if s.c.ctx.Err() != nil {
				return Range{}, ErrClosed
			}
			return Range{}, unavailableError(ctx, last)
		}
	}
}

// waitLocked records that a caller is about to wait on the network. It is
// the only place a caller waits, and it is reached only when the current
// range is used up and nothing was fetched ahead; waitsWhileCached counts
// the waits that found IDs in the cache all the same, which would be a bug.
func (s *Sequence) waitLocked() {
	s.waits++
	s.ranDry = true
	if s.cachedLocked() > 0 {
		s.waitsWhileCached++
	}
}

// takeLocked cuts up to want IDs from the current range, moving on to the
// range fetched ahead when the current one is used up.
func (s *Sequence) takeLocked(want int64) (Range, bool) {
	r, triggered, ok := s.cutLocked(want)
	if triggered {
		s.prefetchLocked()
	}
	return r, ok
}

// cutLocked is takeLocked without the refill: triggered reports that the
// cut crossed the low-water mark, and the caller must call prefetchLocked
// (unordered mode does once the cut is in a core's sub-range, so that the
// rate sample does not count it as handed out).
func (s *Sequence) cutLocked(want int64) (r Range, triggered, ok bool) {
	for {
		b := s.cur.Load()
		if r, triggered, ok := b.take(want); ok {
			if triggered {
				b.triggerPassed()
			}
			return r, triggered, true
		}
		if s.nxt == nil {
			return Range{}, false, false
		}
		nb := s.nxt
		s.nxt = nil
		s.installLocked(nb)
	}
}

// installLocked makes nb the current range; the current one is used up. It
// sets nb's low-water mark from the observed rate: the refill starts when
// the coverage's worth of IDs is left, or at once if nb holds less (or the
// rate is not known yet).
func (s *Sequence) installLocked(nb *block) {
	s.retired += s.cur.Load().n
	trigger := int64(0)
	if low := s.sizer.lowWater(); low > 0 && low < nb.n {
		trigger = nb.n - low
	}
	nb.setTrigger(trigger)
	s.cur.Store(nb)
}

func (s *Sequence) prefetch() {
	s.mu.Lock()
	s.prefetchLocked()
	s.mu.Unlock()
}

func (s *Sequence) prefetchLocked() {
	if s.inflight == nil && s.nxt == nil && s.sticky == nil {
		s.startRefillLocked()
	}
}

// handedOutLocked is how many IDs the Sequence handed out, the count its
// rate is sampled from: those of the used-up ranges and of cur, less what
// the cores' sub-ranges still hold in unordered mode (a sub-range of 4,096
// counted as handed out when cut read as a rate of a million a second).
func (s *Sequence) handedOutLocked(cur *block) int64 {
	n := s.retired + cur.taken()
	for i := range s.shards {
		n -= s.shards[i].cur.Load().remaining()
	}
	return n
}

// startRefillLocked starts a background reservation, sized from the
// observed rate; nil when the client is closed.
func (s *Sequence) startRefillLocked() *refill {
	cur := s.cur.Load()
	s.sizer.observe(s.handedOutLocked(cur), time.Now())
	size := s.sizer.size(s.ranDry, s.lastSize)
	s.ranDry = false
	s.lastSize = size
	a := &refill{done: make(chan struct{})}
	if !s.c.goBackground(func() { s.runRefill(a, size) }) {
		return nil
	}
	s.inflight = a
	return a
}

// runRefill reserves a range of size IDs (fewer when the sequence has fewer
// left), retrying until it succeeds, the answer is final, or the client is
// closed, and hands the result to the Sequence.
func (s *Sequence) runRefill(a *refill, size int64) {
	failures := 0
	onFailure := func(err error) {
		failures++
		s.mu.Lock()
		a.lastErr = err
		cached := s.cachedLocked()
		s.mu.Unlock()
		if failures == 1 {
			s.c.log.Warn("ticketd: refilling a sequence's cache failed; retrying in the background",
				"sequence", s.name, "cached", cached, "err", err)
		}
	}
	for {
		r, err := s.c.reserve(s.c.ctx, s.name, size, onFailure)
		if err != nil && errors.Is(err, ErrExhausted) && size > 1 {
			size /= 2 // fewer IDs are left than asked for: ask for fewer
			continue
		}
		s.finishRefill(a, r, err, failures)
		return
	}
}

func (s *Sequence) finishRefill(a *refill, r Range, err error, failures int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed || s.c.ctx.Err() != nil:
		err = ErrClosed
	case err == nil && r.First <= s.highest:
		err = fmt.Errorf("ticketd: the server answered range %d..%d of %q, which is not above %d, an ID this Sequence already had; refusing it",
			r.First, r.Last, s.name, s.highest)
		s.c.log.Error("ticketd: refill refused", "sequence", s.name, "err", err)
	case err == nil:
		s.highest = r.Last
		s.refills++
		s.nxt = newBlock(r.First, r.Len())
		if failures > 0 {
			s.c.log.Info("ticketd: refilled a sequence's cache after failures", "sequence", s.name,
				"failures", failures, "range_first", r.First, "range_len", r.Len())
		}
	case errors.Is(err, ErrExhausted):
		s.sticky = err
		s.c.log.Warn("ticketd: sequence exhausted", "sequence", s.name, "cached", s.cachedLocked())
	default:
		s.c.log.Warn("ticketd: refilling a sequence's cache failed", "sequence", s.name, "err", err)
	}
	a.err = err
	s.inflight = nil
	close(a.done)
}

// close drops the cache and makes every later call return ErrClosed.
func (s *Sequence) close() {
	s.mu.Lock()
	s.closed = true
	s.sticky = ErrClosed
	s.nxt = nil
	s.cur.Store(newBlock(0, 0))
	for i := range s.shards {
		s.shards[i].cur.Store(newBlock(0, 0))
	}
	s.mu.Unlock()
}

func (s *Sequence) cachedLocked() int64 {
	n := s.cur.Load().remaining()
	if s.nxt != nil {
		n += s.nxt.n
	}
	for i := range s.shards {
		n += s.shards[i].cur.Load().remaining()
	}
	return n
}

// SequenceStats describes a Sequence's cache.
type SequenceStats struct {
	// Cached is how many IDs the cache holds now.
	Cached int64
	// Refilling reports whether a reservation is in flight.
	Refilling bool
	// Refills counts the ranges received.
	Refills int64
	// Waits counts the Next and NextN calls that waited on the network
	// because the cache was empty.
	Waits int64
	// WaitsWhileCached counts the waits that found IDs in the cache all
	// the same. It is always zero unless the cache has a bug; it is here so
	// that the SDK's own tests against real clusters, and a careful caller's
	// monitoring, can check that promise from outside.
	WaitsWhileCached int64
	// RangeSize is the size of the last range asked for.
	RangeSize int64
	// Rate is the observed rate in IDs per second (0 until known).
	Rate float64
}

// Stats returns a snapshot of the cache's state and counters.
func (s *Sequence) Stats() SequenceStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SequenceStats{
		Cached:    s.cachedLocked(),
		Refilling: s.inflight != nil,
		Refills:   s.refills,
		Waits:     s.waits,
		RangeSize: s.lastSize,
		Rate:      s.sizer.rate,

		WaitsWhileCached: s.waitsWhileCached,
	}
}

// sizer estimates the rate at which a Sequence hands out IDs and sizes its
// ranges and low-water mark from it.
type sizer struct {
	coverage float64 // seconds
	min, max int64

	rate float64 // IDs per second; 0: not known yet
	at   time.Time
	ids  int64 // IDs handed out at time at
}

// minSampleWindow is the shortest interval a rate is computed over; shorter
// ones are folded into the next sample.
const minSampleWindow = 5 * time.Millisecond

// observe records that ids IDs had been handed out in all at now. The rate
// rises at once and falls by half per sample at most: a cache too large
// costs a few IDs, one too small makes callers wait.
func (z *sizer) observe(ids int64, now time.Time) {
	if z.at.IsZero() {
		z.at, z.ids = now, ids
		return
	}
	dt := now.Sub(z.at)
	if dt < minSampleWindow {
		return
	}
	inst := float64(ids-z.ids) / dt.Seconds()
	if inst >= z.rate {
		z.rate = inst
	} else {
		z.rate = max(inst, z.rate/2)
	}
	z.at, z.ids = now, ids
}

// lowWater is the coverage's worth of IDs at the observed rate; 0 when the
// rate is not known.
func (z *sizer) lowWater() int64 {
	return clampSize(z.rate*z.coverage, 0, math.MaxInt64/2)
}

// size is the next range's size: the coverage's worth of IDs within the
// bounds, and at least twice the last size when a caller waited for it.
func (z *sizer) size(ranDry bool, last int64) int64 {
	n := clampSize(z.rate*z.coverage, z.min, z.max)
	if ranDry && last > 0 {
		n = max(n, min(2*last, z.max))
	}
	return n
}

func clampSize(f float64, lo, hi int64) int64 {
	switch {
	case math.IsNaN(f) || f <= float64(lo):
		return lo
	case f >= float64(hi):
		return hi
	}
	return int64(math.Ceil(f))
}
