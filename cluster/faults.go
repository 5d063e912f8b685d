//go:build ticketd_faults

package cluster

// This file is compiled only with -tags ticketd_faults: the binary the
// fault-injection suite uses to show that it catches each planted bug.
// nofaults.go is its counterpart in every other build.

type faultConfig struct {
	// UnsafeSkipBarrier is a planted bug: a new leader serves without
	// first applying every earlier entry.
	UnsafeSkipBarrier bool
}

func (c faultConfig) skipBarrier() bool { return c.UnsafeSkipBarrier }
