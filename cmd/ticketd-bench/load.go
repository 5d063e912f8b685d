package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/ticketd/ticketd/api"
)

// loadConfig is everything one `load` run needs.
type loadConfig struct {
	Targets  []string
	Sequence string
	Count    uint64
	Levels   []int
	Duration time.Duration
	Warmup   time.Duration
	Timeout  time.Duration
	Label    string
	// SetupTimeout bounds the retries of the initial PUT; 0 means 15s.
	SetupTimeout time.Duration
	// Prime reserves once from every sequence before the first level
	// (--sequences > 1): the cold start, timed apart from the levels.
	Prime bool
	// FollowLeader makes an http worker move to the leader a forwarding
	// node names (api.LeaderHeader) when it is one of the targets, as the
	// SDK does; off, every request to a follower is forwarded.
	FollowLeader bool
	// Sequences is how many sequences the run spreads its requests over:
	// 0 or 1 is Sequence alone; more are Sequence-0000... (see
	// sequenceNames), each request picking one at random (kind http only).
	Sequences int
	// Snowflake is the namespace of a Snowflake run (snowflake.go): each
	// request asks POST /v1/namespaces/<Snowflake>/ids (or, --kind resp,
	// TICKETD.SNOWFLAKE) for Count IDs; "" for ranges of a sequence.
	Snowflake string
	// SnowflakeSetup is the HTTP API that creates the namespace of a
	// --kind resp Snowflake run.
	SnowflakeSetup string

	// Kind selects the system driven: "http" (ticketd or the baseline,
	// the default), "resp" (ticketd's Redis-protocol front), or a peer:
	// "etcd", "redis", "postgres", "mysql".
	Kind string
	// Metadata copied into the report for `report` to group runs.
	System string
	Group  string
	Nodes  int
	// Extra options of a peer kind (see peerOptions).
	Peer peerOptions
	// PIDs are the server processes whose CPU time each level reports
	// (with their descendants); none: no server figure.
	PIDs []int
}

// levelResult holds the figures of one concurrency level. Latencies cover
// successful requests that started after warmup and finished inside the
// measured window; throughput is those requests over the window length.
type levelResult struct {
	Concurrency        int            `json:"concurrency"`
	DurationS          float64        `json:"duration_s"`
	Requests           int            `json:"requests"`
	ReservationsPerSec float64        `json:"reservations_per_sec"`
	IDsPerSec          float64        `json:"ids_per_sec"`
	P50Ms              float64        `json:"p50_ms"`
	P99Ms              float64        `json:"p99_ms"`
	P999Ms             float64        `json:"p999_ms"`
	MaxMs              float64        `json:"max_ms"`
	MeanMs             float64        `json:"mean_ms"`
	Errors             map[string]int `json:"errors"`
	ErrorsTotal        int            `json:"errors_total"`
	// Retries counts the extra round trips some systems need per
	// reservation (etcd's compare-and-swap losing a race, a MariaDB deadlock
	// victim retried); not errors.
	Retries int `json:"retries,omitempty"`
	// CPU is what the window cost in cores: the servers (--pids), this
	// load generator, and the whole machine (other work included).
	CPU cpuUse `json:"cpu"`
	// ServerCPUPerResUs is server CPU time per reservation, µs.
	ServerCPUPerResUs float64    `json:"server_cpu_per_res_us,omitempty"`
	WarmupRequests    int        `json:"warmup_requests"`
	WarmupErrors      int        `json:"warmup_errors"`
	Check             rangeCheck `json:"range_check"`
}

