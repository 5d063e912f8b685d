package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// systemOrder is the order of the rows of a table; the first is the
// reference every ratio is taken against.
var systemOrder = []string{"ticketd", "ticketd-any", "ticketd-follow", "echo", "etcd", "redis", "postgres", "mariadb"}

// systemTitle names a system in tables and the chart.
var systemTitle = map[string]string{
	"ticketd":        "ticketd (3 nodes, leader)",
	"ticketd-any":    "ticketd (3 nodes, any node, forwarded)",
	"ticketd-follow": "ticketd (3 nodes, any node, client follows the leader)",
	"echo":           "bare Echo handler",
	"etcd":           "etcd CAS counter (3 nodes)",
	"redis":          "Redis INCRBY (fsync always)",
	"postgres":       "PostgreSQL nextval",
	"mariadb":        "MariaDB ticket table",
}

func title(sys string) string {
	if t, ok := systemTitle[sys]; ok {
		return t
	}
	return sys
}

// fullReport is results.json: everything one bench.sh run measured.
type fullReport struct {
	GeneratedAt time.Time         `json:"generated_at"`
	Env         []string          `json:"env"`
	Loads       []*loadReport     `json:"loads"`
	Failovers   []*failoverReport `json:"failovers"`
	SDK         []*sdkReport      `json:"sdk"`
	Targets     []targetCheck     `json:"targets"`
	Problems    []string          `json:"problems"`
	Warnings    []string          `json:"warnings"`
	// RESPBench is bench.sh's redis-benchmark runs against ticketd's RESP
	// front and redis-server (resp-redis-benchmark.csv; issue 14).
	RESPBench []respBenchRow `json:"resp_redis_benchmark,omitempty"`
}

// targetCheck is one of the targets, evaluated on this run.
type targetCheck struct {
	What   string  `json:"what"`
	Value  float64 `json:"value"`
	Target string  `json:"target"`
	Met    bool    `json:"met"`
}

func runReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	dir := fs.String("dir", "", "directory with the load-*.json, failover-*.json, sdk-*.json and env.txt of a run (required)")
	strict := fs.Bool("strict", false, "exit 1 on a correctness failure or an unexpected error (smoke mode)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("--dir is required")
	}
	rep, err := collect(*dir)
	if err != nil {
		return err
	}
	judge(rep)
	printReport(os.Stdout, rep)
	if err := writeJSON(filepath.Join(*dir, "results.json"), rep); err != nil {
		return err
	}
	var md strings.Builder
	writeMarkdown(&md, rep)
	if err := os.WriteFile(filepath.Join(*dir, "results.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dir, "chart.svg"), []byte(renderChart(rep)), 0o644); err != nil {
		return err
	}
	fmt.Printf("\nwrote %s, %s and %s\n", filepath.Join(*dir, "results.json"), filepath.Join(*dir, "results.md"), filepath.Join(*dir, "chart.svg"))
	if *strict && len(rep.Problems) > 0 {
		return fmt.Errorf("%d problem(s): %s", len(rep.Problems), strings.Join(rep.Problems, "; "))
	}
	return nil
}

func collect(dir string) (*fullReport, error) {
	rep := &fullReport{GeneratedAt: time.Now().UTC(), Problems: []string{}, Warnings: []string{}}
	if f, err := os.Open(filepath.Join(dir, "env.txt")); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			rep.Env = append(rep.Env, sc.Text())
		}
		f.Close()
	}
	read := func(pattern string, each func(path string, b []byte) error) error {
		paths, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return err
		}
		sort.Strings(paths)
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := each(p, b); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		}
		return nil
	}
	err := read("load-*.json", func(_ string, b []byte) error {
		var l loadReport
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		rep.Loads = append(rep.Loads, &l)
		return nil
	})
	if err == nil {
		err = read("failover-*.json", func(_ string, b []byte) error {
			var f failoverReport
			if err := json.Unmarshal(b, &f); err != nil {
				return err
			}
			rep.Failovers = append(rep.Failovers, &f)
			return nil
		})
	}
	if err == nil {
		err = read("sdk-*.json", func(_ string, b []byte) error {
			var s sdkReport
			if err := json.Unmarshal(b, &s); err != nil {
				return err
			}
			rep.SDK = append(rep.SDK, &s)
			return nil
		})
	}
	if err == nil {
		if _, serr := os.Stat(filepath.Join(dir, respCSVFile)); serr == nil {
			rep.RESPBench, err = readRESPBenchFile(filepath.Join(dir, respCSVFile))
		}
	}
	if err != nil {
		return nil, err
	}
	if len(rep.Loads) == 0 && len(rep.RESPBench) == 0 {
		return nil, fmt.Errorf("no load-*.json in %s", dir)
	}
	return rep, nil
}

