package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/ticketd/ticketd/api"
)

// Snowflake IDs: 64-bit, time-sortable IDs generated in this process, under a
// worker-id lease from the cluster. See Snowflake for the rules.

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

// Errors of a Snowflake generator (besides those of every call, see
// errors.go). Test for them with errors.Is.
var (
	// ErrLeaseExpired: the generator holds no valid worker-id lease, so it
	// issues nothing (fail-closed): none acquired yet, or the last one's
	// deadline passed without a successful renewal (the cluster was
	// unreachable for longer than the lease covers), or the cluster
	// answered that it was lost and no new one has been acquired yet. The
	// error also wraps the last failure (ErrUnavailable, ErrNoWorkerFree,
	// ErrNamespaceNotFound, ErrUnauthorized, ...). Next recovers by
	// itself once a lease is renewed or acquired.
	ErrLeaseExpired = errors.New("ticketd: no valid worker-id lease")

	// ErrClockMovedBackwards: the wall clock is behind, by more than the
	// bound (WithMaxClockBackward), a timestamp the generator must stay
	// above: one it already used, the start of its lease, or the lease's
	// timestamp floor (the highest timestamp an earlier holder of the
	// worker id may have used, by that holder's clock). Next refuses until
	// the clock has caught up; it never issues an ID that could repeat.
	ErrClockMovedBackwards = errors.New("ticketd: wall clock moved backwards")

	// ErrClockSkew is no longer returned.
	//
	// Deprecated: no longer used: since issue #18 the cluster hands out a
	// timestamp floor with every grant, and the generator does not compare
	// its clock with the cluster's. A clock behind the floor gives
	// ErrClockMovedBackwards.
	ErrClockSkew = errors.New("ticketd: wall clock differs from the cluster's")

	// ErrLeaseLost: the cluster answered that the lease is not held with
	// this token any more (expired, released, revoked). A Snowflake stops
	// issuing under it at once and acquires another.
	ErrLeaseLost = errors.New("ticketd: lease lost")

	// ErrNoWorkerFree: every worker id of the namespace is leased or
	// resting after a lease. A Snowflake keeps trying in the background.
	ErrNoWorkerFree = errors.New("ticketd: no worker id free")

	// ErrNamespaceNotFound: the Snowflake namespace does not exist. A
	// Snowflake keeps trying in the background (an admin may create it).
	ErrNamespaceNotFound = errors.New("ticketd: namespace not found")
)

// errNoLease is what takeLocked returns when the generator holds no valid
// lease; the slow path turns it into ErrLeaseExpired after waiting.
var errNoLease = errors.New("no valid lease")

// snowflakeError maps the problem types of the Snowflake endpoints, which
// APIError.Is does not know, to this file's sentinels.
func snowflakeError(err error) error {
	var ae *APIError
	if err == nil || !errors.As(err, &ae) {
		return err
	}
	switch ae.Problem.Type {
	case api.ProblemLeaseLost:
		return fmt.Errorf("%w: %w", ErrLeaseLost, err)
	case api.ProblemNoWorkerFree:
		return fmt.Errorf("%w: %w", ErrNoWorkerFree, err)
	case api.ProblemNamespaceNotFound:
		return fmt.Errorf("%w: %w", ErrNamespaceNotFound, err)
	}
	return err
}

// Clock is the time source of a Snowflake generator. Inject one with
// WithClock to test clock steps; the default reads time.Now once per call.
type Clock interface {
	// Now returns the wall-clock time and a monotonic reading: a duration
	// from any fixed origin that never decreases and is not affected by
	// steps of the wall clock.
	Now() (wall time.Time, mono time.Duration)
}

type systemClock struct{ base time.Time }

func (c systemClock) Now() (time.Time, time.Duration) {
	t := time.Now()
	return t, t.Sub(c.base) // both readings carry the monotonic clock: Sub uses it
}

// SnowflakeOption configures a Snowflake; pass them to Client.Snowflake.
type SnowflakeOption func(*sfConfig) error

type sfConfig struct {
	holder      string
	clock       Clock
	maxBackward time.Duration
	margin      time.Duration // 0: a tenth of the TTL
	leaseWait   time.Duration
}

