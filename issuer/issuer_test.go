package issuer

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/internal/testkit"
)

// fsmProposer applies commands straight to a real FSM, as a single-node
// cluster whose log commits instantly would. gate, when set, holds every
// proposal until it is closed, so tests can pile requests onto one proposal.
type fsmProposer struct {
	mu        sync.Mutex
	f         *fsm.FSM
	index     uint64
	term      uint64
	proposals atomic.Int64
	gate      chan struct{}
	verifyErr error
	sizes     []int64
	batches   []int         // requests per proposal
	delay     time.Duration // each proposal takes this long, as a commit does
}

func newFSMProposer(t *testing.T, seqs ...fsm.CreateSequence) *fsmProposer {
	p := &fsmProposer{f: fsm.New(), term: 1}
	for _, c := range seqs {
		if _, err := p.apply(fsm.EncodeCreateSequence(c)); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func (p *fsmProposer) apply(data []byte) (any, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.index++
	resp := p.f.Apply(&raft.Log{Index: p.index, Term: p.term, Type: raft.LogCommand, Data: data})
	if err, ok := resp.(error); ok {
		return nil, err
	}
	return resp, nil
}

func (p *fsmProposer) ReserveBlocks(ctx context.Context, reqs []fsm.BlockRequest) ([]fsm.BlockOutcome, error) {
	p.proposals.Add(1)
	p.mu.Lock()
	gate := p.gate
	for _, r := range reqs {
		p.sizes = append(p.sizes, r.Count)
	}
	p.batches = append(p.batches, len(reqs))
	p.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if p.delay > 0 {
		time.Sleep(p.delay)
	}
	return applyBlocks(p.apply, reqs)
}

// applyBlocks proposes reqs as a cluster node does: one ReserveBlock entry
// for a lone request, one ReserveBlocks entry for several.
func applyBlocks(apply func([]byte) (any, error), reqs []fsm.BlockRequest) ([]fsm.BlockOutcome, error) {
	if len(reqs) == 1 {
		r := reqs[0]
		resp, err := apply(fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: r.Name, Count: r.Count, Min: r.Min}))
		if err != nil {
			return []fsm.BlockOutcome{{Err: err}}, nil
		}
		return []fsm.BlockOutcome{{Block: resp.(fsm.Block)}}, nil
	}
	resp, err := apply(fsm.EncodeReserveBlocks(fsm.ReserveBlocks{Requests: reqs}))
	if err != nil {
		return nil, err
	}
	return resp.(fsm.BlockBatch).Outcomes, nil
}

func (p *fsmProposer) VerifyLeader(context.Context) (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.term, p.verifyErr
}

func (p *fsmProposer) Sequence(name string) (fsm.Sequence, bool) { return p.f.Sequence(name) }

func testConfig() Config {
	c := DefaultConfig()
	c.ProposeTimeout = 5 * time.Second
	return c
}

func TestReserve_NotServingUntilAcquired(t *testing.T) {
	p := newFSMProposer(t, fsm.CreateSequence{Name: "s", Start: 1, Max: 1 << 40})
	is := New(p, testConfig())
	if _, err := is.Reserve(context.Background(), "s", 1); !errors.Is(err, ErrNotServing) {
		t.Fatalf("err = %v, want ErrNotServing", err)
	}
	is.Acquire(1)
	r, err := is.Reserve(context.Background(), "s", 10)
	if err != nil || r.First != 1 || r.Last != 10 {
		t.Fatalf("got %+v, %v", r, err)
	}
}

func TestReserve_UnknownSequence_NoProposal(t *testing.T) {
	p := newFSMProposer(t)
	is := New(p, testConfig())
	is.Acquire(1)
	if _, err := is.Reserve(context.Background(), "nope", 1); !errors.Is(err, fsm.ErrSequenceNotFound) {
		t.Fatalf("err = %v, want ErrSequenceNotFound", err)
	}
	if n := p.proposals.Load(); n != 0 {
		t.Fatalf("%d proposals for an unknown sequence, want 0", n)
	}
}

