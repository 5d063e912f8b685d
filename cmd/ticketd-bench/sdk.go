package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/client"
)

// sdkConfig is one run of the SDK-driven mode: one goroutine takes IDs with
// Sequence.Next at a steady rate, optionally while the leader is killed.
type sdkConfig struct {
	Targets   []string
	Sequence  string
	Rate      float64 // IDs per second
	Duration  time.Duration
	Warmup    time.Duration // before the measured window; lets the cache size itself
	KillPID   int
	KillAfter time.Duration // since the start of the measured window
}

// sdkWait is one slow Next call.
type sdkWait struct {
	AtMs   float64 `json:"at_ms"` // since the start of the measured window
	WaitMs float64 `json:"wait_ms"`
}

// sdkReport is what `sdk --json` writes.
type sdkReport struct {
	Targets    []string  `json:"targets"`
	Sequence   string    `json:"sequence"`
	RateTarget float64   `json:"rate_target_ids_per_sec"`
	DurationS  float64   `json:"duration_s"`
	WarmupS    float64   `json:"warmup_s"`
	StartedAt  time.Time `json:"started_at"`
	Calls      int64     `json:"calls"`
	IDsPerSec  float64   `json:"ids_per_sec"`
	Errors     int64     `json:"errors"`
	FirstError string    `json:"first_error,omitempty"`
	// MaxWaitMs is the longest single Next call in the measured window:
	// the figure the issue asks for.
	MaxWaitMs   float64 `json:"max_wait_ms"`
	MaxWaitAtMs float64 `json:"max_wait_at_ms"`
	// MaxLagMs is how far behind the steady schedule the generator fell:
	// the delay an application producing IDs at this rate would see.
	MaxLagMs     float64   `json:"max_lag_ms"`
	WaitsOver1   int64     `json:"waits_over_1ms"`
	WaitsOver10  int64     `json:"waits_over_10ms"`
	WaitsOver100 int64     `json:"waits_over_100ms"`
	SlowestWaits []sdkWait `json:"slowest_waits"`
	KilledPID    int       `json:"killed_pid,omitempty"`
	KilledAtMs   float64   `json:"killed_at_ms,omitempty"`
	// MaxWaitAfterKillMs is the longest Next from the kill on.
	MaxWaitAfterKillMs float64 `json:"max_wait_after_kill_ms,omitempty"`
	// Ranges are the runs of consecutive IDs received; NonIncreasing
	// counts IDs not above the previous one (the SDK promises strictly
	// increasing IDs per goroutine).
	Ranges        int        `json:"ranges"`
	NonIncreasing int64      `json:"non_increasing"`
	Check         rangeCheck `json:"range_check"`
}

