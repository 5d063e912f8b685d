//go:build linux

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
	"net/http/httptrace"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/jepsen/checker"
)

// Sequences of the workload.
var mainSeqs = []string{"jep-a", "jep-b", "jep-c"}

const (
	sdkSeq = "jep-sdk"
	// A small sequence has a span of smallSpan IDs, so the leader's blocks
	// are capped at smallSpan/1024 = 128 IDs: with counts up to 100, most
	// reservations wait on a fresh block (group commit) rather than being
	// cut from a block committed long ago. When one is used up (409) the
	// workers move on to the next.
	smallSpan     = 131072
	smallMaxCount = 100
)

func smallSeq(k int64) string { return fmt.Sprintf("jep-small-%d", k) }

// workload runs the clients.
type workload struct {
	cfg *config
	c   *Cluster
	rec *recorder
	hc  *http.Client
	log func(string, ...any)

	stop     chan struct{}
	wg       sync.WaitGroup
	smallIdx atomic.Int64
	smallMu  sync.Mutex
	limiter  *limiter

	// high is the highest acknowledged ID of each main sequence, where
	// the raise worker aims (raises.go).
	high highWater

	// many is the many-sequences workload's sequences (many.go).
	many []manySequence

	sdkMu      sync.Mutex
	sdkClients []*client.Client
	sdkNote    string
	sfNote     string
	// spawn starts one more worker (set by start): the DR run starts the
	// promoted region's Snowflake generators with it.
	spawn func(func(int, *rand.Rand))
	// sfCycle, when bumped, makes every Snowflake generator start a new
	// tenure (a new holder, a new lease) at its next burst.
	sfCycle atomic.Int64

	// nodesfLayout is the layout of the server-made Snowflake namespace.
	nodesfLayout api.Namespace
}

func newWorkload(cfg *config, c *Cluster, rec *recorder, hc *http.Client, logf func(string, ...any)) *workload {
	w := &workload{cfg: cfg, c: c, rec: rec, hc: hc, log: logf, stop: make(chan struct{})}
	if cfg.Rate > 0 {
		w.limiter = &limiter{every: time.Duration(float64(time.Second) / cfg.Rate)}
	}
	w.smallIdx.Store(1)
	return w
}

// setup creates the sequences.
func (w *workload) setup(ctx context.Context) error {
	for _, s := range append(append([]string{}, mainSeqs...), sdkSeq) {
		if err := w.create(ctx, s, nil); err != nil {
			return err
		}
	}
	if err := w.create(ctx, smallSeq(1), &api.CreateSequenceRequest{Start: ptr(int64(1)), Max: ptr(int64(smallSpan))}); err != nil {
		return err
	}
	if err := w.setupMany(ctx); err != nil {
		return err
	}
	if err := w.setupNamespaces(ctx); err != nil {
		return err
	}
	return w.setupNodeSnowflake(ctx)
}

func ptr[T any](v T) *T { return &v }