// WithHolder names the lease holder, as the cluster records it in its
// audit and shows it in inspections (1 to 256 bytes). Default:
// "hostname/pid/random".
func WithHolder(name string) SnowflakeOption {
	return func(c *sfConfig) error {
		if name == "" || len(name) > 256 {
			return invalidf("WithHolder: the holder must be 1 to 256 bytes, got %d", len(name))
		}
		c.holder = name
		return nil
	}
}

// WithClock sets the generator's time source (for tests that step the
// clock). It decides timestamps and lease deadlines; the background renewals
// are scheduled with real timers whatever the clock.
func WithClock(clk Clock) SnowflakeOption {
	return func(c *sfConfig) error {
		if clk == nil {
			return invalidf("WithClock: nil Clock")
		}
		c.clock = clk
		return nil
	}
}

// WithMaxClockBackward sets the largest backward step of the wall clock that
// Next waits out (default DefaultMaxClockBackward); 0 waits out none.
func WithMaxClockBackward(d time.Duration) SnowflakeOption {
	return func(c *sfConfig) error {
		if d < 0 || d > time.Second {
			return invalidf("WithMaxClockBackward: want 0 to 1s, got %v", d)
		}
		c.maxBackward = d
		return nil
	}
}

// WithSafetyMargin sets how long before the lease could end the generator
// stops issuing: it issues only until (the time the last successful grant or
// renewal was sent) + TTL - margin. Default: a tenth of the TTL. It must be
// less than half the TTL when the lease arrives, or Next returns
// ErrInvalidArgument.
func WithSafetyMargin(d time.Duration) SnowflakeOption {
	return func(c *sfConfig) error {
		if d <= 0 {
			return invalidf("WithSafetyMargin: want a positive duration, got %v", d)
		}
		c.margin = d
		return nil
	}
}

// WithMaxClockSkew is accepted and ignored (a duration that is not positive
// is still refused with ErrInvalidArgument, as it always was).
//
// Deprecated: no longer used: since issue #18 the cluster hands out a
// timestamp floor with every grant, and the generator does not compare its
// clock with the cluster's (see Snowflake).
func WithMaxClockSkew(d time.Duration) SnowflakeOption {
	return func(c *sfConfig) error {
		if d <= 0 {
			return invalidf("WithMaxClockSkew: want a positive duration, got %v", d)
		}
		return nil
	}
}

// WithLeaseWait sets how long Next and NextN wait for a lease when the
// generator holds no valid one (default DefaultLeaseWait; ctx may end the
// wait sooner). 0 makes them fail at once with ErrLeaseExpired. Wait blocks
// for as long as its context allows.
func WithLeaseWait(d time.Duration) SnowflakeOption {
	return func(c *sfConfig) error {
		if d < 0 {
			return invalidf("WithLeaseWait: negative duration %v", d)
		}
		c.leaseWait = d
		return nil
	}
}

// sfLayout is a namespace's layout in the units the generator computes in.
type sfLayout struct {
	ns          api.Namespace
	epochNs     int64
	tickNs      int64
	seqBits     uint8
	workerShift uint8 // seqBits
	tsShift     uint8 // seqBits + workerBits
	maxTick     int64
	maxSeq      int64
	maxWorker   int64
}

func newLayout(n api.Namespace) (*sfLayout, error) {
	if n.TimestampBits < 1 || n.WorkerBits < 1 || n.SequenceBits < 1 ||
		int(n.TimestampBits)+int(n.WorkerBits)+int(n.SequenceBits) != 63 {
		return nil, fmt.Errorf("bits %d+%d+%d do not make 63", n.TimestampBits, n.WorkerBits, n.SequenceBits)
	}
	if n.TickMs < 1 || n.TickMs > 60_000 || n.EpochMs < 0 || n.EpochMs > (1<<62)/1_000_000 {
		return nil, fmt.Errorf("tick_ms %d or epoch_ms %d out of range", n.TickMs, n.EpochMs)
	}
	return &sfLayout{
		ns: n, epochNs: n.EpochMs * 1e6, tickNs: n.TickMs * 1e6,
		seqBits: n.SequenceBits, workerShift: n.SequenceBits, tsShift: n.SequenceBits + n.WorkerBits,
		maxTick: 1<<n.TimestampBits - 1, maxSeq: 1<<n.SequenceBits - 1, maxWorker: 1<<n.WorkerBits - 1,
	}, nil
}

