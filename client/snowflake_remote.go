package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ticketd/ticketd/api"
)

// The remote Snowflake generator (issue #32): IDs made by the servers
// (POST /v1/namespaces/{name}/ids), prefetched in batches from any node.
// Its buffer has the shape of a Sequence's cache (sequence.go): the batch
// being handed out, cut with one atomic add through the same block type,
// and at most one batch fetched ahead. The fetching of batches from the
// nodes is in snowflake_remote_fetch.go.

// Defaults of the RemoteOptions.
const (
	// DefaultRemoteBatch is how many IDs a SnowflakeRemote asks a node for
	// at once.
	DefaultRemoteBatch = 256
)

// ErrNoWorkerLease: the node that answered holds no valid worker-id lease
// in the namespace now (cut off from the quorum past its lease, or taking a
// new one), so it makes no IDs (problem type no-worker-lease, 503). A
// SnowflakeRemote moves on to another node; its calls return it wrapped in
// ErrUnavailable only when no node could serve in time.
var ErrNoWorkerLease = errors.New("ticketd: the node holds no worker-id lease")

// RemoteOption configures a SnowflakeRemote; pass them to
// Client.SnowflakeRemote.
type RemoteOption func(*remoteConfig) error

type remoteConfig struct {
	batch    int
	lowWater int           // -1: half the batch
	maxAge   time.Duration // 0: no limit
}

// WithRemoteBatch sets how many IDs one request asks a node for: 1 <= n <=
// api.MaxSnowflakeIDs (default DefaultRemoteBatch). Larger batches cost
// fewer requests and hold older IDs: an ID carries the time its node made
// it, not the time Next handed it out.
func WithRemoteBatch(n int) RemoteOption {
	return func(c *remoteConfig) error {
		if n < 1 || n > api.MaxSnowflakeIDs {
			return invalidf("WithRemoteBatch: want 1 <= n <= %d, got %d", api.MaxSnowflakeIDs, n)
		}
		c.batch = n
		return nil
	}
}

// DefaultRemoteMaxAge is how long buffered Snowflake IDs are handed out
// after they were fetched, unless WithRemoteMaxAge says otherwise; it is
// Hazelcast's FlakeIdGenerator's prefetch validity.
const DefaultRemoteMaxAge = 10 * time.Minute

// WithRemoteMaxAge sets how long buffered IDs may be handed out after the
// fetch that brought them started (default DefaultRemoteMaxAge; 0: no
// limit). A Snowflake ID's timestamp is when a node made it: a batch kept
// for an hour by a quiet process would hand out IDs an hour old, which
// sort before IDs other processes made meanwhile. Older batches, the one
// being handed out and one fetched ahead, are dropped (Stats().Expired)
// and the next call fetches fresh IDs. The age is measured on the
// monotonic clock, which does not count time the machine was suspended.
func WithRemoteMaxAge(d time.Duration) RemoteOption {
	return func(c *remoteConfig) error {
		if d < 0 {
			return invalidf("WithRemoteMaxAge: the maximum age must be 0 (no limit) or more, got %v", d)
		}
		c.maxAge = d
		return nil
	}
}

// WithRemoteLowWater sets the low-water mark: the next batch is fetched in
// the background once the batch being handed out has fewer than n IDs left
// (0 <= n <= the batch size; default half the batch). 0 fetches only when
// the buffer is empty, so callers wait for every batch.
func WithRemoteLowWater(n int) RemoteOption {
	return func(c *remoteConfig) error {
		if n < 0 {
			return invalidf("WithRemoteLowWater: want n >= 0, got %d", n)
		}
		c.lowWater = n
		return nil
	}
}