// create makes a sequence through any member, retrying for a bounded time.
func (w *workload) create(ctx context.Context, name string, body *api.CreateSequenceRequest) error {
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for _, n := range w.c.Members() {
			var b any
			if body != nil {
				b = body
			}
			code, err := w.c.call(ctx, http.MethodPut, n, "/v1/sequences/"+name, b, nil, 3*time.Second)
			if err == nil && (code == http.StatusCreated || code == http.StatusOK) {
				return nil
			}
			last = err
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	return fmt.Errorf("create sequence %s: %v", name, last)
}

// start launches every worker.
func (w *workload) start(ctx context.Context, seed uint64) {
	id := 0
	spawn := func(f func(worker int, rnd *rand.Rand)) {
		worker := id
		id++
		rnd := rand.New(rand.NewPCG(seed, uint64(worker)+1000))
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			f(worker, rnd)
		}()
	}
	w.spawn = spawn
	for i := 0; i < w.cfg.RawWorkers; i++ {
		spawn(func(worker int, rnd *rand.Rand) {
			w.loop(func() bool {
				seq := mainSeqs[rnd.IntN(len(mainSeqs))]
				return w.reserve(worker, rnd, seq, 1+rnd.Int64N(1000))
			}, rnd)
		})
	}
	for i := 0; i < w.cfg.SmallWorkers; i++ {
		spawn(func(worker int, rnd *rand.Rand) {
			w.loop(func() bool {
				k := w.smallIdx.Load()
				ok := w.reserve(worker, rnd, smallSeq(k), 1+rnd.Int64N(smallMaxCount))
				return ok
			}, rnd)
		})
	}
	for i := 0; i < w.cfg.RWWorkers; i++ {
		spawn(func(worker int, rnd *rand.Rand) {
			w.loop(func() bool {
				seq := smallSeq(w.smallIdx.Load())
				if !w.reserve(worker, rnd, seq, 1+rnd.Int64N(smallMaxCount)) {
					return false
				}
				// Read it back at once, retrying quickly while no node can
				// serve: across a failover, the first read the new leader
				// answers is the one that must already see this range.
				deadline := time.Now().Add(w.cfg.OpTimeout)
				for time.Now().Before(deadline) {
					if w.read(worker, rnd, seq, false) {
						return true
					}
					select {
					case <-w.stop:
						return true
					case <-time.After(2 * time.Millisecond):
					}
				}
				return false
			}, rnd)
		})
	}
	for i := 0; i < w.cfg.RaiseWorkers; i++ {
		spawn(w.raiseWorker)
	}
	for i := 0; i < w.cfg.ManyWorkers; i++ {
		spawn(func(worker int, rnd *rand.Rand) {
			w.loop(func() bool { return w.manyOp(worker, rnd) }, rnd)
		})
	}
	for i := 0; i < w.cfg.Readers; i++ {
		spawn(func(worker int, rnd *rand.Rand) {
			w.loop(func() bool {
				seqs := append(append([]string{}, mainSeqs...), smallSeq(w.smallIdx.Load()), sdkSeq)
				return w.read(worker, rnd, seqs[rnd.IntN(len(seqs))], false)
			}, rnd)
		})
	}
	w.startSDK(ctx, spawn)
	w.startSnowflake(spawn, "sf")
	w.startNodeSnowflake(spawn)
	for i := 0; i < w.cfg.LeaseWorkers; i++ {
		spawn(func(worker int, rnd *rand.Rand) { w.leaseWorker(w.c, leaseNamespace, worker, rnd, w.stop) })
	}
}

// startSDK starts SDK users: one client.Client and one Sequence per pair of
// goroutines, each Next recorded as a one-ID range.
func (w *workload) startSDK(ctx context.Context, spawn func(func(int, *rand.Rand))) {
	if w.cfg.SDKWorkers <= 0 {
		return
	}
	var seq *client.Sequence
	var session string
	for i := 0; i < w.cfg.SDKWorkers; i++ {
		if i%2 == 0 {
			cl, err := w.newSDKClient()
			if err != nil {
				w.sdkNote = "SDK client not started: " + err.Error()
				w.log("%s", w.sdkNote)
				return
			}
			// Small ranges and a short coverage: refills (real
			// reservations) happen every few hundred calls.
			seq = cl.Sequence(sdkSeq, client.WithCoverage(300*time.Millisecond), client.WithRangeSize(10, 500))
			session = fmt.Sprintf("sdk%d", i/2)
		}
		s, sess := seq, session
		spawn(func(worker int, rnd *rand.Rand) {
			for i := 0; i < 100_000_000; i++ {
				select {
				case <-w.stop:
					return
				default:
				}
				w.next(worker, s, sess)
				// Pace: Next mostly costs an atomic add; without a pause
				// the history would fill with cache hits.
				sleepStop(w.stop, time.Duration(5+rnd.IntN(10))*time.Millisecond)
			}
		})
	}
}

// loop runs one worker's operations until stop, pausing a little after a
// failure so a dead node is not hammered.
func (w *workload) loop(op func() bool, rnd *rand.Rand) {
	for i := 0; i < 100_000_000; i++ {
		select {
		case <-w.stop:
			return
		default:
		}
		if w.limiter != nil && !w.limiter.wait(w.stop) {
			return
		}
		if !op() {
			sleepStop(w.stop, time.Duration(10+rnd.IntN(40))*time.Millisecond)
		}
	}
}

