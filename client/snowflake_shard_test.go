package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
)

// WithWorkerID (issue #16): a generator leases the worker id it chose (a
// shard's) or none; while another holder has it, Wait and Next fail with a
// *WorkerUnavailableError naming the holder; once the id is free the
// generator gets it by itself, and its IDs carry it.
func TestSnowflake_WithWorkerID_LeasesThatIDOnly_TypedErrorWhileTaken(t *testing.T) {
	noLeak(t)
	f := newLeaseStandIn(nil)
	t.Cleanup(f.Close)
	f.addNamespace("posts", 2*time.Second, 2*time.Second, func(n *api.Namespace) {
		n.TimestampBits, n.WorkerBits, n.SequenceBits, n.MaxWorkers, n.WorkerRole = 40, 13, 10, 8192, api.WorkerRoleShard
	})
	c := newClient(t, []string{f.URL()})
	a := newSnowflake(t, c, "posts", client.WithHolder("db-a"), client.WithWorkerID(17))
	if l := waitLease(t, a, 5*time.Second); l.WorkerID != 17 {
		t.Fatalf("lease %+v, want worker 17", l)
	}
	b := newSnowflake(t, c, "posts", client.WithHolder("db-b"), client.WithWorkerID(17), client.WithLeaseWait(0))
	err := b.Wait(ctxFor(t, 300*time.Millisecond))
	var wu *client.WorkerUnavailableError
	if !errors.Is(err, client.ErrWorkerUnavailable) || !errors.As(err, &wu) {
		t.Fatalf("Wait while shard 17 is held: %v", err)
	}
	if wu.WorkerID != 17 || wu.Holder != "db-a" || wu.State != "held" || wu.Namespace != "posts" || wu.EarliestFree.IsZero() || wu.Err == nil {
		t.Fatalf("the error %+v", wu)
	}
	if _, err := b.Next(ctxFor(t, time.Second)); !errors.Is(err, client.ErrLeaseExpired) || !errors.Is(err, client.ErrWorkerUnavailable) {
		t.Fatalf("Next while shard 17 is held: %v", err)
	}
	// The stand-in releases inside Close and counts the recycle delay in
	// whole milliseconds, so the delay is measured from before Close and
	// may come up to a millisecond short of 2 s by the wall clock.
	released := time.Now()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	l := waitLease(t, b, 10*time.Second)
	if l.WorkerID != 17 || time.Since(released) < 2*time.Second-time.Millisecond {
		t.Fatalf("lease %+v %v after the release, want worker 17 after the 2 s recycle delay", l, time.Since(released))
	}
	for range 100 {
		if p := client.DecodeSnowflake(l.Layout, mustNext(t, b)); p.WorkerID != 17 {
			t.Fatalf("an ID of worker %d", p.WorkerID)
		}
	}
	// Acquires: a once, b until the id was free; b never took another id.
	for _, g := range f.grants {
		if g.WorkerID != 17 {
			t.Fatalf("grant of worker %d", g.WorkerID)
		}
	}
}

func TestSnowflake_WithWorkerID_Negative_InvalidArgument(t *testing.T) {
	c := newClient(t, []string{"http://127.0.0.1:1"})
	if _, err := c.Snowflake("posts", client.WithWorkerID(-1)); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("WithWorkerID(-1): %v", err)
	}
}

// A chosen worker id whose timestamp floor lies past the lease's deadline is
// kept (refusing until the clock passes the floor) rather than given back:
// giving it back would only make the same id rest a recycle delay.
func TestSnowflake_WithWorkerID_FloorOutOfReach_KeepsTheLease(t *testing.T) {
	noLeak(t)
	f := newLeaseStandIn(nil)
	t.Cleanup(f.Close)
	f.addNamespace("posts", 2*time.Second, 2*time.Second, nil)
	f.set(func(f *leaseStandIn) {
		f.floorFor = func(worker, nowMs int64) int64 { return nowMs + time.Hour.Milliseconds() }
	})
	c := newClient(t, []string{f.URL()})
	g := newSnowflake(t, c, "posts", client.WithWorkerID(3), client.WithLeaseWait(0))
	if l := waitLease(t, g, 5*time.Second); l.WorkerID != 3 {
		t.Fatalf("lease %+v", l)
	}
	if _, err := g.Next(ctxFor(t, time.Second)); !errors.Is(err, client.ErrClockMovedBackwards) {
		t.Fatalf("Next below the floor: %v", err)
	}
	if st := g.Stats(); st.FloorGiveUps != 0 || st.Acquired != 1 {
		t.Fatalf("stats %+v, want the lease kept", st)
	}
}

// BenchmarkSnowflakeLease_NextInstagramShard: the "instagram" preset's
// layout (10 sequence bits: 1,024 IDs per ms per shard) under a lease on
// shard 17. Next is capped at 1,024 IDs per millisecond, about 977 ns an ID.
func BenchmarkSnowflakeLease_NextInstagramShard(b *testing.B) {
	f := newLeaseStandIn(nil)
	b.Cleanup(f.Close)
	f.addNamespace("bench", 30*time.Second, time.Minute, func(n *api.Namespace) {
		n.TimestampBits, n.WorkerBits, n.SequenceBits, n.MaxWorkers, n.WorkerRole = 40, 13, 10, 8192, api.WorkerRoleShard
	})
	c, err := client.New([]string{f.URL()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	g, err := c.Snowflake("bench", client.WithWorkerID(17))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = g.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Wait(ctx); err != nil {
		b.Fatal(err)
	}
	benchNext(b, g)
}
