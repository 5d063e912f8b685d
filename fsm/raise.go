package fsm

import "fmt"

// Raising a sequence's high-water mark (issue #16).
//
// A team moving to ticketd from another generator needs ticketd's IDs to lie
// above every ID the old generator handed out, and, while both still write,
// above what it will hand out until the cut-over. A raise lifts the mark to
// at least a given value: the IDs it passes over are never handed out. It
// never lowers a mark (that would reissue IDs), so it is a no-op when the
// mark is already there, and running it again changes nothing. Like a
// block, the outcome is computed when the entry applies, from the state
// alone.

// CommandRaiseSequence lifts a sequence's high-water mark.
const CommandRaiseSequence CommandType = 12

// AuditRaise is the audit kind of a raise that moved a mark: First..Last are
// the IDs it passed over.
const AuditRaise = "raise"

// RaiseSequence is the body of CommandRaiseSequence.
type RaiseSequence struct {
	Name string `json:"name"`
	// AtLeast is the high-water mark the sequence must have afterwards.
	AtLeast int64 `json:"at_least"`
	// Stamp is recorded in the audit only.
	Stamp
}

// EncodeRaiseSequence encodes a CommandRaiseSequence entry.
func EncodeRaiseSequence(c RaiseSequence) []byte { return mustEncode(CommandRaiseSequence, c) }

// RaiseResult is the result of an applied CommandRaiseSequence.
type RaiseResult struct {
	// Sequence is the state after the entry.
	Sequence Sequence
	// Previous is the high-water mark before the entry.
	Previous int64
	// Raised is false when the mark was already at or above AtLeast.
	Raised bool
}

// Skipped is how many IDs the raise passed over.
func (r RaiseResult) Skipped() int64 { return r.Sequence.Issued - r.Previous }

func (f *FSM) applyRaise(c RaiseSequence, index, term uint64) any {
	s, err := f.checkRaise(c)
	if err != nil {
		return err
	}
	prev := s.Issued
	if c.AtLeast <= prev {
		return RaiseResult{Sequence: *s, Previous: prev}
	}
	s.Issued = c.AtLeast
	f.audit(AuditRecord{Index: index, Term: term, Leader: c.Leader, TimeMs: c.NowMs, Kind: AuditRaise,
		Sequence: c.Name, First: prev + 1, Last: c.AtLeast})
	return RaiseResult{Sequence: *s, Previous: prev, Raised: true}
}

// checkRaise is the rule a raise entry applies by: the sequence it names,
// or the rejection Apply answers; f.mu is held (read or write).
func (f *FSM) checkRaise(c RaiseSequence) (*Sequence, error) {
	if err := validateName(c.Name); err != nil {
		return nil, fmt.Errorf("%w: sequence %v", ErrInvalidCommand, err)
	}
	if c.AtLeast < 1 {
		return nil, fmt.Errorf("%w: at_least must be at least 1, got %d", ErrInvalidCommand, c.AtLeast)
	}
	s, ok := f.sequences[c.Name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrSequenceNotFound, c.Name)
	}
	if c.AtLeast > s.Max {
		// Raising to the maximum itself is allowed (the sequence is then
		// used up, as asked); past it would need IDs the sequence cannot
		// have, and a mark never passes Max.
		return nil, fmt.Errorf("%w: %q cannot be raised to %d, above its max %d", ErrSequenceExhausted, c.Name, c.AtLeast, s.Max)
	}
	return s, nil
}

// PendingRaise reports whether data, a log entry about to be applied, is a
// raise that Apply will accept, and of which sequence to which value. The
// leader's issuer must cut what it holds at or below that value before the
// entry applies: once it has, a read shows the raised mark, and a
// reservation that follows such a read must not meet IDs below it. A raise
// Apply refuses asks for no cut (one above max would cut every block the
// leader takes of the sequence). Only the one goroutine that applies
// entries may rely on the answer holding for the Apply that follows.
func (f *FSM) PendingRaise(data []byte) (sequence string, atLeast int64, ok bool) {
	if len(data) == 0 || CommandType(data[0])&^IgnoreUnknownTypeFlag != CommandRaiseSequence {
		return "", 0, false
	}
	_, cmd, err := decodeCommand(data)
	if err != nil {
		return "", 0, false // Apply panics on it
	}
	c := cmd.(*RaiseSequence)
	f.mu.RLock()
	defer f.mu.RUnlock()
	if _, err := f.checkRaise(*c); err != nil {
		return "", 0, false
	}
	return c.Name, c.AtLeast, true
}