// find returns the level of system at count and concurrency in group
// ("" matches any group), preferring group "main".
func (r *fullReport) find(group, system string, nodes int, count uint64, conc int) (*levelResult, bool) {
	for _, l := range r.Loads {
		if l.System != system || l.Count != count || (group != "" && l.Group != group) || (nodes > 0 && l.Nodes != nodes) {
			continue
		}
		for i := range l.Levels {
			if l.Levels[i].Concurrency == conc {
				return &l.Levels[i], true
			}
		}
	}
	return nil, false
}

// mainGroup is the group of the side-by-side table: "main" in a full run,
// "smoke" in a smoke run.
func (r *fullReport) mainGroup() string {
	for _, l := range r.Loads {
		if l.Group == "main" {
			return "main"
		}
	}
	return "smoke"
}

// axes returns the counts and concurrency levels of group, sorted, and its
// systems in systemOrder (then any other, by name).
func (r *fullReport) axes(group string) (counts []uint64, concs []int, systems []string) {
	seenS := map[string]bool{}
	counts, concs = r.axesOf(func(l *loadReport) bool {
		if l.Group != group {
			return false
		}
		seenS[l.System] = true
		return true
	})
	for _, s := range systemOrder {
		if seenS[s] {
			systems = append(systems, s)
			delete(seenS, s)
		}
	}
	var rest []string
	for s := range seenS {
		rest = append(rest, s)
	}
	sort.Strings(rest)
	return counts, concs, append(systems, rest...)
}

// axesOf returns the range sizes and client levels of the loads keep
// accepts, each sorted.
func (r *fullReport) axesOf(keep func(*loadReport) bool) (counts []uint64, concs []int) {
	seenC, seenL := map[uint64]bool{}, map[int]bool{}
	for _, l := range r.Loads {
		if !keep(l) {
			continue
		}
		if !seenC[l.Count] {
			seenC[l.Count] = true
			counts = append(counts, l.Count)
		}
		for _, lv := range l.Levels {
			if !seenL[lv.Concurrency] {
				seenL[lv.Concurrency] = true
				concs = append(concs, lv.Concurrency)
			}
		}
	}
	slices.Sort(counts)
	slices.Sort(concs)
	return counts, concs
}

