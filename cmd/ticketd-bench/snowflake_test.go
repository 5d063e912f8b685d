package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/server"
)

var defaultLayout = snowflakeLayout{WorkerBits: api.DefaultWorkerBits, SequenceBits: api.DefaultSequenceBits}

// sfID builds an ID of the default layout.
func sfID(ms, worker, seq int64) int64 { return ms<<22 | worker<<12 | seq }

func TestParseSnowflakeIDs(t *testing.T) {
	fast := `{"namespace":"a","node":"n1","worker_id":7,"ids":[1,22,-3],"ids_text":["1","22","-3"]}` + "\n"
	ids, w, err := parseSnowflakeIDs([]byte(fast), nil)
	if err != nil || w != 7 || fmt.Sprint(ids) != "[1 22 -3]" {
		t.Fatalf("fast path: %v %d %v", ids, w, err)
	}
	// Spaces (another encoder) take the slow path to the same result.
	slow := `{"namespace": "a", "worker_id": 7, "ids": [1, 22, 33]}`
	ids, w, err = parseSnowflakeIDs([]byte(slow), nil)
	if err != nil || w != 7 || fmt.Sprint(ids) != "[1 22 33]" {
		t.Fatalf("slow path: %v %d %v", ids, w, err)
	}
	for _, bad := range []string{`{"ids":[1]}`, `not json`, `{"worker_id":1,"ids":[99999999999999999999]}`} {
		if _, _, err := parseSnowflakeIDs([]byte(bad), nil); err == nil {
			t.Errorf("%s: parsed", bad)
		}
	}
}

func TestCheckSnowflakeAnswer(t *testing.T) {
	// Two runs: seq 4094..4095 of one tick, 0 of the next.
	good := []int64{sfID(5, 3, 4094), sfID(5, 3, 4095), sfID(6, 3, 0)}
	rs, err := checkSnowflakeAnswer(nil, good, 3, 3, defaultLayout)
	want := []idRange{{uint64(good[0]), uint64(good[1])}, {uint64(good[2]), uint64(good[2])}}
	if err != nil || fmt.Sprint(rs) != fmt.Sprint(want) {
		t.Fatalf("good answer: %v %v, want %v", rs, err, want)
	}
	if _, err := checkSnowflakeAnswer(nil, good, 3, -1, defaultLayout); err != nil {
		t.Fatalf("worker from the bits: %v", err)
	}
	for name, c := range map[string]struct {
		ids    []int64
		worker int64
		kind   string
	}{
		"short":        {good[:2], 3, sfErrCount},
		"repeated":     {[]int64{good[0], good[0], good[2]}, 3, sfErrOrder},
		"decreasing":   {[]int64{good[1], good[0], good[2]}, 3, sfErrOrder},
		"other worker": {[]int64{good[0], sfID(5, 4, 1), good[2]}, 3, sfErrWorker},
		"says other":   {good, 4, sfErrWorker},
		"negative":     {[]int64{-1, good[1], good[2]}, 3, sfErrNegative},
	} {
		dst := []idRange{{1, 1}}
		dst, err := checkSnowflakeAnswer(dst, c.ids, 3, c.worker, defaultLayout)
		if kind, _ := errKind(err); err == nil || kind != c.kind || len(dst) != 1 {
			t.Errorf("%s: error %v (kind %q), want kind %q; dst %v", name, err, kind, c.kind, dst)
		}
	}
}

// TestSnowflakeRunsCheck: answers made at once interleave across a tick
// without sharing an ID, and pass; one ID in two answers is an overlap.
func TestSnowflakeRunsCheck(t *testing.T) {
	// A takes the tick's last two and the next tick's 2..3; B, meanwhile,
	// the next tick's 0..1.
	a := []int64{sfID(5, 0, 4094), sfID(5, 0, 4095), sfID(6, 0, 2), sfID(6, 0, 3)}
	b := []int64{sfID(6, 0, 0), sfID(6, 0, 1)}
	var rs []idRange
	for _, ids := range [][]int64{a, b} {
		var err error
		if rs, err = checkSnowflakeAnswer(rs, ids, len(ids), 0, defaultLayout); err != nil {
			t.Fatal(err)
		}
	}
	if c := checkRanges(slices.Clone(rs), 0); c.Overlaps != 0 {
		t.Fatalf("interleaved answers: %+v", c)
	}
	rs, _ = checkSnowflakeAnswer(rs, []int64{sfID(6, 0, 1)}, 1, 0, defaultLayout)
	if c := checkRanges(rs, 0); c.Overlaps != 1 {
		t.Fatalf("an ID answered twice: %+v", c)
	}
}

