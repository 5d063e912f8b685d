package cluster

import "syscall"

// freeBytes is what an unprivileged write may still use on dir's filesystem
// (statfs's f_bavail), or -1 if it cannot be read.
func freeBytes(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
