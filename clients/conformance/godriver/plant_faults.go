//go:build ticketd_faults

package main

import (
	"fmt"

	"github.com/ticketd/ticketd/client"
)

// The driver's planted bugs, compiled only with -tags ticketd_faults, so
// that the driver the conformance script builds for its VALID runs cannot
// switch one on. One is the SDK's (its hook, client.WithUnsafeSequenceFaults,
// exists only in this build); one is the driver's own.

// plantsFor is what plant names, or an error for a name this driver lacks.
func plantsFor(plant string) (plants, error) {
	switch plant {
	case "":
		return plants{}, nil
	case "unordered-share-subrange":
		// Two cores get the same sub-range: the same IDs twice.
		return plants{unordered: []client.SequenceOption{client.WithUnsafeSequenceFaults(client.UnsafeSequenceFaults{ShareSubRange: true})}}, nil
	case "reserve-descending":
		// Every second reservation answers a range below the one before it
		// (issue 48): unique, so only the check of real-time order across
		// calls can catch it.
		return plants{reserveDescending: true}, nil
	}
	return plants{}, fmt.Errorf("unknown plant %q (the Go driver has unordered-share-subrange and reserve-descending)", plant)
}