// TestSnowflakeLoadAgainstBaseline drives the baseline's Snowflake route:
// no errors, IDs of the default layout, every answer checked.
func TestSnowflakeLoadAgainstBaseline(t *testing.T) {
	url := "http://" + testBaseline(t).String()
	for _, count := range []uint64{1, 100} {
		cfg := loadConfig{
			Targets: []string{url}, Snowflake: "sf", Count: count,
			Levels: []int{1, 4}, Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond,
			Timeout: 2 * time.Second, Label: "baseline-sf",
		}
		rep, err := runLoadLevels(context.Background(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := loadVerdict(rep); err != nil {
			t.Fatal(err)
		}
		for _, l := range rep.Levels {
			if l.Requests == 0 || l.ErrorsTotal != 0 || l.Check.Overlaps != 0 {
				t.Fatalf("count %d: level %+v", count, l)
			}
		}
		if rep.Snowflake != "sf" || rep.Overall.Overlaps != 0 || rep.Overall.Ranges <= rep.Levels[0].Requests {
			t.Fatalf("count %d: report %+v", count, rep.Overall)
		}
		// As long as ticketd's IDs: today's milliseconds in the timestamp field.
		if got := len(strconv.FormatUint(rep.Overall.MinFirst, 10)); got < 18 {
			t.Fatalf("count %d: the baseline's first ID %d has %d digits", count, rep.Overall.MinFirst, got)
		}
	}
}

// fakeSnowflakeRESP answers TICKETD.SNOWFLAKE ns count from one worker's
// counter; repeat makes it answer its first IDs again now and then.
func fakeSnowflakeRESP(t *testing.T, worker int64, repeat bool) *fakeRESP {
	var mu sync.Mutex
	next, calls := int64(0), 0
	return startFakeRESP(t, func(args []string) string {
		if strings.ToUpper(args[0]) != "TICKETD.SNOWFLAKE" || len(args) != 3 {
			return fmt.Sprintf("-ERR unknown command '%s'\r\n", args[0])
		}
		n, _ := strconv.Atoi(args[2])
		mu.Lock()
		defer mu.Unlock()
		calls++
		start := next
		if repeat && calls%5 == 0 {
			start = 0
		} else {
			next += int64(n)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", n)
		for i := start; i < start+int64(n); i++ {
			fmt.Fprintf(&b, ":%d\r\n", sfID(1000+i/4096, worker, i%4096))
		}
		return b.String()
	})
}

// TestSnowflakeRESPAgainstFake: the RESP mode creates the namespace over
// HTTP, spreads the workers over its targets and, against a server that
// hands out an ID twice, counts the overlap.
func TestSnowflakeRESPAgainstFake(t *testing.T) {
	setup := "http://" + testBaseline(t).String()
	a, b := fakeSnowflakeRESP(t, 1, false), fakeSnowflakeRESP(t, 2, false)
	cfg := loadConfig{
		Kind: "resp", Targets: []string{a.ln.Addr().String(), b.ln.Addr().String()},
		Snowflake: "sf", SnowflakeSetup: setup, Count: 10,
		Levels: []int{4}, Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond,
		Timeout: 2 * time.Second, Label: "fake-sf", SetupTimeout: 5 * time.Second,
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
	if len(a.commands()) < 3 || len(b.commands()) < 3 {
		t.Fatalf("commands: %d to a, %d to b; want both used", len(a.commands()), len(b.commands()))
	}

	dup := fakeSnowflakeRESP(t, 1, true)
	cfg.Targets = []string{dup.ln.Addr().String()}
	rep, err = runLoadLevels(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Overall.Overlaps == 0 || loadVerdict(rep) == nil {
		t.Fatalf("IDs answered twice went unnoticed: %+v", rep.Overall)
	}

	// A server without the command fails the setup, not every request.
	cfg.Targets = []string{startFakeRESP(t, func(args []string) string {
		return fmt.Sprintf("-ERR unknown command '%s'\r\n", args[0])
	}).ln.Addr().String()}
	if _, err := runLoadLevels(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("setup against a server without TICKETD.SNOWFLAKE: %v", err)
	}
}

// TestSnowflakeAgainstCluster: a real 3-node cluster, requests to one node
// and spread over all three, over HTTP and the Redis protocol; every answer
// checked, no ID twice.
func TestSnowflakeAgainstCluster(t *testing.T) {
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
	var resp []string
	for _, n := range tc.Running() {
		resp = append(resp, n.Srv.RESPAddr())
	}
	for _, c := range []struct {
		name, kind string
		targets    []string
		count      uint64
	}{
		{"follower", "http", []string{tc.URL(follower)}, 100},
		{"spread", "http", tc.URLs(), 1},
		{"spread-100", "http", tc.URLs(), 100},
		{"resp-follower", "resp", []string{follower.Srv.RESPAddr()}, 100},
		{"resp-spread", "resp", resp, 1},
	} {
		cfg := loadConfig{
			Kind: c.kind, SnowflakeSetup: strings.Join(tc.URLs(), ","),
			Targets: c.targets, Snowflake: "sf-" + c.name, Count: c.count,
			Levels: []int{6}, Duration: 300 * time.Millisecond, Warmup: 300 * time.Millisecond,
			Timeout: 5 * time.Second, Label: c.name, SetupTimeout: 10 * time.Second,
		}
		rep, err := runLoadLevels(context.Background(), cfg, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := loadVerdict(rep); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if l := rep.Levels[0]; l.Requests == 0 || l.ErrorsTotal != 0 || rep.Overall.Overlaps != 0 {
			t.Fatalf("%s: level %+v, overall %+v", c.name, l, rep.Overall)
		}
	}
}

// TestReportSnowflake: the rows pair each system with its peer of the same
// run, and the targets say met or missed.
func TestReportSnowflake(t *testing.T) {
	run := func(sys string, count uint64, rps, cpu float64) *loadReport {
		return &loadReport{System: sys, Group: snowflakeGroup, Kind: "http", Count: count, Snowflake: "x",
			Levels: []levelResult{{Concurrency: 16, ReservationsPerSec: rps, P50Ms: 0.5, P99Ms: 2, ServerCPUPerResUs: cpu}}}
	}
	r := &fullReport{Loads: []*loadReport{
		run(sfEcho, 100, 10000, 50), run(sfOne, 100, 9500, 60), run(sfSpread, 100, 8000, 70),
		run(sfRedis, 100, 20000, 10), run(sfRESPOne, 100, 19000, 30),
	}}
	judge(r)
	rows := sfRows(r)
	if len(rows) != 3 {
		t.Fatalf("rows %v", rows)
	}
	want := map[string]string{"one node ÷ bare Echo": "met", "3 nodes spread ÷ one node": "missed", "one node ÷ redis-server INCRBY (no persistence)": "met"}
	for _, row := range rows {
		if want[row[1]] != row[len(row)-1] {
			t.Errorf("row %v: want %s", row, want[row[1]])
		}
	}
	if got := sfSummary(rows); got != "2 of 3 rows met ≥ 0.9× their peer in req/s" {
		t.Errorf("summary %q", got)
	}
	n := 0
	for _, tg := range r.Targets {
		if strings.HasPrefix(tg.What, "Snowflake ") {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d Snowflake targets, want 3: %+v", n, r.Targets)
	}
	if sc := sfScaling(r); len(sc) != 2 || !strings.Contains(sc[0], "60.0 µs") || !strings.Contains(sc[0], "bare Echo: 50.0 µs") {
		t.Errorf("scaling %q", sc)
	}
	var md strings.Builder
	writeMarkdown(&md, r)
	if !strings.Contains(md.String(), sfTitle) || !strings.Contains(md.String(), "Scaling with nodes") {
		t.Errorf("markdown without the Snowflake table:\n%s", md.String())
	}
}