// Concurrent requests that find no block wait on one proposal.
func TestReserve_ConcurrentRequests_ShareOneProposal(t *testing.T) {
	p := newFSMProposer(t, fsm.CreateSequence{Name: "s", Start: 1, Max: 1 << 40})
	p.gate = make(chan struct{})
	is := New(p, testConfig())
	is.Acquire(1)
	const callers = 50
	var wg sync.WaitGroup
	ranges := make([]Range, callers)
	errs := make([]error, callers)
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ranges[i], errs[i] = is.Reserve(context.Background(), "s", 3)
		}()
	}
	// Let every caller reach the wait, then release the one proposal.
	testkit.Eventually(t, 5*time.Second, time.Millisecond, "the first proposal", func() bool { return p.proposals.Load() >= 1 })
	time.Sleep(50 * time.Millisecond)
	close(p.gate)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	checkDisjoint(t, ranges)
	// One block (1024 IDs) covers all 150 IDs; the prefetch that the
	// last takes may trigger is the only other proposal allowed.
	if n := p.proposals.Load(); n > 2 {
		t.Fatalf("%d proposals for %d concurrent callers, want 1 (plus at most one prefetch)", n, callers)
	}
}

// The next block is proposed before the current one runs out, so a steady
// stream of requests never waits for a commit once it is warm.
func TestReserve_PrefetchesBeforeBlockRunsOut(t *testing.T) {
	p := newFSMProposer(t, fsm.CreateSequence{Name: "s", Start: 1, Max: 1 << 40})
	cfg := testConfig()
	cfg.MinBlock = 100
	is := New(p, cfg)
	is.Acquire(1)
	var got []Range
	for i := 0; i < 60; i++ { // 600 IDs: six blocks' worth at the minimum size
		r, err := is.Reserve(context.Background(), "s", 10)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
		// Let the background prefetch land, as time between requests
		// would.
		waitIdle(t, is, "s")
	}
	checkDisjoint(t, got)
	// With prefetch, consecutive ranges of one caller are contiguous: blocks
	// from one leader in one term follow each other in the log.
	for i := 1; i < len(got); i++ {
		if got[i].First != got[i-1].Last+1 {
			t.Fatalf("gap between %+v and %+v: a block was dropped", got[i-1], got[i])
		}
	}
	s := is.seqs["s"]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.avail == 0 {
		t.Fatalf("no block prefetched after the last request")
	}
}

// waitIdle waits until the sequence has no proposal in flight.
func waitIdle(t *testing.T, is *Issuer, name string) {
	t.Helper()
	testkit.Eventually(t, 5*time.Second, time.Millisecond, "no proposal in flight on "+name, func() bool {
		is.mu.RLock()
		s := is.seqs[name]
		is.mu.RUnlock()
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.pending == nil
	})
}

// Under load blocks grow, bounded by MaxBlock; at rest they fall back.
func TestBlockSize_FollowsRate_Bounded(t *testing.T) {
	p := newFSMProposer(t, fsm.CreateSequence{Name: "s", Start: 1, Max: 1 << 62})
	cfg := testConfig()
	cfg.MinBlock, cfg.MaxBlock = 1000, 1<<20
	is := New(p, cfg)
	var now atomic.Int64
	base := time.Now()
	is.now = func() time.Time { return base.Add(time.Duration(now.Load())) }
	is.Acquire(1)
	ctx := context.Background()
	// 10 requests of 100,000 IDs per simulated millisecond: 1e9 IDs/s.
	for i := 0; i < 200; i++ {
		if _, err := is.Reserve(ctx, "s", 100_000); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			now.Add(int64(time.Millisecond))
		}
		waitIdle(t, is, "s")
	}
	p.mu.Lock()
	biggest := int64(0)
	for _, sz := range p.sizes {
		biggest = max(biggest, sz)
	}
	p.mu.Unlock()
	if biggest != cfg.MaxBlock {
		t.Fatalf("largest block %d under heavy load, want the bound %d", biggest, cfg.MaxBlock)
	}
	// Idle for a minute, then the held block is used up: the next block is
	// sized by the rate since (small), and after more idle minutes it is
	// back at the minimum once the large requests are forgotten too (the
	// request that needs the last block asks for one ID).
	for round := 0; round < 3; round++ {
		now.Add(int64(time.Minute))
		drain(t, is, "s")
	}
	for round := 0; round < 2; round++ {
		now.Add(int64(time.Minute))
		forget(is, "s")
		if _, err := is.Reserve(ctx, "s", 1); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, is, "s")
	}
	p.mu.Lock()
	last := p.sizes[len(p.sizes)-1]
	p.mu.Unlock()
	if last != cfg.MinBlock {
		t.Fatalf("block size %d after idle minutes, want %d (%v)", last, cfg.MinBlock, p.sizes[len(p.sizes)-8:])
	}
}

