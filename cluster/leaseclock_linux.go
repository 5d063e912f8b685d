package cluster

import (
	"time"

	"golang.org/x/sys/unix"
)

// bootClock reads CLOCK_BOOTTIME. Go's own monotonic reading is
// CLOCK_MONOTONIC, which stops while the kernel is suspended: a leader
// suspended past its lease would wake believing almost no time had passed
// and serve from a lease its voters no longer keep. CLOCK_BOOTTIME counts
// the suspend. A pause the hypervisor hides from the guest kernel is seen
// by neither (README, Guarantees).
func bootClock() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		// Linux has had CLOCK_BOOTTIME since 2.6.39; a kernel without it
		// cannot run this binary's lease safely.
		panic("cluster: clock_gettime(CLOCK_BOOTTIME): " + err.Error())
	}
	return time.Duration(ts.Nano())
}
