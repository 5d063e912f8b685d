//go:build linux

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/jepsen/checker"
)

// The many-sequences workload: --many-sequences sequences created at setup,
// and --many-workers workers that each pick a sequence at random for every
// operation and send it, as a raw request, to a random node. With hundreds
// of sequences and every worker on a different one, several sequences wait
// for a block at the same moment all the time, and right after a failover
// every sequence touched needs a fresh block from the new leader: that is
// what the leader's group commit across sequences (many sequences' blocks in
// one log entry) is for, so it runs under every nemesis of the schedule.
//
// The sequences come in three shapes (by index modulo 3), so that blocks
// are needed often whatever the server's block sizing does:
//   - unbounded, counts 1..1000: blocks as the server sizes them;
//   - 2^20 IDs, counts 1..1000: blocks capped at 1,024 IDs (span/1024), so
//     about every second reservation waits for one;
//   - 2,048 IDs, counts 1..100: blocks of 64 IDs at most (the server's
//     smallest cap), so nearly every reservation waits for one, and the
//     sequence is used up after about 40 reservations (409
//     sequence-exhausted), all through the run: a grouped entry may then
//     carry a refusal for one of its sequences beside grants for the
//     others. A used-up sequence is replaced by a fresh one of the same
//     shape (jep-many-NNN-gG, created by the worker that saw the 409,
//     under whatever nemesis is running), so hundreds stay in play.
//
// Operations carry Workload "many": the checks go by sequence as for every
// other sequence (no ID twice within a sequence, IDs of two sequences may
// coincide; linearizable reservations and reads; porcupine per sequence;
// nothing lost after the final heal), and the report gives this workload's
// own figures (checker.Workloads).

// manyWorkload tags the operations of the many-sequences workload.
const manyWorkload = "many"

// manyReadShare: one operation in manyReadShare is a read of next.
const manyReadShare = 5

// manySeq is the name of slot k's first sequence; manySeqGen that of its
// generation g (0: the first).
func manySeq(k int) string { return fmt.Sprintf("jep-many-%03d", k) }

func manySeqGen(k int, g int64) string {
	if g == 0 {
		return manySeq(k)
	}
	return fmt.Sprintf("jep-many-%03d-g%d", k, g)
}

// manyShape is a many-sequences sequence's bound (0: none) and the largest
// count asked of it.
type manyShape struct {
	max      int64
	maxCount int64
}

func manyShapeOf(k int) manyShape {
	switch k % 3 {
	case 1:
		return manyShape{max: 1 << 20, maxCount: 1000}
	case 2:
		return manyShape{max: 2048, maxCount: 100}
	}
	return manyShape{maxCount: 1000}
}

// manySequence is one slot of the workload: the generation of its current
// sequence, replaced when it is used up.
type manySequence struct {
	gen      atomic.Int64
	rotating sync.Mutex
}

// manySeqNames is every sequence the workload created, all generations.
func (w *workload) manySeqNames() []string {
	var out []string
	for k := range w.many {
		for g := int64(0); g <= w.many[k].gen.Load(); g++ {
			out = append(out, manySeqGen(k, g))
		}
	}
	return out
}

// rotateMany replaces slot k's sequence of generation g, used up, by a
// fresh one of the same shape (once, whoever of the workers that saw the
// 409 gets here first).
func (w *workload) rotateMany(k int, g int64) {
	m := &w.many[k]
	if !m.rotating.TryLock() {
		return // another worker is at it
	}
	defer m.rotating.Unlock()
	if m.gen.Load() != g {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := manyShapeOf(k)
	if err := w.create(ctx, manySeqGen(k, g+1), &api.CreateSequenceRequest{Start: ptr(int64(1)), Max: ptr(s.max)}); err != nil {
		return // tried again at the next 409
	}
	m.gen.Store(g + 1)
}

// setupMany creates the many-sequences sequences, a few at a time.
func (w *workload) setupMany(ctx context.Context) error {
	n := w.cfg.ManySeqs
	if w.cfg.ManyWorkers == 0 {
		n = 0 // nobody would use them
	}
	w.many = make([]manySequence, n)
	next := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				var body *api.CreateSequenceRequest
				if s := manyShapeOf(k); s.max > 0 {
					body = &api.CreateSequenceRequest{Start: ptr(int64(1)), Max: ptr(s.max)}
				}
				if err := w.create(ctx, manySeq(k), body); err != nil {
					errs <- err
				}
			}
		}()
	}
	for k := 0; k < n; k++ {
		next <- k
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	if n > 0 {
		w.log("created %d sequences for the many-sequences workload (%s..%s)", n, manySeq(0), manySeq(n-1))
	}
	return nil
}

// manyOp is one operation of a many-sequences worker: a reservation, or
// one time in manyReadShare a read, on a sequence drawn at random, through
// a random node. It reports false when the operation failed for a reason
// worth a pause (not a used-up sequence, which it replaces).
func (w *workload) manyOp(worker int, rnd *rand.Rand) bool {
	if len(w.many) == 0 {
		return false
	}
	k := rnd.IntN(len(w.many))
	g := w.many[k].gen.Load()
	seq, n := manySeqGen(k, g), w.pick(rnd)
	if rnd.IntN(manyReadShare) == 0 {
		return w.readOp(n, checker.Op{Worker: worker, Seq: seq, Workload: manyWorkload}).Outcome == checker.OK
	}
	o := w.reserveOp(w.c, n, checker.Op{Worker: worker, Seq: seq, Count: 1 + rnd.Int64N(manyShapeOf(k).maxCount), Workload: manyWorkload})
	if o.Status == http.StatusConflict && o.Err == "sequence-exhausted" {
		if manyShapeOf(k).max > 0 {
			w.rotateMany(k, g)
		}
		return true
	}
	return o.Outcome == checker.OK
}

// manySummary is the many-sequences workload's line of the summary and the
// report; "" if the run had none.
func manySummary(r *runResults) string {
	f, ok := r.Workloads[manyWorkload]
	if !ok {
		return ""
	}
	oc := func(m map[string]int) string {
		return fmt.Sprintf("%d ok, %d fail, %d unknown", m[checker.OK], m[checker.Fail], m[checker.Unknown])
	}
	return fmt.Sprintf("%d sequences created at setup and %d more to replace used-up ones, %d operated on (%d with acknowledged ranges, %d used up); reservations: %s; reads: %s; %d IDs; %d..%d operations a sequence (median %d); up to %d sequences waiting for a reservation at once (mean %.1f while any was)",
		r.Run.ManySequences, r.Run.ManyReplacements, f.Sequences, f.SequencesWithRanges, f.Refused409, oc(f.Reserves), oc(f.Reads), f.IDs,
		f.OpsPerSeqMin, f.OpsPerSeqMax, f.OpsPerSeqMedian, f.MaxSeqsInFlight, f.MeanSeqsInFlight)
}
