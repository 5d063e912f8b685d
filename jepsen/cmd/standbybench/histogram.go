//go:build linux

package main

import (
	"bufio"
	"math"
	"strconv"
	"strings"
)

// histogram is one Prometheus histogram of a /metrics text: its count,
// sum and cumulative buckets (upper bound -> count), summed over labels.
type histogram struct {
	Count   float64             `json:"count"`
	Sum     float64             `json:"sum"`
	Buckets map[float64]float64 `json:"-"`
}

// parseHistogram reads histogram name from a Prometheus text exposition.
func parseHistogram(text, name string) histogram {
	h := histogram{Buckets: map[float64]float64{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		key := line[:i]
		switch {
		case key == name+"_count" || strings.HasPrefix(key, name+"_count{"):
			h.Count += v
		case key == name+"_sum" || strings.HasPrefix(key, name+"_sum{"):
			h.Sum += v
		case strings.HasPrefix(key, name+"_bucket{"):
			j := strings.Index(key, `le="`)
			if j < 0 {
				continue
			}
			rest := key[j+4:]
			le, err := strconv.ParseFloat(rest[:strings.IndexByte(rest, '"')], 64)
			if err != nil {
				continue
			}
			h.Buckets[le] += v
		}
	}
	return h
}

// Mean is the average observation (0 with none).
func (h histogram) Mean() float64 {
	if h.Count == 0 {
		return 0
	}
	return h.Sum / h.Count
}

// Quantile is the upper bound of the bucket that holds quantile q: an
// upper estimate, as coarse as the buckets (+Inf when past the last).
func (h histogram) Quantile(q float64) float64 {
	if h.Count == 0 {
		return 0
	}
	best := math.Inf(1)
	for le, c := range h.Buckets {
		if c >= q*h.Count && le < best {
			best = le
		}
	}
	return best
}