func sleepStop(stop <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
	case <-t.C:
	}
}

// halt stops the workers and waits for their last operations.
func (w *workload) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.wg.Wait()
}

func (w *workload) closeSDK() {
	w.sdkMu.Lock()
	defer w.sdkMu.Unlock()
	for _, c := range w.sdkClients {
		_ = c.Close()
	}
	w.sdkClients = nil
}

func (w *workload) pick(rnd *rand.Rand) *Node {
	t := w.c.Targets()
	return t[rnd.IntN(len(t))]
}

// httpResult is one request's answer, with whether the request may have
// reached the server.
type httpResult struct {
	status int
	body   []byte
	sent   bool
	err    error
}

// do sends one request of the workload (reserve token, JSON body) with the
// operation timeout. sent is true once a connection was obtained for it:
// from then on a failure leaves the outcome unknown (conservatively: the
// request may have been delivered).
func (w *workload) do(method, url string, body []byte) httpResult {
	return w.doWith(method, url, body, w.cfg.reserveToken, "application/json", w.cfg.OpTimeout, 64<<10)
}

// doWith sends one request with the given bearer token, content type,
// timeout and bound on the answer's size.
func (w *workload) doWith(method, url string, body []byte, token, ctype string, timeout time.Duration, maxBody int64) httpResult {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var got atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { got.Store(true) }})
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return httpResult{err: err}
	}
	if body != nil {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := w.hc.Do(req)
	if err != nil {
		return httpResult{err: err, sent: got.Load()}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return httpResult{status: resp.StatusCode, body: data, sent: true, err: err}
}

// classify sets an operation's outcome from an HTTP answer other than a
// well-read 200: definite refusals fail, everything after which the server
// may have acted is unknown.
func classify(o *checker.Op, r httpResult) {
	o.Status = r.status
	switch {
	case r.err != nil && !r.sent:
		o.Outcome, o.Err = checker.Fail, shortErr(r.err)
	case r.err != nil:
		o.Outcome, o.Err = checker.Unknown, shortErr(r.err)
	default:
		switch r.status {
		// Refused before anything happened: a bad request, no such
		// sequence, exhausted, unauthorized, too many in flight (429 is
		// answered before the handler runs).
		case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
			http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusTooManyRequests:
			o.Outcome = checker.Fail
		default: // 503 (no leader, leadership not confirmed), 5xx, ...
			o.Outcome = checker.Unknown
		}
		o.Err = problemType(r.body)
	}
}

func problemType(b []byte) string {
	var p api.Problem
	if json.Unmarshal(b, &p) == nil && p.Type != "" {
		return strings.TrimPrefix(p.Type, "urn:ticketd:problem:")
	}
	if len(b) > 80 {
		b = b[:80]
	}
	return string(b)
}

func shortErr(err error) string {
	s := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded) || strings.Contains(s, "Client.Timeout") || strings.Contains(s, "deadline exceeded"):
		return "timeout"
	case strings.Contains(s, "connection refused"):
		return "connection refused"
	case strings.Contains(s, "connection reset"):
		return "connection reset"
	case strings.Contains(s, "EOF"):
		return "EOF"
	}
	if len(s) > 120 {
		s = s[len(s)-120:]
	}
	return s
}

// reserve is one raw POST /v1/sequences/{seq}/ranges on the main cluster.
func (w *workload) reserve(worker int, rnd *rand.Rand, seq string, count int64) bool {
	return w.reserveOn(w.c, w.pick(rnd), worker, seq, count)
}

// reserveOn is one raw POST /v1/sequences/{seq}/ranges through node n of
// cluster cl.
func (w *workload) reserveOn(cl *Cluster, n *Node, worker int, seq string, count int64) bool {
	return w.reserveOp(cl, n, checker.Op{Worker: worker, Seq: seq, Count: count}).Outcome == checker.OK
}

