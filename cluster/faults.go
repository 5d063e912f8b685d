//go:build ticketd_faults

package cluster

// This file is compiled only with -tags ticketd_faults: the binary the
// fault-injection suite uses to show that it catches each planted bug.
// nofaults.go is its counterpart in every other build.

type faultConfig struct {
	// UnsafeSkipBarrier is a planted bug: a new leader serves without
	// first applying every earlier entry.
	UnsafeSkipBarrier bool
	// UnsafeGroupedBlocksIgnoreLevel is a planted bug: the leader proposes
	// grouped blocks (type 11) whatever the cluster's feature level, so a
	// follower of an older release stops at the entry.
	UnsafeGroupedBlocksIgnoreLevel bool
	// UnsafeStandbyNoWait is a planted bug: the leader serves blocks and
	// answers lease writes without waiting for its in-sync standby, so a
	// promotion's advance no longer covers what the primary served.
	UnsafeStandbyNoWait bool
	// UnsafeStandbyTrustReceipt is a planted bug, the rule before issue
	// 42: the standby stamps a certificate with the time it read it plus
	// its timeout (less a tenth), not the time its leader fixed, so one
	// read late (a paused process, a slow link) vouches for a time after
	// the leader recorded it out of sync.
	UnsafeStandbyTrustReceipt bool
	// UnsafeRefuseRecordedOnly is a planted bug, the rule before issue
	// 42: a promoted node refuses only the servers its promotion recorded
	// as the old cluster's, so a voter the old primary took in after the
	// standby fell out is followed when it leads the old region back.
	UnsafeRefuseRecordedOnly bool
	// UnsafeLeaseForgetPromise is a planted bug: a restarted voter keeps
	// none of the promises its last process made, and votes at once.
	UnsafeLeaseForgetPromise bool
	// UnsafeLeaseServePastExpiry is a planted bug: the leader serves from
	// a lease whatever its clock says, until it steps down.
	UnsafeLeaseServePastExpiry bool
	// UnsafeLeaseKeptAcrossTransfer is a planted bug: the leader releases
	// its voters' promises for a transfer but keeps serving from its lease.
	UnsafeLeaseKeptAcrossTransfer bool
	// UnsafeLeaseClockRate, when not 0, is a planted bug: the leader's
	// lease clock runs at this rate of the real one (0.25 for
	// lease-clock-drift, far beyond any drift bound).
	UnsafeLeaseClockRate float64
}

func (c faultConfig) leaseForgetPromise() bool { return c.UnsafeLeaseForgetPromise }

func (c faultConfig) leaseServePastExpiry() bool { return c.UnsafeLeaseServePastExpiry }

func (c faultConfig) leaseKeptAcrossTransfer() bool { return c.UnsafeLeaseKeptAcrossTransfer }

func (c faultConfig) leaseClockRate() float64 {
	if c.UnsafeLeaseClockRate == 0 {
		return 1
	}
	return c.UnsafeLeaseClockRate
}

func (c faultConfig) skipBarrier() bool { return c.UnsafeSkipBarrier }

func (c faultConfig) groupedBlocksIgnoreLevel() bool { return c.UnsafeGroupedBlocksIgnoreLevel }

func (c faultConfig) standbyNoWait() bool { return c.UnsafeStandbyNoWait }

func (c faultConfig) standbyTrustReceipt() bool { return c.UnsafeStandbyTrustReceipt }

func (c faultConfig) refuseRecordedOnly() bool { return c.UnsafeRefuseRecordedOnly }