// aboveFloor returns the start of the first tick that starts after floorMs
// (Unix ms): the lowest timestamp a holder whose timestamp floor is floorMs
// may use. An ID's timestamp t covers [epoch + t·tick, epoch + (t+1)·tick);
// an earlier holder may have used every tick that starts at or before its
// bound, the floor, so the next holder takes only ticks that start after it.
// It is math.MaxInt64 for a floor beyond what the clock can express.
func (l *sfLayout) aboveFloor(floorMs int64) int64 {
	if floorMs <= 0 {
		return 0
	}
	if floorMs > (math.MaxInt64-l.tickNs)/1e6 {
		return math.MaxInt64
	}
	f := floorMs * 1e6
	if f < l.epochNs {
		return l.epochNs // every tick starts after the floor
	}
	return l.epochNs + ((f-l.epochNs)/l.tickNs+1)*l.tickNs
}

func (l *sfLayout) same(n api.Namespace) bool {
	return l.ns.EpochMs == n.EpochMs && l.ns.TimestampBits == n.TimestampBits && l.ns.WorkerBits == n.WorkerBits &&
		l.ns.SequenceBits == n.SequenceBits && l.ns.TickMs == n.TickMs
}

// SnowflakeParts is a Snowflake ID taken apart.
type SnowflakeParts struct {
	// Time is the start of the ID's tick.
	Time     time.Time
	TimeMs   int64
	WorkerID int64
	Sequence int64
}

// DecodeSnowflake takes an ID of a namespace with the given layout apart:
// timestamp | worker | sequence, from the top bit down.
func DecodeSnowflake(layout api.Namespace, id int64) SnowflakeParts {
	ts := id >> (layout.SequenceBits + layout.WorkerBits)
	ms := layout.EpochMs + ts*layout.TickMs
	return SnowflakeParts{
		Time:     time.UnixMilli(ms),
		TimeMs:   ms,
		WorkerID: (id >> layout.SequenceBits) & (1<<layout.WorkerBits - 1),
		Sequence: id & (1<<layout.SequenceBits - 1),
	}
}

// sfLease is the lease the generator holds. Its fields are guarded by
// Snowflake.mu; only the background goroutine replaces it.
type sfLease struct {
	worker    int64
	token     uint64
	ttl       time.Duration
	grantedMs int64
	// The generator issues only while mono < deadlineMono and the
	// timestamp it issues is below deadlineWall: both are the send time
	// of the last successful grant or renewal plus TTL minus the margin,
	// read from the monotonic and from the wall clock. The monotonic one
	// holds however the wall clock is stepped; the wall one holds when the
	// monotonic clock stands still while the host is suspended.
	deadlineMono int64
	deadlineWall int64
	// floorMs is the timestamp floor the cluster handed out with the
	// grant (Unix ms; 0: none): the highest timestamp any earlier holder of
	// the worker id may have used. aboveFloorNs is the start of the first
	// tick after it, the lowest timestamp this lease may use.
	floorMs      int64
	aboveFloorNs int64
	// minNs is the lowest timestamp the generator issues under this lease:
	// aboveFloorNs, or its own time when it asked for the lease if that is
	// later (so that no ID predates the lease it was issued under, and the
	// cluster's inspections name the right holder).
	minNs    int64
	renewAt  time.Time // real time of the next renewal
	expired  bool      // the deadline passed (counted once)
	released bool
}

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
	stats    SnowflakeStats
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
// before. It waits only for the next tick when the current one's sequence
// is used up, for a small backward step of the clock, and for a lease when
// it holds no valid one (up to WithLeaseWait). Errors: ErrLeaseExpired,
// ErrClockMovedBackwards, ErrClosed, ErrExhausted (the
// namespace's timestamp bits ran out), the context's error while waiting
// for a tick, ErrInvalidArgument.
func (g *Snowflake) Next(ctx context.Context) (int64, error) {
	var one [1]int64
	g.mu.Lock()
	n, wait, err := g.takeLocked(one[:])
	g.mu.Unlock()
	if n == 1 {
		return one[0], nil
	}
	if _, err := g.fill(ctx, one[:], 0, wait, err); err != nil {
		return 0, err
	}
	return one[0], nil
}

