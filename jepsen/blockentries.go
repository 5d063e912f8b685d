//go:build linux

package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/ticketd/ticketd/api"
)

// blockEntries is what the allocation audit retained at the end of a run
// says about how blocks were committed: how many log entries granted
// blocks, and how many of those granted blocks of several sequences at once
// (the grouped command of issue #17, type 11). It shows that the grouped
// command ran under the nemeses, not just that it exists.
type blockEntries struct {
	Blocks        int `json:"blocks"`
	Entries       int `json:"entries"`
	Grouped       int `json:"grouped_entries"`
	LargestGroup  int `json:"largest_group"`
	GroupedBlocks int `json:"blocks_in_grouped_entries"`
}

func (b blockEntries) String() string {
	return fmt.Sprintf("%d blocks in %d entries; %d entries granted blocks of several sequences (%d blocks, largest %d)",
		b.Blocks, b.Entries, b.Grouped, b.GroupedBlocks, b.LargestGroup)
}

// countBlockEntries pages through the leader's audit. Records of one entry
// share its index (and a restore renumbers nothing but Seq, so indices of a
// restored cluster's records are the old cluster's: counted as they are).
func countBlockEntries(ctx context.Context, c *Cluster) (blockEntries, error) {
	perIndex, err := blockRecordsPerIndex(ctx, c)
	if err != nil {
		return blockEntries{}, err
	}
	var b blockEntries
	for _, k := range perIndex {
		b.Blocks += k
		b.Entries++
		if k > 1 {
			b.Grouped++
			b.GroupedBlocks += k
			b.LargestGroup = max(b.LargestGroup, k)
		}
	}
	return b, nil
}

// blockRecordsPerIndex is how many block records each log index granted,
// from the leader's audit.
func blockRecordsPerIndex(ctx context.Context, c *Cluster) (map[uint64]int, error) {
	n, err := c.leader(ctx, 30*time.Second)
	if err != nil {
		return nil, err
	}
	perIndex := map[uint64]int{}
	var after uint64
	for page := 0; page < 100; page++ { // the audit retains 20,000 records: 4 pages
		var l api.AuditList
		if _, err := c.call(ctx, http.MethodGet, n, fmt.Sprintf("/v1/audit?after_seq=%d&limit=5000", after), nil, &l, 10*time.Second); err != nil {
			return nil, err
		}
		if len(l.Records) == 0 {
			break
		}
		for _, r := range l.Records {
			after = r.Seq
			if r.Kind == "block" {
				perIndex[r.Index]++
			}
		}
	}
	return perIndex, nil
}