// loadReport is what --json writes.
type loadReport struct {
	Label      string        `json:"label"`
	Kind       string        `json:"kind"`
	System     string        `json:"system,omitempty"`
	Group      string        `json:"group,omitempty"`
	Nodes      int           `json:"nodes,omitempty"`
	Note       string        `json:"note,omitempty"`
	Targets    []string      `json:"targets"`
	Sequence   string        `json:"sequence"`
	Sequences  int           `json:"sequences"`
	Snowflake  string        `json:"snowflake,omitempty"`
	Count      uint64        `json:"count"`
	DurationS  float64       `json:"duration_s"`
	WarmupS    float64       `json:"warmup_s"`
	StartedAt  time.Time     `json:"started_at"`
	GoVersion  string        `json:"go_version"`
	NumCPU     int           `json:"num_cpu"`
	GOMAXPROCS int           `json:"gomaxprocs"`
	Levels     []levelResult `json:"levels"`
	// SetupS is how long setup took (creating the sequences), seconds.
	SetupS float64 `json:"setup_s"`
	// PrimeS is how long the first reservation of every sequence took
	// (--prime), seconds; 0 when not primed.
	PrimeS float64 `json:"prime_s,omitempty"`
	// Overall checks the ranges of all levels together: levels share the
	// sequences, so an ID handed out at c=1 must not reappear at c=64.
	// With several sequences each is checked apart.
	Overall rangeCheck `json:"overall_range_check"`
}

// workerResult is private to one worker goroutine while it runs, so the hot
// path takes no locks; the coordinator merges after wg.Wait().
type workerResult struct {
	lat        []time.Duration
	ranges     []idRange
	seqs       []uint32 // sequence of each range (many sequences only)
	errs       map[string]int
	warmupOK   int
	warmupErrs int
	retries    int
}

func parseLevels(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad concurrency %q", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("no concurrency levels")
	}
	return out, nil
}