// judge fills Targets, Problems and Warnings.
func judge(r *fullReport) {
	for _, l := range r.Loads {
		name := fmt.Sprintf("%s count=%d", l.Label, l.Count)
		if l.Overall.Overlaps > 0 || l.Overall.BadSize > 0 {
			r.Problems = append(r.Problems, fmt.Sprintf("%s: %d overlapping and %d wrong-size ranges", name, l.Overall.Overlaps, l.Overall.BadSize))
		}
		for _, lv := range l.Levels {
			if lv.Requests == 0 {
				r.Problems = append(r.Problems, fmt.Sprintf("%s c=%d: no successful request", name, lv.Concurrency))
			}
			for kind, n := range lv.Errors {
				msg := fmt.Sprintf("%s c=%d: %d errors %q", name, lv.Concurrency, n, kind)
				// ticketd's 503 means "no serving leader right now": on a
				// machine busy with other work an election can happen;
				// it is reported, not failed; so is -TRYAGAIN, the same
				// answer on its RESP front. Any other error of ticketd
				// or the baseline is a failure. Peers' errors are
				// figures of the comparison.
				if l.Kind == "http" && kind != "503" || l.Kind == "resp" && kind != "TRYAGAIN" {
					r.Problems = append(r.Problems, msg)
				} else {
					r.Warnings = append(r.Warnings, msg)
				}
			}
		}
	}
	for _, f := range r.Failovers {
		if f.Check.Overlaps > 0 || f.Check.BadSize > 0 {
			r.Problems = append(r.Problems, fmt.Sprintf("failover %s: %d overlapping ranges", f.System, f.Check.Overlaps))
		}
		if f.KilledPID > 0 && f.RecoveryMs < 0 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("failover %s: no success after the kill within the probe", f.System))
		}
	}
	for _, s := range r.SDK {
		if s.Check.Overlaps > 0 || s.NonIncreasing > 0 {
			r.Problems = append(r.Problems, fmt.Sprintf("sdk: %d overlaps, %d non-increasing IDs", s.Check.Overlaps, s.NonIncreasing))
		}
	}

	g := r.mainGroup()
	counts, _, _ := r.axes(g)
	for _, count := range counts {
		for _, conc := range []int{16, 64} {
			t, ok := r.find(g, "ticketd", 0, count, conc)
			if !ok {
				continue
			}
			// Issue #13's targets, each a ratio measured in this run.
			if e, ok := r.find(g, "echo", 0, count, conc); ok && e.ReservationsPerSec > 0 {
				v := t.ReservationsPerSec / e.ReservationsPerSec
				r.Targets = append(r.Targets, targetCheck{What: fmt.Sprintf("ticketd / bare Echo, res/s, count=%d c=%d", count, conc), Value: v, Target: ">= 0.9", Met: v >= 0.9})
				if e.ServerCPUPerResUs > 0 && t.ServerCPUPerResUs > 0 {
					v := t.ServerCPUPerResUs / e.ServerCPUPerResUs
					r.Targets = append(r.Targets, targetCheck{What: fmt.Sprintf("ticketd / bare Echo, server CPU per res, count=%d c=%d", count, conc), Value: v, Target: "<= 1.5", Met: v <= 1.5})
				}
				if conc == 16 && e.P99Ms > 0 {
					v := t.P99Ms / e.P99Ms
					r.Targets = append(r.Targets, targetCheck{What: fmt.Sprintf("ticketd / bare Echo, p99, count=%d c=16", count), Value: v, Target: "<= 1.5", Met: v <= 1.5})
				}
			}
			for _, via := range []string{"ticketd-any", "ticketd-follow"} {
				if a, ok := r.find(g, via, 0, count, conc); ok && t.ReservationsPerSec > 0 {
					v := a.ReservationsPerSec / t.ReservationsPerSec
					r.Targets = append(r.Targets, targetCheck{What: fmt.Sprintf("%s / leader, res/s, count=%d c=%d", title(via), count, conc), Value: v, Target: ">= 0.8", Met: v >= 0.8})
				}
			}
			if e, ok := r.find(g, "etcd", 0, count, conc); ok && e.ReservationsPerSec > 0 {
				v := t.ReservationsPerSec / e.ReservationsPerSec
				r.Targets = append(r.Targets, targetCheck{What: fmt.Sprintf("ticketd / etcd CAS, res/s, count=%d c=%d", count, conc), Value: v, Target: ">= 50", Met: v >= 50})
			}
		}
	}
	// Issue #17's targets, each against one sequence in the same run.
	r.Targets = append(r.Targets, manySeqTargets(r)...)
	// Issue #14's: the RESP front against redis-server, same run.
	r.Targets = append(r.Targets, respTargets(r)...)
	// Issue #32's: server-made Snowflake IDs beside their peers, same run.
	r.Targets = append(r.Targets, snowflakeTargets(r)...)
	// Issue #44's: leader leases beside the bare handlers, same run.
	r.Targets = append(r.Targets, leaseTargets(r)...)
}

// manySeqGroup is the group of bench.sh's many-sequences runs (issue 17):
// ticketd's leader over 1..10,000 sequences, each run on fresh ones.
const manySeqGroup = "manyseq"

// seqCount is the number of sequences of a run (files from before
// --sequences have none: one).
func (l *loadReport) seqCount() int { return max(l.Sequences, 1) }

