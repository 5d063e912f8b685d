package fsm

import (
	"errors"
	"fmt"
)

// MaxBatchBlocks bounds the block requests of one CommandReserveBlocks
// entry: a leader proposes fewer, and Apply refuses more, so one entry can
// never hold the FSM's lock for long.
const MaxBatchBlocks = 4096

// BlockRequest is one sequence's part of a CommandReserveBlocks entry: the
// same request as a ReserveBlock entry's, without the stamp.
type BlockRequest struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
	Min   int64  `json:"min"`
}

// ReserveBlocks is the body of CommandReserveBlocks: block requests of many
// sequences committed as one log entry (group commit across sequences), so
// that sequences waiting for blocks at the same time share one fsynced
// round. Apply grants them one after the other, in the order listed, each
// exactly as a ReserveBlock entry with the same fields would be granted at
// that point of the log: the ranges are still computed at apply, per
// sequence, in log order.
type ReserveBlocks struct {
	Requests []BlockRequest `json:"requests"`
	// Stamp is recorded in the allocation audit only.
	Stamp
}

// BlockOutcome is one request's result in a BlockBatch: the block, or the
// FSM's rejection of that request alone (ErrSequenceNotFound,
// ErrSequenceExhausted, ErrInvalidCommand). A rejected request changes
// nothing and does not affect the others.
type BlockOutcome struct {
	Block Block
	Err   error
}

// BlockBatch is the result of an applied CommandReserveBlocks: one outcome
// per request, in the entry's order.
type BlockBatch struct {
	Outcomes []BlockOutcome
}

// EncodeReserveBlocks encodes a CommandReserveBlocks entry.
func EncodeReserveBlocks(c ReserveBlocks) []byte { return mustEncode(CommandReserveBlocks, c) }

// errEmptyBatch and errBatchTooLarge reject a whole entry: a leader never
// proposes either, so they mean a bug or a hand-made entry.
var (
	errEmptyBatch    = errors.New("block batch has no requests")
	errBatchTooLarge = fmt.Errorf("block batch has more than %d requests", MaxBatchBlocks)
)

// applyReserveBlocks grants each request in turn; f.mu is held.
func (f *FSM) applyReserveBlocks(c ReserveBlocks, index, term uint64) any {
	switch {
	case len(c.Requests) == 0:
		return fmt.Errorf("%w: %v", ErrInvalidCommand, errEmptyBatch)
	case len(c.Requests) > MaxBatchBlocks:
		return fmt.Errorf("%w: %v (%d)", ErrInvalidCommand, errBatchTooLarge, len(c.Requests))
	}
	out := BlockBatch{Outcomes: make([]BlockOutcome, len(c.Requests))}
	// While a standby is recorded, one entry grants a sequence at most the
	// standby's bound (blockCap), so a name listed twice is refused the
	// second time: its blocks together could pass the bound.
	var listed map[string]bool
	if f.standby != nil {
		listed = make(map[string]bool, len(c.Requests))
	}
	for i, r := range c.Requests {
		if listed != nil {
			if listed[r.Name] {
				out.Outcomes[i].Err = fmt.Errorf("%w: %q listed twice in one entry while standby %q is recorded (one block per sequence per entry keeps the standby within its bound)", ErrInvalidCommand, r.Name, f.standby.ID)
				continue
			}
			listed[r.Name] = true
		}
		res := f.applyReserve(ReserveBlock{Name: r.Name, Count: r.Count, Min: r.Min, Stamp: c.Stamp}, index, term)
		switch v := res.(type) {
		case Block:
			out.Outcomes[i].Block = v
		case error:
			out.Outcomes[i].Err = v
		default:
			panic(fmt.Sprintf("fsm: applyReserve answered %T at index %d", res, index)) // programming error
		}
	}
	return out
}
