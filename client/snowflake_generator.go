package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ticketd/ticketd/api"
)

// Snowflake IDs: 64-bit, time-sortable IDs generated in this process, under a
// worker-id lease from the cluster. See Snowflake for the rules.
//
// This file holds the generator: the Snowflake type with its counters, and
// the issuing of IDs (Next, NextN, Wait, Close). Its errors are in
// snowflake_errors.go, its options and clock in snowflake_options.go, the ID
// layout in snowflake_layout.go, the background goroutine that keeps the
// worker-id lease in snowflake_lease.go, and the namespace and lease admin
// calls of Client in snowflake_admin.go.

// Defaults of the SnowflakeOptions.
const (
	// DefaultMaxClockBackward is the largest backward step of the wall
	// clock that a Snowflake waits out; a larger one makes Next refuse with
	// ErrClockMovedBackwards until the clock has caught up.
	DefaultMaxClockBackward = 10 * time.Millisecond
	// DefaultLeaseWait is how long Next waits for a lease when the
	// generator holds none that is valid.
	DefaultLeaseWait = time.Second
)

// Snowflake generates 64-bit Snowflake IDs of one namespace in this process:
// timestamp | worker id | sequence, with the layout (epoch, bit budget,
// tick) the cluster set for the namespace. Make it with Client.Snowflake,
// share it (it is safe for concurrent use), and Close it when done: Close
// releases its worker id. Next costs a mutex and a clock read; it never
// touches the network while the generator holds a valid lease.
//
// # Worker-id lease
//
// The generator acquires a worker-id lease from the cluster (POST
// /v1/namespaces/{ns}/leases) and renews it every TTL/3 in the background.
// Every acquire and renewal carries the generator's wall clock when it sent
// the request (client_time_ms). Two holders of one worker id never issue the
// same ID, and no bound on any clock's offset is needed for it:
//
//  1. A holder stops by its own monotonic clock: it issues only until the
//     time it SENT the last successful grant or renewal, plus the TTL, minus
//     a safety margin (WithSafetyMargin, default TTL/10), and only
//     timestamps below that same deadline read from its wall clock.
//  2. The cluster ends a lease (expires it) only when at least the TTL has
//     passed since it applied the last renewal, timed by the leader's
//     monotonic clock, and a new leader restarts every lease with a full
//     TTL. A request is applied after it was sent, so the holder has stopped
//     before the cluster can end its lease.
//  3. The worker id then rests for the namespace's recycle delay (at least
//     the TTL) before the cluster grants it again.
//  4. The cluster records each holder's client_time_ms + TTL, above every
//     timestamp the holder may use: client_time_ms is the send time rounded
//     up to the millisecond, and the wall deadline of point 1 is below send
//     time + TTL. It hands the worker id's next holder the highest of these
//     as its timestamp floor, and the generator issues only ticks that
//     start after its lease's floor; so consecutive holders' timestamps
//     never overlap, however far apart their clocks (or the cluster's) are.
//
// Only the rates of the clocks matter: they must tick at about the same
// speed, and the margin covers their drift over a TTL. Neither the
// cluster's wall clock nor this host's offset from it takes part; the
// cluster's stamps (GrantedMs) are for display. (A cluster from before
// issue #18 sends no floor: then consecutive holders are a recycle delay
// apart in real time only, and their clocks must agree to within it.)
//
//   - Cluster briefly unreachable (renewals fail): keep issuing until the
//     deadline (fail-static), then refuse with ErrLeaseExpired (fail-closed)
//     while renewals go on; a renewal that succeeds resumes issuing under the
//     same worker id.
//   - Renewal answered 409 lease-lost (expired on the cluster, revoked):
//     stop issuing at once, acquire a new lease (another worker id). A
//     revocation thus takes effect at the holder's next renewal, at most
//     TTL/3 later, and by its deadline in any case: long before the id's
//     recycle delay lets the cluster grant it again.
//   - No lease yet or a new one being acquired: Next waits for it up to
//     WithLeaseWait (default 1 s) and ctx, then returns ErrLeaseExpired.
//
// # Clock
//
// Timestamps come from a timeline anchored to the wall clock and advanced by
// the monotonic clock: wall-at-anchor + (monotonic now - monotonic at
// anchor). Every call also reads the wall clock and compares:
//
//   - wall ahead of the timeline (a forward step, or the host was
//     suspended): the timeline jumps to the wall clock.
//   - wall behind by at most WithMaxClockBackward (default 10 ms): the
//     timeline follows it back, and Next waits until it has passed the last
//     timestamp issued.
//   - wall behind by more: Next refuses with ErrClockMovedBackwards (counted
//     in Stats) until the wall clock is back within the bound or has passed
//     every timestamp already issued under the lease; the timeline does not
//     follow it meanwhile.
//
// Whatever the clock does, the generator never issues a timestamp below the
// last one it issued (nor the same one once its sequence is used up: then
// it waits for the next tick), so its IDs strictly increase; a new worker id
// starts on a later tick than the last ID. Nor does it issue a tick that
// starts at or before its lease's timestamp floor: a wall clock behind the
// floor is treated as one behind the last timestamp issued (waited out up to
// WithMaxClockBackward, refused with ErrClockMovedBackwards beyond). A floor
// at or past the lease's deadline, which no ID of the lease could pass, means
// this host's clock is behind an earlier holder's by about the recycle delay
// plus the TTL or more: the generator gives that lease back at once and
// acquires another (Stats.FloorGiveUps), up to three times in a row; then it
// keeps the lease and refuses with ErrClockMovedBackwards until its clock
// has passed the floor.
type Snowflake struct {
	c      *Client
	ns     string
	cfg    sfConfig
	ctx    context.Context // ends on Close or Client.Close
	cancel context.CancelFunc
	done   chan struct{} // closed when the background goroutine has returned

	closeOnce sync.Once
	closeErr  error

	mu       sync.Mutex
	lease    *sfLease // nil: none
	layout   *sfLayout
	leaseCh  chan struct{} // closed (and replaced) when the lease state changes
	closed   bool
	fatal    error // an error no retry fixes (bad layout, bad margin)
	lastErr  error // the last background failure
	anchorW  int64 // wall ns of the timeline's anchor
	anchorM  int64 // monotonic ns of the timeline's anchor
	lastTick int64 // tick of the last ID issued; -1: none
	lastSeq  int64
	lastWkr  int64
	lastID   int64
	// The generator issues only the sequence values of its share of a
	// tick's, seqFirst to the layout's last minus seqCut: a generator's
	// are all of them (0, 0); a shard's in unordered mode are its own
	// (snowflake_unordered.go).
	seqFirst, seqCut int64
	stats            SnowflakeStats
	// shards are the per-core issuers of UnorderedSnowflake; nil in the
	// default mode and in a shard.
	shards    []sfShard
	shardMask atomic.Uint32 // the shards in use, minus one
	sharesSet bool          // the shards have their shares
	// floorGiveUps counts the leases given back in a row because their
	// timestamp floor was out of reach; only the background goroutine
	// uses it.
	floorGiveUps int
}

