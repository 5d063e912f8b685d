package checker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

const msNs = int64(time.Millisecond)

// rng is a reservation acknowledged over [inv, cmp] ms.
func rng(idx int64, seq string, inv, cmp float64, first, last int64) Op {
	return Op{Type: "op", Index: idx, Worker: int(idx), F: FReserve, Seq: seq, Count: last - first + 1,
		Invoke: int64(inv * float64(msNs)), Complete: int64(cmp * float64(msNs)), Outcome: OK, First: first, Last: last}
}

func read(idx int64, seq string, inv, cmp float64, next int64) Op {
	return Op{Type: "op", Index: idx, Worker: int(idx), F: FRead, Seq: seq,
		Invoke: int64(inv * float64(msNs)), Complete: int64(cmp * float64(msNs)), Outcome: OK, Next: next}
}

func final(o Op) Op { o.Final = true; return o }

// simulate produces a linearizable history: n operations from w workers,
// each linearized at a random point of its interval; ranges are cut in
// linearization order with random gaps; a share of operations end unknown
// (their ranges become gaps) or fail.
func simulate(seed uint64, n, w int) []Op {
	r := rand.New(rand.NewPCG(seed, 1))
	type pending struct {
		op  Op
		lin int64
	}
	var ps []pending
	now := make([]int64, w)
	for i := 0; i < n; i++ {
		wk := i % w
		inv := now[wk] + r.Int64N(3*msNs)
		dur := 1 + r.Int64N(20*msNs)
		o := Op{Type: "op", Index: int64(i), Worker: wk, Seq: "s", Invoke: inv, Complete: inv + dur, Outcome: OK}
		if r.IntN(5) == 0 {
			o.F = FRead
		} else {
			o.F = FReserve
			o.Count = 1 + r.Int64N(1000)
		}
		switch r.IntN(20) {
		case 0:
			o.Outcome = Unknown
		case 1:
			o.Outcome = Fail
		}
		now[wk] = o.Complete
		ps = append(ps, pending{op: o, lin: inv + r.Int64N(dur+1)})
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].lin < ps[j].lin })
	mark := int64(0) // highest ID handed to any leader
	var out []Op
	for _, p := range ps {
		o := p.op
		switch {
		case o.Outcome == Fail:
		case o.F == FRead:
			o.Next = mark + 1
		default:
			mark += r.Int64N(50) // a gap
			o.First, o.Last = mark+1, mark+o.Count
			mark = o.Last
			if r.IntN(3) == 0 {
				mark += r.Int64N(2000) // a prefetched block
			}
			if o.Outcome == Unknown {
				o.First, o.Last = 0, 0
			}
		}
		out = append(out, o)
	}
	f := Op{Type: "op", Index: int64(n), F: FRead, Seq: "s", Outcome: OK, Final: true, Next: mark + 1,
		Invoke: 1 << 50, Complete: 1<<50 + 1}
	return append(out, f)
}

func TestAnalyze_SimulatedLinearizableHistoryIsValid(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		ops := simulate(seed, 3000, 8)
		r := Analyze(&History{Ops: ops}, Options{Porcupine: PorcupineOptions{Window: 150, Timeout: 20 * time.Second}})
		if !r.Valid {
			t.Fatalf("seed %d: invalid: %v\n%+v", seed, r.InvalidReasons, r)
		}
		if r.Porcupine.Windows == 0 || r.Porcupine.Ok != r.Porcupine.Windows {
			t.Fatalf("seed %d: porcupine %+v", seed, *r.Porcupine)
		}
		if r.Uniqueness.Ranges == 0 || r.Reads.Reads == 0 {
			t.Fatalf("seed %d: nothing checked: %+v", seed, r)
		}
	}
}

func TestUniqueness_PlantedDuplicate(t *testing.T) {
	ops := []Op{
		rng(1, "a", 0, 1, 1, 10),
		rng(2, "a", 2, 3, 11, 20),
		rng(3, "a", 4, 5, 15, 15), // inside range 2
		rng(4, "b", 0, 1, 15, 15), // another sequence: not a duplicate
	}
	r := CheckUniqueness(ops)
	if r.Valid || r.OverlappingRanges != 1 || r.DuplicatedIDs != 1 {
		t.Fatalf("got %+v", r)
	}
	if !strings.Contains(r.Examples[0].Detail, "15..15") || r.FirstSeenMs != 5 {
		t.Fatalf("example %+v, first seen %v", r.Examples[0], r.FirstSeenMs)
	}
}

