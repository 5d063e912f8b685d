//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/jepsen/checker"
)

// The Snowflake and lease workloads.
//
// Snowflake generators (the SDK's client.Snowflake) issue IDs under
// worker-id leases of namespace jep-sf, at a capped rate, through every
// nemesis; every ID is recorded (bursts of Next calls as one operation, the
// IDs as a list of int64: 8 bytes an ID in memory), with the lease the
// generator held. Raw lease workers acquire leases of jep-lease over HTTP
// with a request id, retry unknown outcomes with the same id, sometimes
// resend an acquire that succeeded, and release what they got.
const (
	sfNamespace = "jep-sf"
	// Short leases, so that leases are lost and worker ids change hands
	// under the nemeses.
	sfTTLMs     = 3000
	sfRecycleMs = 6000

	leaseNamespace = "jep-lease"
	leaseTTLMs     = 3000
	leaseRecycleMs = 3000
	// Few worker ids, so that released ids are granted again (every id
	// rests leaseRecycleMs after its release).
	leaseMaxWorkers = 64

	// drLeaseTTLMs is both namespaces' TTL (and their recycle delay, which
	// may not be shorter) in a DR run: a lease held when the primary is
	// lost must outlive the promotion (1-3 s here), as a production TTL
	// outlives an operator's, so that a promoted node that grants its
	// worker id again meets a holder still using it. The raw namespace
	// then has more worker ids, or the lease workers' cycles would keep
	// all 64 resting.
	drLeaseTTLMs      = 6000
	drLeaseMaxWorkers = 256
)

// leaseTTLs are the TTLs of the Snowflake and the raw lease namespace.
func (c *config) leaseTTLs() (sf, lease int64) {
	if c.DR {
		return drLeaseTTLMs, drLeaseTTLMs
	}
	return sfTTLMs, leaseTTLMs
}

// setupNamespaces creates the Snowflake and lease namespaces (admin).
func (w *workload) setupNamespaces(ctx context.Context) error {
	sfTTL, leaseTTL := w.cfg.leaseTTLs()
	workers := int64(leaseMaxWorkers)
	if w.cfg.DR {
		workers = drLeaseMaxWorkers
	}
	if err := w.createNamespace(ctx, sfNamespace, api.NamespaceRequest{LeaseTTLMs: ptr(sfTTL), RecycleDelayMs: ptr(max(sfRecycleMs, sfTTL))}); err != nil {
		return err
	}
	return w.createNamespace(ctx, leaseNamespace, api.NamespaceRequest{LeaseTTLMs: ptr(leaseTTL),
		RecycleDelayMs: ptr(max(leaseRecycleMs, leaseTTL)), MaxWorkers: ptr(workers)})
}

