package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeRESP is a minimal RESP2 server for the resp kind's tests: it reads
// command arrays and answers each with handle's raw reply. It records the
// commands it received, in order.
type fakeRESP struct {
	ln     net.Listener
	handle func(args []string) string
	mu     sync.Mutex
	cmds   [][]string
	wg     sync.WaitGroup
}

func startFakeRESP(t *testing.T, handle func(args []string) string) *fakeRESP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRESP{ln: ln, handle: handle}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				defer c.Close()
				f.serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		f.wg.Wait()
	})
	return f
}

func (f *fakeRESP) serve(c net.Conn) {
	r := bufio.NewReader(c)
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		f.mu.Lock()
		f.cmds = append(f.cmds, args)
		reply := f.handle(args)
		f.mu.Unlock()
		if _, err := io.WriteString(c, reply); err != nil {
			return
		}
	}
}

func (f *fakeRESP) commands() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]string(nil), f.cmds...)
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		return nil, fmt.Errorf("not an array: %q", line)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return nil, err
	}
	args := make([]string, n)
	for i := range args {
		h, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(h[1:]))
		if err != nil {
			return nil, err
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:size])
	}
	return args, nil
}

// TestRESPKindAgainstFake: setup creates the sequence (retrying a
// -TRYAGAIN) before any INCRBY, the key is the sequence name itself, the
// ranges come out of INCRBY's answers, and an error reply is counted by its
// code.
func TestRESPKindAgainstFake(t *testing.T) {
	var (
		counter  int64
		created  bool
		tryagain = 1
	)
	f := startFakeRESP(t, func(args []string) string {
		switch strings.ToUpper(args[0]) {
		case "TICKETD.CREATE":
			if tryagain > 0 {
				tryagain--
				return "-TRYAGAIN no leader yet\r\n"
			}
			created = true
			return ":1\r\n"
		case "INCRBY":
			if !created || args[1] != "resp-seq.1" {
				return fmt.Sprintf("-NOTFOUND sequence %q does not exist\r\n", args[1])
			}
			n, _ := strconv.ParseInt(args[2], 10, 64)
			counter += n
			return ":" + strconv.FormatInt(counter, 10) + "\r\n"
		}
		return fmt.Sprintf("-ERR unknown command '%s'\r\n", args[0])
	})
	cfg := loadConfig{
		Kind: "resp", Targets: []string{f.ln.Addr().String()}, Sequence: "resp-seq.1", Count: 10,
		Levels: []int{1, 4}, Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond,
		Timeout: 2 * time.Second, Label: "fake", SetupTimeout: 5 * time.Second,
	}
	rep, err := runLoadLevels(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := loadVerdict(rep); err != nil {
		t.Fatal(err)
	}
	if rep.Kind != "resp" || !strings.Contains(rep.Note, "TICKETD.CREATE") {
		t.Fatalf("kind %q note %q", rep.Kind, rep.Note)
	}
	for _, l := range rep.Levels {
		if l.Requests == 0 || l.ErrorsTotal != 0 {
			t.Fatalf("level %+v", l)
		}
	}
	// Dense IDs from 1: every range received is one INCRBY's.
	if rep.Overall.MinFirst != 1 || rep.Overall.MaxLast != uint64(rep.Overall.Ranges)*10 || rep.Overall.Overlaps != 0 {
		t.Fatalf("overall %+v", rep.Overall)
	}
	creates, firstIncr := 0, -1
	for i, c := range f.commands() {
		switch strings.ToUpper(c[0]) {
		case "TICKETD.CREATE":
			creates++
			if firstIncr >= 0 {
				t.Fatalf("TICKETD.CREATE after an INCRBY (command %d)", i)
			}
		case "INCRBY":
			if firstIncr < 0 {
				firstIncr = i
			}
		}
	}
	if creates != 2 || firstIncr < 0 {
		t.Fatalf("%d TICKETD.CREATE (want 2: one -TRYAGAIN, then created), first INCRBY at %d", creates, firstIncr)
	}

	// An error reply is counted by its code.
	be, err := newRESPBackend(loadConfig{Targets: cfg.Targets, Sequence: "never-created", Count: 1, Timeout: time.Second}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer be.close()
	r, _ := be.newReserver(context.Background(), 0)
	_, _, err = r.reserve(context.Background())
	if kind, backoff := errKind(err); kind != "NOTFOUND" || !backoff {
		t.Fatalf("error %v: kind %q backoff %v, want NOTFOUND with backoff", err, kind, backoff)
	}
}

// TestRESPKindRealRedisFailsFast: pointed at a server that does not know
// TICKETD.CREATE (a real Redis), setup fails at once instead of retrying
// for its whole timeout; a name that is not a sequence name is refused
// before dialing.
func TestRESPKindRealRedisFailsFast(t *testing.T) {
	f := startFakeRESP(t, func(args []string) string {
		return fmt.Sprintf("-ERR unknown command '%s', with args beginning with: \r\n", args[0])
	})
	be, err := newRESPBackend(loadConfig{Targets: []string{f.ln.Addr().String()}, Sequence: "s", Count: 1, Timeout: time.Second}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer be.close()
	start := time.Now()
	err = be.setup(context.Background(), 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("setup: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("setup took %v: it retried a permanent error", d)
	}
	for _, bad := range []string{"ticketd-bench:s", "", strings.Repeat("x", 65)} {
		if _, err := newRESPBackend(loadConfig{Targets: []string{"127.0.0.1:1"}, Sequence: bad}, 1); err == nil {
			t.Errorf("sequence %q accepted as a resp key", bad)
		}
	}
	if !validKind("resp") {
		t.Fatal("resp is not a valid kind")
	}
	if _, err := parseKindTargets("resp", "10.0.0.1:6379"); err == nil {
		t.Fatal("resp target off loopback accepted")
	}
	if got, err := parseKindTargets("resp", "127.0.0.1:18371"); err != nil || got[0] != "127.0.0.1:18371" {
		t.Fatalf("resp target: %v, %v", got, err)
	}
	// The Redis peer keeps its prefixed key.
	rb, _ := newRedisBackend(loadConfig{Targets: []string{f.ln.Addr().String()}, Sequence: "s", Timeout: time.Second}, 1)
	defer rb.close()
	if rb.key != "ticketd-bench:s" {
		t.Fatalf("redis key %q", rb.key)
	}
}

const respCSVHeader = "system,count,clients,pipeline,round,requests,seconds,rps,avg_ms,min_ms,p50_ms,p95_ms,p99_ms,max_ms,server_cores,server_cpu_per_req_us\n"

// TestReportRESP: the RESP table pairs ticketd with redis-server per tool,
// range size, clients and pipeline depth (redis-benchmark's runs averaged);
// each pair is a target of ≥ 1.0× in req/s; the table is in the text report
// and results.md.
func TestReportRESP(t *testing.T) {
	dir := t.TempDir()
	csvText := respCSVHeader +
		"ticketd,1,16,1,1,100000,5.0,20000,0.8,0.1,0.7,1.2,1.6,9,1.0,50\n" +
		"redis,1,16,1,1,100000,5.0,18000,0.9,0.3,0.8,1.1,1.5,3,0.5,25\n" +
		"redis,1,16,1,2,100000,5.0,16000,0.9,0.3,1.0,1.1,1.7,3,0.5,27\n" +
		"ticketd,1,16,1,2,100000,5.0,22000,0.8,0.1,0.9,1.2,1.8,9,1.0,54\n" +
		"ticketd,1000,64,16,1,1000000,5.0,150000,6,0.1,5,9,30,40,1.1,7.3\n" +
		"redis,1000,64,16,1,1000000,5.0,200000,5,0.4,4.9,6,7,9,0.9,4.5\n" +
		"ticketd,1,64,1,1,1000,1,1000,1,1,1,1,1,1,0,0\n" // no redis row: not paired
	if err := os.WriteFile(filepath.Join(dir, respCSVFile), []byte(csvText), 0o644); err != nil {
		t.Fatal(err)
	}
	load := func(sys, kind string, rate16, rate64 float64, errs map[string]int) {
		rep := &loadReport{
			Label: sys, Kind: kind, System: sys, Group: respGroup, Nodes: 3, Sequence: "x", Count: 1000,
			Levels: []levelResult{
				{Concurrency: 16, Requests: 100, ReservationsPerSec: rate16, P50Ms: 1, P99Ms: 3, Errors: errs},
				{Concurrency: 64, Requests: 100, ReservationsPerSec: rate64, P50Ms: 4, P99Ms: 12},
			},
		}
		if err := writeJSON(filepath.Join(dir, "load-resp-"+sys+"-c1000.json"), rep); err != nil {
			t.Fatal(err)
		}
	}
	load("ticketd-resp", "resp", 12000, 15000, map[string]int{"TRYAGAIN": 2})
	load("redis-resp", "redis", 10000, 30000, nil)

	rep, err := collect(dir)
	if err != nil {
		t.Fatal(err)
	}
	judge(rep)
	if len(rep.Problems) != 0 || len(rep.Warnings) != 1 {
		t.Fatalf("problems %v warnings %v (a -TRYAGAIN is a warning)", rep.Problems, rep.Warnings)
	}
	if len(rep.RESPBench) != 7 {
		t.Fatalf("csv rows %+v", rep.RESPBench)
	}
	rows := respRows(rep)
	if len(rows) != 4 {
		t.Fatalf("rows %v", rows)
	}
	want := [][]string{
		// The mean of two runs each: 21000 / 17000 req/s, p50 0.8 / 0.9 ms.
		{"redis-benchmark (mean of 2 runs)", "1", "16", "1", "21.0k", "17.0k", "1.24×", "0.800", "0.900", "0.89×", "1.700", "1.600", "1.06×", "52.0 / 26.0", "met"},
		{"redis-benchmark", "1000", "64", "16", "150.0k", "200.0k", "0.75×", "5.000", "4.900", "1.02×", "30.0", "7.000", "4.29×", "7.3 / 4.5", "missed"},
		{"ticketd-bench load", "1000", "16", "1", "12.0k [errors TRYAGAIN:2]", "10.0k", "1.20×"},
		{"ticketd-bench load", "1000", "64", "1", "15.0k", "30.0k", "0.50×"},
	}
	for i, w := range want {
		for j, cell := range w {
			if rows[i][j] != cell {
				t.Fatalf("row %d col %d (%s) = %q, want %q\nrows %q", i, j, respHeader[j], rows[i][j], cell, rows)
			}
		}
	}
	met := map[string]bool{}
	for _, tg := range rep.Targets {
		if strings.HasPrefix(tg.What, "RESP ") {
			met[tg.What] = tg.Met
		}
	}
	wantMet := map[string]bool{
		"RESP ticketd / redis-server (fsync always), redis-benchmark, count=1 c=16 P=1, req/s":       true,
		"RESP ticketd / redis-server (fsync always), redis-benchmark, count=1000 c=64 P=16, req/s":   false,
		"RESP ticketd / redis-server (fsync always), ticketd-bench load, count=1000 c=16 P=1, req/s": true,
		"RESP ticketd / redis-server (fsync always), ticketd-bench load, count=1000 c=64 P=1, req/s": false,
	}
	if len(met) != len(wantMet) {
		t.Fatalf("targets %+v", rep.Targets)
	}
	for what, m := range wantMet {
		if got, ok := met[what]; !ok || got != m {
			t.Errorf("target %q: met=%v (present %v), want %v", what, got, ok, m)
		}
	}
	// The RESP runs stay out of the side-by-side table and the scaling ones.
	if rows := mainRows(rep); len(rows) != 0 {
		t.Fatalf("main rows %v", rows)
	}
	var txt strings.Builder
	printReport(&txt, rep)
	if !strings.Contains(txt.String(), "=== RESP: ticketd ÷ redis-server (appendfsync always)") ||
		!strings.Contains(txt.String(), "2 of 4 rows met") || !strings.Contains(txt.String(), "missed") {
		t.Fatalf("report:\n%s", txt.String())
	}
	var md strings.Builder
	writeMarkdown(&md, rep)
	if !strings.Contains(md.String(), "| redis-benchmark (mean of 2 runs) | 1 | 16 | 1 | 21.0k | 17.0k | 1.24× |") {
		t.Fatalf("results.md:\n%s", md.String())
	}

	// Any other error of ticketd's RESP front is a problem.
	rep.Loads[1].Levels[0].Errors = map[string]int{"NOTFOUND": 1}
	rep.Problems, rep.Warnings, rep.Targets = nil, nil, nil
	judge(rep)
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "NOTFOUND") {
		t.Fatalf("problems %v", rep.Problems)
	}

	// A run with the redis-benchmark rows alone (no load file) still reports.
	only := t.TempDir()
	if err := os.WriteFile(filepath.Join(only, respCSVFile), []byte(csvText), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep, err := collect(only); err != nil || len(respRows(rep)) != 2 {
		t.Fatalf("csv alone: %v", err)
	}
	if _, err := readRESPBench(strings.NewReader("system,count\nticketd,1\n")); err == nil {
		t.Fatal("a CSV without the rps column was accepted")
	}
}