// SnowflakeStats are a Snowflake's counters.
type SnowflakeStats struct {
	// Issued counts the IDs handed out.
	Issued int64
	// Acquired counts the leases acquired; Renewed the successful
	// renewals; RenewFailures the renewal calls that failed for another
	// reason than lease-lost (unreachable cluster, timeouts, 5xx).
	Acquired, Renewed, RenewFailures int64
	// LeasesLost counts renewals answered lease-lost (the generator
	// stopped at once); Expired the leases whose deadline passed before a
	// renewal succeeded (the generator stopped at the deadline).
	LeasesLost, Expired int64
	// RefusedNoLease counts the Next and NextN calls refused with
	// ErrLeaseExpired.
	RefusedNoLease int64
	// ClockBackwardSteps counts backward steps of the wall clock against
	// the monotonic timeline of 1 ms or more; ClockBackwardWaits the times
	// Next waited for the clock to pass the last timestamp issued or the
	// lease's timestamp floor; ClockBackwardRefusals the calls refused
	// with ErrClockMovedBackwards.
	ClockBackwardSteps, ClockBackwardWaits, ClockBackwardRefusals int64
	// ClockForwardJumps counts forward jumps of the wall clock against
	// the monotonic timeline of 1 ms or more (steps, host suspended).
	ClockForwardJumps int64
	// ClockSkewRefusals is always 0.
	//
	// Deprecated: no longer used: since issue #18 the cluster hands out a
	// timestamp floor and the generator does not compare its clock with
	// the cluster's.
	ClockSkewRefusals int64
	// FloorGiveUps counts the leases given back at once because their
	// timestamp floor lay at or past their deadline (see Snowflake).
	FloorGiveUps int64
	// SequenceWaits counts the times a tick's sequence ran out and Next
	// waited for the next tick.
	SequenceWaits int64
	// LastError is the last background failure (nil if none).
	LastError error
}

