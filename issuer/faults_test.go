//go:build ticketd_faults

package issuer

import (
	"context"
	"testing"

	"github.com/ticketd/ticketd/fsm"
)

// The planted bug RaiseNoCut does what the fault suite relies on: after a
// raise into the block the leader holds, the leader serves below the raise.
func TestPlanted_RaiseNoCut_ServesBelowTheRaise(t *testing.T) {
	p := newFSMProposer(t, fsm.CreateSequence{Name: "s", Start: 1, Max: 1 << 40})
	cfg := testConfig()
	cfg.Unsafe.RaiseNoCut = true
	is := New(p, cfg)
	is.Acquire(1)
	if _, err := is.Reserve(context.Background(), "s", 10); err != nil {
		t.Fatal(err)
	}
	held, _ := p.f.Sequence("s")
	at := held.Issued - 5
	raise(t, p, is, "s", at)
	r, err := is.Reserve(context.Background(), "s", 1)
	if err != nil || r.First > at {
		t.Fatalf("range %+v, %v after a raise to %d: the planted bug should serve at or below it", r, err, at)
	}
}
