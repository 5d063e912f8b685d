package main

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/server"
)

func TestParseStat(t *testing.T) {
	// The command name may hold spaces and parentheses.
	line := []byte("4242 (my (odd) name) S 17 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 9 0 100 0 0")
	ticks, ok := parseStatTicks(line)
	if !ok || ticks != 325 {
		t.Fatalf("ticks = %d, %v; want 325", ticks, ok)
	}
	pp, ok := parseStatPPID(line)
	if !ok || pp != 17 {
		t.Fatalf("ppid = %d, %v; want 17", pp, ok)
	}
	if _, ok := parseStatTicks([]byte("garbage")); ok {
		t.Fatal("garbage parsed")
	}
	// Our own process, read for real.
	if _, ok := procTicks(os.Getpid()); !ok {
		t.Skip("no /proc here")
	}
	a := sampleCPU([]int{os.Getpid()})
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) { // burn some CPU
	}
	u := cpuBetween(a, sampleCPU([]int{os.Getpid()}))
	if u.ServerCores <= 0 || u.ClientCores <= 0 || u.ServerCores > 64 {
		t.Fatalf("cpu use %+v", u)
	}
}

func TestRecoveryAfter(t *testing.T) {
	msd := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	// A request sent before the kill and answered after it does not count.
	sent := []time.Duration{msd(990), msd(1200), msd(1300)}
	done := []time.Duration{msd(1100), msd(1250), msd(1301)}
	k, r := recoveryAfter(msd(1000), sent, done)
	if k != 1000 || r != 250 {
		t.Fatalf("kill %v recovery %v, want 1000 and 250", k, r)
	}
	if _, r := recoveryAfter(msd(2000), sent, done); r != -1 {
		t.Fatalf("recovery %v with no success after the kill, want -1", r)
	}
}

func TestParseKindTargets(t *testing.T) {
	got, err := parseKindTargets("etcd", "127.0.0.1:2379, localhost:2380,[::1]:2381")
	if err != nil || len(got) != 3 || got[2] != "[::1]:2381" {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"10.0.0.1:2379", "example.com:6379", "127.0.0.1", "127.0.0.1:99999", ""} {
		if _, err := parseKindTargets("redis", bad); err == nil {
			t.Errorf("parseKindTargets(redis, %q) succeeded", bad)
		}
	}
	if got, err := parseKindTargets("http", "127.0.0.1:1"); err != nil || got[0] != "http://127.0.0.1:1" {
		t.Fatalf("http: %v, %v", got, err)
	}
	if sqlIdent("main-ticketd.C1000") != "main_ticketd_c1000" {
		t.Fatalf("sqlIdent = %q", sqlIdent("main-ticketd.C1000"))
	}
	if _, err := newMySQLBackend(loadConfig{Targets: []string{"127.0.0.1:1"}, Count: 100000}, 1); err == nil {
		t.Fatal("a ticket table cannot step by more than 65535")
	}
}

// TestReportFromRuns produces real load files against the baseline, under
// two system names, and checks the report: ratios, targets, markdown and a
// well-formed SVG.
func TestReportFromRuns(t *testing.T) {
	addr := testBaseline(t)
	dir := t.TempDir()
	for _, sys := range []string{"echo", "ticketd"} {
		for _, count := range []uint64{1, 1000} {
			cfg := loadConfig{
				Targets: []string{"http://" + addr.String()}, Sequence: sys, Count: count,
				Levels: []int{1, 16}, Duration: 150 * time.Millisecond, Warmup: 50 * time.Millisecond,
				Timeout: 2 * time.Second, Label: sys, System: sys, Group: "smoke", Nodes: 3,
				PIDs: []int{os.Getpid()},
			}
			rep, err := runLoadLevels(context.Background(), cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := writeJSON(filepath.Join(dir, "load-smoke-"+sys+"-c"+strconv.FormatUint(count, 10)+".json"), rep); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "env.txt"), []byte("date: today\ncpus: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	devnull, _ := os.Open(os.DevNull)
	os.Stdout = devnull // runReport prints the table
	err := runReport([]string{"--dir", dir, "--strict"})
	os.Stdout = stdout
	devnull.Close()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := collect(dir)
	if err != nil {
		t.Fatal(err)
	}
	judge(rep)
	if len(rep.Problems) != 0 {
		t.Fatalf("problems %v", rep.Problems)
	}
	// ticketd and echo at c=16 for both counts: throughput, CPU per
	// reservation and p99 ratios each.
	n := 0
	for _, tg := range rep.Targets {
		if strings.Contains(tg.What, "bare Echo") {
			n++
		}
	}
	if n != 6 {
		t.Fatalf("targets %+v, want three Echo ratios per count at c=16", rep.Targets)
	}
	rows := mainRows(rep)
	if len(rows) != 8 || !strings.Contains(rows[0][3], "(1.00×)") {
		t.Fatalf("rows %v", rows)
	}
	md, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil || !strings.Contains(string(md), "| bare Echo handler |") {
		t.Fatalf("results.md: %v\n%s", err, md)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "chart.svg"))
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(string(svg)))
	rects := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("chart.svg is not well-formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			rects++
		}
	}
	// 4 panels x 2 levels x 2 systems bars, + background + legend.
	if rects < 16 {
		t.Fatalf("%d rects in the chart", rects)
	}

	// A run with overlapping ranges is a problem that fails --strict.
	rep.Loads[0].Overall.Overlaps = 1
	rep.Problems = nil
	judge(rep)
	if len(rep.Problems) == 0 {
		t.Fatal("an overlap was not reported as a problem")
	}
}

