//go:build ticketd_faults

package server_test

import (
	"testing"

	"github.com/ticketd/ticketd/server"
)

// A leader that serves past its lease (planted: lease-serve-past-expiry)
// answers from memory after the others elected a new leader, below the
// new leader's ranges: the partition test's checks catch it.
func TestPlanted_LeaseServePastExpiry_PartitionedLeaderServesStale(t *testing.T) {
	acked, stale := partitionedLeader(t, true, func(c *server.Config) { c.Cluster.UnsafeLeaseServePastExpiry = true })
	if stale == 0 {
		t.Fatalf("the planted leader acknowledged %d ranges after the new leader served, none stale: the plant did not bite", acked)
	}
	t.Logf("planted: %d of %d ranges acknowledged by the old leader were below the new leader's", stale, acked)
}

// A leader whose lease clock runs at a quarter of the real rate
// (lease-clock-drift) does the same.
func TestPlanted_LeaseClockDrift_PartitionedLeaderServesStale(t *testing.T) {
	acked, stale := partitionedLeader(t, true, func(c *server.Config) { c.Cluster.UnsafeLeaseClockRate = 0.25 })
	if stale == 0 {
		t.Fatalf("the planted leader acknowledged %d ranges after the new leader served, none stale: the plant did not bite", acked)
	}
	t.Logf("planted: %d of %d ranges acknowledged by the old leader were below the new leader's", stale, acked)
}