func TestUniqueness_PlantedOverlapsAcrossSDKAndRaw(t *testing.T) {
	next := rng(3, "a", 4, 5, 20, 20)
	next.F, next.Count = FNext, 0
	ops := []Op{
		rng(1, "a", 0, 1, 1, 100),
		rng(2, "a", 0, 1, 50, 150),  // overlaps 50..100
		next,                        // overlaps 20 with range 1
		rng(4, "a", 0, 1, 150, 160), // overlaps 150 with range 2
	}
	r := CheckUniqueness(ops)
	if r.Valid || r.OverlappingRanges != 3 || r.DuplicatedIDs != 51+1+1 {
		t.Fatalf("got %+v", r)
	}
}

func TestUniqueness_UnknownAndFailedOpsAreIgnored(t *testing.T) {
	u := rng(2, "a", 0, 1, 1, 10)
	u.Outcome = Unknown
	f := rng(3, "a", 0, 1, 1, 10)
	f.Outcome = Fail
	r := CheckUniqueness([]Op{rng(1, "a", 0, 1, 1, 10), u, f})
	if !r.Valid || r.Ranges != 1 || r.IDs != 10 {
		t.Fatalf("got %+v", r)
	}
}

func TestRealTime_PlantedOutOfOrderRanges(t *testing.T) {
	ops := []Op{
		rng(1, "a", 0, 10, 100, 199),
		rng(2, "a", 11, 20, 50, 99), // invoked after 1 completed, yet below it
		rng(3, "a", 5, 30, 1, 10),   // concurrent with 1: fine
	}
	r := CheckRealTime(ops)
	if r.Valid || r.Violations != 1 || r.Examples[0].A.Index != 2 || r.Examples[0].B.Index != 1 {
		t.Fatalf("got %+v", r)
	}
	// The same ranges, all concurrent: linearizable.
	ops[1].Invoke = 9 * msNs
	if r := CheckRealTime(ops); !r.Valid {
		t.Fatalf("concurrent ops flagged: %+v", r)
	}
}

func TestRealTime_FindsViolationAgainstEarliestCompletion(t *testing.T) {
	// The op that proves the violation is not the one with the highest
	// range: range 3 completes first, range 2 is invoked after it.
	ops := []Op{
		rng(1, "a", 0, 100, 300, 399),
		rng(3, "a", 0, 5, 200, 299),
		rng(2, "a", 6, 7, 100, 199),
	}
	r := CheckRealTime(ops)
	if r.Valid || r.Violations != 1 || r.Examples[0].B.Index != 3 {
		t.Fatalf("got %+v", r)
	}
}

func TestReads_PlantedStaleAndNonMonotonic(t *testing.T) {
	ops := []Op{
		rng(1, "a", 0, 1, 1, 100),
		read(2, "a", 2, 3, 100),  // stale: 100 was acknowledged
		read(3, "a", 2, 3, 500),  // fine
		read(4, "a", 4, 5, 300),  // below the read of 500 that completed before
		read(5, "a", 0.5, 6, 50), // concurrent with range 1: fine
	}
	r := CheckReads(ops)
	if r.Valid || r.Stale != 1 || r.NonMonotonic != 1 || r.Reads != 4 {
		t.Fatalf("got %+v", r)
	}
	ex := read(6, "a", 7, 8, 0)
	ex.Exhausted = true
	after := read(7, "a", 9, 10, 900)
	if r := CheckReads([]Op{ex, after}); r.Valid || r.NonMonotonic != 1 {
		t.Fatalf("read after exhausted: %+v", r)
	}
}

func TestLost_PlantedLostRange(t *testing.T) {
	ops := []Op{
		rng(1, "a", 0, 1, 1, 100),
		rng(2, "a", 2, 3, 101, 200),
		final(read(3, "a", 10, 11, 150)), // forgot half of range 2
		rng(4, "b", 0, 1, 1, 5),
		final(read(5, "b", 10, 11, 6)),
	}
	r := CheckLost(ops)
	if r.Valid || !r.Checked || r.LostRanges != 1 || r.LostIDs != 51 {
		t.Fatalf("got %+v", r)
	}
	// No final read of a sequence: the check cannot be made.
	r = CheckLost(ops[:4])
	if r.Valid || r.Checked || len(r.Unread) != 1 || r.Unread[0] != "b" {
		t.Fatalf("got %+v", r)
	}
}