// MaxSnowflakeBatch is the most IDs one NextN call takes.
const MaxSnowflakeBatch = 1 << 20

// NextN returns n new IDs (1 <= n <= MaxSnowflakeBatch), increasing, each
// greater than every ID returned before. It takes as many as the current
// tick has left under one lock, then waits for the next tick. On error it
// returns no IDs (those it took are skipped).
func (g *Snowflake) NextN(ctx context.Context, n int) ([]int64, error) {
	if n < 1 || n > MaxSnowflakeBatch {
		return nil, invalidf("NextN: n must be between 1 and %d, got %d", MaxSnowflakeBatch, n)
	}
	out := make([]int64, n)
	g.mu.Lock()
	k, wait, err := g.takeLocked(out)
	g.mu.Unlock()
	if k == n {
		return out, nil
	}
	if _, err := g.fill(ctx, out, k, wait, err); err != nil {
		return nil, err
	}
	return out, nil
}

// fill takes IDs into dst[n:] until it is full, waiting as takeLocked asks.
func (g *Snowflake) fill(ctx context.Context, dst []int64, n int, wait time.Duration, err error) (int, error) {
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
		g.mu.Lock()
		var k int
		k, wait, err = g.takeLocked(dst[n:])
		g.mu.Unlock()
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
	if mono >= l.deadlineMono {
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
			return 0, 0, fmt.Errorf("%w: the wall clock is %v behind the generator's monotonic timeline (more than the %v it waits out), before timestamps already issued; refusing until it catches up",
				ErrClockMovedBackwards, time.Duration(back), g.cfg.maxBackward)
		}
	}
	if ts >= l.deadlineWall {
		// The wall clock jumped past the lease's deadline (a forward
		// step or a suspended host): the lease may have ended.
		g.expireLocked(l)
		return 0, 0, errNoLease
	}
	if ts < lay.epochNs {
		return 0, 0, fmt.Errorf("%w: the clock (%v) is before the namespace's epoch", ErrClockMovedBackwards, time.Unix(0, ts).UTC())
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
			return 0, 0, fmt.Errorf("%w: %v behind the last timestamp issued or the start of the lease", ErrClockMovedBackwards, time.Duration(wait))
		}
		g.stats.ClockBackwardWaits++
		return 0, time.Duration(wait), nil
	}
	if tick > lay.maxTick {
		return 0, 0, fmt.Errorf("%w: the timestamp bits of namespace %q ran out at %v", ErrExhausted, g.ns,
			time.Unix(0, lay.epochNs+(lay.maxTick+1)*lay.tickNs).UTC())
	}
	seq := int64(0)
	if tick == g.lastTick {
		if l.worker != g.lastWkr || g.lastSeq >= lay.maxSeq {
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
	n := int(min(int64(len(dst)), lay.maxSeq-seq+1))
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
	behind := "an unbounded time"
	if l.aboveFloorNs < math.MaxInt64 {
		behind = time.Duration(l.aboveFloorNs - ts).String()
	}
	return fmt.Errorf("%w: this host's clock is %s behind the timestamp floor of worker %d of %q, %s (the highest timestamp an earlier holder of the worker id may have used, by that holder's clock); %s",
		ErrClockMovedBackwards, behind, l.worker, g.ns, time.UnixMilli(l.floorMs).UTC().Format(time.RFC3339Nano), what)
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
		GrantedMs: l.grantedMs, TimestampFloorMs: l.floorMs, Deadline: time.Unix(0, l.deadlineWall), Valid: g.validLocked(), Layout: g.layout.ns,
	}, true
}

// Stats returns a snapshot of the generator's counters.
func (g *Snowflake) Stats() SnowflakeStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.stats
	s.LastError = g.lastErr
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
	close(g.leaseCh)
	g.leaseCh = make(chan struct{})
}

