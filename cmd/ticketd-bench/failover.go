package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"sync/atomic"
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
	// Kind is the system probed ("" or "http": ticketd; "etcd"). Each
	// target gets its own client, tried in turn on failure.
	Kind   string
	System string
	// KillPID, when > 0, is sent SIGKILL KillAfter after the probe
	// starts; the report then says how long after the kill the first
	// reservation that started after it succeeded.
	KillPID   int
	KillAfter time.Duration
	Peer      peerOptions
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
	Kind         string         `json:"kind"`
	System       string         `json:"system,omitempty"`
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
	// KilledPID and KilledAtMs say when the probe SIGKILLed the leader;
	// RecoveryMs is the time from that kill to the completion of the first
	// successful reservation that was sent after it (-1: none in the run).
	KilledPID  int     `json:"killed_pid,omitempty"`
	KilledAtMs float64 `json:"killed_at_ms,omitempty"`
	RecoveryMs float64 `json:"recovery_ms,omitempty"`
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
	kind := fs.String("kind", "http", "system probed: http (ticketd) or etcd (the CAS counter)")
	system := fs.String("system", "", "system name recorded in the JSON")
	killPID := fs.Int("kill-pid", 0, "SIGKILL this process (the leader) --kill-after into the probe and report the recovery time")
	killAfter := fs.Duration("kill-after", time.Second, "when to send the SIGKILL of --kill-pid")
	po := addPeerFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kind != "http" && *kind != "etcd" {
		return fmt.Errorf("--kind %q: the probe supports http and etcd", *kind)
	}
	ts, err := parseKindTargets(*kind, *targets)
	if err != nil {
		return err
	}
	if *interval <= 0 || *dur <= 0 || *timeout <= 0 {
		return errors.New("--interval, --duration and --timeout must be > 0")
	}
	if *killPID > 0 && (*killAfter <= 0 || *killAfter >= *dur) {
		return errors.New("--kill-after must be inside (0, --duration)")
	}
	cfg := failoverConfig{Targets: ts, Sequence: *seq, Interval: *interval, Duration: *dur, Timeout: *timeout, Threshold: *threshold,
		Kind: *kind, System: *system, KillPID: *killPID, KillAfter: *killAfter, Peer: *po}
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
	// One backend (client) per target, so that a dead node costs one
	// failed try and the probe moves on, the same way for every kind.
	var rs []reserver
	for _, t := range cfg.Targets {
		lc := loadConfig{Targets: []string{t}, Sequence: cfg.Sequence, Count: 1, Timeout: cfg.Timeout, Kind: cfg.Kind, Peer: cfg.Peer}
		be, err := newBackend(lc, 2)
		if err != nil {
			return nil, err
		}
		defer be.close()
		r, err := be.newReserver(ctx, 0)
		if err != nil {
			return nil, err
		}
		defer r.close()
		rs = append(rs, r)
		if len(rs) == 1 {
			// Setup through the first target, which may have to wait for
			// a leader; the sequence/key is shared by all.
			if err := setupAny(ctx, cfg, be); err != nil {
				return nil, err
			}
		}
	}

	var (
		successes []time.Duration // completion times since start
		sent      []time.Duration // start times of those successes
		failures  []probeFailure
		ranges    []idRange
		attempts  int
		preferred int
	)
	start := time.Now()
	end := start.Add(cfg.Duration)

	var killedAt atomic.Int64 // since start, ns; 0 = not yet
	killErr := make(chan error, 1)
	if cfg.KillPID > 0 {
		t := time.AfterFunc(cfg.KillAfter, func() {
			err := syscall.Kill(cfg.KillPID, syscall.SIGKILL)
			killedAt.Store(int64(time.Since(start)))
			killErr <- err
		})
		defer t.Stop()
	}

	next := start
	for ctx.Err() == nil && time.Now().Before(end) {
		attempts++
		for i := range rs {
			ti := (preferred + i) % len(rs)
			t0 := time.Since(start)
			rg, _, err := rs[ti].reserve(ctx)
			if ctx.Err() != nil {
				break
			}
			at := time.Since(start)
			if err == nil {
				successes = append(successes, at)
				sent = append(sent, t0)
				ranges = append(ranges, rg)
				preferred = ti
				break
			}
			kind, _ := errKind(err)
			failures = append(failures, probeFailure{At: at, Target: cfg.Targets[ti], Kind: kind})
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
	rep.Kind, rep.System = kindOrHTTP(cfg.Kind), cfg.System
	rep.Check = checkRanges(ranges, 1)
	if cfg.KillPID > 0 {
		rep.KilledPID = cfg.KillPID
		select {
		case err := <-killErr:
			if err != nil {
				return rep, fmt.Errorf("kill %d: %w", cfg.KillPID, err)
			}
		default:
			return rep, errors.New("the kill did not happen within the run")
		}
		rep.KilledAtMs, rep.RecoveryMs = recoveryAfter(time.Duration(killedAt.Load()), sent, successes)
	}
	return rep, nil
}

// recoveryAfter returns the kill time and the time from it to the completion
// of the first success that was sent at or after it (-1 if there is none).
// A request already in flight at the kill says nothing about recovery.
func recoveryAfter(kill time.Duration, sent, done []time.Duration) (killMs, recoveryMs float64) {
	for i := range sent {
		if sent[i] >= kill {
			return ms(kill), ms(done[i] - kill)
		}
	}
	return ms(kill), -1
}

// setupAny runs the backend's setup (create the sequence) for the probe.
func setupAny(ctx context.Context, cfg failoverConfig, be backend) error {
	if kindOrHTTP(cfg.Kind) == "http" {
		// Any node will do; try them all, a leader may not exist yet.
		tr := newTransport(2)
		defer tr.CloseIdleConnections()
		return ensureSequence(ctx, &http.Client{Transport: tr, Timeout: time.Second}, cfg.Targets, cfg.Sequence, 10*time.Second)
	}
	return be.setup(ctx, 10*time.Second)
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
	// Stable key=value line that scripts/bench.sh greps for.
	fmt.Fprintf(w, "longest_gap_ms=%.1f at_ms=%.1f tail_ms=%.1f overlaps=%d",
		rep.LongestGapMs, rep.LongestGapFromMs, rep.TailMs, rep.Check.Overlaps)
	if rep.KilledPID > 0 {
		fmt.Fprintf(w, " killed_at_ms=%.1f recovery_ms=%.1f", rep.KilledAtMs, rep.RecoveryMs)
	}
	fmt.Fprintln(w)
}
