package checker

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// unknownRaise is a raise to atLeast whose caller hung up over [inv, cmp] ms.
func unknownRaise(idx int64, seq string, inv, cmp float64, atLeast int64) Op {
	o := raiseOp(idx, seq, inv, cmp, atLeast, 0)
	o.Outcome, o.Err = Unknown, "abandoned"
	return o
}

// polled is an audit read through record seq by polls before and after
// everything in these histories (which end by 100 ms).
func polled(seq uint64, raises ...AuditRecord) *Audit {
	return &Audit{Type: "audit", Raises: raises, Polls: []AuditPoll{
		{StartNs: 0, EndNs: msNs / 2, Seq: 0},
		{StartNs: 100 * msNs, EndNs: 101 * msNs, Seq: seq},
	}}
}

func raiseRecord(seq, index uint64, name string, first, last int64) AuditRecord {
	return AuditRecord{Seq: seq, Index: index, Kind: AuditKindRaise, Sequence: name, First: first, Last: last}
}

// The issue's example: reserve 1 ID, raise to 5000 and hang up, a read says
// next 5001, and the next reservation answers 2.
func issueExample() []Op {
	return []Op{
		rng(1, "a", 0, 1, 1, 1),
		unknownRaise(2, "a", 2, 3, 5000),
		read(3, "a", 10, 11, 5001),
		rng(4, "a", 12, 13, 2, 2),
	}
}

func TestUnknownRaises_ReadAboveAppliedRaiseThenReservationBelow_Flagged(t *testing.T) {
	ops := issueExample()
	// The checks the suite had do not see it: from the history alone the
	// read is explained by a block 1..5000 granted to the leader.
	if r := CheckRaises(ops); !r.Valid {
		t.Fatalf("CheckRaises = %+v", r)
	}
	if p := CheckPorcupine(ops, PorcupineOptions{Window: 10}); !p.Valid {
		t.Fatalf("porcupine = %+v", p)
	}
	a := polled(2, raiseRecord(2, 7, "a", 1001, 5000)) // after the block 1..1000 (record 1)
	r := CheckUnknownRaises(ops, a)
	if r.Valid || r.Below != 1 || r.Unknown != 1 || r.Applied != 1 || r.Checked != 1 || r.Unchecked != 0 || r.Pinned != 1 {
		t.Fatalf("CheckUnknownRaises = %+v", r)
	}
	if e := r.Examples[0]; e.A.Index != 4 || e.B.Index != 3 {
		t.Fatalf("example = %+v", e)
	}
}

func TestUnknownRaises_ReadExplainedByABlock_NotFlagged(t *testing.T) {
	// The raise to 500 landed inside the leader's block 1..1000: no mark
	// moved, no record; the read's 1001 is the block's.
	ops := []Op{
		rng(1, "a", 0, 1, 1, 1),
		unknownRaise(2, "a", 2, 3, 500),
		read(3, "a", 10, 11, 1001),
		rng(4, "a", 12, 13, 2, 2),
	}
	r := CheckUnknownRaises(ops, polled(1))
	if !r.Valid || r.Applied != 0 || r.Checked != 1 || r.Unchecked != 0 || r.Pinned != 0 {
		t.Fatalf("CheckUnknownRaises = %+v", r)
	}
}

func TestUnknownRaises_RaiseThatNeverApplied_NotFlagged(t *testing.T) {
	// No record of a raise to 5000; the read's 6001 comes from blocks
	// (the leader holds 1..6000), and 2 is one of their IDs.
	ops := issueExample()
	ops[2].Next = 6001
	r := CheckUnknownRaises(ops, polled(2))
	if !r.Valid || r.Applied != 0 || r.Checked != 1 || r.Unchecked != 0 {
		t.Fatalf("CheckUnknownRaises = %+v", r)
	}
	// A read at or below the raise is no pair at all: the raise had not
	// moved the mark when it was read.
	ops[2].Next = 1001
	if r := CheckUnknownRaises(ops, polled(2, raiseRecord(2, 7, "a", 1001, 5000))); !r.Valid || r.Checked != 0 || r.Pinned != 0 {
		t.Fatalf("CheckUnknownRaises = %+v", r)
	}
}

func TestUnknownRaises_ReservationInvokedBeforeTheReadCompleted_NotFlagged(t *testing.T) {
	ops := issueExample()
	ops[3].Invoke, ops[3].Complete = 10.5*1e6, 12*1e6 // concurrent with the read
	r := CheckUnknownRaises(ops, polled(2, raiseRecord(2, 7, "a", 1001, 5000)))
	if !r.Valid || r.Checked != 1 || r.Pinned != 1 || r.Held != 0 {
		t.Fatalf("CheckUnknownRaises = %+v", r)
	}
}

func TestUnknownRaises_ReadCompletedBeforeTheRaiseWasInvoked_NoPair(t *testing.T) {
	ops := issueExample()
	ops[2].Invoke, ops[2].Complete = 1.2*1e6, 1.5*1e6 // before the raise
	r := CheckUnknownRaises(ops, polled(2, raiseRecord(2, 7, "a", 1001, 5000)))
	if !r.Valid || r.Checked != 0 || r.Pinned != 0 {
		t.Fatalf("CheckUnknownRaises = %+v", r)
	}
}