// run is the background goroutine: it acquires a lease, renews it every
// TTL/3, acquires a new one when it is lost, and releases it at the end.
func (g *Snowflake) run() {
	defer close(g.done)
	defer g.shutdown()
	bo := g.c.newBackoff()
	for g.ctx.Err() == nil {
		g.mu.Lock()
		l := g.lease
		g.mu.Unlock()
		if l == nil {
			if err := g.acquire(); err != nil {
				g.mu.Lock()
				fatal := g.fatal != nil
				g.mu.Unlock()
				if fatal {
					g.c.log.Error("ticketd: the Snowflake generator stopped", "namespace", g.ns, "err", err)
					return
				}
				g.fail(err, "acquiring a worker-id lease failed; retrying")
				g.sleep(bo.NextBackOff())
				continue
			}
			bo.Reset()
			continue
		}
		if !g.sleep(time.Until(l.renewAt)) {
			return
		}
		err := g.renew(l)
		switch {
		case err == nil:
			bo.Reset()
		case g.ctx.Err() != nil:
			return
		case errors.Is(err, ErrLeaseLost), errors.Is(err, ErrNamespaceNotFound):
			g.lose(l, err)
		default:
			g.mu.Lock()
			g.stats.RenewFailures++
			g.mu.Unlock()
			g.fail(err, "renewing the worker-id lease failed; retrying")
			if !errors.Is(err, ErrUnavailable) {
				// A final answer such as 401, or one this generator
				// cannot use (a 200 that is not JSON): the next renewal
				// would get the same at once, and renewAt has not moved.
				// Do not hammer. (ErrUnavailable comes after retries
				// that took the renewal's whole time.)
				g.sleep(bo.NextBackOff())
			}
		}
	}
}

// sleep waits d or until the generator is closed; false when closed.
func (g *Snowflake) sleep(d time.Duration) bool {
	if d <= 0 {
		return g.ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-g.ctx.Done():
		return false
	}
}

func (g *Snowflake) fail(err error, msg string) {
	g.mu.Lock()
	g.lastErr = err
	g.mu.Unlock()
	g.c.log.Warn("ticketd: "+msg, "namespace", g.ns, "err", err)
}

func (g *Snowflake) leasePath(worker int64) string {
	return "/v1/namespaces/" + g.ns + "/leases/" + strconv.FormatInt(worker, 10)
}

// maxFloorGiveUps is how many leases in a row the generator gives back
// because their timestamp floor lies at or past their deadline, before it
// keeps one and waits for its clock to pass the floor.
//
// Such a floor means that this host's clock is behind an earlier holder's
// by about the recycle delay plus the TTL or more. Either that holder's clock ran
// ahead (it was stepped, say, an hour forward): then only the worker ids it
// held are out of reach, another lease serves at once, and waiting for the
// floor instead would stop this generator for up to that hour. Or this
// host's clock is the one behind: then every recently used worker id is out
// of reach, and giving them all back in turn would keep each one resting
// for a recycle delay, which starves the other generators of a small
// namespace. A few give-ups tell the two apart well enough; after them the
// generator holds one worker id and refuses with ErrClockMovedBackwards
// until its clock has passed the floor, as it does for any clock behind the
// timestamps it must stay above.
const maxFloorGiveUps = 3