// SnowflakeLease describes the lease a Snowflake holds.
type SnowflakeLease struct {
	Namespace string
	WorkerID  int64
	Token     uint64
	Holder    string
	TTL       time.Duration
	// GrantedMs is the cluster's time when the lease was granted, for
	// display: the generator compares it with nothing.
	GrantedMs int64
	// TimestampFloorMs is the timestamp floor the cluster handed out with
	// the grant (0: none): the generator issues only ticks that start
	// after it.
	TimestampFloorMs int64
	// GrantSeq is the audit sequence number of the lease's grant record
	// (GET /v1/audit): a public name of this lease, unlike Token (0: the
	// cluster did not name it).
	GrantSeq uint64
	// Deadline is when the generator stops issuing unless a renewal
	// succeeds first, in the generator's wall clock.
	Deadline time.Time
	// Valid reports whether the generator may issue under it now: its
	// deadline has not passed. (Next may still wait or refuse for the
	// clock: see ErrClockMovedBackwards.)
	Valid  bool
	Layout api.Namespace
}

// Snowflake returns a generator of Snowflake IDs of the namespace (see
// Snowflake). It starts acquiring a worker-id lease in the background at
// once and returns without waiting: call Wait to block until it holds one
// (and to see why not, such as ErrNamespaceNotFound), or let the first Next
// wait for it. The error is ErrInvalidArgument for a bad name or option and
// ErrClosed for a closed Client. The namespace must exist (an admin creates
// it: Client.CreateNamespace, or PUT /v1/namespaces/{name}).
func (c *Client) Snowflake(namespace string, opts ...SnowflakeOption) (*Snowflake, error) {
	if c == nil || c.ctx == nil {
		return nil, invalidf("the Client is nil or was not made by client.New")
	}
	if err := api.ValidateSequenceName(namespace); err != nil {
		return nil, fmt.Errorf("%w: namespace: %v", ErrInvalidArgument, err)
	}
	cfg := sfConfig{maxBackward: DefaultMaxClockBackward, leaseWait: DefaultLeaseWait}
	for i, o := range opts {
		if o == nil {
			return nil, invalidf("snowflake option %d is nil", i)
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.holder == "" {
		cfg.holder = defaultHolder()
	}
	if cfg.clock == nil {
		cfg.clock = systemClock{base: time.Now()}
	}
	g := &Snowflake{c: c, ns: namespace, cfg: cfg, done: make(chan struct{}), leaseCh: make(chan struct{}), lastTick: -1}
	g.ctx, g.cancel = context.WithCancel(c.ctx)
	w, m := cfg.clock.Now()
	g.anchorW, g.anchorM = w.UnixNano(), int64(m)
	if cfg.unordered {
		g.initShards()
	}
	if !c.goBackground(g.run) {
		g.cancel()
		return nil, ErrClosed
	}
	return g, nil
}

func defaultHolder() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "unknown-host"
	}
	if len(host) > 200 {
		host = host[:200]
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return host + "/" + strconv.Itoa(os.Getpid()) + "/" + hex.EncodeToString(b[:])
}

// Namespace is the generator's namespace.
func (g *Snowflake) Namespace() string { return g.ns }

// Holder is the name the generator's leases are held under.
func (g *Snowflake) Holder() string { return g.cfg.holder }

// Next returns a new ID, greater than every ID this generator returned
// before (in unordered mode only unique: see UnorderedSnowflake). It waits only for the next tick when the current one's sequence
// is used up, for a small backward step of the clock, and for a lease when
// it holds no valid one (up to WithLeaseWait). Errors: ErrLeaseExpired,
// ErrClockMovedBackwards, ErrClosed, ErrExhausted (the
// namespace's timestamp bits ran out), the context's error while waiting
// for a tick, ErrInvalidArgument.
func (g *Snowflake) Next(ctx context.Context) (int64, error) {
	var one [1]int64
	var n int
	var wait time.Duration
	var err error
	if g.shards != nil {
		n, wait, err = g.takeOnShards(one[:])
	} else {
		g.mu.Lock()
		n, wait, err = g.takeLocked(one[:])
		g.mu.Unlock()
	}
	if n == 1 {
		return one[0], nil
	}
	if _, err := g.fill(ctx, one[:], 0, wait, err, nil); err != nil {
		return 0, err
	}
	return one[0], nil
}

// MaxSnowflakeBatch is the most IDs one NextN call takes.
const MaxSnowflakeBatch = 1 << 20

// NextN returns n new IDs (1 <= n <= MaxSnowflakeBatch), increasing, each
// greater than every ID returned before (in unordered mode only unique,
// sorted). It takes as many as the current
// tick has left under one lock, then waits for the next tick. On error it
// returns no IDs (those it took are skipped).
func (g *Snowflake) NextN(ctx context.Context, n int) ([]int64, error) {
	return g.nextN(ctx, n, nil)
}

// NextNWithGrant is NextN that also names the lease the IDs were made
// under by its grant's audit sequence number (SnowflakeLease.GrantSeq):
// the public name of a tenure of a worker id, which its token, the
// holder's capability, is not. It is 0 when the IDs came from more than
// one lease (the lease changed while the call waited for one), when the
// cluster did not name the lease (a cluster before issue 47), and in
// unordered mode. A node's Snowflake service answers it with the IDs, so
// that a check can put every answer in its tenure exactly.
func (g *Snowflake) NextNWithGrant(ctx context.Context, n int) ([]int64, uint64, error) {
	var t grantTrack
	ids, err := g.nextN(ctx, n, &t)
	if err != nil || t.mixed {
		return ids, 0, err
	}
	return ids, t.seq, nil
}

// grantTrack follows the leases a call took IDs under.
type grantTrack struct {
	seq   uint64
	taken bool
	mixed bool
}

// note records that IDs were taken under l; g.mu is held.
func (t *grantTrack) note(l *sfLease) {
	if t == nil || l == nil {
		return
	}
	if t.taken && t.seq != l.grantSeq {
		t.mixed = true
	}
	t.seq, t.taken = l.grantSeq, true
}

func (g *Snowflake) nextN(ctx context.Context, n int, t *grantTrack) ([]int64, error) {
	if n < 1 || n > MaxSnowflakeBatch {
		return nil, invalidf("NextN: n must be between 1 and %d, got %d", MaxSnowflakeBatch, n)
	}
	out := make([]int64, n)
	var k int
	var wait time.Duration
	var err error
	if g.shards != nil {
		k, wait, err = g.takeOnShards(out)
		if t != nil {
			t.mixed = true // the shards' leases are not followed
		}
	} else {
		g.mu.Lock()
		k, wait, err = g.takeLocked(out)
		if k > 0 {
			t.note(g.lease)
		}
		g.mu.Unlock()
	}
	if k < n {
		if _, err := g.fill(ctx, out, k, wait, err, t); err != nil {
			return nil, err
		}
	}
	if g.shards != nil && !slices.IsSorted(out) {
		slices.Sort(out) // taken from several cores' shares
	}
	return out, nil
}

// fill takes IDs into dst[n:] until it is full, waiting as takeLocked asks
// (t, if not nil, follows the leases they are taken under).
func (g *Snowflake) fill(ctx context.Context, dst []int64, n int, wait time.Duration, err error, t *grantTrack) (int, error) {
	if ctx == nil {
		return n, invalidf("nil context")
	}
	var leaseWaitEnd time.Time
	for n < len(dst) {
		switch {
		case errors.Is(err, errNoLease):
			if leaseWaitEnd.IsZero() {
				leaseWaitEnd = time.Now().Add(g.cfg.leaseWait)
			}
			if err := g.waitLease(ctx, leaseWaitEnd); err != nil {
				return n, err
			}
		case err != nil:
			return n, err
		case wait > 0:
			if err := sleepCtx(ctx, wait); err != nil {
				return n, err
			}
		}
		var k int
		if g.shards != nil {
			k, wait, err = g.takeOnShards(dst[n:])
		} else {
			g.mu.Lock()
			k, wait, err = g.takeLocked(dst[n:])
			if k > 0 {
				t.note(g.lease)
			}
			g.mu.Unlock()
		}
		n += k
	}
	return n, nil
}

// spinBelow: waits shorter than this (the rest of a tick whose sequence ran
// out, with 1 ms ticks) yield the processor and read the clock again rather
// than arm a timer: a timer's wake-up overshoots by a large part of a
// millisecond, which cost a fifth of the throughput at the default layout's
// cap in this package's benchmarks. Other goroutines run meanwhile.
const spinBelow = 2 * time.Millisecond

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d < spinBelow {
		runtime.Gosched()
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitLease waits until the lease state changes, ctx ends or until passes;
// it returns ErrLeaseExpired (with the reason) when the wait is over
// without a change, nil when the caller should try again.
func (g *Snowflake) waitLease(ctx context.Context, until time.Time) error {
	g.mu.Lock()
	ch := g.leaseCh
	g.mu.Unlock()
	d := time.Until(until)
	if d <= 0 {
		return g.noLeaseError(nil, true)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return g.noLeaseError(nil, true)
	case <-ctx.Done():
		return g.noLeaseError(context.Cause(ctx), true)
	}
}

func (g *Snowflake) noLeaseError(cause error, refusal bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fatal != nil {
		return g.fatal
	}
	if g.closed {
		return ErrClosed
	}
	if refusal {
		g.stats.RefusedNoLease++
	}
	reason := "none acquired yet"
	switch l := g.lease; {
	case l != nil && l.expired:
		reason = fmt.Sprintf("the lease of worker %d passed its deadline without a renewal", l.worker)
	case l != nil:
		reason = "the lease is being renewed"
	case g.stats.LeasesLost > 0 || g.stats.Expired > 0:
		reason = "the last lease was lost; acquiring a new one"
	}
	switch {
	case cause != nil && g.lastErr != nil:
		return fmt.Errorf("%w: %s: %w; last failure: %w", ErrLeaseExpired, reason, cause, g.lastErr)
	case cause != nil:
		return fmt.Errorf("%w: %s: %w", ErrLeaseExpired, reason, cause)
	case g.lastErr != nil:
		return fmt.Errorf("%w: %s; last failure: %w", ErrLeaseExpired, reason, g.lastErr)
	}
	return fmt.Errorf("%w: %s", ErrLeaseExpired, reason)
}

// oneMs is the smallest clock step the stats count.
const oneMs = int64(time.Millisecond)

// tornAbove: a wall clock further than this from the timeline is read
// again before it counts as a step.
const tornAbove = 50 * int64(time.Microsecond)

// readLocked reads the clock: the wall time, the monotonic time, the
// timeline (the anchor's wall time plus the monotonic time since), and the
// wall clock's distance from the timeline, d = wall - timeline.
//
// One time.Now is two clock reads (on Linux the wall clock, then the
// monotonic one). A host that deschedules the thread between them makes
// that one reading disagree with itself: on this project's busy 2-core VM a
// reading's two halves were seen 70 ms apart while the clocks themselves
// drifted by nanoseconds. Such a torn reading looks like a step of the wall
// clock. So when d is not about zero the clock is read up to twice more and
// the most consistent reading kept: a real step shows in every reading, a
// torn one does not repeat.
func (g *Snowflake) readLocked() (wall, mono, ts, d int64) {
	for i := 0; ; i++ {
		wt, mt := g.cfg.clock.Now()
		w, m := wt.UnixNano(), int64(mt)
		t := g.anchorW + (m - g.anchorM)
		if i == 0 || abs64(w-t) < abs64(d) {
			wall, mono, ts, d = w, m, t, w-t
		}
		if i == 2 || abs64(d) <= tornAbove {
			return wall, mono, ts, d
		}
	}
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// takeLocked issues up to len(dst) IDs of the current tick into dst. It
// returns how many, and when that is fewer than asked either how long to
// wait before trying again or an error (errNoLease: wait for a lease).
func (g *Snowflake) takeLocked(dst []int64) (int, time.Duration, error) {
	if g.fatal != nil {
		return 0, 0, g.fatal
	}
	if g.closed {
		return 0, 0, ErrClosed
	}
	l := g.lease
	if l == nil {
		return 0, 0, errNoLease
	}
	wall, mono, ts, d := g.readLocked()
	if mono >= l.deadlineMono && !g.cfg.faults.serveAfterLeaseEnd() {
		g.expireLocked(l)
		return 0, 0, errNoLease
	}
	lay := g.layout
	lastEnd := int64(-1 << 63) // end of the last tick issued
	if g.lastTick >= 0 {
		lastEnd = lay.epochNs + (g.lastTick+1)*lay.tickNs
	}
	switch {
	case d > 0: // forward step or suspend: follow the wall clock
		if d >= oneMs {
			g.stats.ClockForwardJumps++
		}
		g.anchorW, g.anchorM, ts = wall, mono, wall
	case d < 0:
		back := -d
		if back >= oneMs {
			g.stats.ClockBackwardSteps++
		}
		// Following the wall clock back is harmless when it has passed
		// everything issued under the lease; otherwise only a small step
		// is waited out, a large one refused.
		if back <= int64(g.cfg.maxBackward) || (wall >= lastEnd && wall >= l.minNs) {
			g.anchorW, g.anchorM, ts = wall, mono, wall
		} else {
			g.stats.ClockBackwardRefusals++
			return 0, 0, clockBehind(max(lastEnd, l.minNs)-wall, "the wall clock is %v behind the generator's monotonic timeline (more than the %v it waits out), before timestamps already issued; refusing until it catches up",
				time.Duration(back), g.cfg.maxBackward)
		}
	}
	if ts >= l.deadlineWall && !g.cfg.faults.serveAfterLeaseEnd() {
		// The wall clock jumped past the lease's deadline (a forward
		// step or a suspended host): the lease may have ended.
		g.expireLocked(l)
		return 0, 0, errNoLease
	}
	if ts < lay.epochNs {
		return 0, 0, clockBehind(0, "the clock (%v) is before the namespace's epoch", time.Unix(0, ts).UTC())
	}
	tick := (ts - lay.epochNs) / lay.tickNs
	if tick < g.lastTick || ts < l.minNs {
		// Behind the last tick issued (after a step back of at most
		// maxBackward: a larger one was refused above) or behind the
		// lease's first timestamp (its start, or the first tick above
		// the timestamp floor): wait if that is short, else refuse.
		wait := max(lay.epochNs+g.lastTick*lay.tickNs, l.minNs) - ts
		if wait > int64(g.cfg.maxBackward)+lay.tickNs {
			g.stats.ClockBackwardRefusals++
			if ts < l.aboveFloorNs {
				return 0, 0, g.floorError(l, ts, "refusing until it has passed the floor")
			}
			return 0, 0, clockBehind(wait, "%v behind the last timestamp issued or the start of the lease", time.Duration(wait))
		}
		g.stats.ClockBackwardWaits++
		return 0, time.Duration(wait), nil
	}
	if tick > lay.maxTick {
		return 0, 0, fmt.Errorf("%w: the timestamp bits of namespace %q ran out at %v", ErrExhausted, g.ns,
			time.Unix(0, lay.epochNs+(lay.maxTick+1)*lay.tickNs).UTC())
	}
	seq, maxSeq := g.seqFirst, lay.maxSeq-g.seqCut // the share's sequence values
	if tick == g.lastTick {
		if l.worker != g.lastWkr || g.lastSeq >= maxSeq {
			// The tick is used up, or a new worker id must start on a
			// later tick for IDs to keep increasing.
			if l.worker == g.lastWkr {
				g.stats.SequenceWaits++
			}
			return 0, time.Duration(lay.epochNs + (tick+1)*lay.tickNs - ts), nil
		}
		seq = g.lastSeq + 1
	}
	base := tick<<lay.tsShift | l.worker<<lay.workerShift
	n := int(min(int64(len(dst)), maxSeq-seq+1))
	if id := base | seq; id <= g.lastID {
		// Cannot happen: the rules above keep IDs increasing. Refuse
		// rather than risk a repeat.
		return 0, 0, fmt.Errorf("ticketd: internal error: Snowflake ID %d is not above the last one, %d; refusing", id, g.lastID)
	}
	for i := range n {
		dst[i] = base | (seq + int64(i))
	}
	g.lastTick, g.lastSeq, g.lastWkr = tick, seq+int64(n)-1, l.worker
	g.lastID = dst[n-1]
	g.stats.Issued += int64(n)
	return n, 0, nil
}

// floorError says that the clock reading ts is behind l's timestamp floor.
func (g *Snowflake) floorError(l *sfLease, ts int64, what string) error {
	behind, by := "an unbounded time", int64(math.MaxInt64)
	if l.aboveFloorNs < math.MaxInt64 {
		by = l.aboveFloorNs - ts
		behind = time.Duration(by).String()
	}
	return clockBehind(by, "this host's clock is %s behind the timestamp floor of worker %d of %q, %s (the highest timestamp an earlier holder of the worker id may have used, by that holder's clock); %s",
		behind, l.worker, g.ns, time.UnixMilli(l.floorMs).UTC().Format(time.RFC3339Nano), what)
}

func (g *Snowflake) expireLocked(l *sfLease) {
	if !l.expired {
		l.expired = true
		g.stats.Expired++
	}
}

// Wait blocks until the generator holds a valid lease, the generator is
// closed (ErrClosed), or ctx ends: then it returns ErrLeaseExpired wrapping
// the context's error and the last failure (such as ErrNamespaceNotFound,
// ErrNoWorkerFree, ErrUnavailable or ErrUnauthorized).
func (g *Snowflake) Wait(ctx context.Context) error {
	if ctx == nil {
		return invalidf("nil context")
	}
	for {
		g.mu.Lock()
		switch {
		case g.fatal != nil:
			err := g.fatal
			g.mu.Unlock()
			return err
		case g.closed:
			g.mu.Unlock()
			return ErrClosed
		}
		ok := g.validLocked()
		ch := g.leaseCh
		g.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return g.noLeaseError(context.Cause(ctx), false)
		}
	}
}

// validLocked reports whether the lease may be issued under now.
func (g *Snowflake) validLocked() bool {
	l := g.lease
	if l == nil {
		return false
	}
	_, m := g.cfg.clock.Now()
	return int64(m) < l.deadlineMono
}

// Lease describes the lease the generator holds; false when it holds none.
func (g *Snowflake) Lease() (SnowflakeLease, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.lease
	if l == nil {
		return SnowflakeLease{Namespace: g.ns, WorkerID: -1, Holder: g.cfg.holder}, false
	}
	return SnowflakeLease{
		Namespace: g.ns, WorkerID: l.worker, Token: l.token, Holder: g.cfg.holder, TTL: l.ttl,
		GrantedMs: l.grantedMs, TimestampFloorMs: l.floorMs, GrantSeq: l.grantSeq, Deadline: time.Unix(0, l.deadlineWall), Valid: g.validLocked(), Layout: g.layout.ns,
	}, true
}

// Stats returns a snapshot of the generator's counters.
func (g *Snowflake) Stats() SnowflakeStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.stats
	s.LastError = g.lastErr
	g.addShardStatsLocked(&s)
	return s
}

// Close stops the generator: Next and NextN return ErrClosed from now on,
// the background renewals stop, and the lease is released (DELETE) so that
// its worker id starts its recycle delay at once. It waits for the release
// (bounded by the Client's attempt timeout) and returns its error, if any;
// an unreleased lease simply expires after its TTL. Closing the Client
// closes its Snowflakes too. Close is idempotent.
func (g *Snowflake) Close() error {
	g.closeOnce.Do(func() {
		g.mu.Lock()
		g.closed = true
		g.notifyLocked()
		g.mu.Unlock()
		g.cancel()
	})
	<-g.done
	return g.closeErr
}

// notifyLocked wakes everyone waiting for a change of the lease state.
func (g *Snowflake) notifyLocked() {
	g.publishLocked() // before the wake-up: a woken caller's retry on a shard sees the change
	close(g.leaseCh)
	g.leaseCh = make(chan struct{})
}
