//go:build !linux

package proc

import "syscall"

// sysProcAttr: other systems have no Pdeathsig, and the harnesses that ask
// for a group of its own (jepsen) run on Linux only.
func sysProcAttr(ownGroup bool) *syscall.SysProcAttr { return nil }