// reserveOp sends the reservation o describes (Worker, Seq, Count, and
// Workload if not the main one) through node n of cluster cl, records it
// and returns it completed.
func (w *workload) reserveOp(cl *Cluster, n *Node, op checker.Op) checker.Op {
	op.F, op.Node, op.Cluster = checker.FReserve, n.ID, cl.name
	o := w.rec.invoke(op)
	seq, count := o.Seq, o.Count
	body, _ := json.Marshal(api.ReserveRequest{Count: count})
	r := w.do(http.MethodPost, cl.url(n, "/v1/sequences/"+seq+"/ranges"), body)
	if r.err == nil && r.status == http.StatusOK {
		var rg api.Range
		if err := json.Unmarshal(r.body, &rg); err != nil {
			o.Outcome, o.Status, o.Malformed = checker.OK, r.status, "undecodable: "+string(r.body)
		} else {
			o.Outcome, o.Status, o.First, o.Last = checker.OK, r.status, rg.First, rg.Last
			if cl == w.c && o.Workload == "" {
				w.high.note(seq, rg.Last)
			}
			switch {
			case rg.Sequence != seq:
				o.Malformed = fmt.Sprintf("range of sequence %q", rg.Sequence)
			case rg.First < 1 || rg.Last-rg.First+1 != count:
				o.Malformed = fmt.Sprintf("asked for %d IDs, got %d..%d", count, rg.First, rg.Last)
			}
		}
	} else {
		classify(o, r)
		if o.Status == http.StatusConflict && strings.HasPrefix(seq, "jep-small-") && cl == w.c {
			w.rotateSmall(seq)
		}
	}
	w.rec.done(o)
	return *o
}

// rotateSmall moves the small-sequence workers to a new sequence once the
// current one is used up.
func (w *workload) rotateSmall(seq string) {
	w.smallMu.Lock()
	defer w.smallMu.Unlock()
	k := w.smallIdx.Load()
	if smallSeq(k) != seq {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.create(ctx, smallSeq(k+1), &api.CreateSequenceRequest{Start: ptr(int64(1)), Max: ptr(int64(smallSpan))}); err != nil {
		return // retried at the next 409
	}
	w.smallIdx.Store(k + 1)
}

// read is one GET /v1/sequences/{seq}.
func (w *workload) read(worker int, rnd *rand.Rand, seq string, final bool) bool {
	n := w.pick(rnd)
	return w.readVia(worker, n, seq, final)
}

func (w *workload) readVia(worker int, n *Node, seq string, final bool) bool {
	return w.readOp(n, checker.Op{Worker: worker, Seq: seq, Final: final}).Outcome == checker.OK
}

// readOp sends the read o describes (Worker, Seq, Final, and Workload if
// not the main one) through node n, records it and returns it completed.
func (w *workload) readOp(n *Node, op checker.Op) checker.Op {
	op.F, op.Node = checker.FRead, n.ID
	o := w.rec.invoke(op)
	seq := o.Seq
	r := w.do(http.MethodGet, w.c.url(n, "/v1/sequences/"+seq), nil)
	if r.err == nil && r.status == http.StatusOK {
		var s api.Sequence
		o.Outcome, o.Status = checker.OK, r.status
		switch err := json.Unmarshal(r.body, &s); {
		case err != nil:
			o.Malformed = "undecodable: " + string(r.body)
		case s.Name != seq:
			o.Malformed = fmt.Sprintf("read of %q answered for %q", seq, s.Name)
		case s.Next == nil:
			o.Exhausted = true
		default:
			o.Next = *s.Next
		}
	} else {
		classify(o, r)
	}
	w.rec.done(o)
	return *o
}

// next is one SDK Sequence.Next call.
func (w *workload) next(worker int, s *client.Sequence, session string) {
	o := w.rec.invoke(checker.Op{Worker: worker, F: checker.FNext, Seq: s.Name(), Session: session, Node: "sdk"})
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.OpTimeout)
	id, err := s.Next(ctx)
	cancel()
	switch {
	case err == nil:
		o.Outcome, o.First, o.Last = checker.OK, id, id
		if id < 1 {
			o.Malformed = fmt.Sprintf("Next returned %d", id)
		}
	case errors.Is(err, client.ErrExhausted), errors.Is(err, client.ErrNotFound), errors.Is(err, client.ErrInvalidArgument),
		errors.Is(err, client.ErrUnauthorized), errors.Is(err, client.ErrClosed):
		o.Outcome, o.Err = checker.Fail, shortErr(err)
	default: // ErrUnavailable and anything else: no ID handed to the caller, effect unknown
		o.Outcome, o.Err = checker.Unknown, shortErr(err)
	}
	w.rec.done(o)
}