func runSDK(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sdk", flag.ExitOnError)
	targets := fs.String("targets", "http://127.0.0.1:18081,http://127.0.0.1:18082,http://127.0.0.1:18083", "comma-separated base URLs (the SDK's endpoints)")
	seq := fs.String("sequence", "sdk", "sequence name (created if missing)")
	rate := fs.Float64("rate", 1e6, "IDs per second taken with Sequence.Next")
	dur := fs.Duration("duration", 10*time.Second, "measured time")
	warm := fs.Duration("warmup", 2*time.Second, "unmeasured time at the same rate first")
	killPID := fs.Int("kill-pid", 0, "SIGKILL this process (the leader) --kill-after into the measured window")
	killAfter := fs.Duration("kill-after", 3*time.Second, "when to kill --kill-pid")
	jsonOut := fs.String("json", "", "write the report to this file (- for stdout)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ts, err := parseTargets(*targets)
	if err != nil {
		return err
	}
	if *rate < 1 || *rate > 1e8 || *dur <= 0 || *warm < 0 {
		return errors.New("--rate must be in [1, 1e8], --duration > 0, --warmup >= 0")
	}
	if *killPID > 0 && (*killAfter <= 0 || *killAfter >= *dur) {
		return errors.New("--kill-after must be inside (0, --duration)")
	}
	cfg := sdkConfig{Targets: ts, Sequence: *seq, Rate: *rate, Duration: *dur, Warmup: *warm, KillPID: *killPID, KillAfter: *killAfter}
	rep, err := sdkRun(ctx, cfg)
	if rep != nil {
		printSDK(os.Stdout, rep)
		if *jsonOut != "" {
			if werr := writeJSON(*jsonOut, rep); werr != nil && err == nil {
				err = werr
			}
		}
	}
	if err != nil {
		return err
	}
	if rep.Check.Overlaps > 0 || rep.NonIncreasing > 0 {
		return fmt.Errorf("correctness: %d overlapping ranges, %d non-increasing IDs", rep.Check.Overlaps, rep.NonIncreasing)
	}
	return nil
}

// sdkRun drives one Sequence. Every Next is timed; the loop takes IDs until
// it has taken rate×elapsed of them, then sleeps to the next millisecond, so
// a stall shows up both as a long call and as lag behind the schedule.
func sdkRun(ctx context.Context, cfg sdkConfig) (*sdkReport, error) {
	tr := newTransport(4)
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	if err := ensureSequence(ctx, &http.Client{Transport: tr, Timeout: 2 * time.Second}, cfg.Targets, cfg.Sequence, 15*time.Second); err != nil {
		return nil, err
	}
	c, err := client.New(cfg.Targets, client.WithHTTPClient(hc))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	s := c.Sequence(cfg.Sequence)

	// The first call waits for the first range: not part of the figures.
	first, err := s.Next(ctx)
	if err != nil {
		return nil, fmt.Errorf("first Next: %w", err)
	}

	rep := &sdkReport{
		Targets: cfg.Targets, Sequence: cfg.Sequence, RateTarget: cfg.Rate,
		DurationS: cfg.Duration.Seconds(), WarmupS: cfg.Warmup.Seconds(), StartedAt: time.Now().UTC(),
	}
	var (
		runs    []idRange
		cur     = idRange{First: uint64(first), Last: uint64(first)}
		slowest []sdkWait // kept short: the 10 longest
	)
	start := time.Now()
	measureStart := start.Add(cfg.Warmup)
	end := measureStart.Add(cfg.Duration)

	var killedAt atomic.Int64 // since measureStart, ns; 0 = not yet
	killErr := make(chan error, 1)
	if cfg.KillPID > 0 {
		t := time.AfterFunc(cfg.Warmup+cfg.KillAfter, func() {
			err := syscall.Kill(cfg.KillPID, syscall.SIGKILL)
			killedAt.Store(int64(time.Since(measureStart)))
			killErr <- err
		})
		defer t.Stop()
	}

	perNs := cfg.Rate / 1e9
	var taken int64 // IDs taken since start (warmup included) for pacing
	for ctx.Err() == nil {
		now := time.Now()
		if !now.Before(end) {
			break
		}
		due := int64(float64(now.Sub(start)) * perNs)
		if taken >= due {
			// Ahead of schedule: sleep to the next millisecond.
			sleepUntil(ctx, earliest(now.Add(time.Millisecond), end))
			continue
		}
		// The ID taken now was due at this instant:
		if lag := now.Sub(start) - time.Duration(float64(taken)/perNs); !now.Before(measureStart) && ms(lag) > rep.MaxLagMs {
			rep.MaxLagMs = ms(lag)
		}
		for ; taken < due; taken++ {
			t0 := time.Now()
			id, err := s.Next(ctx)
			d := time.Since(t0)
			measured := !t0.Before(measureStart)
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				if measured {
					rep.Errors++
					if rep.FirstError == "" {
						rep.FirstError = err.Error()
					}
				}
				sleepUntil(ctx, time.Now().Add(time.Millisecond))
				break // re-evaluate the schedule (and the end) after an error
			}
			u := uint64(id)
			switch {
			case u == cur.Last+1:
				cur.Last = u
			case u <= cur.Last:
				rep.NonIncreasing++
			default:
				runs = append(runs, cur)
				cur = idRange{First: u, Last: u}
			}
			if !measured {
				continue
			}
			rep.Calls++
			if d >= time.Millisecond {
				rep.WaitsOver1++
				if d >= 10*time.Millisecond {
					rep.WaitsOver10++
				}
				if d >= 100*time.Millisecond {
					rep.WaitsOver100++
				}
				at := ms(t0.Sub(measureStart))
				slowest = append(slowest, sdkWait{AtMs: at, WaitMs: ms(d)})
				sort.Slice(slowest, func(i, j int) bool { return slowest[i].WaitMs > slowest[j].WaitMs })
				if len(slowest) > 10 {
					slowest = slowest[:10]
				}
			}
			if ms(d) > rep.MaxWaitMs {
				rep.MaxWaitMs, rep.MaxWaitAtMs = ms(d), ms(t0.Sub(measureStart))
			}
			if k := killedAt.Load(); k > 0 && t0.Sub(measureStart) >= time.Duration(k)-d && ms(d) > rep.MaxWaitAfterKillMs {
				rep.MaxWaitAfterKillMs = ms(d)
			}
			// Check the clock every 1024 IDs so that a long backlog does
			// not run past the end of the window.
			if taken&1023 == 0 && !time.Now().Before(end) {
				break
			}
		}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	runs = append(runs, cur)
	rep.IDsPerSec = float64(rep.Calls) / cfg.Duration.Seconds()
	rep.SlowestWaits = slowest
	rep.Ranges = len(runs)
	rep.Check = checkRanges(runs, 0)
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
		rep.KilledAtMs = ms(time.Duration(killedAt.Load()))
	}
	return rep, nil
}

func printSDK(w io.Writer, rep *sdkReport) {
	fmt.Fprintf(w, "sdk: %d Next calls in %gs = %.0f IDs/s (target %.0f), errors %d\n",
		rep.Calls, rep.DurationS, rep.IDsPerSec, rep.RateTarget, rep.Errors)
	fmt.Fprintf(w, "  longest Next %.3f ms at %.0f ms; behind schedule at most %.3f ms; calls over 1/10/100 ms: %d/%d/%d\n",
		rep.MaxWaitMs, rep.MaxWaitAtMs, rep.MaxLagMs, rep.WaitsOver1, rep.WaitsOver10, rep.WaitsOver100)
	if rep.KilledPID > 0 {
		fmt.Fprintf(w, "  leader (pid %d) SIGKILLed at %.0f ms; longest Next from then on %.3f ms\n", rep.KilledPID, rep.KilledAtMs, rep.MaxWaitAfterKillMs)
	}
	fmt.Fprintf(w, "  %d runs of consecutive IDs, overlaps %d, non-increasing %d\n", rep.Ranges, rep.Check.Overlaps, rep.NonIncreasing)
	fmt.Fprintf(w, "sdk_max_wait_ms=%.3f max_lag_ms=%.3f errors=%d overlaps=%d\n", rep.MaxWaitMs, rep.MaxLagMs, rep.Errors, rep.Check.Overlaps)
}
