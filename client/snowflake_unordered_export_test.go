package client

import (
	"errors"
	"fmt"
	"time"
)

// Internals of UnorderedSnowflake that the external tests drive.

// SnowflakeShards is the number of shards a generator issues from (1 in
// the default mode, or before its first lease).
func SnowflakeShards(g *Snowflake) int {
	if g.shards == nil {
		return 1
	}
	return int(g.shardMask.Load()) + 1
}

// errShardWaits: the shard asked to wait (its share of the tick is used
// up, or the clock is behind what it issued).
var errShardWaits = errors.New("the shard asks to wait")

// NextOnShard takes one ID from shard k alone, without waiting, whatever
// core the caller runs on.
func NextOnShard(g *Snowflake, k int) (int64, error) {
	var one [1]int64
	n, wait, err := g.takeOnShard(k, one[:])
	switch {
	case err != nil:
		return 0, err
	case n == 0:
		return 0, fmt.Errorf("%w %v", errShardWaits, time.Duration(wait))
	}
	return one[0], nil
}

// ErrShardWaits is errShardWaits.
var ErrShardWaits = errShardWaits

// PlantSharedShare gives shard to the share of the sequence of shard from:
// the bug that UnorderedSnowflake's uniqueness rests on not having. Call it
// after the generator holds its first lease (the shares are given then).
func PlantSharedShare(g *Snowflake, from, to int) {
	src, dst := &g.shards[from].g, &g.shards[to].g
	src.mu.Lock()
	first, cut := src.seqFirst, src.seqCut
	src.mu.Unlock()
	dst.mu.Lock()
	dst.seqFirst, dst.seqCut = first, cut
	dst.mu.Unlock()
}

// ErrShardHasNoLease is what a shard taken directly answers without a
// valid lease (Next turns it into ErrLeaseExpired after its wait).
var ErrShardHasNoLease = errNoLease
