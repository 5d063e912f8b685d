package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Many sequences (issue 17): `load --sequences N` spreads every worker's
// requests uniformly at random over N sequences, as a platform that gives
// every table its own sequence does. The single-sequence path (N = 1) is
// untouched: it is the httpBackend of backend.go.

// seqReserver is a reserver over several sequences: each call picks one and
// says which, so that ranges are checked per sequence (IDs of different
// sequences may coincide).
type seqReserver interface {
	reserver
	reserveSeq(ctx context.Context) (seq int, r idRange, retries int, err error)
}

// setupWorkers bounds the concurrent PUTs that create the sequences.
const setupWorkers = 32

// setupPerSequence is the setup time allowed per sequence beyond the
// first, on top of --setup-timeout (which covers a cluster still electing
// its leader). Each creation is one fsynced Raft entry; 10 ms each is ten
// times slower than a 3-node cluster on a laptop's SSD with 32 PUTs in
// flight, so 10,000 sequences get 100 s more before the run gives up.
const setupPerSequence = 10 * time.Millisecond

// sequenceNames returns the n names of a many-sequences run: prefix-i with
// i zero-padded to the width of n, so that they sort (bench-00000 ..
// bench-09999 for 10,000). n <= 1 is the prefix itself.
func sequenceNames(prefix string, n int) []string {
	if n <= 1 {
		return []string{prefix}
	}
	width := len(strconv.Itoa(n))
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%0*d", prefix, width, i)
	}
	return out
}

// manySeqSetupTimeout is how long creating n sequences may take in all.
func manySeqSetupTimeout(base time.Duration, n int) time.Duration {
	return base + time.Duration(max(n-1, 0))*setupPerSequence
}

// manySeqBackend drives ticketd over HTTP like httpBackend, over many
// sequences. The ranges URLs are built once for every target and sequence
// and shared by the workers, so the hot path neither allocates a URL nor
// takes a lock.
type manySeqBackend struct {
	cfg   loadConfig
	tr    *http.Transport
	body  []byte
	names []string
	urls  [][]string     // [target][sequence] -> ranges URL
	hosts map[string]int // host:port of a target -> its index
	// setupTook is how long setup took and created how many of the
	// sequences were new (201; 200 is one that existed): read after setup.
	setupTook time.Duration
	created   atomic.Int64
}

func newManySeqBackend(cfg loadConfig, conns int) (*manySeqBackend, error) {
	if kindOrHTTP(cfg.Kind) != "http" {
		return nil, fmt.Errorf("%w, not --kind %s", errManyKinds, cfg.Kind)
	}
	b := &manySeqBackend{
		cfg:   cfg,
		tr:    newTransport(conns),
		body:  []byte(fmt.Sprintf(`{"count":%d}`, cfg.Count)),
		names: sequenceNames(cfg.Sequence, cfg.Sequences),
		hosts: map[string]int{},
	}
	for ti, t := range cfg.Targets {
		us := make([]string, len(b.names))
		for i, n := range b.names {
			us[i] = t + rangesPath(n)
		}
		b.urls = append(b.urls, us)
		if u, err := url.Parse(t); err == nil {
			b.hosts[u.Host] = ti
		}
	}
	return b, nil
}

