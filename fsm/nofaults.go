//go:build !ticketd_faults

package fsm

// Every build but the fault-injection one (faults.go): no planted bug exists,
// and the checks below are constants the compiler removes.

type plantedFaults struct{}

func (plantedFaults) restoreSkipEmptyCheck() bool  { return false }
func (plantedFaults) reuseLeaseTokens() bool       { return false }
func (plantedFaults) skipAcquireIdempotency() bool { return false }
func (plantedFaults) wallClockLeaseExpiry() bool   { return false }
func (plantedFaults) promoteWithoutAdvance() bool  { return false }
func (plantedFaults) promoteKeepsLeases() bool     { return false }
