//go:build linux

// Package netfault holds the Linux pieces of the jepsen harness that work on
// network namespaces: running code inside a namespace (to dial from it or
// open a netlink socket in it) and a userspace packet delayer on NFQUEUE,
// which stands in for tc netem on kernels built without sch_netem.
package netfault

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// InNetns runs fn on an OS thread that has entered the network namespace at
// path (a /run/netns/NAME bind mount or /proc/PID/ns/net). Sockets created by
// fn belong to that namespace for their whole life, whichever thread uses
// them later. The thread returns to its original namespace afterwards; if
// that fails the thread stays locked and dies with the goroutine, so no other
// goroutine ever runs in the wrong namespace.
func InNetns(path string, fn func() error) error {
	target, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open netns %s: %w", path, err)
	}
	defer target.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open own netns: %w", err)
			return
		}
		defer self.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", path, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: it exits with this goroutine.
			errc <- fmt.Errorf("return from netns %s: %w (after fn: %v)", path, err, ferr)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}