// acquire asks for a lease (retrying transient failures for up to the
// Client's call timeout) and installs it.
func (g *Snowflake) acquire() error {
	ctx, cancel := g.c.withCallTimeout(g.ctx)
	defer cancel()
	sendW, sendM := g.cfg.clock.Now()
	renewAt := time.Now()
	// One request id and one client time for this acquire and all its
	// retries: a retry whose first attempt was granted (answer lost, or a
	// 503 after the grant) gets that lease back instead of tying up a
	// second worker id, and the cluster bounds it by this send time, the
	// one the deadline is counted from.
	body, _ := json.Marshal(api.LeaseRequest{Holder: g.cfg.holder, RequestID: rand.Text(), ClientTimeMs: clientTimeMs(sendW)})
	var out api.Lease
	_, err := g.c.roundTrip(ctx, http.MethodPost, "/v1/namespaces/"+g.ns+"/leases", body, &out, g.onFailure)
	if err != nil {
		return snowflakeError(err)
	}
	recvW, _ := g.cfg.clock.Now()
	lay, lerr := newLayout(out.Layout)
	if lerr == nil && (out.WorkerID < 0 || out.WorkerID > lay.maxWorker || out.Token == 0 || out.TTLMs < 1 || out.TTLMs > maxLeaseTTLMs || out.TimestampFloorMs < 0) {
		lerr = fmt.Errorf("worker %d, token %d, ttl_ms %d, timestamp_floor_ms %d", out.WorkerID, out.Token, out.TTLMs, out.TimestampFloorMs)
	}
	g.mu.Lock()
	if lerr == nil && g.layout != nil && !g.layout.same(out.Layout) {
		lerr = fmt.Errorf("the layout changed from %+v to %+v", g.layout.ns, out.Layout)
	}
	if lerr != nil {
		g.fatal = fmt.Errorf("ticketd: the cluster answered a lease of %q that this generator cannot use: %v", g.ns, lerr)
		g.notifyLocked()
		g.mu.Unlock()
		g.release(&sfLease{worker: out.WorkerID, token: out.Token})
		return g.fatal
	}
	l := &sfLease{worker: out.WorkerID, token: out.Token, ttl: time.Duration(out.TTLMs) * time.Millisecond, grantedMs: out.GrantedMs}
	if err := g.setDeadlineLocked(l, sendW, sendM, renewAt); err != nil {
		g.fatal = err
		g.notifyLocked()
		g.mu.Unlock()
		g.release(l)
		return err
	}
	if g.closed {
		g.mu.Unlock()
		g.release(l)
		return ErrClosed
	}
	g.layout = lay
	// The lease's start: the timeline when the request was sent, or the
	// wall clock when the answer came if that is later.
	l.minNs = max(g.anchorW+(int64(sendM)-g.anchorM), recvW.UnixNano())
	g.raiseFloorLocked(l, out.TimestampFloorMs)
	var floorErr error
	if l.aboveFloorNs >= l.deadlineWall { // no ID of this lease could be above the floor
		if g.floorGiveUps < maxFloorGiveUps {
			g.floorGiveUps++
			g.stats.FloorGiveUps++
			err := g.floorError(l, sendW.UnixNano(), fmt.Sprintf("that is past the lease's deadline: gave the lease back to acquire another (%d of %d in a row)", g.floorGiveUps, maxFloorGiveUps))
			g.lastErr = err
			g.mu.Unlock()
			g.release(l)
			return err
		}
		floorErr = g.floorError(l, sendW.UnixNano(), fmt.Sprintf("that is past the lease's deadline, as it was for the %d leases before: keeping this one and refusing until the clock has passed the floor", maxFloorGiveUps))
		g.c.log.Error("ticketd: the Snowflake generator refuses to issue until this host's clock has passed the lease's timestamp floor",
			"namespace", g.ns, "worker", l.worker, "token", l.token, "err", floorErr)
	}
	g.floorGiveUps = 0
	g.lease = l
	g.lastErr = floorErr
	g.stats.Acquired++
	g.notifyLocked()
	g.mu.Unlock()
	g.c.log.Info("ticketd: acquired a worker-id lease", "namespace", g.ns, "worker", l.worker, "token", l.token,
		"ttl", l.ttl, "timestamp_floor_ms", l.floorMs, "holder", g.cfg.holder)
	return nil
}

// maxLeaseTTLMs is the longest lease TTL a generator takes (the cluster
// allows an hour): a longer one is a bogus answer, and far longer ones
// overflow a time.Duration (ttl_ms 18446744073710 made a lease of 448 µs)
// or the deadlines computed from it.
const maxLeaseTTLMs = int64(24 * time.Hour / time.Millisecond)

// clientTimeMs is the client_time_ms of a request sent at sendW: its Unix
// time in ms, rounded up, so that the bound the cluster records,
// client_time_ms + TTL, is above the lease's wall deadline, sendW + TTL -
// margin, whatever the margin.
func clientTimeMs(sendW time.Time) int64 {
	ms := sendW.UnixMilli() // rounded down: the nanoseconds are in [0, 1e9)
	if sendW.Nanosecond()%1e6 != 0 {
		ms++
	}
	return ms
}

// raiseFloorLocked makes l honour the timestamp floor floorMs: it issues
// only ticks that start after it.
func (g *Snowflake) raiseFloorLocked(l *sfLease, floorMs int64) {
	if floorMs <= l.floorMs {
		return
	}
	l.floorMs = floorMs
	l.aboveFloorNs = g.layout.aboveFloor(floorMs)
	l.minNs = max(l.minNs, l.aboveFloorNs)
}

