//go:build ticketd_faults

package client

// This file is compiled only with -tags ticketd_faults, like
// snowflake_faults.go: the bugs a test plants in a Sequence to show that
// its checks catch them. sequence_nofaults.go is its counterpart in every
// other build, where WithUnsafeSequenceFaults does not exist.

// UnsafeSequenceFaults are bugs to plant in a Sequence. TEST ONLY.
type UnsafeSequenceFaults struct {
	// ShareSubRange: in unordered mode, give the sub-range a core cuts to
	// the next core as well, so that two cores hand out the same IDs.
	ShareSubRange bool
}

type seqFaults = UnsafeSequenceFaults

// WithUnsafeSequenceFaults plants bugs in a Sequence. TEST ONLY: it exists
// only in builds with -tags ticketd_faults.
func WithUnsafeSequenceFaults(f UnsafeSequenceFaults) SequenceOption {
	return func(c *seqConfig) error {
		c.faults = f
		return nil
	}
}

func (f seqFaults) shareSubRange() bool { return f.ShareSubRange }
