// Package issuer hands out ranges on the leader from blocks of IDs that the
// replicated log has granted it.
//
// Per sequence, the leader holds the unused part of the blocks committed to
// it and cuts each reservation from there in memory. When a block runs low the
// next one is proposed in the background, so steady load never waits for a
// commit; requests that find nothing left wait together on the one proposal
// in flight (group commit). The block requests of all sequences that need
// one while earlier ones are being committed go together as one log entry
// (batcher.go), so thousands of sequences share fsynced rounds instead of
// queueing for one each. Block size follows the observed rate and the size
// of recent requests. Every range is confirmed by a leadership check that
// starts after the range was cut, so a leader that was deposed without
// noticing never hands out a range that a newer leader's range should have
// preceded. Losing leadership drops every block. The package depends on a
// Proposer, not on Raft, so its logic is tested on its own.
package issuer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/metrics"
)

// Proposer is what the issuer needs of the cluster.
type Proposer interface {
	// ReserveBlocks proposes block requests of one or more sequences as
	// one log entry and returns each request's outcome once the entry has
	// committed and been applied on this node. An error is about the
	// entry (not leader, timeout, shut down): no outcome is known.
	ReserveBlocks(ctx context.Context, reqs []fsm.BlockRequest) ([]fsm.BlockOutcome, error)
	// VerifyLeader confirms leadership with evidence gathered after the
	// call began and returns the term.
	VerifyLeader(ctx context.Context) (uint64, error)
	// Sequence reads the local FSM.
	Sequence(name string) (fsm.Sequence, bool)
}

// Errors returned by Reserve. Errors from the Proposer (not leader, timeout,
// the FSM's rejections) are passed through wrapped.
var (
	// ErrNotServing: this node is not (or no longer) a serving leader.
	ErrNotServing = errors.New("not serving as leader")
	// ErrStaleLeadership: the leadership check confirmed a later term than
	// the one the range was cut in; the range is dropped.
	ErrStaleLeadership = errors.New("leadership changed while the range was being served")
	// ErrContended: a request kept losing the race for fresh blocks; it is
	// safe to retry.
	ErrContended = errors.New("could not obtain a block after several attempts")
)

// Config tunes block sizing.
type Config struct {
	// MinBlock is the size of a block when the sequence is idle.
	MinBlock int64
	// MaxBlock bounds a block, and with it the IDs a failover can skip.
	MaxBlock int64
	// BlockDuration is how long a block should last at the observed rate.
	BlockDuration time.Duration
	// RequestsPerBlock makes a block hold at least this many requests of
	// the size the sequence has seen lately, so that a sequence too quiet
	// for its rate to matter (one of thousands) serves almost every
	// request from memory. Every block is a log entry that three nodes
	// fsync and apply, and with thousands of sequences those entries, not
	// the requests, decided the throughput: at 2,000 sequences, 16 clients
	// of 1,000 IDs, 64 requests a block gave 0.72x the one-sequence rate,
	// 256 gave 0.81-1.0x, 512 1.04x (one run each, cmd/ticketd-bench
	// load --sequences). The cost is the IDs a failover skips: at most
	// about two blocks per sequence, which capSize bounds for a small one.
	RequestsPerBlock int64
	// BatchesInFlight bounds the block entries proposed at once; block
	// requests of every sequence that come while they are in flight wait
	// and go together in the next entry (group commit across sequences).
	BatchesInFlight int
	// MaxCachedSequences bounds the sequences the leader keeps in memory
	// (blocks and rate estimates); past it, the least recently used are
	// forgotten, their unused IDs left as a gap.
	MaxCachedSequences int
	// SpanDivisor caps a block at (max-start+1)/SpanDivisor IDs (but at
	// least MinSpanBlock), so that a small sequence is not used up by a
	// few failovers.
	SpanDivisor  int64
	MinSpanBlock int64
	// ProposeTimeout bounds one block proposal.
	ProposeTimeout time.Duration

	// Metrics, if set, receives block and wait metrics.
	Metrics *metrics.Metrics

	// faultConfig holds the planted bugs of the fault-injection build
	// (faults.go, built with the ticketd_faults tag) and nothing in any
	// other build (nofaults.go).
	faultConfig
}