func (g *Snowflake) onFailure(err error) {
	g.mu.Lock()
	g.lastErr = err
	g.mu.Unlock()
}

// setDeadlineLocked sets l's deadlines from the send time of the request
// that granted or renewed it and checks the margin. Nothing the cluster's
// clock says takes part.
func (g *Snowflake) setDeadlineLocked(l *sfLease, sendW time.Time, sendM time.Duration, realSend time.Time) error {
	margin := g.cfg.margin
	if margin == 0 {
		margin = l.ttl / 10
	}
	if margin >= l.ttl/2 {
		return fmt.Errorf("%w: the safety margin %v must be below half the lease TTL %v of namespace %q", ErrInvalidArgument, margin, l.ttl, g.ns)
	}
	l.deadlineMono = max(l.deadlineMono, int64(sendM+l.ttl-margin))
	l.deadlineWall = max(l.deadlineWall, sendW.UnixNano()+int64(l.ttl-margin))
	l.renewAt = realSend.Add(l.ttl / 3)
	l.expired = false
	return nil
}

// renew renews l once. The call is bounded by TTL/3 so that a retry starts
// with a fresh send time.
func (g *Snowflake) renew(l *sfLease) error {
	ctx, cancel := context.WithTimeout(g.ctx, l.ttl/3)
	defer cancel()
	sendW, sendM := g.cfg.clock.Now()
	realSend := time.Now()
	body, _ := json.Marshal(api.LeaseTokenRequest{Token: l.token, ClientTimeMs: clientTimeMs(sendW)})
	var out api.Lease
	_, err := g.c.roundTrip(ctx, http.MethodPut, g.leasePath(l.worker), body, &out, g.onFailure)
	if err != nil {
		return snowflakeError(err)
	}
	if out.WorkerID != l.worker || out.Token != l.token || out.TTLMs < 1 || out.TTLMs > maxLeaseTTLMs {
		return fmt.Errorf("%w: the renewal of worker %d token %d was answered with worker %d token %d ttl_ms %d",
			ErrLeaseLost, l.worker, l.token, out.WorkerID, out.Token, out.TTLMs)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lease != l {
		return nil
	}
	ttl := time.Duration(out.TTLMs) * time.Millisecond
	if ttl < l.ttl { // the TTL never changes for a namespace; take the shorter to be safe
		// Checked before the lease changes: a TTL the margin does not fit
		// would leave a lease no renewal can extend. Drop it; the next
		// acquire refuses that TTL as it refuses it at the start.
		margin := g.cfg.margin
		if margin == 0 {
			margin = ttl / 10
		}
		if margin >= ttl/2 {
			return fmt.Errorf("%w: the renewal of worker %d answered a TTL of %v, too short for the safety margin %v",
				ErrLeaseLost, l.worker, ttl, margin)
		}
		l.ttl = ttl
	}
	if err := g.setDeadlineLocked(l, sendW, sendM, realSend); err != nil {
		return err
	}
	// A renewal's answer carries the grant's floor again; should it ever
	// carry a higher one, that is honoured too.
	g.raiseFloorLocked(l, out.TimestampFloorMs)
	g.stats.Renewed++
	g.lastErr = nil
	g.notifyLocked()
	return nil
}

// lose drops l at once: the cluster says it is not held any more.
func (g *Snowflake) lose(l *sfLease, err error) {
	g.mu.Lock()
	if g.lease == l {
		g.lease = nil
		g.stats.LeasesLost++
		g.lastErr = err
		g.notifyLocked()
	}
	g.mu.Unlock()
	g.c.log.Warn("ticketd: the worker-id lease was lost; stopped issuing under it and acquiring a new one",
		"namespace", g.ns, "worker", l.worker, "token", l.token, "err", err)
}

// shutdown ends the generator and releases its lease.
func (g *Snowflake) shutdown() {
	g.mu.Lock()
	g.closed = true
	l := g.lease
	g.lease = nil
	g.notifyLocked()
	g.mu.Unlock()
	if l != nil {
		g.closeErr = g.release(l)
	}
}

// release gives the lease back, once, bounded by the attempt timeout.
func (g *Snowflake) release(l *sfLease) error {
	if l.released || l.token == 0 {
		return nil
	}
	l.released = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(g.ctx), g.c.attemptTimeout)
	defer cancel()
	body, _ := json.Marshal(api.LeaseTokenRequest{Token: l.token})
	_, err := g.c.roundTrip(ctx, http.MethodDelete, g.leasePath(l.worker), body, nil, nil)
	err = snowflakeError(err)
	if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrClosed) {
		return nil // nothing to release, or the Client is closing: the lease expires by itself
	}
	if err != nil {
		return fmt.Errorf("ticketd: releasing worker %d of %q: %w (the lease expires by itself after its TTL)", l.worker, g.ns, err)
	}
	return nil
}

