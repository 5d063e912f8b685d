package checker

import "testing"

// raiseOp is a raise to atLeast acknowledged over [inv, cmp] ms, answered
// with next.
func raiseOp(idx int64, seq string, inv, cmp float64, atLeast, next int64) Op {
	return Op{Type: "op", Index: idx, Worker: int(idx), F: FRaise, Seq: seq, Count: atLeast,
		Invoke: int64(inv * float64(msNs)), Complete: int64(cmp * float64(msNs)), Outcome: OK, Next: next}
}

func TestRaises_LinearizableHistoryIsValid(t *testing.T) {
	ops := []Op{
		rng(1, "a", 0, 1, 1, 100),
		raiseOp(2, "a", 2, 5, 1000, 1001),
		rng(3, "a", 3, 4, 101, 150),        // concurrent with the raise: below it is fine
		rng(4, "a", 6, 7, 1001, 1010),      // after: above it
		read(5, "a", 8, 9, 1011),           // after: above it
		raiseOp(6, "a", 10, 11, 500, 1011), // below the mark: changes nothing
		rng(7, "a", 12, 13, 1011, 1020),
	}
	if r := CheckRaises(ops); !r.Valid || r.Raises != 2 || r.Checked != 3 {
		t.Fatalf("CheckRaises = %+v", r)
	}
	if r := CheckPorcupine(ops, PorcupineOptions{Window: 3}); !r.Valid {
		t.Fatalf("porcupine = %+v", r)
	}
	if r := CheckWellFormed(ops); !r.Valid {
		t.Fatalf("well-formed = %+v", r)
	}
}

func TestRaises_PlantedRangeAndReadBelowARaise(t *testing.T) {
	ops := []Op{
		rng(1, "a", 0, 1, 1, 100),
		raiseOp(2, "a", 2, 5, 1000, 1001),
		rng(3, "a", 6, 7, 101, 150), // invoked after the raise returned, yet below it
		read(4, "a", 8, 9, 151),     // the same for a read
		rng(5, "a", 3, 4, 151, 160), // concurrent with the raise: fine
	}
	r := CheckRaises(ops)
	if r.Valid || r.Below != 2 || r.Examples[0].A.Index != 3 || r.Examples[0].B.Index != 2 {
		t.Fatalf("CheckRaises = %+v", r)
	}
	if p := CheckPorcupine(ops, PorcupineOptions{Window: 10}); p.Valid {
		t.Fatalf("porcupine did not flag a range below a raise: %+v", p)
	}
	if a := Analyze(&History{Ops: append(ops, final(read(9, "a", 20, 21, 2000)))}, Options{}); a.Valid || a.Raises.Valid {
		t.Fatalf("Analyze = %+v", a.InvalidReasons)
	}
	if q := QuickCheck(ops); q == "" {
		t.Fatal("QuickCheck missed it")
	}
}

// The highest raise completed before an op binds it, even when a lower one
// completed later.
func TestRaises_HighestEarlierRaiseBinds(t *testing.T) {
	ops := []Op{
		raiseOp(1, "a", 0, 1, 5000, 5001),
		raiseOp(2, "a", 2, 3, 10, 5001),
		rng(3, "a", 4, 5, 4000, 4010),
	}
	if r := CheckRaises(ops); r.Valid || r.Below != 1 || r.Examples[0].B.Index != 1 {
		t.Fatalf("CheckRaises = %+v", r)
	}
}

func TestRaises_UnknownRaiseAsksNothing_AnswerBelowIsMalformed(t *testing.T) {
	u := raiseOp(1, "a", 0, 1, 5000, 0)
	u.Outcome = Unknown
	ops := []Op{u, rng(2, "a", 2, 3, 1, 10)}
	if r := CheckRaises(ops); !r.Valid || r.Checked != 0 {
		t.Fatalf("an unknown raise bound a later range: %+v", r)
	}
	if r := CheckWellFormed([]Op{raiseOp(1, "a", 0, 1, 5000, 4000)}); r.Valid {
		t.Fatal("a raise answered with next below at_least passed")
	}
}
