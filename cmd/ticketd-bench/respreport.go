package main

// The RESP front in the report (issue 14): ticketd's Redis-protocol front
// (3 nodes, the leader's --resp-addr) beside redis-server with appendonly
// yes and appendfsync always, on the same machine in the same run, each row
// a ratio ticketd ÷ redis-server. Two tools drive both:
//
//   - redis-benchmark: scripts/bench.sh writes its CSV figures to
//     resp-redis-benchmark.csv, one line per run: each system runs
//     BENCH_RESP_ROUNDS times per range size, clients and pipeline depth
//     (ABBA order), and a row of the table is the mean of each side's runs;
//   - the load generator: `load --kind resp` (ticketd) and `--kind redis`
//     (redis-server), group "resp", systems ticketd-resp and redis-resp.
//
// The target is ticketd ≥ 1.0× redis-server in requests per second, on
// every row.

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

const (
	// respGroup is the group of bench.sh's RESP generator runs.
	respGroup = "resp"
	// respCSVFile is where bench.sh writes the redis-benchmark rows.
	respCSVFile = "resp-redis-benchmark.csv"
	// respTarget: ticketd's requests/s over redis-server's.
	respTarget = 1.0

	respToolRB  = "redis-benchmark"
	respToolGen = "ticketd-bench load"
)

// respBenchRow is one redis-benchmark run, as bench.sh recorded it.
type respBenchRow struct {
	System   string  `json:"system"` // "ticketd" or "redis"
	Count    uint64  `json:"count"`
	Clients  int     `json:"clients"`
	Pipeline int     `json:"pipeline"`
	Round    int     `json:"round,omitempty"`
	Requests int     `json:"requests"`
	Seconds  float64 `json:"seconds"`
	RPS      float64 `json:"rps"`
	AvgMs    float64 `json:"avg_ms"`
	MinMs    float64 `json:"min_ms"`
	P50Ms    float64 `json:"p50_ms"`
	P95Ms    float64 `json:"p95_ms"`
	P99Ms    float64 `json:"p99_ms"`
	MaxMs    float64 `json:"max_ms"`
	// Server CPU over the run: every node of ticketd, redis-server alone.
	ServerCores      float64 `json:"server_cores"`
	ServerCPUPerReqU float64 `json:"server_cpu_per_req_us"`
}