// forget drops what is left of the held block (as a gap), so that the next
// request needs a block.
func forget(is *Issuer, name string) {
	is.mu.RLock()
	s := is.seqs[name]
	is.mu.RUnlock()
	s.mu.Lock()
	s.next, s.avail = 0, 0
	s.mu.Unlock()
}

// drain reserves whatever the held block has left plus one ID, which forces a
// new proposal.
func drain(t *testing.T, is *Issuer, name string) {
	t.Helper()
	is.mu.RLock()
	s := is.seqs[name]
	is.mu.RUnlock()
	s.mu.Lock()
	n := s.avail + 1
	s.mu.Unlock()
	if _, err := is.Reserve(context.Background(), name, n); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, is, name)
}

// A small sequence is not burnt by a few failovers: blocks are capped at a
// fraction of its span.
func TestBlockSize_CappedBySequenceSpan(t *testing.T) {
	p := newFSMProposer(t, fsm.CreateSequence{Name: "small", Start: 1, Max: 100_000})
	is := New(p, testConfig())
	is.Acquire(1)
	if _, err := is.Reserve(context.Background(), "small", 1); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, is, "small")
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, sz := range p.sizes {
		if sz > 100_000/1024 && sz > 64 {
			t.Fatalf("block of %d IDs for a sequence of 100,000, want at most %d", sz, 100_000/1024)
		}
	}
}

// Near its max a sequence serves what fits and then fails loudly, never
// wrapping.
func TestReserve_NearMax_ServesWhatFitsThenExhausted(t *testing.T) {
	const maxID = 1<<63 - 1
	p := newFSMProposer(t, fsm.CreateSequence{Name: "top", Start: maxID - 99, Max: maxID})
	is := New(p, testConfig())
	is.Acquire(1)
	ctx := context.Background()
	var got []Range
	for i := 0; i < 9; i++ {
		r, err := is.Reserve(ctx, "top", 11)
		if err != nil {
			t.Fatalf("reserve %d: %v", i, err)
		}
		got = append(got, r)
	}
	// 99 of 100 IDs handed out; 11 more do not fit.
	if _, err := is.Reserve(ctx, "top", 11); !errors.Is(err, fsm.ErrSequenceExhausted) {
		t.Fatalf("err = %v, want ErrSequenceExhausted", err)
	}
	r, err := is.Reserve(ctx, "top", 1)
	if err != nil {
		t.Fatalf("last ID: %v", err)
	}
	if r.First != maxID || r.Last != maxID {
		t.Fatalf("last range %+v, want the single ID %d", r, int64(maxID))
	}
	got = append(got, r)
	if _, err := is.Reserve(ctx, "top", 1); !errors.Is(err, fsm.ErrSequenceExhausted) {
		t.Fatalf("err = %v, want ErrSequenceExhausted", err)
	}
	checkDisjoint(t, got)
	for _, r := range got {
		if r.First <= 0 || r.Last < r.First {
			t.Fatalf("range %+v wrapped", r)
		}
	}
}

// Losing leadership drops every block: requests waiting on a proposal fail,
// and the next term starts from blocks the FSM grants anew, above the old.
func TestDrop_WaitersFail_NextTermStartsAbove(t *testing.T) {
	p := newFSMProposer(t, fsm.CreateSequence{Name: "s", Start: 1, Max: 1 << 40})
	is := New(p, testConfig())
	is.Acquire(1)
	ctx := context.Background()
	first, err := is.Reserve(ctx, "s", 5)
	if err != nil {
		t.Fatal(err)
	}
	waitIdle(t, is, "s")
	p.mu.Lock()
	p.gate = make(chan struct{})
	p.mu.Unlock()
	errc := make(chan error, 1)
	go func() {
		_, err := is.Reserve(ctx, "s", 1_000_000) // needs a new block
		errc <- err
	}()
	testkit.Eventually(t, 5*time.Second, time.Millisecond, "the second proposal", func() bool { return p.proposals.Load() >= 2 })
	is.Drop()
	close(p.gate)
	if err := <-errc; !errors.Is(err, ErrNotServing) {
		t.Fatalf("waiter err = %v, want ErrNotServing", err)
	}
	// The dropped proposal still commits; a new leader's Barrier waits
	// for it, as this does.
	testkit.Eventually(t, 5*time.Second, time.Millisecond, "the dropped proposal to commit", func() bool {
		seq, _ := p.Sequence("s")
		return seq.Issued >= 1_000_000
	})
	if _, err := is.Reserve(ctx, "s", 1); !errors.Is(err, ErrNotServing) {
		t.Fatalf("after drop: err = %v, want ErrNotServing", err)
	}
	p.mu.Lock()
	p.gate, p.term = nil, 2
	p.mu.Unlock()
	is.Acquire(2)
	next, err := is.Reserve(ctx, "s", 1)
	if err != nil {
		t.Fatal(err)
	}
	seq, _ := p.Sequence("s")
	if next.First <= first.Last || next.First <= 1_000_000 {
		t.Fatalf("range %+v in the new term is not above the dropped blocks (mark %d)", next, seq.Issued)
	}
}