func TestUnknownRaises_SDKRangesAreExempt(t *testing.T) {
	ops := issueExample()
	ops[3].F = FNext // a Sequence serves what it cached before the raise
	r := CheckUnknownRaises(ops, polled(2, raiseRecord(2, 7, "a", 1001, 5000)))
	if !r.Valid || r.Pinned != 1 || r.Held != 0 {
		t.Fatalf("CheckUnknownRaises = %+v", r)
	}
}

func TestUnknownRaises_AuditDroppedTheRecords_PairUnchecked(t *testing.T) {
	ops := issueExample()
	// The records the raise's could be among were dropped before a poll
	// read them: absence tells nothing.
	a := polled(3)
	a.Gaps = []SeqRange{{From: 1, To: 2}}
	if r := CheckUnknownRaises(ops, a); !r.Valid || r.Checked != 0 || r.Unchecked != 1 {
		t.Fatalf("CheckUnknownRaises = %+v", r)
	}
	// A gap before the raise was invoked does not matter.
	a.Polls = append([]AuditPoll{{StartNs: 0, EndNs: msNs / 4, Seq: 2}}, a.Polls...)
	if r := CheckUnknownRaises(ops, a); !r.Valid || r.Checked != 1 || r.Unchecked != 0 {
		t.Fatalf("CheckUnknownRaises = %+v", r)
	}
	// No poll began after the read completed: unchecked.
	a.Polls = a.Polls[:1]
	if r := CheckUnknownRaises(ops, a); !r.Valid || r.Checked != 0 || r.Unchecked != 1 {
		t.Fatalf("CheckUnknownRaises = %+v", r)
	}
	// No audit at all.
	if r := CheckUnknownRaises(ops, nil); !r.Valid || r.Audited || r.Unchecked != 1 {
		t.Fatalf("CheckUnknownRaises = %+v", r)
	}
}

func TestUnknownRaises_AuditLineInHistory_AnalyzeFlagsTheRun(t *testing.T) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, o := range append(issueExample(), final(read(5, "a", 20, 21, 5001))) {
		_ = enc.Encode(o)
	}
	_ = enc.Encode(polled(2, raiseRecord(2, 7, "a", 1001, 5000)))
	_ = enc.Encode(Meta{Type: "meta"})
	h, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	a := Analyze(h, Options{})
	if a.Valid || a.UnknownRaises.Valid || a.UnknownRaises.Below != 1 || !a.Raises.Valid {
		t.Fatalf("Analyze = %v %+v", a.InvalidReasons, a.UnknownRaises)
	}
}

// The chunked search finds what a plain scan finds, across chunk
// boundaries, on random histories.
func TestUnknownRaises_RandomHistories_SameAsPlainScan(t *testing.T) {
	flaggedAll := 0
	for seed := uint64(1); seed <= 20; seed++ {
		rnd := rand.New(rand.NewPCG(seed, 7))
		var ops []Op
		a := polled(0)
		for i := 0; i < 3000; i++ {
			inv := float64(rnd.IntN(90_000)) / 1000
			cmp := inv + float64(rnd.IntN(3000))/1000
			switch rnd.IntN(10) {
			case 0:
				x := 1 + rnd.Int64N(100_000)
				ops = append(ops, unknownRaise(int64(i), "a", inv, cmp, x))
				if rnd.IntN(2) == 0 {
					a.Raises = append(a.Raises, raiseRecord(uint64(i), uint64(i), "a", 1, x))
				}
			case 1, 2, 3:
				ops = append(ops, read(int64(i), "a", inv, cmp, 1+rnd.Int64N(100_000)))
			default:
				f := 1 + rnd.Int64N(100_000)
				ops = append(ops, rng(int64(i), "a", inv, cmp, f, f))
			}
		}
		want := map[int64]bool{}
		recs := map[int64]bool{}
		for _, rec := range a.Raises {
			recs[rec.Last] = true
		}
		for _, u := range ops {
			if u.F != FRaise || !recs[u.Count] {
				continue
			}
			var pin *Op
			for i := range ops {
				q := &ops[i]
				if q.F == FRead && q.Complete > u.Invoke && q.Next > u.Count && (pin == nil || q.Complete < pin.Complete) {
					pin = q
				}
			}
			for _, o := range ops {
				if pin != nil && o.F == FReserve && o.Invoke > pin.Complete && o.First <= u.Count {
					want[o.Index] = true
				}
			}
		}
		if r := CheckUnknownRaises(ops, a); r.Below != len(want) || r.Valid != (len(want) == 0) {
			t.Fatalf("seed %d: Below = %d, the plain scan finds %d", seed, r.Below, len(want))
		}
		flaggedAll += len(want)
	}
	if flaggedAll == 0 {
		t.Fatal("no history had a reservation to flag: the comparison tested nothing")
	}
	t.Logf("%d reservations flagged over 20 histories", flaggedAll)
}