func (w *workload) createNamespace(ctx context.Context, name string, body api.NamespaceRequest) error {
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for _, n := range w.c.Members() {
			code, err := w.c.call(ctx, http.MethodPut, n, "/v1/namespaces/"+name, body, nil, 3*time.Second)
			if err == nil && (code == http.StatusCreated || code == http.StatusOK) {
				return nil
			}
			last = err
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	return fmt.Errorf("create namespace %s: %v", name, last)
}

// startSnowflake starts the generators: each its own client.Client (which
// knows the cluster's members of the moment) and Snowflake (its own
// holder), issuing in bursts every 50 ms at --snowflake-rate IDs per second.
// Their sessions are named prefix<i>.<generation>: a DR run starts a second
// set on the promoted node ("sfp") beside the primary's ("sf").
func (w *workload) startSnowflake(spawn func(func(int, *rand.Rand)), prefix string) {
	for i := 0; i < w.cfg.SnowflakeWorkers; i++ {
		cl, err := w.newSDKClient()
		if err != nil {
			w.sfNote = "Snowflake client not started: " + err.Error()
			w.log("%s", w.sfNote)
			return
		}
		spawn(func(worker int, rnd *rand.Rand) {
			// A new generator (a new holder) every --snowflake-cycle:
			// the old one's worker id rests, then goes to another holder.
			for gen := 1; ; gen++ {
				session := fmt.Sprintf("%s%d.%d", prefix, i, gen)
				g, err := cl.Snowflake(sfNamespace, client.WithHolder("jepsen/"+session))
				if err != nil {
					w.log("Snowflake generator %s not started: %v", session, err)
					return
				}
				more := w.sfLoop(worker, g, session, time.Now().Add(w.cfg.SnowflakeCycle))
				_ = g.Close()
				if !more {
					return
				}
			}
		})
	}
}

// sfLoop is one generator's loop until the workload stops (false) or until
// (true), or until sfCycle is bumped (true): a burst of Next calls every
// period, recorded as one snowflake operation per worker id it used.
func (w *workload) sfLoop(worker int, g *client.Snowflake, session string, until time.Time) bool {
	const period = 50 * time.Millisecond
	cycle := w.sfCycle.Load()
	burst := max(1, int(w.cfg.SnowflakeRate*period.Seconds()))
	seqBits, workerBits := api.DefaultSequenceBits, api.DefaultWorkerBits
	layoutKnown := false
	lastW, lastTok := int64(-2), uint64(0)
	observe := func() (int64, uint64) {
		l, ok := g.Lease()
		if !ok {
			return -1, 0
		}
		if !layoutKnown && l.Layout.WorkerBits > 0 {
			seqBits, workerBits, layoutKnown = l.Layout.SequenceBits, l.Layout.WorkerBits, true
		}
		if l.WorkerID != lastW || l.Token != lastTok {
			lastW, lastTok = l.WorkerID, l.Token
			wk := l.WorkerID
			now := w.rec.now()
			w.rec.add(&checker.Op{Worker: worker, F: checker.FSFLease, Seq: sfNamespace, Session: session, Node: "sdk",
				Invoke: now, Complete: now, Outcome: checker.OK, LeaseWorker: &wk, Token: l.Token})
		}
		return l.WorkerID, l.Token
	}
	next := time.Now()
	ids := make([]int64, 0, burst)
	for (time.Now().Before(until) || w.cfg.SnowflakeCycle <= 0) && w.sfCycle.Load() == cycle {
		select {
		case <-w.stop:
			return false
		default:
		}
		w0, t0 := observe()
		ids = ids[:0]
		inv := w.rec.now()
		var nerr error
		for k := 0; k < burst; k++ {
			ctx, cancel := context.WithTimeout(context.Background(), w.cfg.OpTimeout)
			id, err := g.Next(ctx)
			cancel()
			if err != nil {
				nerr = err
				break
			}
			ids = append(ids, id)
		}
		cmp := w.rec.now()
		w1, t1 := observe()
		// One operation per worker id the burst's IDs carry (a burst
		// that spans a change of lease is cut in two).
		wmask := int64(1)<<workerBits - 1
		for start := 0; start < len(ids); {
			wk := (ids[start] >> seqBits) & wmask
			end := start
			for end < len(ids) && (ids[end]>>seqBits)&wmask == wk {
				end++
			}
			o := &checker.Op{Worker: worker, F: checker.FSnowflake, Seq: sfNamespace, Session: session, Node: "sdk",
				Invoke: inv, Complete: cmp, Outcome: checker.OK, IDs: append([]int64(nil), ids[start:end]...),
				LeaseWorker: &wk, SeqBits: seqBits, WorkerBits: workerBits}
			switch wk {
			case w1:
				o.Token = t1
			case w0:
				o.Token = t0
			}
			if ids[start] < 1 {
				o.Malformed = fmt.Sprintf("Next returned %d", ids[start])
			}
			w.rec.add(o)
			start = end
		}
		if nerr != nil {
			// Next hands out nothing when it fails: no ID to check.
			w.rec.add(&checker.Op{Worker: worker, F: checker.FSnowflake, Seq: sfNamespace, Session: session, Node: "sdk",
				Invoke: cmp, Complete: cmp, Outcome: checker.Fail, Err: sfErr(nerr)})
			if errors.Is(nerr, client.ErrClosed) {
				return false
			}
		}
		next = next.Add(period)
		if d := time.Until(next); d > 0 {
			sleepStop(w.stop, d)
		} else {
			next = time.Now()
		}
	}
	return true
}

func sfErr(err error) string {
	for _, e := range []error{client.ErrLeaseExpired, client.ErrClockMovedBackwards, client.ErrClockSkew, client.ErrClosed, client.ErrExhausted} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return shortErr(err)
}

// leaseWorker is one raw lease worker's loop on cluster cl until stop.
func (w *workload) leaseWorker(cl *Cluster, ns string, worker int, rnd *rand.Rand, stop <-chan struct{}) {
	for i := 0; i < 100_000_000; i++ {
		select {
		case <-stop:
			return
		default:
		}
		pause := time.Duration(100+rnd.IntN(100)) * time.Millisecond
		if !w.leaseCycle(cl, ns, worker, i, rnd, stop) {
			pause = time.Duration(300+rnd.IntN(300)) * time.Millisecond
		}
		sleepStop(stop, pause)
	}
}

// leaseCycle acquires a lease with a fresh request id (retrying unknown
// outcomes with the same id), half the time sends the same acquire again,
// holds the lease for 20 ms up to --lease-hold and releases it (and any
// other lease a resend got).
func (w *workload) leaseCycle(cl *Cluster, ns string, worker, i int, rnd *rand.Rand, stop <-chan struct{}) bool {
	tag := cl.name
	if tag == "" {
		tag = "main"
	}
	reqID := fmt.Sprintf("%s-w%d-%d-%08x", tag, worker, i, rnd.Uint32())
	first := w.acquireLease(cl, ns, worker, reqID, false, rnd, stop)
	if first == nil {
		return false
	}
	got := []*checker.Op{first}
	if rnd.IntN(2) == 0 {
		if again := w.acquireLease(cl, ns, worker, reqID, true, rnd, stop); again != nil &&
			(*again.LeaseWorker != *first.LeaseWorker || again.Token != first.Token) {
			got = append(got, again)
		}
	}
	sleepStop(stop, time.Duration(20+rnd.IntN(max(int(w.cfg.LeaseHold.Milliseconds())-20, 1)))*time.Millisecond)
	for _, l := range got {
		w.releaseLease(cl, ns, worker, l, rnd)
	}
	return true
}

// acquireLease sends POST /v1/namespaces/{ns}/leases with reqID, retrying
// an unknown outcome with the same request id (for up to 2 s, well within
// the lease's TTL); it returns the ok answer, or nil.
func (w *workload) acquireLease(cl *Cluster, ns string, worker int, reqID string, resend bool, rnd *rand.Rand, stop <-chan struct{}) *checker.Op {
	start := time.Now()
	body, _ := json.Marshal(api.LeaseRequest{Holder: fmt.Sprintf("jepsen/lease%d", worker), RequestID: reqID})
	for attempt := 0; attempt < 8; attempt++ {
		t := cl.Targets()
		n := t[rnd.IntN(len(t))]
		o := w.rec.invoke(checker.Op{Worker: worker, F: checker.FAcquire, Node: n.ID, Seq: ns, Cluster: cl.name,
			RequestID: reqID, Resend: resend, Attempt: attempt, WallMs: time.Now().UnixMilli()})
		r := w.do(http.MethodPost, cl.url(n, "/v1/namespaces/"+ns+"/leases"), body)
		if r.err == nil && (r.status == http.StatusCreated || r.status == http.StatusOK) {
			var l api.Lease
			o.Outcome, o.Status = checker.OK, r.status
			if err := json.Unmarshal(r.body, &l); err != nil {
				o.Malformed = "undecodable: " + string(r.body)
			} else {
				wk := l.WorkerID
				o.LeaseWorker, o.Token, o.ExpiresMs, o.TTLMs = &wk, l.Token, l.ExpiresMs, l.TTLMs
				switch {
				case l.Token == 0 || l.WorkerID < 0:
					o.Malformed = fmt.Sprintf("lease of worker %d with token %d", l.WorkerID, l.Token)
				case l.Namespace != "" && l.Namespace != ns:
					o.Malformed = fmt.Sprintf("lease of namespace %q", l.Namespace)
				}
			}
		} else {
			classify(o, r)
		}
		w.rec.done(o)
		switch {
		case o.Outcome == checker.OK && o.Malformed != "":
			return nil
		case o.Outcome == checker.OK:
			return o
		case o.Outcome == checker.Fail && o.Status != 0:
			return nil // refused: no such namespace, no worker id free, ...
		}
		// Unknown, or refused before anything was sent (that node is
		// down): the same request id again, through another node.
		if time.Since(start) > 2*time.Second {
			return nil // the lease it may have got expires by itself
		}
		select {
		case <-stop:
			return nil
		default:
		}
		sleepStop(stop, time.Duration(20+rnd.IntN(40))*time.Millisecond)
	}
	return nil
}

// releaseLease gives a lease back (DELETE), retrying unknown outcomes a
// few times; a lease not released expires after its TTL.
func (w *workload) releaseLease(cl *Cluster, ns string, worker int, l *checker.Op, rnd *rand.Rand) {
	body, _ := json.Marshal(api.LeaseTokenRequest{Token: l.Token})
	for attempt := 0; attempt < 3; attempt++ {
		t := cl.Targets()
		n := t[rnd.IntN(len(t))]
		o := w.rec.invoke(checker.Op{Worker: worker, F: checker.FRelease, Node: n.ID, Seq: ns, Cluster: cl.name,
			RequestID: l.RequestID, LeaseWorker: l.LeaseWorker, Token: l.Token, Attempt: attempt})
		r := w.do(http.MethodDelete, cl.url(n, "/v1/namespaces/"+ns+"/leases/"+strconv.FormatInt(*l.LeaseWorker, 10)), body)
		if r.err == nil && (r.status == http.StatusOK || r.status == http.StatusNoContent) {
			o.Outcome, o.Status = checker.OK, r.status
		} else {
			classify(o, r)
		}
		w.rec.done(o)
		if o.Outcome == checker.OK || o.Status != 0 {
			return // released, or refused (409 lease-lost: not held any more)
		}
		time.Sleep(time.Duration(20+rnd.IntN(40)) * time.Millisecond)
	}
}
