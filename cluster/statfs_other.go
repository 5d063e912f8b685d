//go:build !linux

package cluster

// freeBytes is unknown (-1) outside Linux, where ticketd is built to run.
func freeBytes(string) int64 { return -1 }
