package fsm_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/fsm"
)

func (a *applier) raise(name string, atLeast int64) any {
	return a.apply(fsm.EncodeRaiseSequence(fsm.RaiseSequence{Name: name, AtLeast: atLeast, Stamp: fsm.Stamp{Leader: "n1", NowMs: 42}}))
}

func (a *applier) mustRaise(name string, atLeast int64) fsm.RaiseResult {
	a.t.Helper()
	resp := a.raise(name, atLeast)
	r, ok := resp.(fsm.RaiseResult)
	if !ok {
		a.t.Fatalf("raise %q to %d: got %#v, want a RaiseResult", name, atLeast, resp)
	}
	return r
}

func TestApply_Raise_LiftsMarkAndNextBlockStartsAbove(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("s", 1, 1_000_000)
	a.mustReserve("s", 100, 1) // 1..100

	r := a.mustRaise("s", 5000)
	if !r.Raised || r.Previous != 100 || r.Sequence.Issued != 5000 || r.Skipped() != 4900 {
		t.Fatalf("raise to 5000 = %+v (skipped %d), want raised from 100 to 5000, 4900 skipped", r, r.Skipped())
	}
	if b := a.mustReserve("s", 10, 1); b.First != 5001 || b.Last != 5010 {
		t.Fatalf("block after the raise = %+v, want 5001..5010", b)
	}
	// The audit records the IDs passed over, at the raise's index, and
	// the probe holds blocks above it.
	recs := a.f.Audit(0, 100)
	var found bool
	for _, rec := range recs {
		if rec.Kind == fsm.AuditRaise {
			found = true
			if rec.Sequence != "s" || rec.First != 101 || rec.Last != 5000 || rec.Index != 3 || rec.Leader != "n1" {
				t.Errorf("raise audit record %+v, want s 101..5000 at index 3 by n1", rec)
			}
		}
	}
	if !found {
		t.Fatalf("no raise record in the audit: %+v", recs)
	}
	if rep := a.f.CheckAudit(); len(rep.Violations) != 0 {
		t.Fatalf("probe: %+v", rep.Violations)
	}
}

func TestApply_Raise_NeverLowers_AndRepeatingChangesNothing(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("s", 1, 1000)
	a.mustReserve("s", 300, 1) // mark 300
	for _, at := range []int64{1, 299, 300} {
		before := a.seq("s")
		auditBefore := len(a.f.Audit(0, 100))
		r := a.mustRaise("s", at)
		if r.Raised || r.Skipped() != 0 || r.Sequence != before || a.seq("s") != before {
			t.Fatalf("raise to %d at mark 300 = %+v, state %+v; want no change from %+v", at, r, a.seq("s"), before)
		}
		if n := len(a.f.Audit(0, 100)); n != auditBefore {
			t.Fatalf("a raise that changed nothing wrote %d audit records", n-auditBefore)
		}
	}
	a.mustRaise("s", 400)
	if r := a.mustRaise("s", 400); r.Raised {
		t.Fatalf("the same raise again: %+v, want no change", r)
	}
}

func TestApply_Raise_ToMaxExhausts_PastMaxRefused_NeverWraps(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("edge", math.MaxInt64-9, math.MaxInt64)
	before := a.seq("edge")
	// The maximum itself cannot be passed: refused loudly, nothing changes.
	a.mustCreate("small", 1, 10)
	wantErr(t, a.raise("small", 11), fsm.ErrSequenceExhausted)
	if got := a.seq("edge"); got != before {
		t.Fatalf("edge changed: %+v", got)
	}
	r := a.mustRaise("edge", math.MaxInt64)
	if !r.Raised || r.Sequence.Remaining() != 0 {
		t.Fatalf("raise to MaxInt64 = %+v, want the sequence used up", r)
	}
	if _, ok := r.Sequence.Next(); ok {
		t.Fatalf("Next() ok after raising to the max")
	}
	wantErr(t, a.reserve("edge", 1, 1), fsm.ErrSequenceExhausted)
}

