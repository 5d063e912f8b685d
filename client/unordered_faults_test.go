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
	_, _, seq := unorderedOnFake(t, 4, api.DefaultMax, 1000,
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