// readRESPBench reads bench.sh's CSV; the columns are found by their names
// in the header, so that columns can be added.
func readRESPBench(r io.Reader) ([]respBenchRow, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	for _, need := range []string{"system", "count", "clients", "pipeline", "rps"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("no %q column", need)
		}
	}
	var out []respBenchRow
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		var bad error
		str := func(name string) string {
			if i, ok := col[name]; ok && i < len(rec) {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		f := func(name string) float64 {
			s := str(name)
			if s == "" {
				return 0
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil && bad == nil {
				bad = fmt.Errorf("line %d, %s: %w", line, name, err)
			}
			return v
		}
		row := respBenchRow{
			System: str("system"), Count: uint64(f("count")), Clients: int(f("clients")), Pipeline: int(f("pipeline")),
			Round: int(f("round")), Requests: int(f("requests")), Seconds: f("seconds"), RPS: f("rps"),
			AvgMs: f("avg_ms"), MinMs: f("min_ms"), P50Ms: f("p50_ms"), P95Ms: f("p95_ms"), P99Ms: f("p99_ms"), MaxMs: f("max_ms"),
			ServerCores: f("server_cores"), ServerCPUPerReqU: f("server_cpu_per_req_us"),
		}
		if bad != nil {
			return nil, bad
		}
		out = append(out, row)
	}
}

func readRESPBenchFile(path string) ([]respBenchRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := readRESPBench(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, nil
}

// respFig is what a row compares of each side.
type respFig struct {
	RPS, P50Ms, P99Ms, CPUPerReqUs float64
}

// add and scaled make means of figures.
func (f respFig) add(g respFig) respFig {
	return respFig{f.RPS + g.RPS, f.P50Ms + g.P50Ms, f.P99Ms + g.P99Ms, f.CPUPerReqUs + g.CPUPerReqUs}
}

func (f respFig) scaled(k float64) respFig {
	return respFig{f.RPS * k, f.P50Ms * k, f.P99Ms * k, f.CPUPerReqUs * k}
}

// respPair is one row of the RESP table: ticketd and redis-server driven by
// one tool at the same range size, clients and pipeline depth (with
// redis-benchmark, the mean of each side's runs: Runs of ticketd's, RedisRuns
// of redis-server's).
type respPair struct {
	Tool                   string
	Count                  uint64
	Clients, Pipeline      int
	Ticketd, Redis         respFig
	TicketdErrs, RedisErrs string
	Runs, RedisRuns        int
}

// respPairs: the redis-benchmark rows, then the generator's, each sorted by
// range size, clients and pipeline depth.
func respPairs(r *fullReport) []respPair {
	var out []respPair
	type key struct {
		count             uint64
		clients, pipeline int
	}
	type sum struct {
		fig  respFig
		runs int
	}
	rb := map[key]map[string]*sum{}
	var keys []key
	for _, row := range r.RESPBench {
		k := key{row.Count, row.Clients, row.Pipeline}
		if rb[k] == nil {
			rb[k] = map[string]*sum{}
			keys = append(keys, k)
		}
		s := rb[k][row.System]
		if s == nil {
			s = &sum{}
			rb[k][row.System] = s
		}
		s.fig = s.fig.add(respFig{row.RPS, row.P50Ms, row.P99Ms, row.ServerCPUPerReqU})
		s.runs++
	}
	slices.SortFunc(keys, func(a, b key) int {
		switch {
		case a.count != b.count:
			return cmpU(a.count, b.count)
		case a.clients != b.clients:
			return a.clients - b.clients
		}
		return a.pipeline - b.pipeline
	})
	for _, k := range keys {
		t, okT := rb[k]["ticketd"]
		rd, okR := rb[k]["redis"]
		if !okT || !okR {
			continue
		}
		out = append(out, respPair{
			Tool: respToolRB, Count: k.count, Clients: k.clients, Pipeline: k.pipeline,
			Ticketd: t.fig.scaled(1 / float64(t.runs)), Redis: rd.fig.scaled(1 / float64(rd.runs)),
			Runs: t.runs, RedisRuns: rd.runs,
		})
	}
	var counts []uint64
	var concs []int
	for _, l := range r.Loads {
		if l.Group != respGroup {
			continue
		}
		if !slices.Contains(counts, l.Count) {
			counts = append(counts, l.Count)
		}
		for _, lv := range l.Levels {
			if !slices.Contains(concs, lv.Concurrency) {
				concs = append(concs, lv.Concurrency)
			}
		}
	}
	slices.Sort(counts)
	slices.Sort(concs)
	for _, count := range counts {
		for _, conc := range concs {
			t, okT := r.find(respGroup, "ticketd-resp", 0, count, conc)
			rd, okR := r.find(respGroup, "redis-resp", 0, count, conc)
			if !okT || !okR {
				continue
			}
			out = append(out, respPair{
				Tool: respToolGen, Count: count, Clients: conc, Pipeline: 1,
				Ticketd:     respFig{t.ReservationsPerSec, t.P50Ms, t.P99Ms, t.ServerCPUPerResUs},
				Redis:       respFig{rd.ReservationsPerSec, rd.P50Ms, rd.P99Ms, rd.ServerCPUPerResUs},
				TicketdErrs: fmtErrors(t.Errors), RedisErrs: fmtErrors(rd.Errors),
				Runs: 1, RedisRuns: 1,
			})
		}
	}
	return out
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// respTargets: ticketd ≥ 1.0× redis-server in requests/s, on every row.
func respTargets(r *fullReport) []targetCheck {
	var out []targetCheck
	for _, p := range respPairs(r) {
		if p.Redis.RPS <= 0 {
			continue
		}
		v := p.Ticketd.RPS / p.Redis.RPS
		out = append(out, targetCheck{
			What:   fmt.Sprintf("RESP ticketd / redis-server (fsync always), %s, count=%d c=%d P=%d, req/s", p.Tool, p.Count, p.Clients, p.Pipeline),
			Value:  v,
			Target: fmt.Sprintf(">= %.1f", respTarget),
			Met:    v >= respTarget,
		})
	}
	return out
}

var respHeader = []string{"tool", "range", "clients", "pipeline",
	"ticketd req/s", "redis req/s", "req/s ÷",
	"ticketd p50 ms", "redis p50 ms", "p50 ÷",
	"ticketd p99 ms", "redis p99 ms", "p99 ÷",
	"server CPU µs/req ticketd / redis", "≥ 1.0×"}

func metOrMissed(b bool) string {
	if b {
		return "met"
	}
	return "missed"
}

func respRows(r *fullReport) [][]string {
	var rows [][]string
	for _, p := range respPairs(r) {
		cpu := "-"
		if p.Ticketd.CPUPerReqUs > 0 || p.Redis.CPUPerReqUs > 0 {
			cpu = fmt.Sprintf("%.1f / %.1f", p.Ticketd.CPUPerReqUs, p.Redis.CPUPerReqUs)
		}
		tRate := num(p.Ticketd.RPS)
		if p.TicketdErrs != "" && p.TicketdErrs != "0" {
			tRate += " [errors " + p.TicketdErrs + "]"
		}
		rRate := num(p.Redis.RPS)
		if p.RedisErrs != "" && p.RedisErrs != "0" {
			rRate += " [errors " + p.RedisErrs + "]"
		}
		tool := p.Tool
		if p.Runs > 1 || p.RedisRuns > 1 {
			tool += fmt.Sprintf(" (mean of %d", p.Runs)
			if p.RedisRuns != p.Runs {
				tool += fmt.Sprintf(" / %d", p.RedisRuns)
			}
			tool += " runs)"
		}
		rows = append(rows, []string{tool, fmt.Sprint(p.Count), fmt.Sprint(p.Clients), fmt.Sprint(p.Pipeline),
			tRate, rRate, ratio(p.Ticketd.RPS, p.Redis.RPS),
			msStr(p.Ticketd.P50Ms), msStr(p.Redis.P50Ms), ratio(p.Ticketd.P50Ms, p.Redis.P50Ms),
			msStr(p.Ticketd.P99Ms), msStr(p.Redis.P99Ms), ratio(p.Ticketd.P99Ms, p.Redis.P99Ms),
			cpu, metOrMissed(p.Redis.RPS > 0 && p.Ticketd.RPS/p.Redis.RPS >= respTarget)})
	}
	return rows
}

const respTitle = "RESP: ticketd ÷ redis-server (appendfsync always)"

const respExplain = "ticketd: 3 nodes (fsync on, --dev), INCRBY <sequence> <count> to the leader's --resp-addr; redis-server: 1 node, appendonly yes, appendfsync always, INCRBY <key> <count>; same machine, same run, the two alternating. " +
	"req/s ÷ above 1× is ticketd faster; p50/p99 ÷ above 1× is ticketd slower. redis-benchmark: -c clients -P pipeline, latency per request as it reports it (a pipelined request waits for its whole batch), each row the mean of each side's runs (in ABBA order: fsync latency drifts on a VM); ticketd-bench load: closed loop, one request in flight per client, after a warm-up. " +
	"Server CPU: all three ticketd nodes against the one redis-server process. Target: ticketd ≥ 1.0× redis-server in req/s, each row."

// respSummary counts the rows that met the target.
func respSummary(rows [][]string) string {
	met := 0
	for _, row := range rows {
		if row[len(row)-1] == "met" {
			met++
		}
	}
	return fmt.Sprintf("%d of %d rows met ticketd ≥ %.1f× redis-server in req/s", met, len(rows), respTarget)
}
