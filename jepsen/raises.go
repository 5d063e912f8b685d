package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/jepsen/checker"
)

// Raises (issue #16): a worker lifts the main sequences' high-water marks
// now and then while the raw workers reserve from them, as a job that keeps
// ticketd above a legacy generator would. Most raises aim a little above
// the highest ID acknowledged so far, inside the block the leader holds in
// memory, where only the leader's cut keeps the promise that nothing at or
// below the value is handed out after the raise returns; checker.CheckRaises
// and the porcupine model hold every later reservation and read to it.

// highWater tracks the highest acknowledged last ID per main sequence.
type highWater struct {
	mu   sync.Mutex
	last map[string]int64
}

func (h *highWater) note(seq string, last int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last == nil {
		h.last = map[string]int64{}
	}
	h.last[seq] = max(h.last[seq], last)
}

func (h *highWater) get(seq string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last[seq]
}

// raiseWorker raises a main sequence every 100-300 ms. One raise in three
// is abandoned: the connection is closed as soon as the request is written,
// so the raise may commit and apply with nobody waiting for it (an unknown
// outcome), as a caller that times out or hangs up leaves it. Two in three
// of those first read the sequence and aim just above its next, above the
// blocks the state machine granted the leader, so that applying them moves
// the mark; a read a little later then shows whether they did, for
// checker.CheckUnknownRaises.
func (w *workload) raiseWorker(worker int, rnd *rand.Rand) {
	w.loop(func() bool {
		sleepStop(w.stop, time.Duration(100+rnd.IntN(200))*time.Millisecond)
		seq := mainSeqs[rnd.IntN(len(mainSeqs))]
		at := w.high.get(seq) + 1 + rnd.Int64N(2000)
		if rnd.IntN(10) == 0 {
			at += 1 << 20 // now and then far above the leader's block
		}
		if rnd.IntN(3) != 0 {
			return w.raiseOp(w.pick(rnd), checker.Op{Worker: worker, Seq: seq, Count: at}).Outcome == checker.OK
		}
		if rnd.IntN(3) != 0 {
			r := w.readOp(w.pick(rnd), checker.Op{Worker: worker, Seq: seq})
			if r.Outcome != checker.OK || r.Exhausted || r.Malformed != "" {
				return false
			}
			at = max(at, r.Next+rnd.Int64N(1000))
		}
		w.abandonRaise(w.pick(rnd), checker.Op{Worker: worker, Seq: seq, Count: at})
		sleepStop(w.stop, time.Duration(20+rnd.IntN(40))*time.Millisecond)
		return w.readOp(w.pick(rnd), checker.Op{Worker: worker, Seq: seq}).Outcome == checker.OK
	}, rnd)
}

// abandonRaise sends the raise o describes through node n and closes the
// connection once the request is written, never reading the answer: an
// unknown outcome once a connection was obtained for it (from then on the
// request may have been delivered, as in doWith), a failure before.
func (w *workload) abandonRaise(n *Node, op checker.Op) {
	op.F, op.Node = checker.FRaise, n.ID
	o := w.rec.invoke(op)
	body, _ := json.Marshal(api.RaiseSequenceRequest{AtLeast: o.Count})
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.OpTimeout)
	defer cancel()
	var sent atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn:      func(httptrace.GotConnInfo) { sent.Store(true) },
		WroteRequest: func(httptrace.WroteRequestInfo) { cancel() },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.c.url(n, "/v1/sequences/"+o.Seq+"/raise"), bytes.NewReader(body))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+w.cfg.adminToken)
		var resp *http.Response
		if resp, err = w.hc.Do(req); err == nil {
			resp.Body.Close() // answered before the hang-up took: still not read
		}
	}
	if sent.Load() {
		o.Outcome, o.Err = checker.Unknown, "abandoned"
	} else {
		o.Outcome, o.Err = checker.Fail, "not sent: "+shortErr(err)
	}
	w.rec.done(o)
}

// raiseOp sends the raise o describes (Seq, Count = at_least) through node
// n with the admin token, records it and returns it completed.
func (w *workload) raiseOp(n *Node, op checker.Op) checker.Op {
	op.F, op.Node = checker.FRaise, n.ID
	o := w.rec.invoke(op)
	body, _ := json.Marshal(api.RaiseSequenceRequest{AtLeast: o.Count})
	r := w.doWith(http.MethodPost, w.c.url(n, "/v1/sequences/"+o.Seq+"/raise"), body, w.cfg.adminToken, "application/json", w.cfg.OpTimeout, 64<<10)
	if r.err == nil && r.status == http.StatusOK {
		var res api.RaiseSequenceResult
		o.Outcome, o.Status = checker.OK, r.status
		switch err := json.Unmarshal(r.body, &res); {
		case err != nil:
			o.Malformed = "undecodable: " + string(r.body)
		case res.Sequence.Name != o.Seq:
			o.Malformed = fmt.Sprintf("raise of %q answered for %q", o.Seq, res.Sequence.Name)
		case res.Sequence.Next == nil:
			o.Exhausted = true
		default:
			o.Next = *res.Sequence.Next
		}
	} else {
		classify(o, r)
	}
	w.rec.done(o)
	return *o
}