// CreateNamespace creates a Snowflake namespace with the given layout and
// lease policy (nil fields take the server's defaults), or confirms that it
// exists with the same settings (created is then false). It needs an admin
// token. A namespace that exists with other settings gives ErrConflict.
func (c *Client) CreateNamespace(ctx context.Context, name string, req api.NamespaceRequest) (ns api.Namespace, created bool, err error) {
	if err := c.usable(ctx); err != nil {
		return ns, false, err
	}
	if err := api.ValidateSequenceName(name); err != nil {
		return ns, false, fmt.Errorf("%w: namespace: %v", ErrInvalidArgument, err)
	}
	body, _ := json.Marshal(req)
	ctx, cancel := c.withCallTimeout(ctx)
	defer cancel()
	status, err := c.roundTrip(ctx, http.MethodPut, "/v1/namespaces/"+name, body, &ns, nil)
	return ns, status == http.StatusCreated, snowflakeError(err)
}

// InspectSnowflake decodes a Snowflake ID of a namespace on the cluster:
// its time, worker id and sequence, and which lease holder had that worker
// id then (while the cluster's audit still has the grant).
func (c *Client) InspectSnowflake(ctx context.Context, namespace string, id int64) (api.SnowflakeInspection, error) {
	var out api.SnowflakeInspection
	if err := c.usable(ctx); err != nil {
		return out, err
	}
	if err := api.ValidateSequenceName(namespace); err != nil {
		return out, fmt.Errorf("%w: namespace: %v", ErrInvalidArgument, err)
	}
	if id < 1 {
		return out, invalidf("InspectSnowflake: id must be positive, got %d", id)
	}
	ctx, cancel := c.withCallTimeout(ctx)
	defer cancel()
	_, err := c.roundTrip(ctx, http.MethodGet, "/v1/inspect/snowflake/"+namespace+"/"+strconv.FormatInt(id, 10), nil, &out, nil)
	return out, snowflakeError(err)
}

// Leases lists the latest lease of every worker id of a namespace.
func (c *Client) Leases(ctx context.Context, namespace string) ([]api.Lease, error) {
	var out api.LeaseList
	if err := c.usable(ctx); err != nil {
		return nil, err
	}
	if err := api.ValidateSequenceName(namespace); err != nil {
		return nil, fmt.Errorf("%w: namespace: %v", ErrInvalidArgument, err)
	}
	ctx, cancel := c.withCallTimeout(ctx)
	defer cancel()
	_, err := c.roundTrip(ctx, http.MethodGet, "/v1/namespaces/"+namespace+"/leases", nil, &out, nil)
	return out.Leases, snowflakeError(err)
}

// RevokeLease ends a worker id's lease whoever holds it (an operator's
// action; it needs an admin token). Its holder's next renewal is answered
// lease-lost, and the id rests for the namespace's recycle delay from now.
// A lease that is not held gives ErrLeaseLost.
func (c *Client) RevokeLease(ctx context.Context, namespace string, worker int64) (api.Lease, error) {
	var out api.Lease
	if err := c.usable(ctx); err != nil {
		return out, err
	}
	if err := api.ValidateSequenceName(namespace); err != nil {
		return out, fmt.Errorf("%w: namespace: %v", ErrInvalidArgument, err)
	}
	if worker < 0 {
		return out, invalidf("RevokeLease: negative worker id %d", worker)
	}
	ctx, cancel := c.withCallTimeout(ctx)
	defer cancel()
	_, err := c.roundTrip(ctx, http.MethodPost, "/v1/namespaces/"+namespace+"/leases/"+strconv.FormatInt(worker, 10)+"/revoke", nil, &out, nil)
	return out, snowflakeError(err)
}