// knownSequence is a sequence the workload created: its name, the
// workload its operations carry, and its max (0: none).
type knownSequence struct {
	seq, workload string
	max           int64
}

// knownSequences is every sequence the workload created so far.
func (w *workload) knownSequences() []knownSequence {
	var out []knownSequence
	for _, s := range append(append([]string{}, mainSeqs...), sdkSeq) {
		out = append(out, knownSequence{seq: s})
	}
	for k := int64(1); k <= w.smallIdx.Load(); k++ {
		out = append(out, knownSequence{seq: smallSeq(k), max: smallSpan})
	}
	for k := range w.many {
		for g := int64(0); g <= w.many[k].gen.Load(); g++ {
			out = append(out, knownSequence{seq: manySeqGen(k, g), workload: manyWorkload, max: manyShapeOf(k).max})
		}
	}
	return out
}

// finalReaders is how many final reads run at once: with the
// many-sequences workload there are hundreds of sequences to read.
const finalReaders = 4

// finalReads reads every sequence's next through the members (the first
// that answers), retrying each for a bounded time, for the lost check. It
// returns the sequences it could not read. Each of the finalReaders
// goroutines reads as its own worker (worker, worker+1, ...), so that no
// two reads of one worker id overlap in the history.
func (w *workload) finalReads(ctx context.Context, worker int) []string {
	jobs := w.knownSequences()
	next := make(chan knownSequence)
	var mu sync.Mutex
	var unread []string
	var wg sync.WaitGroup
	for i := 0; i < finalReaders; i++ {
		wg.Add(1)
		go func(worker int) {
			defer wg.Done()
			for j := range next {
				if !w.finalRead(ctx, worker, j.seq, j.workload) {
					mu.Lock()
					unread = append(unread, j.seq)
					mu.Unlock()
				}
			}
		}(worker + i)
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	sort.Strings(unread)
	return unread
}

// finalRead reads one sequence through the members until one answers, for
// at most 30 s.
func (w *workload) finalRead(ctx context.Context, worker int, seq, workload string) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for _, n := range w.c.Members() {
			if w.readOp(n, checker.Op{Worker: worker, Seq: seq, Final: true, Workload: workload}).Outcome == checker.OK {
				return true
			}
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	return false
}

// limiter spaces operations evenly over all workers.
type limiter struct {
	mu    sync.Mutex
	every time.Duration
	next  time.Time
}

func (l *limiter) wait(stop <-chan struct{}) bool {
	l.mu.Lock()
	now := time.Now()
	if l.next.Before(now) {
		l.next = now
	}
	at := l.next
	l.next = l.next.Add(l.every)
	l.mu.Unlock()
	if d := time.Until(at); d > 0 {
		sleepStop(stop, d)
	}
	select {
	case <-stop:
		return false
	default:
		return true
	}
}

// newSDKClient is an SDK client over every member, with the reserve token
// and the suite's timeouts; Close of the workload closes it.
func (w *workload) newSDKClient() (*client.Client, error) {
	var eps []string
	for _, n := range w.c.Members() {
		eps = append(eps, w.c.url(n, ""))
	}
	cl, err := client.New(eps,
		client.WithHTTPClient(w.hc),
		client.WithBearerToken(w.cfg.reserveToken),
		client.WithTimeout(w.cfg.OpTimeout/2),
		client.WithCallTimeout(w.cfg.OpTimeout),
		client.WithBackoff(10*time.Millisecond, 200*time.Millisecond))
	if err != nil {
		return nil, err
	}
	w.sdkMu.Lock()
	w.sdkClients = append(w.sdkClients, cl)
	w.sdkMu.Unlock()
	return cl, nil
}