// DefaultConfig returns the production block sizing.
func DefaultConfig() Config {
	return Config{
		MinBlock:           1024,
		MaxBlock:           1 << 28,
		BlockDuration:      500 * time.Millisecond,
		RequestsPerBlock:   256,
		BatchesInFlight:    2,
		MaxCachedSequences: 100_000,
		SpanDivisor:        1024,
		MinSpanBlock:       64,
		ProposeTimeout:     5 * time.Second,
	}
}

// Validate reports settings the issuer cannot work with: SpanDivisor
// divides, and blocks of fewer than one ID, or a cap below the idle size,
// would leave a sequence without a block to serve from.
func (c Config) Validate() error {
	var errs []error
	if c.MinBlock < 1 || c.MaxBlock < c.MinBlock {
		errs = append(errs, fmt.Errorf("block sizes: want 1 <= min (%d) <= max (%d)", c.MinBlock, c.MaxBlock))
	}
	if c.SpanDivisor < 1 || c.MinSpanBlock < 1 {
		errs = append(errs, fmt.Errorf("span divisor (%d) and min span block (%d) must be at least 1", c.SpanDivisor, c.MinSpanBlock))
	}
	if c.BlockDuration <= 0 || c.ProposeTimeout <= 0 {
		errs = append(errs, errors.New("block duration and propose timeout must be positive"))
	}
	if c.RequestsPerBlock < 0 || c.BatchesInFlight < 1 || c.MaxCachedSequences < 1 {
		errs = append(errs, fmt.Errorf("requests per block (%d) must not be negative, batches in flight (%d) and cached sequences (%d) at least 1",
			c.RequestsPerBlock, c.BatchesInFlight, c.MaxCachedSequences))
	}
	return errors.Join(errs...)
}

// Range is an inclusive range of IDs.
type Range struct {
	First, Last int64
}

// Issuer serves reservations on the leader. The node tells it when leadership
// starts (Acquire, after the Barrier) and ends (Drop).
type Issuer struct {
	p       Proposer
	cfg     Config
	now     func() time.Time // monotonic readings for rate estimates only
	batcher *batcher

	mu      sync.RWMutex
	serving bool
	term    uint64
	seqs    map[string]*sequence
}

// New returns an issuer that serves nothing until LeadershipAcquired.
func New(p Proposer, cfg Config) *Issuer {
	is := &Issuer{p: p, cfg: cfg, now: time.Now, seqs: map[string]*sequence{}}
	is.batcher = &batcher{is: is}
	return is
}

// Acquire starts serving in term with no blocks. Call it only once this
// node's FSM has applied everything committed before the term (a Barrier).
func (is *Issuer) Acquire(term uint64) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.cfg.keepBlocks() {
		for _, s := range is.seqs {
			s.mu.Lock()
			s.term, s.dead = term, false
			s.mu.Unlock()
		}
		is.serving, is.term = true, term
		return
	}
	is.dropLocked()
	is.serving, is.term = true, term
}

// Drop stops serving and forgets every block. Requests waiting on a
// proposal fail with ErrNotServing; their ranges were never handed out.
func (is *Issuer) Drop() {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.cfg.keepBlocks() {
		is.serving = false
		return
	}
	is.dropLocked()
}

func (is *Issuer) dropLocked() {
	for _, s := range is.seqs {
		s.mu.Lock()
		s.dead = true
		s.next, s.avail = 0, 0
		if s.pending != nil {
			// Waiters fail now: the proposal may be stuck behind a lost
			// quorum until its timeout, and its block is dead anyway.
			s.pending.finish(ErrNotServing)
			s.pending = nil
		}
		s.mu.Unlock()
	}
	is.batcher.discard() // requests not yet proposed belong to dead sequences
	is.seqs = map[string]*sequence{}
	is.serving = false
}