func parsePIDs(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad pid %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func runLoad(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	target := fs.String("target", "http://127.0.0.1:8081", "comma-separated base URLs; worker i uses target i%len")
	seq := fs.String("sequence", "bench", "sequence name (created with PUT if missing); with --sequences N > 1 the prefix of the N names")
	nseq := fs.Int("sequences", 1, "http: spread the requests uniformly at random over N sequences <sequence>-0..<sequence>-(N-1), zero-padded, all created (PUT) in setup: a --sequence prefix not used before gives fresh ones")
	count := fs.Uint64("count", 1000, "IDs per reservation")
	conc := fs.String("concurrency", "1,16,64", "comma-separated concurrency levels, run in order")
	dur := fs.Duration("duration", 10*time.Second, "measured time per level")
	warm := fs.Duration("warmup", 2*time.Second, "unmeasured time per level before measuring")
	timeout := fs.Duration("timeout", 5*time.Second, "per-request timeout")
	jsonOut := fs.String("json", "", "write full results as JSON to this file (- for stdout)")
	label := fs.String("label", "", "name for this run in tables and JSON")
	setupTimeout := fs.Duration("setup-timeout", 15*time.Second, "how long to keep retrying the initial PUT (e.g. while a leader is elected)")
	allowNet := fs.String("allow-net", "", "a CIDR off loopback that --kind resp and peer targets may be in (bench.sh under jepsen/cmd/leasebench: its node namespaces); loopback only when empty")
	kind := fs.String("kind", "http", "system to drive: http (ticketd or baseline), resp (ticketd's Redis-protocol front: INCRBY <sequence> <count>, the sequence created with TICKETD.CREATE), etcd, redis, postgres, mysql")
	system := fs.String("system", "", "system name recorded in the JSON (for `report`)")
	group := fs.String("group", "", "group recorded in the JSON (for `report`): main, nodes, range, smoke")
	nodes := fs.Int("nodes", 0, "cluster size recorded in the JSON")
	po := addPeerFlags(fs)
	prime := fs.Bool("prime", false, "http, --sequences > 1: before the first level, reserve once from every sequence (their first blocks: the cold start), with the first level's concurrency, and report how long it took; the levels then measure the steady state of N active sequences")
	follow := fs.Bool("follow-leader", true, "http: a worker moves to the leader a follower names in its answer (X-Ticketd-Leader) when it is a target, as the SDK does; false forwards every request sent to a follower")
	pidList := fs.String("pids", "", "comma-separated pids of the server processes, for CPU accounting")
	snowflake := fs.String("snowflake", "", "Snowflake namespace (created with PUT if missing): each request takes --count server-made IDs from it, POST /v1/namespaces/<ns>/ids (http) or TICKETD.SNOWFLAKE <ns> <count> (resp), every answer checked for duplicates; worker i sends to target i%len")
	snowflakeSetup := fs.String("snowflake-setup", "", "--kind resp --snowflake: a node's HTTP URL, to create the namespace")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pids, err := parsePIDs(*pidList)
	if err != nil {
		return err
	}
	if !validKind(*kind) {
		return fmt.Errorf("--kind %q: want http, resp, etcd, redis, postgres or mysql", *kind)
	}
	if *allowNet != "" {
		_, n, err := net.ParseCIDR(*allowNet)
		if err != nil {
			return fmt.Errorf("--allow-net: %w", err)
		}
		allowedNet = n
	}
	targets, err := parseKindTargets(*kind, *target)
	if err != nil {
		return err
	}
	levels, err := parseLevels(*conc)
	if err != nil {
		return err
	}
	if *count == 0 {
		return errors.New("--count must be >= 1")
	}
	if *nseq < 1 {
		return errors.New("--sequences must be >= 1")
	}
	if *snowflake != "" && *nseq > 1 {
		return errors.New("--snowflake takes one namespace, not --sequences")
	}
	if *nseq > 1 && kindOrHTTP(*kind) != "http" {
		return fmt.Errorf("%w, not --kind %s", errManyKinds, *kind)
	}
	if names := sequenceNames(*seq, *nseq); *nseq > 1 {
		if err := api.ValidateSequenceName(names[len(names)-1]); err != nil {
			return fmt.Errorf("--sequence %q with --sequences %d: %w", *seq, *nseq, err)
		}
	}
	if *dur <= 0 || *warm < 0 || *timeout <= 0 {
		return errors.New("--duration and --timeout must be > 0, --warmup >= 0")
	}
	cfg := loadConfig{
		Targets: targets, Sequence: *seq, Sequences: *nseq, Count: *count, Levels: levels,
		Duration: *dur, Warmup: *warm, Timeout: *timeout, Label: *label,
		SetupTimeout: *setupTimeout, FollowLeader: *follow, Prime: *prime,
		Kind: *kind, System: *system, Group: *group, Nodes: *nodes, Peer: *po, PIDs: pids,
		Snowflake: *snowflake, SnowflakeSetup: *snowflakeSetup,
	}
	if cfg.Label == "" {
		cfg.Label = strings.Join(targets, ",")
	}

	rep, err := runLoadLevels(ctx, cfg, os.Stderr)
	if rep != nil {
		printLoadTable(os.Stdout, rep)
		if *jsonOut != "" {
			if werr := writeJSON(*jsonOut, rep); werr != nil && err == nil {
				err = werr
			}
		}
	}
	if err != nil {
		return err
	}
	return loadVerdict(rep)
}

// loadVerdict turns correctness failures into an error (exit status 1).
func loadVerdict(rep *loadReport) error {
	var problems []string
	if rep.Overall.Overlaps > 0 {
		problems = append(problems, fmt.Sprintf("%d overlapping ranges", rep.Overall.Overlaps))
	}
	if rep.Overall.BadSize > 0 {
		problems = append(problems, fmt.Sprintf("%d ranges of the wrong size", rep.Overall.BadSize))
	}
	for _, l := range rep.Levels {
		if l.Requests == 0 {
			problems = append(problems, fmt.Sprintf("no successful requests at concurrency %d", l.Concurrency))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// runLoadLevels creates the sequence and runs every level in order. It
// returns the (possibly partial) report even on error so callers can
// still print what was measured.
func runLoadLevels(ctx context.Context, cfg loadConfig, progress io.Writer) (*loadReport, error) {
	maxConc := 0
	for _, c := range cfg.Levels {
		maxConc = max(maxConc, c)
	}
	nseq := max(cfg.Sequences, 1)
	var be backend
	var err error
	switch {
	case cfg.Snowflake != "":
		be, err = newSnowflakeBackend(cfg, maxConc)
	case nseq > 1:
		be, err = newManySeqBackend(cfg, maxConc)
	default:
		be, err = newBackend(cfg, maxConc)
	}
	if err != nil {
		return nil, err
	}
	defer be.close()

	setupTimeout := cfg.SetupTimeout
	if setupTimeout <= 0 {
		setupTimeout = 15 * time.Second
	}
	setupStart := time.Now()
	if err := be.setup(ctx, setupTimeout); err != nil {
		return nil, err
	}
	setupTook := time.Since(setupStart)

	rep := &loadReport{
		Label: cfg.Label, Kind: kindOrHTTP(cfg.Kind), System: cfg.System, Group: cfg.Group, Nodes: cfg.Nodes,
		Note:    be.note(),
		Targets: cfg.Targets, Sequence: cfg.Sequence, Sequences: nseq, Snowflake: cfg.Snowflake, Count: cfg.Count,
		DurationS: cfg.Duration.Seconds(), WarmupS: cfg.Warmup.Seconds(), SetupS: setupTook.Seconds(),
		StartedAt: time.Now().UTC(), GoVersion: runtime.Version(),
		NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
	}
	var all []idRange
	var allSeqs []uint32
	if mb, ok := be.(*manySeqBackend); ok && cfg.Prime {
		if progress != nil {
			fmt.Fprintf(progress, "[%s] priming %d sequences...\n", cfg.Label, len(mb.names))
		}
		ranges, seqs, took, err := mb.prime(ctx, cfg.Levels[0])
		all, allSeqs = append(all, ranges...), append(allSeqs, seqs...)
		rep.PrimeS = took.Seconds()
		if err != nil {
			rep.Overall = cfg.check(all, allSeqs)
			return rep, fmt.Errorf("priming: %w", err)
		}
	}
	for _, c := range cfg.Levels {
		if ctx.Err() != nil {
			break
		}
		if progress != nil {
			fmt.Fprintf(progress, "[%s] concurrency %d: %s warmup + %s measured...\n", cfg.Label, c, cfg.Warmup, cfg.Duration)
		}
		lr, ranges, seqs, err := runLevel(ctx, be, cfg, c)
		if err != nil {
			return rep, fmt.Errorf("concurrency %d: %w", c, err)
		}
		rep.Levels = append(rep.Levels, lr)
		all = append(all, ranges...)
		allSeqs = append(allSeqs, seqs...)
	}
	rep.Overall = cfg.check(all, allSeqs)
	if err := ctx.Err(); err != nil {
		return rep, fmt.Errorf("interrupted: %w", err)
	}
	return rep, nil
}

// check is the run's duplicate check of the ranges received: for Snowflake
// answers their runs of consecutive IDs (snowflake.go), else checkAll.
func (cfg loadConfig) check(rs []idRange, seqs []uint32) rangeCheck {
	if cfg.Snowflake != "" {
		return checkRanges(rs, 0) // runs of consecutive IDs: sizes vary
	}
	return checkAll(rs, seqs, max(cfg.Sequences, 1), cfg.Count)
}

// checkAll is checkRanges, per sequence when there are several.
func checkAll(rs []idRange, seqs []uint32, nseq int, count uint64) rangeCheck {
	if nseq > 1 {
		return checkRangesPerSequence(rs, seqs, nseq, count)
	}
	return checkRanges(rs, count)
}

// runLevel runs conc closed-loop workers for warmup+duration and merges
// their results. It returns the level's figures and every range received
// (warmup included: a duplicate ID is a bug whenever it happens) with, over
// many sequences, the sequence of each.
func runLevel(ctx context.Context, be backend, cfg loadConfig, conc int) (levelResult, []idRange, []uint32, error) {
	// One reserver per worker: each holds its own connection (a closed-loop
	// worker has at most one request in flight), made before the clock
	// starts so that dialing is not measured.
	rs := make([]reserver, 0, conc)
	defer func() {
		for _, r := range rs {
			r.close()
		}
	}()
	for i := 0; i < conc; i++ {
		r, err := be.newReserver(ctx, i)
		if err != nil {
			return levelResult{}, nil, nil, fmt.Errorf("worker %d: %w", i, err)
		}
		rs = append(rs, r)
	}

	// Size the per-worker slices for roughly 50k req/s spread over the
	// workers so the common case never reallocates mid-run; append still
	// grows them if the server is faster than that.
	perWorker := int(cfg.Duration.Seconds()*50000)/conc + 1024
	perWorker = min(perWorker, 4<<20)
	warmFrac := (cfg.Warmup.Seconds() + cfg.Duration.Seconds()) / cfg.Duration.Seconds()

	nseq := max(cfg.Sequences, 1)
	results := make([]workerResult, conc)
	for i := range results {
		results[i] = workerResult{
			lat:    make([]time.Duration, 0, perWorker),
			ranges: make([]idRange, 0, int(float64(perWorker)*warmFrac)),
			errs:   make(map[string]int),
		}
		if nseq > 1 {
			results[i].seqs = make([]uint32, 0, cap(results[i].ranges))
		}
	}

	start := time.Now()
	measureStart := start.Add(cfg.Warmup)
	end := measureStart.Add(cfg.Duration)

	// CPU samples at the edges of the measured window.
	cpuDone := make(chan cpuUse, 1)
	go func() {
		sleepUntil(ctx, measureStart)
		a := sampleCPU(cfg.PIDs)
		sleepUntil(ctx, end)
		cpuDone <- cpuBetween(a, sampleCPU(cfg.PIDs))
	}()

	var wg sync.WaitGroup
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func(r reserver, res *workerResult) {
			defer wg.Done()
			loadWorker(ctx, r, measureStart, end, res)
		}(rs[i], &results[i])
	}
	wg.Wait()

	lr := levelResult{Concurrency: conc, DurationS: cfg.Duration.Seconds(), Errors: map[string]int{}}
	var lat []time.Duration
	var ranges []idRange
	var seqs []uint32
	for i := range results {
		r := &results[i]
		lat = append(lat, r.lat...)
		ranges = append(ranges, r.ranges...)
		seqs = append(seqs, r.seqs...)
		for k, v := range r.errs {
			lr.Errors[k] += v
			lr.ErrorsTotal += v
		}
		lr.WarmupRequests += r.warmupOK
		lr.WarmupErrors += r.warmupErrs
		lr.Retries += r.retries
		results[i] = workerResult{} // let the GC have it before the next level
	}
	s := summarize(lat)
	lr.Requests = len(lat)
	lr.ReservationsPerSec = float64(len(lat)) / cfg.Duration.Seconds()
	lr.IDsPerSec = lr.ReservationsPerSec * float64(cfg.Count)
	lr.P50Ms, lr.P99Ms, lr.P999Ms = ms(s.P50), ms(s.P99), ms(s.P999)
	lr.MaxMs, lr.MeanMs = ms(s.Max), ms(s.Mean)
	lr.CPU = <-cpuDone
	if len(cfg.PIDs) > 0 && lr.ReservationsPerSec > 0 {
		lr.ServerCPUPerResUs = lr.CPU.ServerCores * 1e6 / lr.ReservationsPerSec
	}
	// checkRanges sorts in place; the caller's overall check re-sorts the
	// concatenation, so sharing the backing array here is fine. (The
	// per-sequence check sorts a copy: ranges and seqs stay paired.)
	lr.Check = cfg.check(ranges, seqs)
	return lr, ranges, seqs, nil
}

// errBackoff is how long a worker pauses after a transport error or 5xx.
// Without it a dead or overloaded target turns the closed loop into a busy
// spin that steals CPU from the server on a small machine.
const errBackoff = 10 * time.Millisecond

// loadWorker is the closed loop: send, wait for the answer, repeat until
// end. Latency uses time.Since, which reads the monotonic clock.
//
// A seqReserver (many sequences) picks the sequence of each request; its
// index is kept beside the range for the per-sequence check.
//
// A rangesReserver (Snowflake) answers several ranges a request.
func loadWorker(ctx context.Context, r reserver, measureStart, end time.Time, res *workerResult) {
	sr, many := r.(seqReserver)
	mr, multi := r.(rangesReserver)
	for {
		t0 := time.Now()
		if !t0.Before(end) || ctx.Err() != nil {
			return
		}
		measured := !t0.Before(measureStart)

		var (
			seq     int
			rg      idRange
			retries int
			err     error
		)
		switch {
		case multi:
			n := len(res.ranges)
			res.ranges, retries, err = mr.reserveRanges(ctx, res.ranges)
			if err != nil {
				res.ranges = res.ranges[:n]
			}
		case many:
			seq, rg, retries, err = sr.reserveSeq(ctx)
		default:
			rg, retries, err = r.reserve(ctx)
		}
		elapsed := time.Since(t0)
		if err != nil {
			if ctx.Err() != nil {
				return // interrupted: not the server's fault
			}
			kind, backoff := errKind(err)
			if measured {
				res.errs[kind]++
			} else {
				res.warmupErrs++
			}
			if backoff {
				sleepUntil(ctx, earliest(time.Now().Add(errBackoff), end))
			}
			continue
		}
		if !multi {
			res.ranges = append(res.ranges, rg)
		}
		if many {
			res.seqs = append(res.seqs, uint32(seq))
		}
		switch {
		case !measured:
			res.warmupOK++
		case t0.Add(elapsed).After(end):
			// Finished after the window closed: its ID range still goes
			// to the overlap check, but not into throughput or latency,
			// so every level is measured over exactly --duration.
		default:
			res.lat = append(res.lat, elapsed)
			res.retries += retries
		}
	}
}

// postOnce sends one reservation and reads the whole body into buf (fully
// draining it is what lets the transport reuse the connection), and returns
// the status and the leader a forwarding node named.
func postOnce(ctx context.Context, client *http.Client, url string, body []byte, buf *bytes.Buffer) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	buf.Reset()
	_, err = buf.ReadFrom(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return 0, "", err
	}
	return resp.StatusCode, resp.Header.Get(api.LeaderHeader), nil
}

func sleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
	case <-tm.C:
	}
}

