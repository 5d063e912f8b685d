//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// runResult is one measured run: one configuration on a fresh cluster.
type runResult struct {
	Config  string    `json:"config"`
	Round   int       `json:"round"`
	Started time.Time `json:"started"`
	// Problem says why the run does not count ("" when it does).
	Problem string         `json:"problem,omitempty"`
	Levels  []levelFigures `json:"levels"`
	// The leader's view of the standby after the load.
	StandbyState string `json:"standby_state,omitempty"`
	OutOfSync    int64  `json:"standby_out_of_sync_count"`
	StandbyLag   uint64 `json:"standby_lag_entries"`
	// ConnectRTTMs is the median TCP connect time to the standby's API:
	// the round trip of its link.
	ConnectRTTMs   float64 `json:"connect_rtt_ms,omitempty"`
	DelayedPackets uint64  `json:"delayed_packets,omitempty"`
	// StandbyCores is the CPU the standby used during the load, in cores
	// (it shares this machine's cores with the primary).
	StandbyCores float64 `json:"standby_cores,omitempty"`
	// LoadAvg is /proc/loadavg's 1-minute figure before the run.
	LoadAvg     float64   `json:"loadavg_before"`
	StandbyWait histogram `json:"standby_wait_seconds"`
	BlockWait   histogram `json:"block_wait_seconds"`
	BlockSize   histogram `json:"block_size_ids"`
}

func (r runResult) line() string {
	var parts []string
	for _, l := range r.Levels {
		parts = append(parts, fmt.Sprintf("c=%d %.0f res/s p99 %.2f ms", l.Concurrency, l.ReservationsPerSec, l.P99Ms))
	}
	s := strings.Join(parts, "; ")
	if r.Config != "a" {
		s += fmt.Sprintf("; standby %s, connect %.2f ms, %d waits (mean %.2f ms)",
			r.StandbyState, r.ConnectRTTMs, int(r.StandbyWait.Count), r.StandbyWait.Mean()*1000)
	}
	return s
}

// cell is one configuration at one level, over its counted runs.
type cell struct {
	Config      string    `json:"config"`
	Concurrency int       `json:"concurrency"`
	Runs        int       `json:"runs"`
	ResPerSec   float64   `json:"reservations_per_sec"` // mean over runs
	P99Ms       float64   `json:"p99_ms"`               // mean over runs
	P50Ms       float64   `json:"p50_ms"`
	Each        []float64 `json:"each_reservations_per_sec"`
	EachP99     []float64 `json:"each_p99_ms"`
	Errors      int       `json:"errors"`
	ServerCores float64   `json:"voter_cores"`
	RateRatio   float64   `json:"rate_ratio_to_a"`
	P99Ratio    float64   `json:"p99_ratio_to_a"`
	// PairedRatios are this configuration's rate over (a)'s of the same
	// round, run next to it: slow drift of the machine cancels in each.
	PairedRatios []float64 `json:"paired_rate_ratios_to_a"`
	PairedMedian float64   `json:"paired_rate_ratio_median"`
}

// otherCores is the CPU of everything else on the machine during a level:
// busy cores less the voters, the load generator and the standby. On 2
// cores it is what makes one run slower than its neighbour.
func (r runResult) otherCores() []float64 {
	var out []float64
	for _, l := range r.Levels {
		out = append(out, max(l.CPU.MachineCores-l.CPU.ServerCores-l.CPU.ClientCores-r.StandbyCores, 0))
	}
	return out
}

// summary is the whole run's result.
type summary struct {
	Options    map[string]string `json:"options"`
	Runs       []runResult       `json:"runs"`
	Cells      []cell            `json:"cells"`
	AllCounted bool              `json:"all_counted"`
	// MeetsTarget: (c) at ≥ 0.9× (a)'s rate at every level; Compared
	// says whether both were measured.
	MeetsTarget bool `json:"meets_target"`
	Compared    bool `json:"compared"`
}

const target = 0.9

func summarize(o options, runs []runResult) summary {
	s := summary{Runs: runs, AllCounted: true, MeetsTarget: true, Options: map[string]string{
		"delay": o.delay.String(), "count": fmt.Sprint(o.count), "concurrency": o.concurrency,
		"duration": o.duration.String(), "warmup": o.warmup.String(), "rounds": fmt.Sprint(o.rounds),
		"configs": strings.Join(o.configs, ","),
	}}
	byKey := map[string]*cell{}
	var keys []string
	for _, r := range runs {
		if r.Problem != "" {
			s.AllCounted = false
			continue
		}
		for _, l := range r.Levels {
			k := fmt.Sprintf("%s/%06d", r.Config, l.Concurrency)
			c := byKey[k]
			if c == nil {
				c = &cell{Config: r.Config, Concurrency: l.Concurrency}
				byKey[k] = c
				keys = append(keys, k)
			}
			c.Runs++
			c.Each = append(c.Each, l.ReservationsPerSec)
			c.EachP99 = append(c.EachP99, l.P99Ms)
			c.ResPerSec += l.ReservationsPerSec
			c.P99Ms += l.P99Ms
			c.P50Ms += l.P50Ms
			c.Errors += l.ErrorsTotal
			c.ServerCores += l.CPU.ServerCores
		}
	}
	for _, c := range byKey {
		n := float64(c.Runs)
		c.ResPerSec, c.P99Ms, c.P50Ms, c.ServerCores = c.ResPerSec/n, c.P99Ms/n, c.P50Ms/n, c.ServerCores/n
	}
	sort.Slice(keys, func(i, j int) bool {
		ci, cj := byKey[keys[i]], byKey[keys[j]]
		if ci.Concurrency != cj.Concurrency {
			return ci.Concurrency < cj.Concurrency
		}
		return ci.Config < cj.Config
	})
	for _, k := range keys {
		c := byKey[k]
		a := byKey[fmt.Sprintf("a/%06d", c.Concurrency)]
		if a != nil && a.ResPerSec > 0 && a.P99Ms > 0 {
			c.RateRatio, c.P99Ratio = c.ResPerSec/a.ResPerSec, c.P99Ms/a.P99Ms
		}
		c.PairedRatios = pairedRatios(runs, c.Config, c.Concurrency)
		c.PairedMedian = median(c.PairedRatios)
		if c.Config == "c" && a != nil {
			s.Compared = true
			if !(c.RateRatio >= target) {
				s.MeetsTarget = false
			}
		}
		s.Cells = append(s.Cells, *c)
	}
	return s
}

