package fsm_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/fsm"
)

func (a *applier) reserveBlocks(reqs ...fsm.BlockRequest) any {
	return a.apply(fsm.EncodeReserveBlocks(fsm.ReserveBlocks{Requests: reqs}))
}

func (a *applier) mustReserveBlocks(reqs ...fsm.BlockRequest) []fsm.BlockOutcome {
	a.t.Helper()
	resp := a.reserveBlocks(reqs...)
	b, ok := resp.(fsm.BlockBatch)
	if !ok || len(b.Outcomes) != len(reqs) {
		a.t.Fatalf("reserve blocks %+v: got %#v, want a BlockBatch of %d outcomes", reqs, resp, len(reqs))
	}
	return b.Outcomes
}

// A batch grants each request in order, each exactly as the same request
// in its own ReserveBlock entry would have been granted at that point, and
// a rejected request changes nothing and leaves the others be.
func TestApply_ReserveBlocks_EachAsItsOwnEntryWouldBe(t *testing.T) {
	reqs := []fsm.BlockRequest{
		{Name: "a", Count: 100, Min: 1},
		{Name: "b", Count: 7, Min: 7},
		{Name: "missing", Count: 5, Min: 1},
		{Name: "a", Count: 50, Min: 1},      // the same sequence twice: the second lies above the first
		{Name: "small", Count: 20, Min: 11}, // 10 left: exhausted for this min
		{Name: "small", Count: 20, Min: 4},  // but this one fits, with what is left
		{Name: "b", Count: 0, Min: 0},       // invalid
		{Name: "b", Count: 3, Min: 1},
	}
	batched, single := newApplier(t), newApplier(t)
	for _, a := range []*applier{batched, single} {
		a.mustCreate("a", 1, 1<<40)
		a.mustCreate("b", 1000, 2000)
		a.mustCreate("small", 1, 10)
		a.mustReserve("a", 10, 1)
	}
	out := batched.mustReserveBlocks(reqs...)
	for i, r := range reqs {
		want := single.reserve(r.Name, r.Count, r.Min)
		got := out[i]
		if wb, ok := want.(fsm.Block); ok {
			wb.Index = batched.index // one entry: every block carries its index
			if got.Err != nil || got.Block != wb {
				t.Fatalf("request %d %+v: got %+v, want block %+v", i, r, got, wb)
			}
			continue
		}
		werr := want.(error)
		if got.Err == nil || got.Err.Error() != werr.Error() || got.Block != (fsm.Block{}) {
			t.Fatalf("request %d %+v: got %+v, want error %q", i, r, got, werr)
		}
	}
	if g, w := batched.f.Sequences(), single.f.Sequences(); !reflect.DeepEqual(g, w) {
		t.Fatalf("state after the batch %+v, after single entries %+v", g, w)
	}
	if out[3].Block.First != out[0].Block.Last+1 {
		t.Fatalf("second block of a in the batch %+v does not follow the first %+v", out[3].Block, out[0].Block)
	}
	// The audit records one block per grant, all at the batch's index, and
	// the uniqueness probe is clean.
	recs := batched.f.Audit(0, 100)
	n := 0
	for _, r := range recs {
		if r.Kind == fsm.AuditBlock && r.Index == batched.index {
			n++
		}
	}
	if n != 5 {
		t.Fatalf("audit has %d block records at the batch's index, want 5 (one per grant)", n)
	}
	if rep := batched.f.CheckAudit(); len(rep.Violations) != 0 {
		t.Fatalf("probe: %+v", rep.Violations)
	}
}

func TestApply_ReserveBlocks_EmptyOrTooLarge_RejectedStateUnchanged(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("s", 1, 1<<40)
	before := stateOf(a.f)
	wantErr(t, a.reserveBlocks(), fsm.ErrInvalidCommand)
	big := make([]fsm.BlockRequest, fsm.MaxBatchBlocks+1)
	for i := range big {
		big[i] = fsm.BlockRequest{Name: "s", Count: 1, Min: 1}
	}
	resp := a.reserveBlocks(big...)
	wantErr(t, resp, fsm.ErrInvalidCommand)
	if !strings.Contains(resp.(error).Error(), fmt.Sprint(fsm.MaxBatchBlocks)) {
		t.Fatalf("error %q should name the bound", resp)
	}
	after := stateOf(a.f)
	before.Index = after.Index
	assertSameState(t, "after rejected batches", after, before)
	// At the bound it is accepted.
	if out := a.mustReserveBlocks(big[:fsm.MaxBatchBlocks]...); out[len(out)-1].Block.Last != fsm.MaxBatchBlocks {
		t.Fatalf("last block of a full batch: %+v", out[len(out)-1])
	}
}

func TestApply_ReserveBlocks_StampGoesToTheAuditOnly(t *testing.T) {
	a, b := newApplier(t), newApplier(t)
	for _, x := range []*applier{a, b} {
		x.mustCreate("s", 1, 1<<40)
	}
	req := fsm.BlockRequest{Name: "s", Count: 9, Min: 1}
	ra := a.apply(fsm.EncodeReserveBlocks(fsm.ReserveBlocks{Requests: []fsm.BlockRequest{req}, Stamp: fsm.Stamp{NowMs: 123, Leader: "n1"}}))
	rb := b.apply(fsm.EncodeReserveBlocks(fsm.ReserveBlocks{Requests: []fsm.BlockRequest{req}}))
	if !reflect.DeepEqual(ra, rb) {
		t.Fatalf("stamped %#v, unstamped %#v", ra, rb)
	}
	recs := a.f.Audit(0, 10)
	last := recs[len(recs)-1]
	if last.Leader != "n1" || last.TimeMs != 123 || last.First != 1 || last.Last != 9 {
		t.Fatalf("audit record %+v, want the batch's stamp and block", last)
	}
}