// A range whose leadership check fails is never returned; a check that
// confirms a different term is treated the same.
func TestReserve_VerifyFails_RangeNotReturned(t *testing.T) {
	p := newFSMProposer(t, fsm.CreateSequence{Name: "s", Start: 1, Max: 1 << 40})
	is := New(p, testConfig())
	is.Acquire(1)
	p.verifyErr = errors.New("deposed")
	if r, err := is.Reserve(context.Background(), "s", 1); err == nil {
		t.Fatalf("got %+v with a failed leadership check", r)
	}
	p.mu.Lock()
	p.verifyErr, p.term = nil, 7
	p.mu.Unlock()
	if _, err := is.Reserve(context.Background(), "s", 1); !errors.Is(err, ErrStaleLeadership) {
		t.Fatalf("err = %v, want ErrStaleLeadership", err)
	}
}

// A block granted in another term than the one being served is not used.
func TestRunProposal_BlockFromOtherTerm_Discarded(t *testing.T) {
	p := newFSMProposer(t, fsm.CreateSequence{Name: "s", Start: 1, Max: 1 << 40})
	p.term = 3 // the log says term 3...
	is := New(p, testConfig())
	is.Acquire(2) // ...but this state belongs to term 2
	if _, err := is.Reserve(context.Background(), "s", 1); !errors.Is(err, ErrStaleLeadership) {
		t.Fatalf("err = %v, want ErrStaleLeadership", err)
	}
}