func TestWellFormed_PlantedWrongLength(t *testing.T) {
	bad := rng(1, "a", 0, 1, 1, 10)
	bad.Count = 5
	zero := rng(2, "a", 0, 1, 0, 0)
	zero.Count = 1
	r := CheckWellFormed([]Op{bad, zero, rng(3, "a", 0, 1, 11, 20)})
	if r.Valid || r.Malformed != 2 {
		t.Fatalf("got %+v", r)
	}
}

func TestPorcupine_PlantedViolationIsIllegalAndVisualized(t *testing.T) {
	ops := simulate(7, 600, 6)
	// Make one reservation, invoked after another completed, return a
	// range below it: find a non-overlapping pair.
	var a, b *Op
	for i := range ops {
		for j := range ops {
			if ops[i].IsRange() && ops[j].IsRange() && ops[j].Invoke > ops[i].Complete+5*msNs && ops[j].Invoke < ops[i].Complete+30*msNs {
				a, b = &ops[i], &ops[j]
				break
			}
		}
		if a != nil {
			break
		}
	}
	if a == nil {
		t.Fatal("no pair found")
	}
	// b now gets a fresh range below a's (below every range: IDs are
	// never below 1, and simulate starts at mark 0 + gap, so use a's
	// first minus a little if there is room, else swap the ranges).
	a.First, a.Last, b.First, b.Last = b.First, b.Last, a.First, a.Last
	a.Count, b.Count = a.Last-a.First+1, b.Last-b.First+1
	dir := t.TempDir()
	r := CheckPorcupine(ops, PorcupineOptions{Window: 100, VisDir: dir, MaxVis: 2})
	if r.Valid || r.Illegal == 0 {
		t.Fatalf("porcupine did not flag the swap: %+v", r)
	}
	if len(r.Visualized) == 0 {
		t.Fatal("no visualization written")
	}
	b2, err := os.ReadFile(filepath.Join(dir, r.Visualized[0]))
	if err != nil || !bytes.Contains(b2, []byte("<html")) {
		t.Fatalf("visualization: %v", err)
	}
	if s := CheckRealTime(ops); s.Valid {
		t.Fatal("sorted check did not flag the swap")
	}
}

func TestPorcupine_WindowInitialStateCarriesEarlierOps(t *testing.T) {
	// Window size 1: the second window holds only the read, and must know
	// from the first window's completed range that next=50 is stale.
	ops := []Op{rng(1, "a", 0, 1, 1, 100), read(2, "a", 2, 3, 50)}
	r := CheckPorcupine(ops, PorcupineOptions{Window: 1})
	if r.Valid || r.Windows != 2 || r.Illegal != 1 {
		t.Fatalf("got %+v", r)
	}
}

func TestAvailability_GapsAndRecovery(t *testing.T) {
	h := &History{Meta: Meta{WorkloadEnd: 100 * msNs}}
	for _, c := range []float64{1, 2, 3, 10, 40, 41, 90} {
		h.Ops = append(h.Ops, rng(int64(c), "a", c-0.5, c, int64(c)*10, int64(c)*10+1))
	}
	h.Nemeses = []Nemesis{{Kind: "kill", Start: 5 * msNs, Healed: 20 * msNs, Recovered: 25 * msNs}}
	a := Availability(h)
	if a.LongestGapMs != 49 || a.LongestGapFromMs != 41 {
		t.Fatalf("longest gap %v from %v", a.LongestGapMs, a.LongestGapFromMs)
	}
	k := a.ByKind["kill"]
	// Window 5..25: successes at 10; the gap 10..25 is 15 ms. The first
	// success invoked after the heal (20) completes at 40.
	if k.Runs != 1 || k.MaxGapMs != 15 || k.MaxRecoveryMs != 20 {
		t.Fatalf("by kind %+v", k)
	}
}