// findSeqs returns the level of group at count, concurrency and number of
// sequences, with its run.
func (r *fullReport) findSeqs(group string, count uint64, conc, seqs int) (*loadReport, *levelResult, bool) {
	for _, l := range r.Loads {
		if l.Group != group || l.Count != count || l.seqCount() != seqs {
			continue
		}
		for i := range l.Levels {
			if l.Levels[i].Concurrency == conc {
				return l, &l.Levels[i], true
			}
		}
	}
	return nil, nil, false
}

// manySeqAxes returns the counts, concurrency levels and numbers of
// sequences of the many-sequences runs, sorted.
func (r *fullReport) manySeqAxes() (counts []uint64, concs, seqs []int) {
	for _, l := range r.Loads {
		if l.Group != manySeqGroup {
			continue
		}
		if !slices.Contains(counts, l.Count) {
			counts = append(counts, l.Count)
		}
		if !slices.Contains(seqs, l.seqCount()) {
			seqs = append(seqs, l.seqCount())
		}
		for _, lv := range l.Levels {
			if !slices.Contains(concs, lv.Concurrency) {
				concs = append(concs, lv.Concurrency)
			}
		}
	}
	slices.Sort(counts)
	slices.Sort(concs)
	slices.Sort(seqs)
	return counts, concs, seqs
}

// manySeqTargets are issue 17's targets: over 2,000 and 10,000 sequences,
// at least 0.8× the one-sequence rate and at most 2× its p99, at 16 and 64
// clients, each against the one-sequence row of the same run.
func manySeqTargets(r *fullReport) []targetCheck {
	var out []targetCheck
	counts, _, _ := r.manySeqAxes()
	for _, count := range counts {
		for _, conc := range []int{16, 64} {
			_, one, ok := r.findSeqs(manySeqGroup, count, conc, 1)
			if !ok {
				continue
			}
			for _, n := range []int{2000, 10000} {
				_, l, ok := r.findSeqs(manySeqGroup, count, conc, n)
				if !ok {
					continue
				}
				if one.ReservationsPerSec > 0 {
					v := l.ReservationsPerSec / one.ReservationsPerSec
					out = append(out, targetCheck{What: fmt.Sprintf("%d sequences / one, res/s, count=%d c=%d", n, count, conc), Value: v, Target: ">= 0.8", Met: v >= 0.8})
				}
				if one.P99Ms > 0 {
					v := l.P99Ms / one.P99Ms
					out = append(out, targetCheck{What: fmt.Sprintf("%d sequences / one, p99, count=%d c=%d", n, count, conc), Value: v, Target: "<= 2", Met: v <= 2})
				}
			}
		}
	}
	return out
}

var manySeqHeader = []string{"range", "conc", "sequences", "reservations/s", "p50 ms", "p99 ms", "errors", "setup s", "first reservations/s"}

// manySeqRows: ticketd's leader over 1..10,000 sequences, each rate and p99
// with its ratio to the one-sequence row at the same range size and
// concurrency; setup is the time that run took to create its sequences.
func manySeqRows(r *fullReport) [][]string {
	counts, concs, seqs := r.manySeqAxes()
	var rows [][]string
	for _, count := range counts {
		for _, conc := range concs {
			_, one, _ := r.findSeqs(manySeqGroup, count, conc, 1)
			var ref levelResult
			if one != nil {
				ref = *one
			}
			pair := func(s string, v, rv float64) string {
				if one == nil {
					return s
				}
				return s + " (" + ratio(v, rv) + ")"
			}
			for _, n := range seqs {
				run, l, ok := r.findSeqs(manySeqGroup, count, conc, n)
				if !ok {
					continue
				}
				rows = append(rows, []string{fmt.Sprint(count), fmt.Sprint(conc), fmt.Sprint(n),
					pair(num(l.ReservationsPerSec), l.ReservationsPerSec, ref.ReservationsPerSec),
					msStr(l.P50Ms),
					pair(msStr(l.P99Ms), l.P99Ms, ref.P99Ms),
					fmtErrors(l.Errors),
					fmt.Sprintf("%.2f", run.SetupS), primeRate(run)})
			}
		}
	}
	return rows
}

