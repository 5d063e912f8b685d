//go:build !ticketd_faults

package client

// The counterpart of sequence_faults.go in every build without -tags
// ticketd_faults: no bug can be planted, and the check compiles to false.

type seqFaults struct{}

func (seqFaults) shareSubRange() bool { return false }
