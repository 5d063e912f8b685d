//go:build linux

// Command standbybench measures what the disaster-recovery standby (issue
// #34) costs the primary: reservations/s and p99 of a 3-node ticketd
// cluster (a) without a standby, (b) with a standby on loopback and (c) with
// a standby whose link has an added delay (20 ms), in one run, the
// configurations alternated (a, b, c, a, b, c, ...) so that the drift of a
// shared machine hits each alike; each configuration's rate is also given
// per round as a ratio to the (a) run beside it. The target is (c) at ≥ 0.9× (a).
//
// Each run is a fresh cluster of the built binary (real processes, empty
// data dirs), loaded through its leader by the project's own generator,
// `ticketd-bench load` (range size 1000, 16 and 64 clients as in
// bench/README.md's figures; 2 s warm-up and 6 s measured per level, four
// rounds: runs side by side differ by up to 30% on a shared 2-core VM, so
// more short rounds say more than fewer long ones). With a standby,
// the run starts only once the leader records it in sync and counts only
// if it is still in sync afterwards, never having fallen out of sync: a
// standby out of sync is waited for by nobody, and the figure would
// measure that fast path instead of the cost. After each run the leader's
// ticketd_standby_wait_seconds (how often and how long blocks waited for
// the standby), ticketd_block_wait_seconds (how often reservations waited
// for a block) and ticketd_block_size_ids are read from /metrics.
//
// It lives in the jepsen module because the delay is the fault suite's:
// the standby runs in a network namespace of its own and jepsen/netfault's
// NFQUEUE delayer holds what it sends (netns.go says why not tc netem).
// It must run as root. scripts/standby-bench.sh builds and runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// options are the command line.
type options struct {
	ticketd, bench, out string
	rounds              int
	configs             []string
	delay               time.Duration
	count               int
	concurrency         string
	duration, warmup    time.Duration
}

