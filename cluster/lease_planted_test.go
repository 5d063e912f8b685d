//go:build ticketd_faults

package cluster

import (
	"testing"
	"time"
)

// The planted lease bugs do what they say in-process; the fault suite shows
// that its checkers catch them (scripts/jepsen-faults.sh).

// A paused leader (SIGSTOP) wakes still Leader in raft's eyes, with its
// lease's end behind it on the clock: in-process, that is a lease whose
// expiry has passed.
func TestPlanted_LeaseServePastExpiry_ServesFromAnExpiredLease(t *testing.T) {
	for _, planted := range []bool{false, true} {
		nodes := startNodesWith(t, 3, raceTimings, func(c *Config) {
			c.LeaseReads = true
			c.LeaseDuration = 5 * time.Second // no renewal in the test's time
			c.UnsafeLeaseServePastExpiry = planted
		})
		l, g := awaitLease(t, nodes)
		g.expiry = l.leaseNow() - time.Millisecond
		l.leaseState.cur.Store(&g)
		if _, ok := l.leaseTerm(); ok != planted {
			t.Fatalf("planted %v: an expired lease served: %v", planted, ok)
		}
	}
}

// The planted clock runs at a quarter of the real rate: a pause of 4 D
// looks like one D to it.
func TestPlanted_LeaseClockDrift_ClockRunsAtAQuarter(t *testing.T) {
	n := &Node{cfg: Config{faultConfig: faultConfig{UnsafeLeaseClockRate: 0.25}}}
	n.leaseState.base = bootClock()
	real0, lease0 := bootClock(), n.leaseNow()
	time.Sleep(400 * time.Millisecond)
	realD, leaseD := bootClock()-real0, n.leaseNow()-lease0
	if leaseD > realD/2 {
		t.Fatalf("over %v the planted lease clock advanced %v, want about a quarter", realD, leaseD)
	}
}

func TestPlanted_LeaseForgetPromise_RestartedVoterVotesAtOnce(t *testing.T) {
	dir := t.TempDir()
	p, err := newPromises(dir, func() uint64 { return 3 }, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.promise(3, 5*time.Second, 1); !ok {
		t.Fatal("no promise")
	}
	again, err := newPromises(dir, func() uint64 { return 3 }, true)
	if err != nil {
		t.Fatal(err)
	}
	if !again.admitVote() {
		t.Fatal("with lease-forget-promise a restarted voter still refused a vote")
	}
}