func TestReserve_ContextCancelledWhileWaiting(t *testing.T) {
	p := newFSMProposer(t, fsm.CreateSequence{Name: "s", Start: 1, Max: 1 << 40})
	p.gate = make(chan struct{})
	defer close(p.gate)
	is := New(p, testConfig())
	is.Acquire(1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := is.Reserve(ctx, "s", 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
}

// Many goroutines, many sequences, random counts: every range disjoint and
// of the asked length, and each caller's ranges increase.
func TestReserve_ConcurrentMixedLoad_Disjoint(t *testing.T) {
	p := newFSMProposer(t,
		fsm.CreateSequence{Name: "a", Start: 1, Max: 1 << 50},
		fsm.CreateSequence{Name: "b", Start: 1000, Max: 1 << 30},
	)
	cfg := testConfig()
	cfg.MinBlock = 64
	is := New(p, cfg)
	is.Acquire(1)
	var mu sync.Mutex
	got := map[string][]Range{}
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := []string{"a", "b"}[g%2]
			var last int64
			for i := 0; i < 300; i++ {
				n := int64(1 + (i*7+g*13)%200)
				r, err := is.Reserve(context.Background(), name, n)
				if err != nil {
					t.Error(err)
					return
				}
				if r.Last-r.First+1 != n || r.First <= last {
					t.Errorf("range %+v for %d after %d", r, n, last)
				}
				last = r.Last
				mu.Lock()
				got[name] = append(got[name], r)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, rs := range got {
		checkDisjoint(t, rs)
	}
}

func checkDisjoint(t *testing.T, rs []Range) {
	t.Helper()
	rs = append([]Range(nil), rs...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].First < rs[j].First })
	for i := 1; i < len(rs); i++ {
		if rs[i].First <= rs[i-1].Last {
			t.Fatalf("overlap: %+v and %+v", rs[i-1], rs[i])
		}
	}
}

func BenchmarkReserve_FromBlock(b *testing.B) {
	p := &fsmProposer{f: fsm.New(), term: 1}
	if _, err := p.apply(fsm.EncodeCreateSequence(fsm.CreateSequence{Name: "s", Start: 1, Max: 1<<63 - 1})); err != nil {
		b.Fatal(err)
	}
	is := New(p, DefaultConfig())
	is.Acquire(1)
	ctx := context.Background()
	var contended atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := is.Reserve(ctx, "s", 1000); err != nil {
				// See BenchmarkHotIssuerReserveParallel.
				if errors.Is(err, ErrContended) {
					contended.Add(1)
					continue
				}
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(contended.Load())/float64(b.N), "contended/op")
}

// Drop fails the requests waiting on a block proposal at once, not when the
// proposal (which may be stuck behind a lost quorum) ends.
func TestDrop_WakesWaitersWhileProposalIsStuck(t *testing.T) {
	p := newFSMProposer(t, fsm.CreateSequence{Name: "s", Start: 1, Max: 1 << 40})
	cfg := testConfig()
	cfg.ProposeTimeout = time.Minute
	is := New(p, cfg)
	is.Acquire(1)
	p.mu.Lock()
	p.gate = make(chan struct{}) // the proposal never completes until the test ends
	p.mu.Unlock()
	defer close(p.gate)
	errc := make(chan error, 1)
	go func() {
		_, err := is.Reserve(context.Background(), "s", 1)
		errc <- err
	}()
	testkit.Eventually(t, 5*time.Second, time.Millisecond, "the first proposal", func() bool { return p.proposals.Load() >= 1 })
	is.Drop()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrNotServing) {
			t.Fatalf("waiter err = %v, want ErrNotServing", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter still waits on the stuck proposal 10 s after Drop")
	}
}

// A burst of concurrent large reservations on a cold sequence, with
// proposals as slow as an fsynced commit, is served whole: the first blocks
// are the idle size (1,024 IDs, about one request of 1,000), and the rate
// estimate must grow them fast enough that no waiter loses the race for
// fresh blocks maxTakeAttempts times (ErrContended, a 503).
func TestReserve_ColdSequenceBurstOfLargeRequests_AllServed(t *testing.T) {
	p := newFSMProposer(t, fsm.CreateSequence{Name: "s", Start: 1, Max: 1<<63 - 1})
	p.delay = 500 * time.Microsecond // an fsynced commit on this machine
	is := New(p, DefaultConfig())
	is.Acquire(1)
	const callers, count = 64, 1000
	var wg sync.WaitGroup
	got := make([]Range, callers)
	errs := make([]error, callers)
	start := make(chan struct{})
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got[i], errs[i] = is.Reserve(context.Background(), "s", count)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("caller %d of %d: %v (after %d proposals)", i, callers, err, p.proposals.Load())
		}
	}
	checkDisjoint(t, got)
	t.Logf("%d proposals for %d callers", p.proposals.Load(), callers)
}

// The exhaustion error names what the caller asked for and what is really
// left: the IDs of the leader's block and those never granted. It used to
// name the block request's shortfall ("0 IDs left, 3 needed" for a request
// of 5 with 2 left), which misled whoever read it.
func TestReserve_Exhausted_ErrorNamesTheRequestAndWhatIsLeft(t *testing.T) {
	p := newFSMProposer(t, fsm.CreateSequence{Name: "small", Start: 1, Max: 10})
	is := New(p, testConfig())
	is.Acquire(1)
	ctx := context.Background()
	if r, err := is.Reserve(ctx, "small", 8); err != nil || r.Last != 8 {
		t.Fatalf("reserve 8: %+v, %v", r, err)
	}
	_, err := is.Reserve(ctx, "small", 5)
	if !errors.Is(err, fsm.ErrSequenceExhausted) {
		t.Fatalf("err = %v, want ErrSequenceExhausted", err)
	}
	if want := `"small" has 2 IDs left (max 10), 5 asked for`; !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %q, want it to say %q", err, want)
	}
	if r, err := is.Reserve(ctx, "small", 2); err != nil || r.First != 9 || r.Last != 10 {
		t.Fatalf("reserve the last 2: %+v, %v", r, err)
	}
}
