package client

import (
	"math"
	"runtime"
	"time"
)

// UnorderedSnowflake puts a Snowflake generator in unordered mode: each
// core issues IDs from a share of every tick's sequence values that no
// other core touches, under a lock and a clock timeline of its own, so that
// callers on several cores read the clock and issue at the same time
// instead of in turn under the generator's one lock. It is the Snowflake
// counterpart of the Sequence's Unordered, and gives up the same thing.
//
// What it gives up is order. IDs stay unique, and each one still carries
// the lease's worker id and a timestamp of its tick, but they are not
// increasing across goroutines, nor even within one goroutine: the Go
// scheduler may move a goroutine to another core between two calls, and
// the other core's share of the same tick holds lower sequence values (the
// shares split the sequence bits from the top down); and a core whose
// share of the tick is used up takes from the other cores' shares. Sorting
// by ID still sorts by tick, as in the default mode.
//
// It helps only layouts with sequence values to spare in a tick: each core
// takes its share of a tick's sequence before it looks at the other cores'
// shares, and the generator as a whole still issues at most 2^sequence_bits
// IDs a tick. The default layout (12 sequence bits, 1 ms ticks) caps a
// generator at 4,096 IDs a millisecond in either mode, and one core alone
// reaches that cap: there the mode changes nothing but the order. With
// 20 sequence bits a call costs about 68 ns on one core, most of it the
// clock read, and the mode lets two cores issue at once; this package's
// README (client/README.md, its SnowflakeRemote section) has the figures.
//
// Pick it when IDs need only be unique, many goroutines on several cores
// call Next all the time, and the layout has sequence values to spare.
// NextN's IDs come sorted, though taken from several cores' shares.
//
// Everything else holds as in the default mode, for every core's share:
// the lease's deadline by either clock, the timestamp floor of a new
// tenure, the handling of clock steps (each core's timeline follows the
// wall clock as the generator's one does; a core that issued an ID waits
// or refuses before reusing its timestamps), Close, ErrExhausted,
// ErrLeaseExpired, and the Stats (summed over the cores).
func UnorderedSnowflake() SnowflakeOption {
	return func(c *sfConfig) error {
		c.unordered = true
		return nil
	}
}

// sfShard is one core's issuer, followed by 128 bytes of padding: any two
// bytes of two shards are at least 128 bytes apart, so that what one core
// writes on every Next shares no cache line (nor pair of lines, which some
// CPUs fetch together) with another core's shard.
//
// A shard is a Snowflake value with no background goroutine and no shards
// of its own: its mu is the shard's lock, its lease, layout, closed and
// fatal are its copy of the generator's lease state, and its timeline
// (anchorW, anchorM), last ID, share of the sequence and counters are its
// own. It issues with takeLocked, the default mode's code, so every rule
// of the default mode holds for each shard as it is: the lease's deadline
// by either clock, the floor of a new tenure, the clock steps, ErrExhausted
// and the planted faults (its cfg is the generator's). Two shards never
// make the same ID: they issue under the same lease but from disjoint
// shares of each tick's sequence.
//
// The background goroutine changes the lease state only under the
// generator's mu, and copies it to every shard, under each shard's lock,
// before it lets go of mu (publishLocked): a shard never issues under a
// lease state older than the generator's once the change is done, and no
// Next takes the generator's lock while the lease is valid.
type sfShard struct {
	g Snowflake
	_ [128]byte
}

// maxSnowflakeShards bounds the shards of a generator (each is under a
// kilobyte); cores beyond it share shards, which stays correct: every take
// holds its shard's lock.
const maxSnowflakeShards = 64

// minShareSeqs is the fewest sequence values a tick gives one shard: a
// layout with fewer than that many per core uses fewer shards (down to
// one, the default mode's issuing under a lock of its own), so that a
// share is not used up after a handful of IDs.
const minShareSeqs = 256

func (g *Snowflake) initShards() {
	n := 1
	for n < runtime.GOMAXPROCS(0) && n < maxSnowflakeShards {
		n *= 2
	}
	g.shards = make([]sfShard, n)
	for i := range g.shards {
		sh := &g.shards[i].g
		sh.ns, sh.cfg = g.ns, g.cfg
		sh.anchorW, sh.anchorM, sh.lastTick = g.anchorW, g.anchorM, -1
	}
}

