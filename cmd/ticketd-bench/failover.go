package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"syscall"
	"time"
)

// failoverConfig is everything one probe run needs.
type failoverConfig struct {
	Targets   []string
	Sequence  string
	Interval  time.Duration
	Duration  time.Duration
	Timeout   time.Duration
	Threshold time.Duration
}

// probeFailure is one failed try against one target.
type probeFailure struct {
	At     time.Duration // since probe start
	Target string
	Kind   string // "503", "conn_refused", "timeout", "transport", "decode", ...
}

// gap is a stretch without a successful reservation longer than the
// threshold. Unrecovered marks a gap that was still open when the probe
// ended (or that precedes the first success): the cluster did not come back
// within the run, which a between-successes figure alone would hide.
type gap struct {
	FromMs      float64        `json:"from_ms"`
	ToMs        float64        `json:"to_ms"`
	GapMs       float64        `json:"gap_ms"`
	FailedTries int            `json:"failed_tries"`
	Errors      map[string]int `json:"errors,omitempty"`
	Unrecovered bool           `json:"unrecovered,omitempty"`
}

// failoverReport is what --json writes.
type failoverReport struct {
	Targets      []string       `json:"targets"`
	Sequence     string         `json:"sequence"`
	IntervalMs   float64        `json:"interval_ms"`
	DurationS    float64        `json:"duration_s"`
	TimeoutMs    float64        `json:"timeout_ms"`
	ThresholdMs  float64        `json:"threshold_ms"`
	StartedAt    time.Time      `json:"started_at"`
	Attempts     int            `json:"attempts"`
	Successes    int            `json:"successes"`
	FailedTries  int            `json:"failed_tries"`
	ErrorsByKind map[string]int `json:"errors_by_kind"`
	// LongestGapMs is the longest time between two consecutive successful
	// reservations (completion to completion); the failover figure.
	LongestGapMs     float64    `json:"longest_gap_ms"`
	LongestGapFromMs float64    `json:"longest_gap_from_ms"`
	FirstSuccessMs   float64    `json:"first_success_ms"`
	TailMs           float64    `json:"tail_since_last_success_ms"`
	Gaps             []gap      `json:"gaps"`
	Check            rangeCheck `json:"range_check"`
}

func runFailover(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("failover", flag.ExitOnError)
	targets := fs.String("targets", "http://127.0.0.1:18081,http://127.0.0.1:18082,http://127.0.0.1:18083", "comma-separated base URLs; tried in turn on error")
	seq := fs.String("sequence", "fo", "sequence name (created with PUT if missing)")
	interval := fs.Duration("interval", time.Millisecond, "time between probe attempts")
	dur := fs.Duration("duration", 10*time.Second, "how long to probe")
	timeout := fs.Duration("timeout", 200*time.Millisecond, "per-request timeout")
	threshold := fs.Duration("threshold", 50*time.Millisecond, "gaps longer than this go into the JSON")
	jsonOut := fs.String("json", "", "write the report (gaps > threshold) to this file (- for stdout)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ts, err := parseTargets(*targets)
	if err != nil {
		return err
	}
	if *interval <= 0 || *dur <= 0 || *timeout <= 0 {
		return errors.New("--interval, --duration and --timeout must be > 0")
	}
	cfg := failoverConfig{Targets: ts, Sequence: *seq, Interval: *interval, Duration: *dur, Timeout: *timeout, Threshold: *threshold}
	rep, err := probe(ctx, cfg)
	if err != nil {
		return err
	}
	printFailover(os.Stdout, rep)
	if *jsonOut != "" {
		if err := writeJSON(*jsonOut, rep); err != nil {
			return err
		}
	}
	switch {
	case rep.Check.Overlaps > 0 || rep.Check.BadSize > 0:
		return fmt.Errorf("correctness: %d overlapping and %d wrong-size ranges", rep.Check.Overlaps, rep.Check.BadSize)
	case rep.Successes == 0:
		return errors.New("no successful reservation during the probe")
	}
	return nil
}

// probe reserves count=1 every interval through whichever target answers.
// It starts each attempt at the target that last succeeded (so in steady
// state it does not keep paying for a dead node's refusal) and walks the
// others in order on failure. Retry-After on 503 is deliberately ignored:
// the point is to see the first moment the cluster serves again, not to be
// a polite client.
func probe(ctx context.Context, cfg failoverConfig) (*failoverReport, error) {
	tr := newTransport(2)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: cfg.Timeout}

	if err := ensureSequence(ctx, client, cfg.Targets, cfg.Sequence, 10*time.Second); err != nil {
		return nil, err
	}

	body := []byte(`{"count":1}`)
	var (
		successes []time.Duration // completion times since start
		failures  []probeFailure
		ranges    []idRange
		attempts  int
		buf       bytes.Buffer
		preferred int
	)
	start := time.Now()
	end := start.Add(cfg.Duration)
	next := start
	for ctx.Err() == nil && time.Now().Before(end) {
		attempts++
		for i := range cfg.Targets {
			ti := (preferred + i) % len(cfg.Targets)
			t := cfg.Targets[ti]
			rr, kind := probeOnce(ctx, client, t+rangesPath(cfg.Sequence), body, &buf)
			if ctx.Err() != nil {
				break
			}
			at := time.Since(start)
			if kind == "" {
				successes = append(successes, at)
				ranges = append(ranges, idRange{First: rr.First, Last: rr.Last})
				preferred = ti
				break
			}
			failures = append(failures, probeFailure{At: at, Target: t, Kind: kind})
			if !time.Now().Before(end) {
				break
			}
		}
		// Fixed-rate schedule, but never burst to catch up after a slow
		// attempt: a burst right after recovery would not tell us more.
		next = next.Add(cfg.Interval)
		if now := time.Now(); next.Before(now) {
			next = now
		}
		sleepUntil(ctx, earliest(next, end))
	}
	total := time.Since(start)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted: %w", ctx.Err())
	}

	rep := buildFailoverReport(cfg, start, total, attempts, successes, failures)
	rep.Check = checkRanges(ranges, 1)
	return rep, nil
}

