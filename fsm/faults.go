//go:build ticketd_faults

package fsm

// Faults are planted bugs for the fault-injection suite, each breaking one
// rule of restores and leases, so that the suite can show it catches the
// violation. This file is compiled only with -tags ticketd_faults (nofaults.go
// is its counterpart); every node of a cluster must plant the same ones, or
// replicas diverge.
type Faults struct {
	// RestoreSkipEmptyCheck applies a restore over a state that has
	// sequences or namespaces, replacing them.
	RestoreSkipEmptyCheck bool
	// ReuseLeaseTokens makes a grant's token its log index again, without
	// the floor, so tokens restart low on a cluster seeded from a backup.
	ReuseLeaseTokens bool
	// SkipAcquireIdempotency grants a new worker id to a retried acquire.
	SkipAcquireIdempotency bool
	// WallClockLeaseExpiry decides again, as before issue #18, that a lease
	// has ended and its worker id is free by comparing the entry's wall
	// clock stamp with the lease's stamped expiry: a leader whose clock
	// jumps ahead grants worker ids that live generators still use.
	WallClockLeaseExpiry bool
	// PromoteWithoutAdvance promotes a standby without raising any mark:
	// the new cluster hands out again what the primary served past what
	// the standby had stored (issue #34).
	PromoteWithoutAdvance bool
	// PromoteKeepsLeases promotes with the operator's advance as before
	// issue 42: held leases stay held and no namespace rests, so worker ids
	// the primary granted past the standby's last entry are free on the
	// promoted node at once, while their holders still use them.
	PromoteKeepsLeases bool
}

// PlantFaults sets planted bugs; call it before the FSM applies anything.
func (f *FSM) PlantFaults(x Faults) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = x
}

type plantedFaults = Faults

func (x Faults) restoreSkipEmptyCheck() bool  { return x.RestoreSkipEmptyCheck }
func (x Faults) reuseLeaseTokens() bool       { return x.ReuseLeaseTokens }
func (x Faults) skipAcquireIdempotency() bool { return x.SkipAcquireIdempotency }
func (x Faults) wallClockLeaseExpiry() bool   { return x.WallClockLeaseExpiry }
func (x Faults) promoteWithoutAdvance() bool  { return x.PromoteWithoutAdvance }
func (x Faults) promoteKeepsLeases() bool     { return x.PromoteKeepsLeases }
