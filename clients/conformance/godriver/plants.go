package main

import (
	"context"
	"sync"

	"github.com/ticketd/ticketd/client"
)

// plants are the planted bugs a driver built with -tags ticketd_faults can
// switch on (plant_faults.go); the zero value, every other build's, has none.
type plants struct {
	// unordered are options added to the handles opened unordered.
	unordered []client.SequenceOption
	// reserveDescending answers reservations out of order.
	reserveDescending bool
}

// descendingReserver is the reserve-descending plant: it reserves a block
// of four times the count asked and answers reservations of the sequence
// from the block's top down, so each answer lies below the one before it,
// which the caller had before it asked again. Every ID is unique and comes
// from the cluster.
type descendingReserver struct {
	mu    sync.Mutex
	stash map[string]client.Range // by sequence: what is left of its block
}

func (d *descendingReserver) reserve(ctx context.Context, c *client.Client, seq string, n int64) (client.Range, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, ok := d.stash[seq]
	if !ok || b.Last-b.First+1 < n {
		var err error
		if b, err = c.Reserve(ctx, seq, 4*n); err != nil {
			return client.Range{}, err
		}
	}
	if d.stash == nil {
		d.stash = map[string]client.Range{}
	}
	d.stash[seq] = client.Range{First: b.First, Last: b.Last - n}
	return client.Range{First: b.Last - n + 1, Last: b.Last}, nil
}
