package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
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

// raiseWorker raises a main sequence every 100-300 ms.
func (w *workload) raiseWorker(worker int, rnd *rand.Rand) {
	w.loop(func() bool {
		sleepStop(w.stop, time.Duration(100+rnd.IntN(200))*time.Millisecond)
		seq := mainSeqs[rnd.IntN(len(mainSeqs))]
		at := w.high.get(seq) + 1 + rnd.Int64N(2000)
		if rnd.IntN(10) == 0 {
			at += 1 << 20 // now and then far above the leader's block
		}
		return w.raiseOp(w.pick(rnd), checker.Op{Worker: worker, Seq: seq, Count: at}).Outcome == checker.OK
	}, rnd)
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
