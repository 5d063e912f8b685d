//go:build !ticketd_faults

package cluster

// Every build but the fault-injection one (faults.go): a new leader always
// runs its Barrier, and every entry goes through the level gate.

type faultConfig struct{}

func (faultConfig) skipBarrier() bool { return false }

func (faultConfig) groupedBlocksIgnoreLevel() bool { return false }

func (faultConfig) standbyNoWait() bool { return false }

func (faultConfig) standbyTrustReceipt() bool { return false }

func (faultConfig) refuseRecordedOnly() bool { return false }

func (faultConfig) leaseForgetPromise() bool { return false }

func (faultConfig) leaseServePastExpiry() bool { return false }

func (faultConfig) leaseKeptAcrossTransfer() bool { return false }

func (faultConfig) leaseClockRate() float64 { return 1 }
