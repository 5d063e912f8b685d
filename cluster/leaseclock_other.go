//go:build !linux

package cluster

import "time"

var clockOrigin = time.Now()

// bootClock is Go's monotonic clock outside Linux: it may stop while the
// machine sleeps, so leases there assume a leader's machine is never
// suspended (leaseclock_linux.go reads CLOCK_BOOTTIME instead).
func bootClock() time.Duration { return time.Since(clockOrigin) }