func fmtErrors(m map[string]int) string {
	if len(m) == 0 {
		return "0"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s:%d", k, m[k]))
	}
	return strings.Join(parts, ",")
}

func printLoadTable(w io.Writer, rep *loadReport) {
	seqs := "sequence=" + rep.Sequence
	if rep.Snowflake != "" {
		seqs = "snowflake namespace=" + rep.Snowflake
	}
	if rep.Sequences > 1 {
		seqs = fmt.Sprintf("sequences=%d (%s-*, setup %.1fs)", rep.Sequences, rep.Sequence, rep.SetupS)
		if rep.PrimeS > 0 {
			seqs += fmt.Sprintf(", primed in %.2fs (%.0f first reservations/s)", rep.PrimeS, float64(rep.Sequences)/rep.PrimeS)
		}
	}
	fmt.Fprintf(w, "== %s  targets=%s  %s  count=%d  duration=%gs  warmup=%gs  cpus=%d\n",
		rep.Label, strings.Join(rep.Targets, ","), seqs, rep.Count, rep.DurationS, rep.WarmupS, rep.NumCPU)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "conc\trequests\tres/s\tIDs/s\tp50 ms\tp99 ms\tp99.9 ms\tmax ms\terrors\tretries\toverlaps\tserver cores\tµs/res\tclient cores\tmachine busy\t")
	for _, l := range rep.Levels {
		fmt.Fprintf(tw, "%d\t%d\t%.0f\t%.0f\t%.3f\t%.3f\t%.3f\t%.3f\t%s\t%d\t%d\t%.2f\t%.1f\t%.2f\t%.2f\t\n",
			l.Concurrency, l.Requests, l.ReservationsPerSec, l.IDsPerSec,
			l.P50Ms, l.P99Ms, l.P999Ms, l.MaxMs, fmtErrors(l.Errors), l.Retries, l.Check.Overlaps,
			l.CPU.ServerCores, l.ServerCPUPerResUs, l.CPU.ClientCores, l.CPU.MachineCores)
	}
	tw.Flush()
	fmt.Fprintf(w, "ranges checked: %d  overlaps: %d  wrong size: %d  IDs seen: %d..%d\n",
		rep.Overall.Ranges, rep.Overall.Overlaps, rep.Overall.BadSize, rep.Overall.MinFirst, rep.Overall.MaxLast)
	if rep.Note != "" {
		fmt.Fprintf(w, "note: %s\n", rep.Note)
	}
}

// earliest returns the earlier of two instants (time.Time is not ordered,
// so the min builtin does not apply).
func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
