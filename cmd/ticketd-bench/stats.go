package main

import (
	"math"
	"slices"
	"time"
)

// idRange is one successful reservation as returned by the server
// (inclusive on both ends).
type idRange struct {
	First uint64
	Last  uint64
}

// rangeCheck is the outcome of checkRanges.
type rangeCheck struct {
	// Ranges is how many ranges were checked.
	Ranges int `json:"ranges"`
	// Overlaps counts ranges that share at least one ID with an earlier
	// range (after sorting by First). Any non-zero value means the server
	// handed out the same ID twice.
	Overlaps int `json:"overlaps"`
	// BadSize counts ranges whose length is not the requested count
	// (including inverted ranges with Last < First).
	BadSize int `json:"bad_size"`
	// MinFirst and MaxLast bound every ID seen; useful to eyeball gaps.
	MinFirst uint64 `json:"min_first"`
	MaxLast  uint64 `json:"max_last"`
}

// checkRanges sorts rs in place and reports overlapping and mis-sized
// ranges. count is the requested range size; 0 skips the size check.
//
// Overlap is judged against the largest Last seen so far rather than just
// the previous range, so a long bogus range that swallows several later
// ones is counted once per swallowed range instead of being missed.
func checkRanges(rs []idRange, count uint64) rangeCheck {
	res := rangeCheck{Ranges: len(rs)}
	if len(rs) == 0 {
		return res
	}
	slices.SortFunc(rs, func(a, b idRange) int {
		switch {
		case a.First < b.First:
			return -1
		case a.First > b.First:
			return 1
		case a.Last < b.Last:
			return -1
		case a.Last > b.Last:
			return 1
		}
		return 0
	})
	res.MinFirst = rs[0].First
	var maxLast uint64
	for i, r := range rs {
		if r.Last < r.First || (count > 0 && r.Last-r.First+1 != count) {
			res.BadSize++
		}
		if i > 0 && r.First <= maxLast {
			res.Overlaps++
		}
		if i == 0 || r.Last > maxLast {
			maxLast = r.Last
		}
	}
	res.MaxLast = maxLast
	return res
}

// percentile returns the nearest-rank p-th percentile (0 < p <= 100) of
// sorted. Nearest-rank always returns an observed sample, so p100 == max
// and small samples never get interpolated values nobody measured.
func percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if p <= 0 {
		return sorted[0]
	}
	// The epsilon keeps float noise from bumping an exact rank up by one
	// (99.9/100*1000 is 999.0000000000001 in float64).
	rank := int(math.Ceil(p/100*float64(n) - 1e-9))
	if rank < 1 {
		rank = 1
	}
	if rank > n {
		rank = n
	}
	return sorted[rank-1]
}

// latencySummary holds the distribution figures we report.
type latencySummary struct {
	P50  time.Duration
	P99  time.Duration
	P999 time.Duration
	Max  time.Duration
	Mean time.Duration
}

// summarize sorts lat in place and computes the summary.
func summarize(lat []time.Duration) latencySummary {
	if len(lat) == 0 {
		return latencySummary{}
	}
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	return latencySummary{
		P50:  percentile(lat, 50),
		P99:  percentile(lat, 99),
		P999: percentile(lat, 99.9),
		Max:  lat[len(lat)-1],
		Mean: sum / time.Duration(len(lat)),
	}
}

// ms converts a duration to float milliseconds for JSON and tables.
func ms(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
}
