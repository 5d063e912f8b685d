//go:build linux

package main

import (
	"strings"
	"testing"
	"time"
)

const metricsText = `# HELP ticketd_standby_wait_seconds Time a block waited.
# TYPE ticketd_standby_wait_seconds histogram
ticketd_standby_wait_seconds_bucket{le="0.005"} 1
ticketd_standby_wait_seconds_bucket{le="0.025"} 3
ticketd_standby_wait_seconds_bucket{le="+Inf"} 4
ticketd_standby_wait_seconds_sum 0.25
ticketd_standby_wait_seconds_count 4
ticketd_standby_wait_seconds_other 99
ticketd_block_size_ids_count{sequence="x"} 2
ticketd_block_size_ids_count{sequence="y"} 3
`

func TestParseHistogram_CountSumQuantile(t *testing.T) {
	h := parseHistogram(metricsText, "ticketd_standby_wait_seconds")
	if h.Count != 4 || h.Sum != 0.25 || h.Mean() != 0.0625 {
		t.Fatalf("count %v sum %v mean %v, want 4, 0.25, 0.0625", h.Count, h.Sum, h.Mean())
	}
	if q := h.Quantile(0.5); q != 0.025 {
		t.Fatalf("median bucket %v, want 0.025", q)
	}
	if q := h.Quantile(0.99); q <= 1e9 {
		t.Fatalf("p99 bucket %v, want +Inf", q)
	}
	if b := parseHistogram(metricsText, "ticketd_block_size_ids"); b.Count != 5 {
		t.Fatalf("labelled counts summed to %v, want 5", b.Count)
	}
	if n := parseHistogram(metricsText, "ticketd_absent"); n.Count != 0 || n.Quantile(0.99) != 0 {
		t.Fatalf("absent histogram: %+v", n)
	}
}

func level(c int, rate, p99 float64) levelFigures {
	return levelFigures{Concurrency: c, ReservationsPerSec: rate, P99Ms: p99}
}

func TestSummarize_RatiosToA_AndTarget(t *testing.T) {
	o := options{rounds: 2, configs: []string{"a", "b", "c"}, delay: 20 * time.Millisecond, concurrency: "16", count: 1000}
	runs := []runResult{
		{Config: "a", Round: 1, Levels: []levelFigures{level(16, 1000, 10)}},
		{Config: "b", Round: 1, Levels: []levelFigures{level(16, 950, 11)}},
		{Config: "c", Round: 1, Levels: []levelFigures{level(16, 880, 20)}},
		{Config: "a", Round: 2, Levels: []levelFigures{level(16, 1200, 10)}},
		{Config: "b", Round: 2, Levels: []levelFigures{level(16, 1150, 11)}},
		{Config: "c", Round: 2, Levels: []levelFigures{level(16, 1100, 20)}},
	}
	s := summarize(o, runs)
	if len(s.Cells) != 3 || s.Cells[0].Config != "a" || s.Cells[2].Config != "c" {
		t.Fatalf("cells %+v", s.Cells)
	}
	c := s.Cells[2]
	if c.ResPerSec != 990 || c.RateRatio != 990.0/1100 || c.P99Ratio != 2 {
		t.Fatalf("(c): %+v", c)
	}
	if len(c.PairedRatios) != 2 || c.PairedRatios[0] != 0.88 || c.PairedMedian != (0.88+1100.0/1200)/2 {
		t.Fatalf("(c) per round: %v, median %v", c.PairedRatios, c.PairedMedian)
	}
	if !s.MeetsTarget || !s.AllCounted {
		t.Fatalf("0.9× exactly meets the target: %+v", s)
	}
	runs[5].Levels[0].ReservationsPerSec = 1000
	runs[4].Problem = "standby out-of-sync"
	s = summarize(o, runs)
	if s.MeetsTarget || s.AllCounted {
		t.Fatalf("(c) at 0.85× and a run that does not count: %+v", s)
	}
	if b := s.Cells[1]; b.Runs != 1 {
		t.Fatalf("the run with a problem was counted: %+v", b)
	}
	if md := s.markdown(); !strings.Contains(md, "some runs do not count") {
		t.Fatalf("verdict missing:\n%s", md)
	}
}
