package sdktest

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/internal/testcluster"
)

// TestCluster_SteadyLoad_ObservedRateNearTrueRate warms up fresh Sequences
// one after another, in each mode, under 8 goroutines calling Next at a
// steady pace (the failover test's load and coverage), and compares each
// Sequence's observed rate (Stats().Rate, which sizes its ranges and its
// low-water mark) with the rate its callers took IDs at: within a factor
// of 2.
//
// It fails in unordered mode (a known bug of issue 35's client/unordered.go):
// the rate is sampled in startRefillLocked from retired + cur.taken(), which
// counts the IDs cut into the cores' sub-ranges as handed out, and the
// sample is taken inside the cut (takeForShardLocked -> takeLocked crosses
// the trigger -> prefetchLocked) before the new sub-range is installed. At
// warm-up the 1,000 and 2,000 ID ranges are refilled back to back, so the
// first cut of 4,097 from the first large range lands in a window of about
// 5 ms: 5,971 IDs "taken" in 5 ms reads as 1.2 million a second. The rate
// rises at once and halves at most per sample, and the ranges it sizes are
// so large that samples become rare. Measured (2 runs, 5 Sequences a mode):
// 4 of 10 unordered Sequences at 8.9-11.2x the true rate, caches of 39-47 s
// of IDs for a 4 s coverage; ordered 0.85-1.04x. Tried locally (not
// committed): sampling retired + cur.taken() minus the shards' unused stock,
// with the refill started after the cut's sub-range is installed, gave
// 0.70-1.18x in 10 of 10. It runs only with TICKETD_SDKTEST_KNOWN_BUGS=1
// until the SDK is fixed; then drop the gate.
func TestCluster_SteadyLoad_ObservedRateNearTrueRate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	if os.Getenv("TICKETD_SDKTEST_KNOWN_BUGS") != "1" {
		t.Skip("fails in unordered mode until the SDK's rate counts only IDs handed out; TICKETD_SDKTEST_KNOWN_BUGS=1 runs it")
	}
	tc := testcluster.New(t, 3, nil)
	c := newClient(t, tc.URLs())
	const sequences, goroutines, load = 5, 8, 1500 * time.Millisecond
	for _, m := range seqModes {
		t.Run(m.name, func(t *testing.T) {
			setMode(t, m)
			ctx := ctxFor(t, 60*time.Second)
			var fails []string
			for k := range sequences {
				name := fmt.Sprintf("rate-%s-%d", m.name, k)
				if _, _, err := c.CreateSequence(ctx, name, client.SequenceSettings{}); err != nil {
					t.Fatal(err)
				}
				seq := c.Sequence(name, append([]client.SequenceOption{client.WithCoverage(4 * time.Second)}, m.opts...)...)
				var (
					taken atomic.Int64
					wg    sync.WaitGroup
				)
				start := time.Now()
				for range goroutines {
					wg.Go(func() {
						for time.Since(start) < load {
							for range 16 {
								if _, err := seq.Next(ctx); err != nil {
									t.Error(err)
									return
								}
								taken.Add(1)
							}
							time.Sleep(time.Millisecond)
						}
					})
				}
				wg.Wait()
				trueRate := float64(taken.Load()) / time.Since(start).Seconds()
				st := seq.Stats()
				t.Logf("%s: %.0f IDs/s taken; observed %.0f IDs/s (%.2fx); cached %d (%.1f s of IDs)",
					name, trueRate, st.Rate, st.Rate/trueRate, st.Cached, float64(st.Cached)/trueRate)
				if st.Rate < trueRate/2 || st.Rate > trueRate*2 {
					fails = append(fails, fmt.Sprintf("%s: observed %.0f IDs/s, taken %.0f IDs/s", name, st.Rate, trueRate))
				}
			}
			if len(fails) > 0 {
				t.Fatalf("observed rate not within 2x of the true one: %q", fails)
			}
		})
	}
}
