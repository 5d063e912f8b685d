//go:build ticketd_faults

package issuer

import (
	"context"

	"github.com/ticketd/ticketd/fsm"
)

// This file is compiled only with -tags ticketd_faults: the binary the
// fault-injection suite uses to show that it catches each planted bug.
// nofaults.go is its counterpart in every other build, where none of this
// exists.

// Faults are planted bugs, each breaking one invariant, so that the
// fault-injection suite can show it detects the violation.
type Faults struct {
	// ServeUncommitted hands out a block as soon as it is proposed, with
	// its range computed by the leader from its own view of the mark,
	// instead of waiting for the FSM to compute it at apply time.
	ServeUncommitted bool
	// SkipVerify hands out ranges without the quorum check.
	SkipVerify bool
	// KeepBlocks keeps the blocks of an ended leadership and serves them
	// again if the node leads again.
	KeepBlocks bool
	// RaiseNoCut leaves the blocks a leader holds as they are when a
	// raise applies: the state machine's mark moves, but the leader goes
	// on serving the IDs below the raised value that it still holds.
	RaiseNoCut bool
}

type faultConfig struct {
	// Unsafe plants bugs for the fault-injection suite to find.
	Unsafe Faults
}

func (c faultConfig) keepBlocks() bool       { return c.Unsafe.KeepBlocks }
func (c faultConfig) skipVerify() bool       { return c.Unsafe.SkipVerify }
func (c faultConfig) serveUncommitted() bool { return c.Unsafe.ServeUncommitted }
func (c faultConfig) raiseNoCut() bool       { return c.Unsafe.RaiseNoCut }

type faultState struct {
	proposedMark int64 // the leader's own mark, for ServeUncommitted
}

// serveUncommitted is the planted bug ServeUncommitted: the leader
// computes the block itself and serves it before the entry commits. If the
// entry is lost (the leader dies first), the next leader grants the same IDs
// again. s.mu is held.
func (s *sequence) serveUncommitted(size int64) {
	st, _ := s.is.p.Sequence(s.name)
	mark := max(s.proposedMark, st.Issued)
	size = min(size, st.Max-mark)
	if size <= 0 {
		return
	}
	first := mark + 1
	s.proposedMark = mark + size
	if s.avail > 0 && s.next+s.avail == first {
		s.avail += size
	} else {
		s.next, s.avail = first, size
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.is.cfg.ProposeTimeout)
		defer cancel()
		_, _ = s.is.p.ReserveBlocks(ctx, []fsm.BlockRequest{{Name: s.name, Count: size, Min: 1}})
	}()
}