// setup creates every sequence with setupWorkers PUTs in flight. The first
// is created alone with the base timeout (the cluster may still be electing
// its leader); the rest share what is left of manySeqSetupTimeout. The
// first failure stops the others.
func (b *manySeqBackend) setup(ctx context.Context, timeout time.Duration) error {
	start := time.Now()
	defer func() { b.setupTook = time.Since(start) }()
	tr := newTransport(setupWorkers)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: b.cfg.Timeout}
	if err := b.create(ctx, client, b.cfg.Targets, b.names[0], timeout); err != nil {
		return err
	}
	deadline := start.Add(manySeqSetupTimeout(timeout, len(b.names)))
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var (
		next     atomic.Int64 // index of the next name to create
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	next.Store(1)
	for w := 0; w < min(setupWorkers, len(b.names)-1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Worker w starts at target w%len: followers forward a PUT.
			targets := append(append([]string(nil), b.cfg.Targets[w%len(b.cfg.Targets):]...), b.cfg.Targets[:w%len(b.cfg.Targets)]...)
			for {
				i := int(next.Add(1) - 1)
				if i >= len(b.names) || ctx.Err() != nil {
					return
				}
				if err := b.create(ctx, client, targets, b.names[i], time.Until(deadline)); err != nil {
					errOnce.Do(func() {
						firstErr = fmt.Errorf("creating %d sequences (%d of them in %s): %w", len(b.names), i, time.Since(start).Round(time.Millisecond), err)
						cancel()
					})
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// create is ensureSequence counting the sequences it created: PUT name on
// each target in turn until one answers 200 or 201, for at most timeout.
func (b *manySeqBackend) create(ctx context.Context, client *http.Client, targets []string, name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var lastErr error
		for _, t := range targets {
			if err := ctx.Err(); err != nil {
				return err
			}
			status, err := putStatus(ctx, client, t, name)
			if err == nil {
				if status == http.StatusCreated {
					b.created.Add(1)
				}
				return nil
			}
			lastErr = err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("creating sequence %q: %w", name, lastErr)
		}
		sleepUntil(ctx, earliest(time.Now().Add(100*time.Millisecond), deadline))
	}
}

// putStatus is one PUT /v1/sequences/name: 200 or 201, or an error.
func putStatus(ctx context.Context, client *http.Client, target, name string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, target+"/v1/sequences/"+url.PathEscape(name), nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return 0, fmt.Errorf("PUT %s: %s: %s", target, resp.Status, bytes.TrimSpace(body))
	}
	return resp.StatusCode, nil
}

// prime reserves once from every sequence, conc at a time, and returns the
// ranges (for the range check) with their sequences and how long it took.
// Every sequence's first reservation waits for its first block: this is the
// cold start a fresh sequence costs, which the levels then leave out.
func (b *manySeqBackend) prime(ctx context.Context, conc int) ([]idRange, []uint32, time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, manySeqSetupTimeout(b.cfg.Timeout, len(b.names)))
	defer cancel()
	var (
		next     atomic.Int64
		mu       sync.Mutex
		ranges   []idRange
		seqs     []uint32
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for w := range min(conc, len(b.names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := b.newReserver(ctx, w)
			if err != nil {
				errOnce.Do(func() { firstErr = err })
				return
			}
			mr := r.(*manySeqReserver)
			for {
				i := int(next.Add(1) - 1)
				if i >= len(b.names) || ctx.Err() != nil {
					return
				}
				rg, err := mr.reserveIndex(ctx, i)
				for attempt := 0; err != nil && attempt < 5 && ctx.Err() == nil; attempt++ {
					time.Sleep(10 * time.Millisecond)
					rg, err = mr.reserveIndex(ctx, i)
				}
				if err != nil {
					errOnce.Do(func() {
						firstErr = fmt.Errorf("first reservation of %s: %w", b.names[i], err)
						cancel()
					})
					return
				}
				mu.Lock()
				ranges, seqs = append(ranges, rg), append(seqs, uint32(i))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr == nil && len(ranges) != len(b.names) {
		firstErr = fmt.Errorf("primed %d of %d sequences: %v", len(ranges), len(b.names), ctx.Err())
	}
	return ranges, seqs, time.Since(start), firstErr
}

func (b *manySeqBackend) newReserver(_ context.Context, i int) (reserver, error) {
	r := &manySeqReserver{
		client: &http.Client{Transport: b.tr, Timeout: b.cfg.Timeout},
		urls:   b.urls,
		cur:    i % len(b.urls),
		body:   b.body,
		// A source of its own per worker: no lock, and runs differ (a
		// fixed seed would send every run's workers the same way).
		rng: rand.New(rand.NewPCG(rand.Uint64(), uint64(i))),
	}
	if b.cfg.FollowLeader && len(b.cfg.Targets) > 1 {
		r.hosts = b.hosts
	}
	r.buf.Grow(256)
	return r, nil
}

func (b *manySeqBackend) note() string {
	fresh := "fresh: all new to the cluster"
	if c := b.created.Load(); c != int64(len(b.names)) {
		fresh = fmt.Sprintf("NOT fresh: %d of them new, the others existed", c)
	}
	n := fmt.Sprintf("%d sequences (%s-*) put in setup (%.1f s, %.0f/s), %s; each request picks one uniformly at random; ",
		len(b.names), b.cfg.Sequence, b.setupTook.Seconds(), float64(len(b.names))/max(b.setupTook.Seconds(), 1e-9), fresh)
	if b.cfg.Prime {
		n += "each was reserved from once before the first level (primed: their first blocks, the cold start, timed apart), so the levels measure them active"
	} else {
		n += fmt.Sprintf("the warmup of each level (%s) is not measured, so the first level's absorbs part of their cold start (their first blocks)", b.cfg.Warmup)
	}
	if b.cfg.FollowLeader && len(b.cfg.Targets) > 1 {
		n += "; workers move to the leader a follower names in its answer"
	}
	return n
}

func (b *manySeqBackend) close() { b.tr.CloseIdleConnections() }

type manySeqReserver struct {
	client *http.Client
	urls   [][]string // shared, read-only
	cur    int        // index of the target this worker sends to
	hosts  map[string]int
	body   []byte
	buf    bytes.Buffer
	rng    *rand.Rand
}

var _ seqReserver = (*manySeqReserver)(nil)

func (r *manySeqReserver) reserve(ctx context.Context) (idRange, int, error) {
	_, rg, retries, err := r.reserveSeq(ctx)
	return rg, retries, err
}

func (r *manySeqReserver) reserveSeq(ctx context.Context) (int, idRange, int, error) {
	seq := r.rng.IntN(len(r.urls[r.cur]))
	rg, err := r.reserveIndex(ctx, seq)
	return seq, rg, 0, err
}

// reserveIndex reserves from sequence seq.
func (r *manySeqReserver) reserveIndex(ctx context.Context, seq int) (idRange, error) {
	status, leader, err := postOnce(ctx, r.client, r.urls[r.cur][seq], r.body, &r.buf)
	if ti, ok := r.hosts[leader]; ok && leader != "" {
		r.cur = ti
	}
	if err != nil {
		return idRange{}, &opError{kind: classifyErr(err), backoff: true, err: err}
	}
	if status != http.StatusOK {
		return idRange{}, &opError{kind: strconv.Itoa(status), backoff: status >= 500}
	}
	var rr rangeResponse
	if err := json.Unmarshal(r.buf.Bytes(), &rr); err != nil {
		return idRange{}, &opError{kind: "decode", err: err}
	}
	return idRange{First: rr.First, Last: rr.Last}, nil
}

func (r *manySeqReserver) close() {}

// checkRangesPerSequence is checkRanges over each sequence's ranges apart:
// seqs[i] is the sequence of rs[i], n the number of sequences. Overlaps and
// wrong sizes add up; MinFirst and MaxLast bound every sequence's IDs.
func checkRangesPerSequence(rs []idRange, seqs []uint32, n int, count uint64) rangeCheck {
	if len(rs) != len(seqs) {
		panic("checkRangesPerSequence: ranges and sequences differ in length")
	}
	res := rangeCheck{Ranges: len(rs)}
	if len(rs) == 0 {
		return res
	}
	// Counting sort by sequence, then each bucket on its own.
	start := make([]int, n+1)
	for _, s := range seqs {
		start[s+1]++
	}
	for i := 1; i <= n; i++ {
		start[i] += start[i-1]
	}
	sorted := make([]idRange, len(rs))
	pos := append([]int(nil), start[:n]...)
	for i, s := range seqs {
		sorted[pos[s]] = rs[i]
		pos[s]++
	}
	first := true
	for s := 0; s < n; s++ {
		b := sorted[start[s]:start[s+1]]
		if len(b) == 0 {
			continue
		}
		c := checkRanges(b, count)
		res.Overlaps += c.Overlaps
		res.BadSize += c.BadSize
		if first || c.MinFirst < res.MinFirst {
			res.MinFirst = c.MinFirst
		}
		res.MaxLast = max(res.MaxLast, c.MaxLast)
		first = false
	}
	return res
}

// errManyKinds is returned when --sequences > 1 is asked of a peer.
var errManyKinds = errors.New("--sequences > 1 needs --kind http (the peers are driven on one sequence)")