// publishLocked copies the lease state to every shard (the caller holds
// g.mu and has just changed it). The first time the layout is known it
// gives the shards their shares: as many shards as the sequence allows
// minShareSeqs each, a power of two, shard i taking the i-th share. The
// layout never changes for a generator (a lease with another is fatal), so
// neither do the shares.
func (g *Snowflake) publishLocked() {
	if g.shards == nil {
		return
	}
	assign := g.layout != nil && !g.sharesSet
	active := len(g.shards)
	if assign {
		g.sharesSet = true
		for active > 1 && (g.layout.maxSeq+1)/int64(active) < minShareSeqs {
			active /= 2
		}
	}
	for i := range g.shards {
		sh := &g.shards[i].g
		sh.mu.Lock()
		if assign && i < active {
			span := (g.layout.maxSeq + 1) / int64(active) // the layout's sequence has a power of two values
			sh.seqFirst, sh.seqCut = int64(i)*span, g.layout.maxSeq-(int64(i+1)*span-1)
		}
		sh.layout, sh.closed, sh.fatal = g.layout, g.closed, g.fatal
		sh.lease = nil
		if g.lease != nil {
			l := *g.lease // the shard's copy: renewals change the generator's in place
			sh.lease = &l
		}
		sh.mu.Unlock()
	}
	if assign {
		g.shardMask.Store(uint32(active - 1))
	}
}

// localShard is the index of the shard of the P (the scheduler's slot for
// a core) the caller runs on, by the runtime's procPin (see
// Sequence.localShard). The goroutine may move to another P right after;
// then two cores share a shard for a while, which costs speed, never
// uniqueness: every take holds the shard's lock.
func (g *Snowflake) localShard() int {
	p := runtime_procPin()
	runtime_procUnpin()
	return p & int(g.shardMask.Load())
}

// takeOnShards issues up to len(dst) IDs into dst in unordered mode: from
// the caller's core's shard, and when its share of the tick is used up,
// from the other shards' shares of it, so that one busy core is not held
// to its share while the others idle. It returns as takeLocked does; the
// wait is the shortest any shard asked for.
func (g *Snowflake) takeOnShards(dst []int64) (int, time.Duration, error) {
	k := g.localShard()
	n, wait, err := g.takeOnShard(k, dst)
	if n == len(dst) || err != nil {
		return n, wait, err
	}
	mask := int(g.shardMask.Load())
	for i := 1; i <= mask && n < len(dst); i++ {
		m, w, err := g.takeOnShard((k+i)&mask, dst[n:])
		n += m
		if err != nil {
			return n, 0, err
		}
		if w > 0 && (wait == 0 || w < wait) {
			wait = w
		}
	}
	return n, wait, nil
}

// takeOnShard is takeLocked on shard k, under its lock.
func (g *Snowflake) takeOnShard(k int, dst []int64) (int, time.Duration, error) {
	sh := &g.shards[k].g
	sh.mu.Lock()
	l := sh.lease
	wasExpired := l != nil && l.expired
	n, wait, err := sh.takeLocked(dst)
	if l == nil || wasExpired || !l.expired {
		sh.mu.Unlock()
		return n, wait, err
	}
	// The shard found its copy's deadline passed: count it on the
	// generator's lease (Stats.Expired, the reason ErrLeaseExpired
	// gives), unless a renewal has moved the deadline since the copy was
	// made.
	mono, wall := l.deadlineMono, l.deadlineWall
	sh.mu.Unlock()
	g.mu.Lock()
	if gl := g.lease; gl != nil && gl.token == l.token && gl.deadlineMono == mono && gl.deadlineWall == wall {
		g.expireLocked(gl)
	}
	g.mu.Unlock()
	return n, wait, err
}

// timelineLocked is the generator's timeline at the monotonic reading
// mono: in unordered mode the latest of the shards' (each follows the wall
// clock on its own), so that a lease's start is before none of the IDs
// they issued.
func (g *Snowflake) timelineLocked(mono int64) int64 {
	if g.shards == nil {
		return g.anchorW + (mono - g.anchorM)
	}
	t := int64(math.MinInt64)
	for i := range g.shards {
		sh := &g.shards[i].g
		sh.mu.Lock()
		// A shard's timeline counts only up to the end of the last tick it
		// issued, and a shard that never issued not at all: an idle shard
		// keeps the timeline it had before a backward step of the clock
		// that the busy ones followed, and would hold every later lease's
		// start that far ahead (refused as a clock behind the lease, for as
		// long as the step). Every ID stays above its shard's own last one,
		// and the lease's start is never before it was received.
		if sh.lastTick >= 0 && sh.layout != nil {
			t = max(t, min(sh.anchorW+(mono-sh.anchorM), sh.layout.epochNs+(sh.lastTick+1)*sh.layout.tickNs))
		}
		sh.mu.Unlock()
	}
	return t
}

// addShardStatsLocked adds the shards' issuing counters to s (a shard's
// Expired counts its copies' expiries, which are counted on the
// generator's lease instead).
func (g *Snowflake) addShardStatsLocked(s *SnowflakeStats) {
	for i := range g.shards {
		sh := &g.shards[i].g
		sh.mu.Lock()
		t := &sh.stats
		s.Issued += t.Issued
		s.ClockBackwardSteps += t.ClockBackwardSteps
		s.ClockBackwardWaits += t.ClockBackwardWaits
		s.ClockBackwardRefusals += t.ClockBackwardRefusals
		s.ClockForwardJumps += t.ClockForwardJumps
		s.SequenceWaits += t.SequenceWaits
		sh.mu.Unlock()
	}
}
