package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ticketd/ticketd/client"
)

// After a step back of the wall clock that the issuing shard follows (it is
// past everything issued), the idle shards keep their old timeline. When
// the next lease's start was the latest of every shard's timeline, the new
// lease refused for the size of the step ("wall clock moved backwards:
// 995ms behind ... the start of the lease"); the default mode issues at
// once, and so must the unordered one. Found by the review of issue 35.
func TestSnowflakeUnordered_IdleShardTimeline_DoesNotHoldTheNextLeaseBack(t *testing.T) {
	for _, unordered := range []bool{false, true} {
		name := map[bool]string{false: "default", true: "unordered"}[unordered]
		t.Run(name, func(t *testing.T) {
			clk := newFakeClock(false)
			opts := []client.SnowflakeOption{client.WithLeaseWait(0)}
			if unordered {
				opts = append(opts, client.UnorderedSnowflake())
			}
			f, g := unorderedSnowflakeOn(t, clk, 3*time.Second, 6*time.Second, nil, opts...)
			l1 := waitLease(t, g, 5*time.Second)
			next := func(when string) error {
				t.Helper()
				var err error
				if unordered {
					_, err = client.NextOnShard(g, 0) // one busy core; the others idle
				} else {
					_, err = g.Next(ctxFor(t, 50*time.Millisecond))
				}
				return err
			}
			clk.Advance(time.Millisecond)
			if err := next("start"); err != nil {
				t.Fatal(err)
			}
			clk.Advance(2 * time.Second)
			clk.Step(-time.Second) // past all issued: followed at once
			if err := next("after the step"); err != nil {
				t.Fatalf("after the step back: %v", err)
			}
			f.set(func(f *leaseStandIn) { f.lostNext = 1 })
			deadline := time.Now().Add(10 * time.Second)
			for {
				if l, ok := g.Lease(); ok && l.Token != l1.Token {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no new lease")
				}
				time.Sleep(10 * time.Millisecond)
			}
			clk.Advance(5 * time.Millisecond)
			err := next("new lease")
			if err != nil {
				var cb *client.ClockBehindError
				errors.As(err, &cb)
				t.Fatalf("first ID under the new lease: %v (behind %v)", err, cb)
			}
		})
	}
}