func TestLatencyAndCounts(t *testing.T) {
	ops := []Op{rng(1, "a", 0, 1, 1, 10), rng(2, "a", 0, 3, 11, 20), read(3, "a", 0, 2, 30)}
	u := rng(4, "a", 0, 100, 0, 0)
	u.Outcome = Unknown
	ops = append(ops, u, final(read(5, "a", 0, 1, 21)))
	c, ids := Counts(ops)
	if c[FReserve][OK] != 2 || c[FReserve][Unknown] != 1 || c[FRead][OK] != 1 || ids != 20 {
		t.Fatalf("counts %v ids %d", c, ids)
	}
	l := Latency(ops)
	if q := l[FReserve][OK]; q.N != 2 || q.P50 != 1 || q.Max != 3 {
		t.Fatalf("latency %+v", q)
	}
}

func TestRead_RoundTrip(t *testing.T) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	_ = enc.Encode(rng(1, "a", 0, 1, 1, 10))
	_ = enc.Encode(Nemesis{Type: "nemesis", Kind: "kill-leader", Start: 1, Healed: 2})
	_ = enc.Encode(Meta{Type: "meta", WorkloadEnd: 99})
	h, err := Read(&buf)
	if err != nil || len(h.Ops) != 1 || len(h.Nemeses) != 1 || h.Meta.WorkloadEnd != 99 {
		t.Fatalf("%v %+v", err, h)
	}
	if _, err := Read(strings.NewReader(`{"type":"bogus"}`)); err == nil {
		t.Fatal("unknown record accepted")
	}
}

func TestQuickCheck(t *testing.T) {
	if s := QuickCheck([]Op{rng(1, "a", 0, 1, 1, 10), rng(2, "a", 2, 3, 11, 20)}); s != "" {
		t.Fatalf("valid history: %s", s)
	}
	if s := QuickCheck([]Op{rng(1, "a", 0, 1, 1, 10), rng(2, "a", 2, 3, 5, 20)}); !strings.HasPrefix(s, "duplicate") {
		t.Fatalf("got %q", s)
	}
}

func TestRealTime_SDKNextOrderedPerSessionOnly(t *testing.T) {
	next := func(idx int64, session string, inv, cmp float64, id int64) Op {
		o := rng(idx, "s", inv, cmp, id, id)
		o.F, o.Count, o.Session = FNext, 0, session
		return o
	}
	ops := []Op{
		next(1, "a", 0, 1, 100),
		next(2, "b", 2, 3, 50), // another Sequence's cache: may be lower
		rng(3, "s", 4, 5, 200, 210),
		next(4, "b", 6, 7, 51), // below a raw range acknowledged before: fine for a cache
	}
	if r := CheckRealTime(ops); !r.Valid {
		t.Fatalf("flagged across sessions: %+v", r)
	}
	ops = append(ops, next(5, "a", 8, 9, 99)) // session a went backwards
	if r := CheckRealTime(ops); r.Valid || r.Violations != 1 {
		t.Fatalf("got %+v", r)
	}
	// A Next ID still counts for uniqueness against raw ranges.
	ops = append(ops, next(6, "c", 10, 11, 205))
	if r := CheckUniqueness(ops); r.Valid {
		t.Fatal("duplicate between a Next and a raw range not flagged")
	}
}

// manySequences is simulate's linearizable history over n sequences of
// per operations each, interleaved in time as one history: every
// sequence starts at ID 1, so IDs of different sequences coincide, as
// they may.
func manySequences(n, per int) []Op {
	var ops []Op
	for k := 0; k < n; k++ {
		seq := fmt.Sprintf("m%03d", k)
		for _, o := range simulate(uint64(1000+k), per, 4) {
			o.Seq, o.Workload = seq, "many"
			o.Worker += 10 * (k % 8)
			o.Index = int64(len(ops))
			ops = append(ops, o)
		}
	}
	return ops
}

func TestAnalyze_ManySequencesValidAndFast(t *testing.T) {
	ops := manySequences(300, 60)
	start := time.Now()
	r := Analyze(&History{Ops: ops}, Options{Porcupine: PorcupineOptions{Window: 200}})
	took := time.Since(start)
	if !r.Valid {
		t.Fatalf("invalid: %v", r.InvalidReasons)
	}
	if len(r.Sequences) != 300 || r.Porcupine.Windows != 300 || r.Porcupine.Ok != 300 || r.Lost.LostRanges != 0 || len(r.Lost.FinalNext) != 300 {
		t.Fatalf("sequences %d, porcupine %+v, final next %d", len(r.Sequences), *r.Porcupine, len(r.Lost.FinalNext))
	}
	f := r.Workloads["many"]
	if f.Sequences != 300 || f.Reserves[OK] == 0 || f.Reads[OK] == 0 || f.MaxSeqsInFlight < 2 {
		t.Fatalf("figures %+v", f)
	}
	if r.Counts["reserve/many"][OK] != f.Reserves[OK] {
		t.Fatalf("counts %v, figures %+v", r.Counts, f)
	}
	t.Logf("%d operations over 300 sequences checked in %v (porcupine %s)", len(ops), took, r.Porcupine.Elapsed)
}

