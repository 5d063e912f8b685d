//go:build ticketd_faults

package client_test

import (
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
)

// With the planted bug (two cores given the same sub-range), the procedure
// of TestUnordered_EveryShardInTurn_NoIDTwice hands IDs out twice, and its
// check says so. scripts/faults-build.sh runs it.
func TestUnordered_Planted_ShareSubRange_Caught(t *testing.T) {
	noLeak(t)
	withProcs(t, 4)
	f := newFake()
	defer f.Close()
	f.addSequence("s", 1, api.DefaultMax)
	c := newClient(t, []string{f.URL()})
	seq := c.Sequence("s", client.Unordered(), client.WithRangeSize(1000, 1000),
		client.WithUnsafeSequenceFaults(client.UnsafeSequenceFaults{ShareSubRange: true}))
	ids, err := takeRoundRobin(ctxFor(t, 10*time.Second), seq, 20_000)
	if err != nil {
		t.Fatal(err)
	}
	d := len(duplicateIDs(ids))
	if d == 0 {
		t.Fatal("the planted bug went unnoticed: no ID twice")
	}
	t.Logf("caught: %d of %d IDs handed out twice", d, len(ids))
}