// Serving reports whether the issuer is serving and in which term.
func (is *Issuer) Serving() (uint64, bool) {
	is.mu.RLock()
	defer is.mu.RUnlock()
	return is.term, is.serving
}

func (is *Issuer) sequence(name string) (*sequence, uint64, error) {
	is.mu.RLock()
	s, ok := is.seqs[name]
	serving, term := is.serving, is.term
	is.mu.RUnlock()
	if !serving {
		return nil, 0, ErrNotServing
	}
	if ok {
		return s, term, nil
	}
	st, found := is.p.Sequence(name)
	if !found {
		return nil, 0, fmt.Errorf("%w: %q", fsm.ErrSequenceNotFound, name)
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	if !is.serving || is.term != term {
		return nil, 0, ErrNotServing
	}
	if s, ok = is.seqs[name]; ok {
		return s, term, nil
	}
	if len(is.seqs) >= is.cfg.MaxCachedSequences {
		is.evictLocked()
	}
	span := st.Max - st.Start + 1 // start >= 1, so this fits an int64
	capSize := max(span/is.cfg.SpanDivisor, is.cfg.MinSpanBlock)
	s = &sequence{is: is, name: name, term: term, capSize: min(capSize, is.cfg.MaxBlock), lastProposal: is.now()}
	is.seqs[name] = s
	return s, term, nil
}

// evictLocked forgets sequences until at most three quarters of
// MaxCachedSequences are left, so that a sweep, which visits every cached
// sequence, comes at most once per quarter of the bound's insertions. As in
// the CLOCK algorithm, it first forgets those no request has used since the
// previous sweep, then, if that was not enough, any without a proposal in
// flight. A forgotten sequence's unused IDs are a gap; a request that holds
// it looks it up again (errEvicted). is.mu is held.
func (is *Issuer) evictLocked() {
	target := is.cfg.MaxCachedSequences * 3 / 4
	before := len(is.seqs)
	for pass := 0; pass < 2 && len(is.seqs) > target; pass++ {
		for name, s := range is.seqs {
			if len(is.seqs) <= target {
				break
			}
			s.mu.Lock()
			if s.pending == nil && (pass == 1 || !s.used) {
				s.evicted, s.dead = true, true
				s.next, s.avail = 0, 0
				delete(is.seqs, name)
			}
			s.used = false
			s.mu.Unlock()
		}
	}
	is.cfg.Metrics.ObserveSequencesEvicted(before - len(is.seqs))
}

// errEvicted: the sequence was forgotten while a request held it; the
// request looks it up again.
var errEvicted = errors.New("sequence evicted from the leader's cache")

// Reserve hands out count IDs of the named sequence.
func (is *Issuer) Reserve(ctx context.Context, name string, count int64) (Range, error) {
	if count < 1 {
		return Range{}, fmt.Errorf("%w: count %d", fsm.ErrInvalidCommand, count)
	}
	var (
		first int64
		term  uint64
		err   error
	)
	for range maxTakeAttempts {
		var s *sequence
		if s, term, err = is.sequence(name); err != nil {
			return Range{}, err
		}
		if first, err = s.take(ctx, count); !errors.Is(err, errEvicted) {
			break
		}
	}
	switch {
	case errors.Is(err, errEvicted):
		return Range{}, ErrContended
	case err != nil:
		return Range{}, err
	}
	if is.cfg.skipVerify() {
		return Range{First: first, Last: first + count - 1}, nil
	}
	// The range is cut; now prove nobody newer could have served a higher
	// one before this request began. If that fails, the range is a gap.
	vterm, err := is.p.VerifyLeader(ctx)
	if err != nil {
		return Range{}, err
	}
	if vterm != term {
		return Range{}, fmt.Errorf("%w: cut in term %d, confirmed term %d", ErrStaleLeadership, term, vterm)
	}
	return Range{First: first, Last: first + count - 1}, nil
}

// Raise makes this leader serve nothing at or below atLeast from the blocks
// it holds for the named sequence, now or once a block in flight arrives.
// Call it once a raise entry to atLeast has applied: blocks proposed after
// that lie above it, but the state machine counts the blocks it granted
// before, so a raise into one of them moves no mark and the IDs below
// atLeast that this leader still holds must be cut here.
func (is *Issuer) Raise(name string, atLeast int64) {
	is.mu.RLock()
	s, ok := is.seqs[name]
	is.mu.RUnlock()
	if !ok {
		// Not cached: its next block is proposed after the raise applied.
		return
	}
	if is.cfg.raiseNoCut() {
		return // the planted bug raise-no-cut (faults.go)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.floor = max(s.floor, atLeast)
	s.cutToFloor()
}

// cutToFloor drops the held IDs at or below the floor; s.mu is held.
func (s *sequence) cutToFloor() {
	if s.avail == 0 || s.next > s.floor {
		return
	}
	cut := min(s.floor-s.next+1, s.avail)
	s.avail -= cut
	if s.avail > 0 {
		s.next += cut
	} else {
		s.next = 0
	}
}

// sequence is the leader's in-memory state for one sequence in one term.
type sequence struct {
	is      *Issuer
	name    string
	term    uint64
	capSize int64

	mu      sync.Mutex
	dead    bool  // leadership ended, or evicted: serve nothing more
	evicted bool  // forgotten by evictLocked (dead too)
	used    bool  // a request came since the last eviction sweep
	next    int64 // first unused ID, meaningful when avail > 0
	avail   int64 // unused IDs from next on, all committed to this leader
	floor   int64 // the highest raise seen: IDs at or below it are never served
	pending *proposal

	// Rate and request-size estimates, for block sizing only.
	servedSince  int64
	lastProposal time.Time
	rate         float64 // IDs per second
	largest      int64   // the largest request since the last proposal
	reqSize      float64 // the request size a block is sized for
	lastBlock    int64

	faultState // the planted bugs' state, in the fault-injection build only
}

type proposal struct {
	min  int64
	done chan struct{}
	err  error // set before done closes
	once sync.Once
}

// finish ends the wait of every request on the proposal; only the first
// call counts (Drop may finish it before the proposal itself returns).
func (p *proposal) finish(err error) {
	p.once.Do(func() {
		p.err = err
		close(p.done)
	})
}

const maxTakeAttempts = 16

// rateWindow is the time constant of the rate estimate.
const rateWindow = time.Second

// take cuts count IDs from the blocks, waiting for a block when needed.
func (s *sequence) take(ctx context.Context, count int64) (int64, error) {
	for attempt := 0; attempt < maxTakeAttempts; attempt++ {
		s.mu.Lock()
		if s.dead {
			s.mu.Unlock()
			if s.evicted {
				return 0, errEvicted
			}
			return 0, ErrNotServing
		}
		s.used = true
		if attempt == 0 {
			s.largest = max(s.largest, count)
		}
		if s.avail >= count {
			first := s.next
			s.avail -= count
			if s.avail > 0 {
				s.next = first + count // cannot overflow: first+count-1 < last <= MaxInt64
			} else {
				s.next = 0
			}
			s.servedSince += count
			if s.pending == nil && s.avail < s.lowWater() {
				s.propose(1)
			}
			s.mu.Unlock()
			return first, nil
		}
		// Not enough here. If the next block is contiguous (it is, unless
		// another leader came between) it extends what is left.
		need := count - s.avail
		if s.pending == nil {
			s.propose(need)
		}
		p := s.pending
		s.mu.Unlock()
		if p == nil { // only with the planted bug serve-uncommitted (faults.go)
			continue
		}

		waitStart := time.Now()
		select {
		case <-p.done:
			s.is.cfg.Metrics.ObserveBlockWait(time.Since(waitStart))
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		if p.err != nil {
			if errors.Is(p.err, fsm.ErrSequenceExhausted) {
				// The FSM had fewer than p.min left. If we need at least
				// that much beyond what we hold, nothing can serve us.
				s.mu.Lock()
				held := s.avail
				s.mu.Unlock()
				if count-held >= p.min {
					return 0, s.exhausted(count, held)
				}
				continue
			}
			return 0, p.err
		}
	}
	return 0, ErrContended
}

// exhausted is the error for a request of count IDs that neither the held
// IDs nor the state machine can serve. It names the request and everything
// left (held here, and never granted): the block request's own shortfall,
// which the state machine's error names, means nothing to the caller.
func (s *sequence) exhausted(count, held int64) error {
	left, maxID := held, int64(0)
	if st, ok := s.is.p.Sequence(s.name); ok {
		left += st.Remaining()
		maxID = st.Max
	}
	return fmt.Errorf("%w: %q has %d IDs left (max %d), %d asked for", fsm.ErrSequenceExhausted, s.name, left, maxID, count)
}

// lowWater is the level below which the next block is fetched in advance.
func (s *sequence) lowWater() int64 { return s.lastBlock / 2 }

// propose starts the one block proposal of this sequence; s.mu is held.
func (s *sequence) propose(need int64) {
	// The rate is the average since the last proposal, folded into a
	// moving average weighted by time (time constant rateWindow): after a
	// long idle stretch the old rate is forgotten, so the first block after
	// it is small. Proposals in the same clock tick accumulate. The request
	// size is the largest request since the last proposal, or the earlier
	// estimate fading on the same time constant if that was larger.
	now := s.is.now()
	if elapsed := now.Sub(s.lastProposal).Seconds(); elapsed > 0 {
		sample := float64(s.servedSince) / elapsed
		alpha := 1 - math.Exp(-elapsed/rateWindow.Seconds())
		s.rate += alpha * (sample - s.rate)
		s.reqSize *= 1 - alpha
		s.servedSince, s.lastProposal = 0, now
	}
	s.reqSize = max(s.reqSize, float64(s.largest))
	s.largest = 0

	cfg := s.is.cfg
	size := int64(max(s.rate*cfg.BlockDuration.Seconds(), s.reqSize*float64(cfg.RequestsPerBlock)))
	size = min(max(size, cfg.MinBlock), s.capSize)
	size = max(size, need)
	s.lastBlock = size

	if s.is.cfg.serveUncommitted() {
		s.serveUncommitted(size)
		return
	}
	p := &proposal{min: need, done: make(chan struct{})}
	s.pending = p
	s.is.batcher.submit(blockCall{s: s, p: p, req: fsm.BlockRequest{Name: s.name, Count: size, Min: need}})
}

// granted takes the outcome of proposal p: the block joins what is left, or
// every request waiting on p fails with err.
func (s *sequence) granted(p *proposal, b fsm.Block, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.dead:
		err = ErrNotServing
	case err == nil && b.Term != s.term:
		// Granted in another term than this state belongs to: leadership
		// changed under us. Never serve it.
		err = fmt.Errorf("%w: block granted in term %d, serving term %d", ErrStaleLeadership, b.Term, s.term)
	case err == nil:
		s.is.cfg.Metrics.ObserveBlock(s.name, b.Len())
		if s.avail > 0 && s.next+s.avail == b.First {
			s.avail += b.Len()
		} else {
			// Whatever is left is not contiguous with the new block and
			// too small for the waiting request: it becomes a gap.
			s.next, s.avail = b.First, b.Len()
		}
		s.cutToFloor() // a block granted before a raise that came since
	}
	if s.pending == p {
		s.pending = nil
	}
	p.finish(err)
}