// TestFailoverProbeKills checks the kill path: the probe SIGKILLs the given
// process on time and measures the recovery from then.
func TestFailoverProbeKills(t *testing.T) {
	addr := testBaseline(t)
	victim := exec.Command("sleep", "30")
	if err := victim.Start(); err != nil {
		t.Skip("no sleep binary:", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- victim.Wait() }()
	cfg := failoverConfig{
		Targets: []string{"http://" + addr.String()}, Sequence: "fo", Interval: time.Millisecond,
		Duration: 400 * time.Millisecond, Timeout: 200 * time.Millisecond, Threshold: 50 * time.Millisecond,
		KillPID: victim.Process.Pid, KillAfter: 100 * time.Millisecond,
	}
	rep, err := probe(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		victim.Process.Kill()
		t.Fatal("the victim was not killed")
	}
	if rep.KilledAtMs < 100 || rep.KilledAtMs > 300 || rep.RecoveryMs < 0 || rep.RecoveryMs > 100 {
		t.Fatalf("killed at %v ms, recovery %v ms", rep.KilledAtMs, rep.RecoveryMs)
	}
}

// TestAgainstCluster drives a real in-process 3-node cluster: the load
// generator through the leader and through a follower, over HTTP and over
// the Redis-protocol front, and the SDK mode.
func TestAgainstCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	tc := testcluster.New(t, 3, func(_ string, cfg *server.Config) { cfg.RESPAddr = "127.0.0.1:0" })
	leader := tc.Leader(10 * time.Second)
	var follower *testcluster.Node
	for _, n := range tc.Running() {
		if n != leader {
			follower = n
		}
	}
	cfg := loadConfig{
		Targets: []string{tc.URL(leader), tc.URL(follower)}, Sequence: "bench", Count: 1000,
		Levels: []int{4}, Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond,
		Timeout: 5 * time.Second, Label: "cluster",
	}
	rep, err := runLoadLevels(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := loadVerdict(rep); err != nil {
		t.Fatal(err)
	}
	if l := rep.Levels[0]; l.Requests == 0 || l.ErrorsTotal != 0 {
		t.Fatalf("level %+v", l)
	}

	// Over 40 fresh sequences (issue 17), the follower first: the PUTs
	// are forwarded and every one creates its sequence.
	mcfg := cfg
	mcfg.Targets = []string{tc.URL(follower), tc.URL(leader)}
	mcfg.Sequence, mcfg.Sequences, mcfg.Label = "many", 40, "cluster-many"
	mrep, err := runLoadLevels(context.Background(), mcfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := loadVerdict(mrep); err != nil {
		t.Fatal(err)
	}
	if l := mrep.Levels[0]; l.Requests == 0 || l.ErrorsTotal != 0 || mrep.Sequences != 40 || !strings.Contains(mrep.Note, "fresh: all new") {
		t.Fatalf("many sequences: level %+v, note %q", l, mrep.Note)
	}

	// The RESP front (issue 14), the leader's and a follower's (which
	// forwards to the leader): setup creates the sequence with
	// TICKETD.CREATE, then INCRBY hands out the ranges.
	for _, n := range []*testcluster.Node{leader, follower} {
		rcfg := cfg
		rcfg.Kind, rcfg.Targets, rcfg.Sequence, rcfg.Label = "resp", []string{n.Srv.RESPAddr()}, "resp-"+n.ID, "cluster-resp"
		rrep, err := runLoadLevels(context.Background(), rcfg, nil)
		if err != nil {
			t.Fatalf("resp via %s: %v", n.ID, err)
		}
		if err := loadVerdict(rrep); err != nil {
			t.Fatalf("resp via %s: %v", n.ID, err)
		}
		if l := rrep.Levels[0]; l.Requests == 0 || l.ErrorsTotal != 0 || rrep.Overall.BadSize != 0 {
			t.Fatalf("resp via %s: level %+v, overall %+v", n.ID, l, rrep.Overall)
		}
	}

	var urls []string
	for _, n := range tc.Running() {
		urls = append(urls, tc.URL(n))
	}
	srep, err := sdkRun(context.Background(), sdkConfig{
		Targets: urls, Sequence: "sdk", Rate: 200000, Duration: 500 * time.Millisecond, Warmup: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if srep.Errors != 0 || srep.Check.Overlaps != 0 || srep.NonIncreasing != 0 {
		t.Fatalf("sdk report %+v", srep)
	}
	// Paced at 200k/s for 0.5 s: about 100k calls (the race detector may
	// slow it; never more than the schedule allows).
	if srep.Calls < 10000 || srep.Calls > 101000 {
		t.Fatalf("sdk took %d IDs in 0.5 s at 200k/s", srep.Calls)
	}
}