func main() {
	var o options
	var configs string
	flag.StringVar(&o.ticketd, "ticketd", "", "the ticketd binary (required)")
	flag.StringVar(&o.bench, "bench", "", "the ticketd-bench binary (required)")
	flag.StringVar(&o.out, "out", "", "directory for logs, load JSON and the summary (required)")
	flag.IntVar(&o.rounds, "rounds", 4, "how many times each configuration runs, alternated")
	flag.StringVar(&configs, "configs", "a,b,c", "configurations, in the order of each round: a (no standby), b (standby on loopback), c (standby with --delay on its link); d (as c with the delayer holding packets 0 s, to tell its own cost)")
	flag.DurationVar(&o.delay, "delay", 20*time.Millisecond, "(c): delay added to every packet the standby sends (each round trip primary<->standby grows by it)")
	flag.IntVar(&o.count, "count", 1000, "IDs per reservation")
	flag.StringVar(&o.concurrency, "concurrency", "16,64", "client levels of each run")
	flag.DurationVar(&o.duration, "duration", 6*time.Second, "measured time per level")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured warm-up per level")
	flag.Parse()
	if o.ticketd == "" || o.bench == "" || o.out == "" {
		flag.Usage()
		os.Exit(2)
	}
	for _, c := range strings.Split(configs, ",") {
		if _, ok := configNames[c]; !ok {
			fmt.Fprintf(os.Stderr, "standbybench: unknown configuration %q (want a, b, c or d)\n", c)
			os.Exit(2)
		}
		o.configs = append(o.configs, c)
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "standbybench: must run as root (network namespaces, iptables, NFQUEUE)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ok, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "standbybench:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

// configNames says what each configuration is, for tables.
var configNames = map[string]string{
	"a": "no standby",
	"b": "standby on loopback",
	"c": "standby, delayed link",
	// d separates the delayer's own cost from the delay's: (c)'s path
	// with every packet through the NFQUEUE delayer, held 0 s.
	"d": "standby, delayer at 0 s",
}

// run measures every round and writes the summary; ok is false when a run
// does not count (standby not in sync, a load failure).
func run(ctx context.Context, o options) (bool, error) {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return false, err
	}
	l, err := newLink()
	if err != nil {
		return false, fmt.Errorf("standby's network namespace: %w", err)
	}
	defer l.close()

	var results []runResult
	for round := 1; round <= o.rounds; round++ {
		for _, c := range o.configs {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			logf("round %d/%d: (%s) %s", round, o.rounds, c, configNames[c])
			r := measure(ctx, o, l, c, round)
			if r.Problem != "" {
				logf("  does not count: %s", r.Problem)
			} else {
				logf("  %s", r.line())
			}
			results = append(results, r)
		}
	}
	s := summarize(o, results)
	if err := s.write(o.out); err != nil {
		return false, err
	}
	fmt.Print(s.markdown())
	return s.AllCounted, nil
}

// measure runs one configuration on a fresh cluster. The result is named
// so that the deferred removal of the delay can still add its count.
func measure(ctx context.Context, o options, l *link, config string, round int) (r runResult) {
	r = runResult{Config: config, Round: round, Started: time.Now().UTC(), LoadAvg: loadAvg()}
	dir := filepath.Join(o.out, fmt.Sprintf("run%d-%s", round, config))
	p, err := startPrimary(ctx, o.ticketd, dir)
	if err != nil {
		r.Problem = "cluster: " + err.Error()
		return r
	}
	defer p.stop()

	standbyHTTP := ""
	switch config {
	case "b":
		standbyHTTP = fmt.Sprintf("127.0.0.1:%d", httpBase+standbyN)
		err = p.addStandby(ctx, nil, standbyHTTP, fmt.Sprintf("127.0.0.1:%d", raftBase+standbyN))
	case "c", "d":
		d := o.delay
		if config == "d" {
			d = 0
		}
		if err = l.delay(d); err != nil {
			break
		}
		defer func() {
			r.DelayedPackets = l.delayedPackets()
			if err := l.undelay(); err != nil {
				logf("  removing the delay: %v", err)
			}
		}()
		standbyHTTP = fmt.Sprintf("%s:%d", standbyIP, httpBase+standbyN)
		err = p.addStandby(ctx, l.prefix(), standbyHTTP, fmt.Sprintf("%s:%d", standbyIP, raftBase+standbyN))
	}
	if err != nil {
		r.Problem = "standby: " + err.Error()
		return r
	}
	if standbyHTTP != "" {
		if rtt, err := connectRTT(standbyHTTP); err == nil {
			r.ConnectRTTMs = ms(rtt)
		}
	}

	var standbyPID int
	var cpuBefore float64
	if p.standby != nil {
		standbyPID = childPID(filepath.Join(dir, "sb"))
		cpuBefore = cpuSeconds(standbyPID)
	}
	loadStart := time.Now()
	levels, err := runLoad(ctx, o, dir, config, p)
	if standbyPID > 0 {
		r.StandbyCores = (cpuSeconds(standbyPID) - cpuBefore) / time.Since(loadStart).Seconds()
	}
	r.Levels = levels
	if err != nil {
		r.Problem = "load: " + err.Error()
		return r
	}
	if text, err := p.metrics(ctx); err == nil {
		r.StandbyWait = parseHistogram(text, "ticketd_standby_wait_seconds")
		r.BlockWait = parseHistogram(text, "ticketd_block_wait_seconds")
		r.BlockSize = parseHistogram(text, "ticketd_block_size_ids")
		_ = os.WriteFile(filepath.Join(dir, "leader-metrics.txt"), []byte(text), 0o644)
	} else {
		logf("  leader /metrics: %v", err)
	}
	sb, err := p.standbyStatus(ctx)
	switch {
	case err != nil:
		r.Problem = "after the load: " + err.Error()
	case config == "a" && sb != nil:
		r.Problem = "a standby is recorded in a run without one"
	case config != "a" && sb == nil:
		r.Problem = "the leader records no standby"
	case config != "a":
		r.StandbyState, r.OutOfSync = sb.State, sb.OutOfSyncCount
		if sb.Seen != nil {
			r.StandbyLag = sb.Seen.LagEntries
		}
		if sb.State != "in-sync" || sb.OutOfSyncCount != 0 {
			r.Problem = fmt.Sprintf("standby %s (out of sync %d times, reason %q): the run measured the out-of-sync fast path", sb.State, sb.OutOfSyncCount, sb.Reason)
		}
	}
	return r
}

// loadAvg is the 1-minute load average (0 if unreadable).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var v float64
	_, _ = fmt.Sscanf(string(b), "%f", &v)
	return v
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s standbybench: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