func TestApply_Raise_InvalidOrUnknown_RejectedStateUnchanged(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("s", 10, 1000)
	before := a.seq("s")
	wantErr(t, a.raise("nope", 5), fsm.ErrSequenceNotFound)
	wantErr(t, a.raise("s", 0), fsm.ErrInvalidCommand)
	wantErr(t, a.raise("s", -5), fsm.ErrInvalidCommand)
	wantErr(t, a.raise("bad name!", 5), fsm.ErrInvalidCommand)
	if got := a.seq("s"); got != before || a.f.SequenceCount() != 1 || len(a.f.Audit(0, 10)) != 0 {
		t.Fatalf("after refused raises: %+v, %d sequences, audit %+v; want %+v alone", got, a.f.SequenceCount(), a.f.Audit(0, 10), before)
	}
	// Below start: the mark (start-1) is already above 5.
	if r := a.mustRaise("s", 5); r.Raised {
		t.Fatalf("raise below start: %+v", r)
	}
}

func TestApply_Raise_SurvivesSnapshotRestore(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("s", 1, 1<<40)
	a.mustRaise("s", 123_456)
	f := restore(t, persist(t, a.f))
	if s, _ := f.Sequence("s"); s.Issued != 123_456 {
		t.Fatalf("restored mark %d, want 123456", s.Issued)
	}
	if rep := f.CheckAudit(); len(rep.Violations) != 0 {
		t.Fatalf("probe after restore: %+v", rep.Violations)
	}
}

// PendingRaise answers, for an entry about to apply, exactly whether Apply
// will accept it as a raise: the leader cuts on that answer before the mark
// is visible, so a yes for a raise Apply refuses would cut blocks for
// nothing (above max: every block of the sequence), and a no for one it
// accepts would leave the leader serving below the raised mark.
func TestPendingRaise_AgreesWithApply(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("s", 1, 1_000_000)
	a.mustReserve("s", 100, 1)
	raise := func(name string, atLeast int64) []byte {
		return fsm.EncodeRaiseSequence(fsm.RaiseSequence{Name: name, AtLeast: atLeast})
	}
	for _, c := range []struct {
		what string
		data []byte
	}{
		{"into the held block", raise("s", 50)},
		{"above the mark", raise("s", 5000)},
		{"to max", raise("s", 1_000_000)},
		{"above max", raise("s", 1_000_001)},
		{"zero", raise("s", 0)},
		{"unknown sequence", raise("nope", 7)},
		{"bad name", raise("a/b", 7)},
		{"a create", fsm.EncodeCreateSequence(fsm.CreateSequence{Name: "t", Start: 1, Max: 10})},
		{"empty", nil},
		{"undecodable raise", []byte{byte(fsm.CommandRaiseSequence), '{'}},
	} {
		seq, atLeast, ok := a.f.PendingRaise(c.data)
		if c.what == "empty" || c.what == "undecodable raise" {
			if ok {
				t.Fatalf("%s: PendingRaise said yes to an entry Apply panics on", c.what)
			}
			continue
		}
		// Apply on a copy of the state, so that each case meets the same one.
		twin := restore(t, persist(t, a.f))
		resp := twin.Apply(&raft.Log{Index: a.index + 1, Term: 1, Type: raft.LogCommand, Data: c.data})
		_, accepted := resp.(fsm.RaiseResult)
		if ok != accepted {
			t.Fatalf("%s: PendingRaise %v, Apply answered %#v", c.what, ok, resp)
		}
		if ok {
			var want fsm.RaiseSequence
			if err := json.Unmarshal(c.data[1:], &want); err != nil || seq != want.Name || atLeast != want.AtLeast {
				t.Fatalf("%s: PendingRaise named %q %d, the entry %s", c.what, seq, atLeast, c.data[1:])
			}
		}
	}
}