// primeRate is how many sequences a run's priming served their first
// reservation per second (their cold start), "-" if it did not prime.
func primeRate(r *loadReport) string {
	if r.PrimeS <= 0 {
		return "-"
	}
	return num(float64(r.Sequences) / r.PrimeS)
}

// ratio formats v/ref as "0.52×"; "-" when it is undefined.
func ratio(v, ref float64) string {
	if ref <= 0 || math.IsNaN(v) {
		return "-"
	}
	x := v / ref
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f×", x)
	case x >= 10:
		return fmt.Sprintf("%.1f×", x)
	case x >= 0.01:
		return fmt.Sprintf("%.2f×", x)
	}
	return fmt.Sprintf("%.4f×", x)
}

func num(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func msStr(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// cells returns the figures of one row with their ratios to ref.
func cells(l, ref *levelResult) []string {
	pair := func(s string, v, rv float64) string {
		if ref == nil {
			return s
		}
		return s + " (" + ratio(v, rv) + ")"
	}
	var r levelResult
	if ref != nil {
		r = *ref
	}
	errs := fmtErrors(l.Errors)
	if l.Retries > 0 {
		errs += fmt.Sprintf(" [%d retries]", l.Retries)
	}
	return []string{
		pair(num(l.ReservationsPerSec), l.ReservationsPerSec, r.ReservationsPerSec),
		pair(num(l.IDsPerSec), l.IDsPerSec, r.IDsPerSec),
		pair(msStr(l.P50Ms), l.P50Ms, r.P50Ms),
		pair(msStr(l.P99Ms), l.P99Ms, r.P99Ms),
		pair(msStr(l.P999Ms), l.P999Ms, r.P999Ms),
		errs,
	}
}

var tableHeader = []string{"range", "conc", "system", "reservations/s", "IDs/s", "p50 ms", "p99 ms", "p99.9 ms", "errors"}

// mainRows is the side-by-side table: every system at every count and
// concurrency, each figure with its ratio to ticketd (leader) in the same
// cell.
func mainRows(r *fullReport) [][]string {
	g := r.mainGroup()
	counts, concs, systems := r.axes(g)
	var rows [][]string
	for _, count := range counts {
		for _, conc := range concs {
			ref, _ := r.find(g, "ticketd", 0, count, conc)
			for _, sys := range systems {
				l, ok := r.find(g, sys, 0, count, conc)
				if !ok {
					continue
				}
				row := []string{fmt.Sprint(count), fmt.Sprint(conc), title(sys)}
				rows = append(rows, append(row, cells(l, ref)...))
			}
		}
	}
	return rows
}

// cpuRows: what each run cost in CPU. Server cores are every process of
// the system (all nodes of a cluster); the machine figure includes the load
// generator and anything else that ran.
func cpuRows(r *fullReport) [][]string {
	g := r.mainGroup()
	counts, concs, systems := r.axes(g)
	var rows [][]string
	for _, count := range counts {
		for _, conc := range concs {
			for _, sys := range systems {
				l, ok := r.find(g, sys, 0, count, conc)
				if !ok {
					continue
				}
				rows = append(rows, []string{fmt.Sprint(count), fmt.Sprint(conc), title(sys),
					fmt.Sprintf("%.2f", l.CPU.ServerCores), fmt.Sprintf("%.1f", l.ServerCPUPerResUs),
					fmt.Sprintf("%.2f", l.CPU.ClientCores), fmt.Sprintf("%.2f", l.CPU.MachineCores),
					fmt.Sprintf("%.2f", max(0, l.CPU.MachineCores-l.CPU.ServerCores-l.CPU.ClientCores))})
			}
		}
	}
	return rows
}

var cpuHeader = []string{"range", "conc", "system", "server cores", "server CPU µs/res", "load generator cores", "machine busy cores", "other cores"}

// scalingRows: ticketd's leader on 1, 3 and 5 nodes (count 1000), and on
// 3 nodes with range sizes 1, 1000, 100000.
func scalingRows(r *fullReport) (nodes, sizes [][]string) {
	var nodeCounts []int
	var rangeSizes []uint64
	concSet := map[int]bool{}
	for _, l := range r.Loads {
		if l.System != "ticketd" {
			continue
		}
		if l.Count == 1000 && !slices.Contains(nodeCounts, l.Nodes) {
			nodeCounts = append(nodeCounts, l.Nodes)
		}
		if l.Nodes == 3 && !slices.Contains(rangeSizes, l.Count) {
			rangeSizes = append(rangeSizes, l.Count)
		}
		for _, lv := range l.Levels {
			concSet[lv.Concurrency] = true
		}
	}
	slices.Sort(nodeCounts)
	slices.Sort(rangeSizes)
	var concs []int
	for c := range concSet {
		concs = append(concs, c)
	}
	slices.Sort(concs)
	if len(nodeCounts) > 1 {
		for _, conc := range concs {
			ref, _ := r.find("", "ticketd", 3, 1000, conc)
			for _, n := range nodeCounts {
				if l, ok := r.find("", "ticketd", n, 1000, conc); ok {
					nodes = append(nodes, append([]string{fmt.Sprint(n), fmt.Sprint(conc)}, cells(l, ref)...))
				}
			}
		}
	}
	if len(rangeSizes) > 1 {
		for _, conc := range concs {
			ref, _ := r.find("", "ticketd", 3, 1000, conc)
			for _, c := range rangeSizes {
				if l, ok := r.find("", "ticketd", 3, c, conc); ok {
					sizes = append(sizes, append([]string{fmt.Sprint(c), fmt.Sprint(conc)}, cells(l, ref)...))
				}
			}
		}
	}
	return nodes, sizes
}

// failoverSummary groups the probes by system.
type failoverSummary struct {
	System     string
	Recoveries []float64
	Gaps       []float64
}

func failoverSummaries(r *fullReport) []failoverSummary {
	by := map[string]*failoverSummary{}
	var order []string
	for _, f := range r.Failovers {
		s := by[f.System]
		if s == nil {
			s = &failoverSummary{System: f.System}
			by[f.System] = s
			order = append(order, f.System)
		}
		s.Recoveries = append(s.Recoveries, f.RecoveryMs)
		s.Gaps = append(s.Gaps, f.LongestGapMs)
	}
	var out []failoverSummary
	for _, sys := range order {
		out = append(out, *by[sys])
	}
	return out
}

func fmtList(vs []float64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		if v < 0 {
			parts[i] = "none"
		} else {
			parts[i] = fmt.Sprintf("%.0f", v)
		}
	}
	return strings.Join(parts, ", ")
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func printReport(w io.Writer, r *fullReport) {
	table := func(header []string, rows [][]string) {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(header, "\t"))
		for _, row := range rows {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		tw.Flush()
	}
	// Both are empty when bench.sh ran only other sections (BENCH_MAIN=0).
	if rows := mainRows(r); len(rows) > 0 {
		fmt.Fprintln(w, "=== side by side (ratios are to ticketd's leader at the same range size and concurrency)")
		table(tableHeader, rows)
	}
	if rows := cpuRows(r); len(rows) > 0 {
		fmt.Fprintln(w, "\n=== CPU used during the measured windows (cores = CPU seconds per second)")
		table(cpuHeader, rows)
	}
	nodes, sizes := scalingRows(r)
	if len(nodes) > 0 {
		fmt.Fprintln(w, "\n=== ticketd on 1, 3 and 5 nodes (range 1000; ratios to 3 nodes)")
		table(append([]string{"nodes", "conc"}, tableHeader[3:]...), nodes)
	}
	if len(sizes) > 0 {
		fmt.Fprintln(w, "\n=== ticketd range sizes (3 nodes; ratios to range 1000)")
		table(append([]string{"range", "conc"}, tableHeader[3:]...), sizes)
	}
	if rows := manySeqRows(r); len(rows) > 0 {
		fmt.Fprintln(w, "\n=== many sequences (3 nodes, leader; each request on one of N fresh sequences at random; ratios to one sequence)")
		table(manySeqHeader, rows)
	}
	if rows := respRows(r); len(rows) > 0 {
		fmt.Fprintf(w, "\n=== %s\n%s\n", respTitle, respExplain)
		table(respHeader, rows)
		fmt.Fprintln(w, respSummary(rows))
	}
	if rows := sfRows(r); len(rows) > 0 {
		fmt.Fprintf(w, "\n=== %s\n%s\n", sfTitle, sfExplain)
		table(sfHeader, rows)
		fmt.Fprintln(w, sfSummary(rows))
		for _, l := range sfScaling(r) {
			fmt.Fprintln(w, "scaling on paper:", l)
		}
	}
	if rows := lsRows(r); len(rows) > 0 {
		fmt.Fprintf(w, "\n=== %s\n%s\n", lsTitle(r), lsExplain)
		table(lsHeader, rows)
		fmt.Fprintln(w, lsSummary(rows))
	}
	if fo := failoverSummaries(r); len(fo) > 0 {
		fmt.Fprintln(w, "\n=== failover: SIGKILL of the leader -> next successful reservation (ms)")
		for _, s := range fo {
			fmt.Fprintf(w, "%-12s kills %d  recovery %s  (median %.0f)  longest gap between successes %s\n",
				s.System, len(s.Recoveries), fmtList(s.Recoveries), median(s.Recoveries), fmtList(s.Gaps))
		}
	}
	for _, s := range r.SDK {
		fmt.Fprintf(w, "\n=== SDK at %.0f IDs/s (Sequence.Next), leader SIGKILLed at %.0f ms\n", s.RateTarget, s.KilledAtMs)
		fmt.Fprintf(w, "achieved %.0f IDs/s; longest Next %.3f ms (after the kill %.3f ms); most behind schedule %.3f ms; errors %d\n",
			s.IDsPerSec, s.MaxWaitMs, s.MaxWaitAfterKillMs, s.MaxLagMs, s.Errors)
	}
	if len(r.Targets) > 0 {
		fmt.Fprintln(w, "\n=== targets")
		for _, t := range r.Targets {
			fmt.Fprintf(w, "%-4s %-45s %8.2f  (target %s)\n", metStr(t.Met), t.What, t.Value, t.Target)
		}
	}
	for _, p := range r.Warnings {
		fmt.Fprintln(w, "warning:", p)
	}
	for _, p := range r.Problems {
		fmt.Fprintln(w, "PROBLEM:", p)
	}
}

func metStr(b bool) string {
	if b {
		return "met"
	}
	return "MISS"
}

func writeMarkdown(w io.Writer, r *fullReport) {
	// The first textCols columns are left-aligned labels, the rest figures.
	table := func(header []string, rows [][]string) {
		textCols := 3
		if header[2] != "system" {
			textCols = 2
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(header, " | "))
		seps := make([]string, len(header))
		for i := range seps {
			seps[i] = "---"
			if i >= textCols {
				seps[i] = "--:"
			}
		}
		fmt.Fprintf(w, "|%s|\n", strings.Join(seps, "|"))
		for _, row := range rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		}
	}
	if rows := mainRows(r); len(rows) > 0 {
		fmt.Fprintln(w, "Each figure is followed by its ratio to ticketd (3 nodes, requests to the leader) at the same range size and concurrency: for throughput above 1× is faster than ticketd, for latency above 1× is slower.")
		fmt.Fprintln(w)
		table(tableHeader, rows)
	}
	if rows := cpuRows(r); len(rows) > 0 {
		fmt.Fprintln(w, "\nCPU used during the measured windows, in cores (CPU seconds per second). Server: every process of the system (all nodes of a cluster, PostgreSQL's backends); load generator: ticketd-bench; machine: everything; other: machine minus server and load generator (the kernel's network work not charged to a process, and other engineers' runs on this shared machine).")
		fmt.Fprintln(w)
		table(cpuHeader, rows)
	}
	nodes, sizes := scalingRows(r)
	if len(nodes) > 0 {
		fmt.Fprintln(w, "\nticketd on 1, 3 and 5 nodes (range size 1000; ratios to 3 nodes):")
		fmt.Fprintln(w)
		table(append([]string{"nodes", "conc"}, tableHeader[3:]...), nodes)
	}
	if len(sizes) > 0 {
		fmt.Fprintln(w, "\nticketd by range size (3 nodes; ratios to range size 1000):")
		fmt.Fprintln(w)
		table(append([]string{"range", "conc"}, tableHeader[3:]...), sizes)
	}
	if rows := manySeqRows(r); len(rows) > 0 {
		fmt.Fprintln(w, "\nMany sequences (issue 17): ticketd (3 nodes, requests to the leader), each request on one of N sequences picked uniformly at random, the N created fresh by that run's setup (setup s) and, when primed, each reserved from once before the first level (first reservations/s: the cold start of a fresh sequence, its first block), so that the levels measure N active sequences. Reservations/s and p99 are followed by their ratio to the one-sequence row at the same concurrency, measured in the same bench run:")
		fmt.Fprintln(w)
		table(manySeqHeader, rows)
	}
	if rows := respRows(r); len(rows) > 0 {
		fmt.Fprintf(w, "\n%s. %s\n\n", respTitle, respExplain)
		table(respHeader, rows)
		fmt.Fprintf(w, "\n%s.\n", respSummary(rows))
	}
	if rows := sfRows(r); len(rows) > 0 {
		fmt.Fprintf(w, "\n%s. %s\n\n", sfTitle, sfExplain)
		table(sfHeader, rows)
		fmt.Fprintf(w, "\n%s.\n", sfSummary(rows))
		if sc := sfScaling(r); len(sc) > 0 {
			fmt.Fprintln(w, "\nScaling with nodes, on paper (nothing is forwarded or replicated per request, so each node adds what its own cores serve):")
			fmt.Fprintln(w)
			for _, l := range sc {
				fmt.Fprintf(w, "- %s\n", l)
			}
		}
	}
	if rows := lsRows(r); len(rows) > 0 {
		fmt.Fprintf(w, "\n%s. %s\n\n", lsTitle(r), lsExplain)
		table(lsHeader, rows)
		fmt.Fprintf(w, "\n%s.\n", lsSummary(rows))
	}
	if fo := failoverSummaries(r); len(fo) > 0 {
		fmt.Fprintln(w, "\nFailover: time from SIGKILL of the leader to the completion of the first reservation sent after it (count=1 probe every 1 ms, 200 ms timeout per try, next node on failure):")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| system | kills | recovery ms, each kill | median ms | longest gap between successes ms |")
		fmt.Fprintln(w, "|---|--:|---|--:|---|")
		for _, s := range fo {
			fmt.Fprintf(w, "| %s | %d | %s | %.0f | %s |\n", s.System, len(s.Recoveries), fmtList(s.Recoveries), median(s.Recoveries), fmtList(s.Gaps))
		}
	}
	for _, s := range r.SDK {
		fmt.Fprintf(w, "\nSDK (`Sequence.Next`, default options) at a steady %.0f IDs/s, ticketd leader SIGKILLed %.1f s into a %.0f s window: achieved %.0f IDs/s, longest `Next` %.3f ms (%.3f ms from the kill on), at most %.3f ms behind schedule, %d errors.\n",
			s.RateTarget, s.KilledAtMs/1000, s.DurationS, s.IDsPerSec, s.MaxWaitMs, s.MaxWaitAfterKillMs, s.MaxLagMs, s.Errors)
	}
	if len(r.Targets) > 0 {
		fmt.Fprintln(w, "\nTargets:")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| target | measured | goal | |")
		fmt.Fprintln(w, "|---|--:|--:|---|")
		for _, t := range r.Targets {
			fmt.Fprintf(w, "| %s | %.2f | %s | %s |\n", t.What, t.Value, t.Target, metStr(t.Met))
		}
	}
	notes := map[string]bool{}
	for _, l := range r.Loads {
		if l.Note != "" && !notes[l.Note] {
			notes[l.Note] = true
			fmt.Fprintf(w, "\n- %s", l.Note)
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintln(w, "\nWarnings:")
		for _, p := range r.Warnings {
			fmt.Fprintf(w, "- %s\n", p)
		}
	}
}
