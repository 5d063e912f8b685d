package client

import "time"

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