// pairedRatios is, per round where both counted, config's rate at
// concurrency conc over (a)'s.
func pairedRatios(runs []runResult, config string, conc int) []float64 {
	rate := func(cfg string, round int) float64 {
		for _, r := range runs {
			if r.Config == cfg && r.Round == round && r.Problem == "" {
				for _, l := range r.Levels {
					if l.Concurrency == conc {
						return l.ReservationsPerSec
					}
				}
			}
		}
		return 0
	}
	var out []float64
	for _, r := range runs {
		if r.Config != config || r.Problem != "" {
			continue
		}
		if a, x := rate("a", r.Round), rate(config, r.Round); a > 0 && x > 0 {
			out = append(out, x/a)
		}
	}
	return out
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (s summary) write(dir string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), b, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "summary.md"), []byte(s.markdown()), 0o644)
}

// markdown is the results table, the standby's figures per run and the
// verdict.
func (s summary) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Range size %s, %s warm-up + %s measured per level, %s rounds of (%s), delay %s on the standby's link in (c).\n\n",
		s.Options["count"], s.Options["warmup"], s.Options["duration"], s.Options["rounds"], s.Options["configs"], s.Options["delay"])
	b.WriteString("| clients | configuration | reservations/s (mean) | each run | ratio to (a) | per round, ratio to (a) of the same round | median | p99 ms (mean) | each run | ratio to (a) | voters' CPU, cores | errors |\n")
	b.WriteString("|--:|---|--:|---|--:|---|--:|--:|---|--:|--:|--:|\n")
	for _, c := range s.Cells {
		fmt.Fprintf(&b, "| %d | (%s) %s | %.0f | %s | %s | %s | %s | %.2f | %s | %s | %.2f | %d |\n",
			c.Concurrency, c.Config, configNames[c.Config], c.ResPerSec, joinf(c.Each, "%.0f"), ratio(c.RateRatio),
			joinf(c.PairedRatios, "%.2f"), ratio(c.PairedMedian),
			c.P99Ms, joinf(c.EachP99, "%.2f"), ratio(c.P99Ratio), c.ServerCores, c.Errors)
	}
	b.WriteString("\nThe standby, per run (the leader's GET /v1/cluster and /metrics after the load; waits are ticketd_standby_wait_seconds, block waits ticketd_block_wait_seconds):\n\n")
	b.WriteString("| run | standby after the load | out of sync | connect RTT ms | standby waits | mean ms | ~p99 ms | sum s | block waits | mean ms | blocks | mean block IDs | standby CPU, cores | other work, cores per level | load avg before | problem |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
	for _, r := range s.Runs {
		state, rtt, cores := "—", "—", "—"
		if r.Config != "a" {
			state, rtt, cores = r.StandbyState, fmt.Sprintf("%.2f", r.ConnectRTTMs), fmt.Sprintf("%.2f", r.StandbyCores)
		}
		fmt.Fprintf(&b, "| %d(%s) | %s | %d | %s | %.0f | %.2f | %s | %.3f | %.0f | %.2f | %.0f | %.0f | %s | %s | %.2f | %s |\n",
			r.Round, r.Config, state, r.OutOfSync, rtt, r.StandbyWait.Count, r.StandbyWait.Mean()*1000,
			bound(r.StandbyWait.Quantile(0.99)*1000), r.StandbyWait.Sum, r.BlockWait.Count, r.BlockWait.Mean()*1000,
			r.BlockSize.Count, r.BlockSize.Mean(), cores, joinf(r.otherCores(), "%.2f"), r.LoadAvg, r.Problem)
	}
	switch {
	case !s.Compared:
		b.WriteString("\nVerdict: none: (a) and (c) were not both measured.\n")
	case !s.AllCounted:
		b.WriteString("\nVerdict: some runs do not count (see problem); the ratios use the runs that do.\n")
	case s.MeetsTarget:
		fmt.Fprintf(&b, "\nVerdict: (c) reaches ≥ %.1f× the rate of (a) at every level.\n", target)
	default:
		fmt.Fprintf(&b, "\nVerdict: (c) is below %.1f× the rate of (a) at some level.\n", target)
	}
	return b.String()
}

func joinf(vs []float64, format string) string {
	var out []string
	for _, v := range vs {
		out = append(out, fmt.Sprintf(format, v))
	}
	return strings.Join(out, ", ")
}

func ratio(r float64) string {
	if r == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", r)
}

func bound(v float64) string {
	if math.IsInf(v, 1) {
		return "> last bucket"
	}
	return fmt.Sprintf("≤ %.1f", v)
}