// SnowflakeRemote hands out Snowflake IDs made by the cluster's nodes, for
// processes that must not hold a worker-id lease of their own (short-lived
// jobs, hundreds of pods): every node of the cluster makes IDs of the
// namespace under its own lease, so this process needs none. Make it with
// Client.SnowflakeRemote; it is safe for concurrent use.
//
// # The buffer
//
// It keeps a local buffer of server-made IDs, fetched in batches
// (WithRemoteBatch): the batch being handed out, which Next cuts with one
// atomic add, and at most one batch fetched ahead. When the current batch
// falls below the low-water mark (WithRemoteLowWater), a background
// goroutine fetches the next one; one fetch at most is in flight. Next and
// NextN wait on the network only when the buffer is empty. A fetch that
// fails is retried, with the Client's backoff, until it succeeds, the
// answer is final, or the SnowflakeRemote is closed.
//
// # Nodes
//
// Every node answers the route from its own generator, without forwarding,
// so fetches go round the endpoints given to New (the leader is not
// preferred) and a fetch that fails on one node moves on to the next: on a
// transport failure or timeout, a 503 (no-worker-lease, clock-behind,
// workers-exhausted, unavailable), 429, 500, 502 or 504, or an answer that
// is not a valid batch. A node whose answer carried Retry-After is not
// asked again, by any fetch, until that time has passed; one that failed
// at the transport (down, cut off, timed out) rests as long as the
// Client's longest backoff (WithBackoff), when there are other endpoints.
// A node that does not know the route (an older release during a rolling
// upgrade) is moved past like a failed one. When every endpoint failed in a round, the fetch
// waits (backoff, at least until the first skipped node may be asked again)
// and goes round again.
//
// # Uniqueness and order
//
// No ID is handed out twice by one SnowflakeRemote, nor by two: each node
// makes its IDs under a worker-id lease no other node holds, above the
// timestamp floor of that worker id. As a guard against a faulty node, an
// answer whose first ID is not above every ID this SnowflakeRemote already
// received under the same worker id is refused (Stats().Refused) and the
// fetch moves on.
//
// The IDs of one answer strictly increase, and Next hands them out in that
// order; so does NextN within a batch. IDs of different answers are only
// roughly time-ordered: two nodes' clocks differ, and a batch holds IDs made
// when it was fetched, so the first ID of a new batch may be below the last
// of the previous one. Do not use their order for anything but sorting by
// approximate creation time. IDs are not dense: the rest of the buffer is
// lost on Close.
type SnowflakeRemote struct {
	// cur is the batch Next cuts from; replaced, never mutated, except for
	// its used counter.
	cur atomic.Pointer[idBatch]

	c    *Client
	ns   string
	path string
	cfg  remoteConfig
	// ctx ends with Close or the Client's Close; it bounds the fetches.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	nxt       *idBatch     // the batch fetched ahead, or nil
	inflight  *remoteFetch // the fetch in flight, or nil
	closed    bool
	rr        int             // the endpoint the next fetch asks first
	skipUntil []time.Time     // per endpoint: not asked before (Retry-After)
	highest   map[int64]int64 // per worker id: the highest ID received

	fetches, failures, refused, waits, waitsWhileCached, expired int64
	byEndpoint                                                   map[string]int64
}

// idBatch is one answer's IDs: the block's indices 0..n-1 map to ids.
type idBatch struct {
	block
	ids []int64
	// fetchedAt is when the fetch that brought it started (the IDs were
	// made later): its age counts from here, on the monotonic clock.
	fetchedAt time.Time
	// expiry ends the batch at the maximum age while it is current.
	expiry *time.Timer
}

// remoteFetch is one background fetch; done is closed when it ends.
type remoteFetch struct {
	done    chan struct{}
	err     error // set before done is closed
	lastErr error // the latest failure retried (guarded by SnowflakeRemote.mu)
}

