//go:build !ticketd_faults

package client

// The counterpart of snowflake_faults.go in every build without -tags
// ticketd_faults: no bug can be planted, and the checks compile to false.

type sfFaults struct{}

func (sfFaults) serveAfterLeaseEnd() bool   { return false }
func (sfFaults) ignoreTimestampFloor() bool { return false }