func TestAnalyze_ManySequencesPlantedViolationsFound(t *testing.T) {
	// A duplicate inside one of 300 sequences.
	ops := manySequences(300, 40)
	var a, b *Op
	for i := range ops {
		if ops[i].Seq == "m123" && ops[i].IsRange() {
			if a == nil {
				a = &ops[i]
			} else if b == nil {
				b = &ops[i]
			}
		}
	}
	b.First, b.Last, b.Count = a.First, a.Last, a.Count
	r := Analyze(&History{Ops: ops}, Options{SkipPorcupine: true})
	if r.Uniqueness.Valid || r.Uniqueness.Examples[0].Seq != "m123" {
		t.Fatalf("duplicate in m123 not found: %+v", r.Uniqueness)
	}
	// A stale read in another: next at or below a range acknowledged
	// before the read was invoked.
	ops = manySequences(300, 40)
	var last *Op
	for i := range ops {
		if ops[i].Seq != "m201" || ops[i].Final {
			continue
		}
		if ops[i].IsRange() {
			last = &ops[i]
		}
	}
	stale := Op{Type: "op", Index: int64(len(ops)), Worker: 999, F: FRead, Seq: "m201", Outcome: OK, Workload: "many",
		Invoke: last.Complete + 1, Complete: last.Complete + 2, Next: last.Last}
	ops = append(ops, stale)
	r = Analyze(&History{Ops: ops}, Options{Porcupine: PorcupineOptions{Window: 200}})
	if r.Reads.Valid || r.Reads.Examples[0].Seq != "m201" || r.Porcupine.Valid {
		t.Fatalf("stale read in m201 not found: reads %+v porcupine %+v", r.Reads, *r.Porcupine)
	}
}

func TestWorkloads_SequencesInFlight(t *testing.T) {
	op := func(seq string, inv, cmp float64, outcome string) Op {
		o := rng(0, seq, inv, cmp, 1, 10)
		o.Outcome, o.Workload = outcome, "many"
		if outcome != OK {
			o.First, o.Last = 0, 0
		}
		return o
	}
	ops := []Op{
		op("a", 0, 10, OK),
		op("a", 1, 4, OK), // the same sequence twice: one sequence in flight
		op("b", 2, 6, Unknown),
		op("c", 3, 5, OK),
		op("d", 20, 30, OK),
		rng(9, "main", 0, 100, 1, 10), // untagged: not counted
	}
	exhausted := op("c", 40, 41, Fail)
	exhausted.Status = 409
	ops = append(ops, exhausted, read(10, "a", 50, 51, 11))
	ops[len(ops)-1].Workload = "many"
	w := Workloads(ops)
	f, ok := w["many"]
	if !ok || len(w) != 1 {
		t.Fatalf("workloads %v", w)
	}
	// 0..10: a; 2..6: b; 3..5: c → 3 at once (3..4).
	if f.MaxSeqsInFlight != 3 || f.Sequences != 4 || f.SequencesWithRanges != 3 || f.Refused409 != 1 {
		t.Fatalf("figures %+v", f)
	}
	if f.Reserves[OK] != 4 || f.Reserves[Unknown] != 1 || f.Reserves[Fail] != 1 || f.Reads[OK] != 1 || f.IDs != 40 {
		t.Fatalf("figures %+v", f)
	}
	// Busy 0..10, 20..30 and 40..41 (every reservation counts, whatever
	// its outcome), 21 ms; sequences in flight: 0-2 1, 2-3 2, 3-5 3, 5-6 2,
	// 6-10 1, 20-30 1, 40-41 1 → (2+2+6+2+4+10+1)/21 = 1.29.
	if f.MeanSeqsInFlight != 1.29 {
		t.Fatalf("mean %v", f.MeanSeqsInFlight)
	}
	if f.OpsPerSeqMin != 1 || f.OpsPerSeqMax != 3 {
		t.Fatalf("ops per sequence %+v", f)
	}
}