// SnowflakeRemote returns a generator of Snowflake IDs of the namespace made
// by the cluster's nodes (see SnowflakeRemote). It sends nothing until the
// first Next. The error is ErrInvalidArgument for a bad name or option and
// ErrClosed for a closed Client. Close it when done; the Client's Close
// closes it too.
func (c *Client) SnowflakeRemote(namespace string, opts ...RemoteOption) (*SnowflakeRemote, error) {
	if c == nil || c.ctx == nil {
		return nil, invalidf("the Client is nil or was not made by client.New")
	}
	if err := api.ValidateSequenceName(namespace); err != nil {
		return nil, fmt.Errorf("%w: namespace: %v", ErrInvalidArgument, err)
	}
	cfg := remoteConfig{batch: DefaultRemoteBatch, lowWater: -1, maxAge: DefaultRemoteMaxAge}
	for i, o := range opts {
		if o == nil {
			return nil, invalidf("remote option %d is nil", i)
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.lowWater < 0 {
		cfg.lowWater = cfg.batch / 2
	}
	if cfg.lowWater > cfg.batch {
		return nil, invalidf("WithRemoteLowWater: the low-water mark %d is above the batch size %d", cfg.lowWater, cfg.batch)
	}
	if c.ctx.Err() != nil {
		return nil, ErrClosed
	}
	r := &SnowflakeRemote{
		c: c, ns: namespace, cfg: cfg,
		path:       "/v1/namespaces/" + api.PathSegment(namespace) + "/ids",
		rr:         rand.IntN(len(c.endpoints)), // spread many processes' first fetches
		skipUntil:  make([]time.Time, len(c.endpoints)),
		highest:    map[int64]int64{},
		byEndpoint: map[string]int64{},
	}
	r.cur.Store(&idBatch{block: block{trigger: -1}})
	r.ctx, r.cancel = context.WithCancel(c.ctx)
	// The Client's Close ends r.ctx: drop the buffer then too, as a
	// Sequence's is.
	context.AfterFunc(r.ctx, r.discard)
	return r, nil
}

// Namespace is the namespace's name.
func (r *SnowflakeRemote) Namespace() string { return r.ns }

// Next returns the next ID. While the buffer holds IDs it costs one atomic
// add and never touches the network; ctx only bounds the wait when the
// buffer is empty (together with the Client's call timeout). Errors:
// ErrUnavailable when no node could serve before ctx ended (wrapping the
// last failure: ErrNoWorkerLease, ErrNoWorkerFree, a *ClockBehindError,
// ...), ErrNamespaceNotFound, ErrExhausted (the namespace's timestamp bits
// ran out), ErrUnauthorized, ErrInvalidArgument, ErrClosed.
func (r *SnowflakeRemote) Next(ctx context.Context) (int64, error) {
	b := r.cur.Load()
	if i, ok := b.next(); ok {
		if i == b.trigger {
			r.prefetch()
		}
		return b.ids[i], nil
	}
	ids, err := r.takeSlow(ctx, 1, nil)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// NextN takes n IDs (1 <= n <= api.MaxSnowflakeIDs) at once, in the order
// Next would have handed them out: increasing within each batch they come
// from, not sorted across batches. Like Next, it costs one atomic add when
// the current batch holds them; a larger n than the buffer holds fetches
// the rest in one request. On error it returns no IDs (those it had cut are
// skipped).
func (r *SnowflakeRemote) NextN(ctx context.Context, n int) ([]int64, error) {
	if n < 1 || n > api.MaxSnowflakeIDs {
		return nil, invalidf("NextN: n must be between 1 and %d, got %d", api.MaxSnowflakeIDs, n)
	}
	want := int64(n)
	b := r.cur.Load()
	rg, triggered, ok := b.take(want)
	if ok {
		if triggered {
			r.prefetch()
		}
		if rg.Len() == want {
			return append([]int64(nil), b.ids[rg.First:rg.Last+1]...), nil
		}
	}
	out := make([]int64, 0, n)
	if ok {
		out = append(out, b.ids[rg.First:rg.Last+1]...)
	}
	return r.takeSlow(ctx, want-int64(len(out)), out)
}

// takeSlow appends want IDs to out when the current batch is used up: it
// installs the batch fetched ahead, or waits for a fetch.
func (r *SnowflakeRemote) takeSlow(ctx context.Context, want int64, out []int64) ([]int64, error) {
	if ctx == nil {
		return nil, invalidf("nil context")
	}
	waited := false
	for {
		r.mu.Lock()
		for want > 0 {
			ids, ok := r.takeLocked(want)
			if !ok {
				break
			}
			out = append(out, ids...)
			want -= int64(len(ids))
		}
		if want == 0 {
			r.mu.Unlock()
			return out, nil
		}
		if r.closed {
			r.mu.Unlock()
			return nil, ErrClosed
		}
		f := r.inflight
		if f == nil {
			if f = r.startFetchLocked(want); f == nil {
				r.mu.Unlock()
				return nil, ErrClosed
			}
		}
		if !waited {
			waited = true
			r.waitLocked()
			var cancel context.CancelFunc
			ctx, cancel = r.c.withCallTimeout(ctx)
			defer cancel()
		}
		r.mu.Unlock()
		select {
		case <-f.done:
			if f.err != nil {
				return nil, f.err
			}
		case <-ctx.Done():
			r.mu.Lock()
			last := f.lastErr
			r.mu.Unlock()
			if r.ctx.Err() != nil {
				return nil, ErrClosed
			}
			return nil, unavailableError(ctx, last)
		}
	}
}

// waitLocked records that a caller is about to wait on the network; see
// Sequence.waitLocked for why waitsWhileCached must stay zero.
func (r *SnowflakeRemote) waitLocked() {
	r.waits++
	if r.cachedLocked() > 0 {
		r.waitsWhileCached++
	}
}

// takeLocked cuts up to want IDs from the current batch, moving on to the
// batch fetched ahead when the current one is used up.
func (r *SnowflakeRemote) takeLocked(want int64) ([]int64, bool) {
	for {
		b := r.cur.Load()
		if rg, triggered, ok := b.take(want); ok {
			if triggered {
				r.prefetchLocked()
			}
			return b.ids[rg.First : rg.Last+1], true
		}
		if r.nxt == nil {
			return nil, false
		}
		nb := r.nxt
		r.nxt = nil
		if r.tooOld(nb) {
			r.expired++
			continue
		}
		r.installLocked(nb)
	}
}

// tooOld reports whether b is past the maximum age.
func (r *SnowflakeRemote) tooOld(b *idBatch) bool {
	return r.cfg.maxAge > 0 && time.Since(b.fetchedAt) >= r.cfg.maxAge
}

// installLocked makes nb the current batch, with its low-water mark: its
// taker of index n-lowWater starts the next fetch (at once if nb holds
// fewer). A timer ends it at the maximum age: checking the age on every
// Next would cost a clock reading on a path that is otherwise one add.
func (r *SnowflakeRemote) installLocked(nb *idBatch) {
	nb.trigger = -1
	if r.cfg.lowWater > 0 {
		nb.trigger = max(nb.n-int64(r.cfg.lowWater), 0)
	}
	if old := r.cur.Load(); old.expiry != nil {
		old.expiry.Stop()
	}
	if r.cfg.maxAge > 0 {
		nb.expiry = time.AfterFunc(r.cfg.maxAge-time.Since(nb.fetchedAt), func() { r.expire(nb) })
	}
	r.cur.Store(nb)
}

// expire ends b, if it is still the current batch, at its maximum age:
// its counter jumps to n, so every later take finds it used up and moves
// on to a fresher batch. A take whose add came before still gets its ID,
// a moment under the age; none gets an ID twice, since the counter only
// moves up to n, or stays at or above it.
func (r *SnowflakeRemote) expire(b *idBatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur.Load() != b || r.closed {
		return
	}
	if b.used.Load() < b.n {
		b.used.Store(b.n)
		r.expired++
	}
}

func (r *SnowflakeRemote) prefetch() {
	r.mu.Lock()
	r.prefetchLocked()
	r.mu.Unlock()
}

func (r *SnowflakeRemote) prefetchLocked() {
	if r.inflight == nil && r.nxt == nil && !r.closed {
		r.startFetchLocked(0)
	}
}

// startFetchLocked starts a background fetch of a batch, or of want IDs if
// a waiting NextN needs more; nil when closed.
func (r *SnowflakeRemote) startFetchLocked(want int64) *remoteFetch {
	count := max(int64(r.cfg.batch), min(want, api.MaxSnowflakeIDs))
	f := &remoteFetch{done: make(chan struct{})}
	if r.closed || !r.c.goBackground(func() { r.runFetch(f, count) }) {
		return nil
	}
	r.inflight = f
	return f
}

// Close discards the buffer, stops the fetch in flight and waits for it to
// end. Calls made after Close return ErrClosed. It is idempotent and safe to
// call concurrently; it never fails.
func (r *SnowflakeRemote) Close() error {
	if r == nil || r.cancel == nil {
		return nil
	}
	r.cancel()
	r.discard()
	r.mu.Lock()
	f := r.inflight
	r.mu.Unlock()
	if f != nil {
		<-f.done
	}
	return nil
}

// discard drops the buffer and makes every later call return ErrClosed.
func (r *SnowflakeRemote) discard() {
	r.mu.Lock()
	r.closed = true
	r.nxt = nil
	if old := r.cur.Load(); old.expiry != nil {
		old.expiry.Stop()
	}
	r.cur.Store(&idBatch{block: block{trigger: -1}})
	r.mu.Unlock()
}

func (r *SnowflakeRemote) cachedLocked() int64 {
	n := r.cur.Load().remaining()
	if r.nxt != nil {
		n += r.nxt.n
	}
	return n
}

// SnowflakeRemoteStats describes a SnowflakeRemote's buffer and fetches.
type SnowflakeRemoteStats struct {
	// Cached is how many IDs the buffer holds now.
	Cached int64
	// Fetching reports whether a fetch is in flight.
	Fetching bool
	// Fetches counts the batches received.
	Fetches int64
	// Failures counts the attempts that failed and moved on to another
	// node (or to the next round), refused answers included.
	Failures int64
	// Refused counts answers refused as invalid (see SnowflakeRemote).
	Refused int64
	// Expired counts the batches dropped, unused or partly used, because
	// they were older than the maximum age (WithRemoteMaxAge).
	Expired int64
	// Waits counts the Next and NextN calls that waited on the network
	// because the buffer was empty.
	Waits int64
	// WaitsWhileCached counts the waits that found IDs in the buffer all
	// the same: always zero unless the buffer has a bug (see
	// SequenceStats.WaitsWhileCached).
	WaitsWhileCached int64
	// Batch is the batch size asked for.
	Batch int
	// IDsByEndpoint counts the IDs received from each endpoint (base URL).
	IDsByEndpoint map[string]int64
}

// Stats returns a snapshot of the buffer's state and counters.
func (r *SnowflakeRemote) Stats() SnowflakeRemoteStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	by := make(map[string]int64, len(r.byEndpoint))
	for k, v := range r.byEndpoint {
		by[k] = v
	}
	return SnowflakeRemoteStats{
		Cached: r.cachedLocked(), Fetching: r.inflight != nil,
		Fetches: r.fetches, Failures: r.failures, Refused: r.refused, Expired: r.expired,
		Waits: r.waits, WaitsWhileCached: r.waitsWhileCached,
		Batch: r.cfg.batch, IDsByEndpoint: by,
	}
}
