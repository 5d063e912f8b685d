package client

import (
	"context"
	"time"
)

// Internals the external tests check.

// ParseRetryAfter is parseRetryAfter.
func ParseRetryAfter(v string, now time.Time) time.Duration { return parseRetryAfter(v, now) }

// Sizer exposes the rate estimator and range sizing.
type Sizer struct{ z sizer }

func NewSizer(coverage time.Duration, min, max int64) *Sizer {
	return &Sizer{z: sizer{coverage: coverage.Seconds(), min: min, max: max}}
}
func (s *Sizer) Observe(ids int64, now time.Time)   { s.z.observe(ids, now) }
func (s *Sizer) Rate() float64                      { return s.z.rate }
func (s *Sizer) LowWater() int64                    { return s.z.lowWater() }
func (s *Sizer) Size(ranDry bool, last int64) int64 { return s.z.size(ranDry, last) }

// NextOnShard is Next in unordered mode as a caller on core k would take
// it, so that a test can spread calls over every shard deterministically.
func (s *Sequence) NextOnShard(ctx context.Context, k int) (int64, error) {
	return s.nextOnShard(ctx, &s.shards[k&s.shardMask])
}

// Shards is how many sub-ranges an unordered Sequence keeps (0: ordered).
func (s *Sequence) Shards() int { return len(s.shards) }