// buildFailoverReport derives the gap figures from the success and failure
// timelines. Split out of probe so it can be tested without a network.
func buildFailoverReport(cfg failoverConfig, start time.Time, total time.Duration, attempts int, successes []time.Duration, failures []probeFailure) *failoverReport {
	rep := &failoverReport{
		Targets: cfg.Targets, Sequence: cfg.Sequence,
		IntervalMs: ms(cfg.Interval), DurationS: cfg.Duration.Seconds(),
		TimeoutMs: ms(cfg.Timeout), ThresholdMs: ms(cfg.Threshold),
		StartedAt: start.UTC(), Attempts: attempts, Successes: len(successes),
		FailedTries: len(failures), ErrorsByKind: map[string]int{}, Gaps: []gap{},
	}
	for _, f := range failures {
		rep.ErrorsByKind[f.Kind]++
	}

	// gapOf collects the failures inside (from, to] for one gap entry.
	fi := 0
	gapOf := func(from, to time.Duration, unrecovered bool) gap {
		g := gap{FromMs: ms(from), ToMs: ms(to), GapMs: ms(to - from), Unrecovered: unrecovered}
		for fi < len(failures) && failures[fi].At <= from {
			fi++
		}
		for j := fi; j < len(failures) && failures[j].At <= to; j++ {
			if g.Errors == nil {
				g.Errors = map[string]int{}
			}
			g.Errors[failures[j].Kind]++
			g.FailedTries++
		}
		return g
	}

	if len(successes) == 0 {
		rep.Gaps = append(rep.Gaps, gapOf(0, total, true))
		rep.TailMs = ms(total)
		rep.FirstSuccessMs = -1
		return rep
	}
	rep.FirstSuccessMs = ms(successes[0])
	if successes[0] > cfg.Threshold {
		rep.Gaps = append(rep.Gaps, gapOf(0, successes[0], true))
	}
	var longest, longestFrom time.Duration
	for i := 1; i < len(successes); i++ {
		d := successes[i] - successes[i-1]
		if d > longest {
			longest, longestFrom = d, successes[i-1]
		}
		if d > cfg.Threshold {
			rep.Gaps = append(rep.Gaps, gapOf(successes[i-1], successes[i], false))
		}
	}
	last := successes[len(successes)-1]
	rep.TailMs = ms(total - last)
	if total-last > cfg.Threshold {
		rep.Gaps = append(rep.Gaps, gapOf(last, total, true))
	}
	rep.LongestGapMs = ms(longest)
	rep.LongestGapFromMs = ms(longestFrom)
	return rep
}

// probeOnce does one reservation. kind is "" on success, otherwise a short
// classification of the failure for the gap report.
func probeOnce(ctx context.Context, client *http.Client, url string, body []byte, buf *bytes.Buffer) (rangeResponse, string) {
	var rr rangeResponse
	status, err := postOnce(ctx, client, url, body, buf)
	if err != nil {
		return rr, classifyErr(err)
	}
	if status != http.StatusOK {
		return rr, strconv.Itoa(status)
	}
	if err := json.Unmarshal(buf.Bytes(), &rr); err != nil {
		return rr, "decode"
	}
	return rr, ""
}

func classifyErr(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "conn_refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "conn_reset"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "transport"
}

func printFailover(w io.Writer, rep *failoverReport) {
	kinds := make([]string, 0, len(rep.ErrorsByKind))
	for k := range rep.ErrorsByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	fmt.Fprintf(w, "failover probe: %d attempts, %d successes, %d failed tries", rep.Attempts, rep.Successes, rep.FailedTries)
	for _, k := range kinds {
		fmt.Fprintf(w, " %s:%d", k, rep.ErrorsByKind[k])
	}
	fmt.Fprintln(w)
	for _, g := range rep.Gaps {
		note := ""
		if g.Unrecovered {
			note = " (no success on one side: start or end of run)"
		}
		fmt.Fprintf(w, "  gap %8.1f ms  from %8.1f to %8.1f ms  failed tries %d%s\n", g.GapMs, g.FromMs, g.ToMs, g.FailedTries, note)
	}
	// Stable key=value line that scripts/bench-core.sh greps for.
	fmt.Fprintf(w, "longest_gap_ms=%.1f at_ms=%.1f tail_ms=%.1f overlaps=%d\n",
		rep.LongestGapMs, rep.LongestGapFromMs, rep.TailMs, rep.Check.Overlaps)
}
