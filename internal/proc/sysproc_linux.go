package proc

import "syscall"

// sysProcAttr: SIGKILL if the harness dies, and optionally a process group
// of its own.
func sysProcAttr(ownGroup bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: ownGroup, Pdeathsig: syscall.SIGKILL}
}
