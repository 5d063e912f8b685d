//go:build ticketd_faults

package main

import (
	"fmt"

	"github.com/ticketd/ticketd/client"
)

// The driver's planted bugs, compiled only with -tags ticketd_faults (the
// SDK's hook, client.WithUnsafeSequenceFaults, exists only there), so that
// the driver the conformance script builds cannot switch one on.

// unorderedPlantOptions are the SequenceOptions that plant names for the
// handles opened unordered.
func unorderedPlantOptions(plant string) ([]client.SequenceOption, error) {
	switch plant {
	case "":
		return nil, nil
	case "unordered-share-subrange":
		// Two cores get the same sub-range: the same IDs twice.
		return []client.SequenceOption{client.WithUnsafeSequenceFaults(client.UnsafeSequenceFaults{ShareSubRange: true})}, nil
	}
	return nil, fmt.Errorf("unknown plant %q (the Go driver has unordered-share-subrange)", plant)
}
