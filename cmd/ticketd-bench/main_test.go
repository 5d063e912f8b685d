package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"
)

func TestCheckRanges(t *testing.T) {
	cases := []struct {
		name     string
		in       []idRange
		count    uint64
		overlaps int
		badSize  int
	}{
		{"empty", nil, 10, 0, 0},
		{"disjoint unsorted", []idRange{{21, 30}, {1, 10}, {11, 20}}, 10, 0, 0},
		{"gaps are fine", []idRange{{1, 10}, {100, 109}}, 10, 0, 0},
		{"duplicate", []idRange{{1, 10}, {1, 10}}, 10, 1, 0},
		{"touching by one id", []idRange{{1, 10}, {10, 19}}, 10, 1, 0},
		{"single ids duplicate", []idRange{{5, 5}, {6, 6}, {5, 5}}, 1, 1, 0},
		// {1,100} swallows both later ranges. Comparing each range only
		// with its sorted neighbour would miss {50,59}, whose neighbour
		// {20,29} ends before it; the running max of Last catches it.
		{"swallowed", []idRange{{1, 100}, {20, 29}, {50, 59}}, 10, 2, 1},
		{"wrong size", []idRange{{1, 9}, {10, 19}}, 10, 0, 1},
		{"inverted", []idRange{{10, 1}}, 10, 0, 1},
		{"size not checked", []idRange{{1, 3}, {4, 100}}, 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := checkRanges(append([]idRange(nil), c.in...), c.count)
			if got.Overlaps != c.overlaps || got.BadSize != c.badSize || got.Ranges != len(c.in) {
				t.Fatalf("checkRanges(%v) = %+v, want overlaps=%d badSize=%d", c.in, got, c.overlaps, c.badSize)
			}
		})
	}
	got := checkRanges([]idRange{{11, 20}, {1, 10}}, 10)
	if got.MinFirst != 1 || got.MaxLast != 20 {
		t.Fatalf("bounds = %d..%d, want 1..20", got.MinFirst, got.MaxLast)
	}
}

func TestPercentile(t *testing.T) {
	// 1..100 ms: nearest rank puts p50 at the 50th sample, p99 at the 99th.
	var lat []time.Duration
	for i := 100; i >= 1; i-- {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	s := summarize(lat)
	want := map[string][2]time.Duration{
		"p50":  {s.P50, 50 * time.Millisecond},
		"p99":  {s.P99, 99 * time.Millisecond},
		"p999": {s.P999, 100 * time.Millisecond},
		"max":  {s.Max, 100 * time.Millisecond},
		"mean": {s.Mean, 50500 * time.Microsecond},
	}
	for k, v := range want {
		if v[0] != v[1] {
			t.Errorf("%s = %v, want %v", k, v[0], v[1])
		}
	}

	one := []time.Duration{7}
	for _, p := range []float64{0, 0.1, 50, 99.9, 100} {
		if got := percentile(one, p); got != 7 {
			t.Errorf("percentile([7], %v) = %v", p, got)
		}
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("percentile(nil) = %v", got)
	}
	// 1000 samples: p99.9 is the 999th, not the max.
	lat = lat[:0]
	for i := 1; i <= 1000; i++ {
		lat = append(lat, time.Duration(i))
	}
	if got := percentile(lat, 99.9); got != 999 {
		t.Errorf("p99.9 of 1..1000 = %v, want 999", got)
	}
	if got := percentile(lat, 99); got != 990 {
		t.Errorf("p99 of 1..1000 = %v, want 990", got)
	}
}

func TestParseTargets(t *testing.T) {
	got, err := parseTargets("http://127.0.0.1:1/, 127.0.0.1:2")
	if err != nil || len(got) != 2 || got[0] != "http://127.0.0.1:1" || got[1] != "http://127.0.0.1:2" {
		t.Fatalf("parseTargets = %v, %v", got, err)
	}
	for _, bad := range []string{"", "ftp://x", "http://"} {
		if _, err := parseTargets(bad); err == nil {
			t.Errorf("parseTargets(%q) succeeded", bad)
		}
	}
}

func TestFailoverGaps(t *testing.T) {
	msd := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	cfg := failoverConfig{Threshold: 50 * time.Millisecond}
	succ := []time.Duration{msd(1), msd(2), msd(3), msd(303), msd(304), msd(360)}
	fails := []probeFailure{{At: msd(100), Kind: "conn_refused"}, {At: msd(200), Kind: "503"}, {At: msd(330), Kind: "503"}}
	rep := buildFailoverReport(cfg, time.Now(), msd(400), 9, succ, fails)
	if rep.LongestGapMs != 300 || rep.LongestGapFromMs != 3 {
		t.Fatalf("longest = %v at %v, want 300 at 3", rep.LongestGapMs, rep.LongestGapFromMs)
	}
	// 3->303 (two failures) and 304->360 (one failure); the 40ms tail is
	// under the threshold.
	if len(rep.Gaps) != 2 || rep.Gaps[0].FailedTries != 2 || rep.Gaps[1].FailedTries != 1 {
		t.Fatalf("gaps = %+v", rep.Gaps)
	}
	if rep.Gaps[0].Errors["conn_refused"] != 1 || rep.Gaps[0].Errors["503"] != 1 {
		t.Fatalf("gap errors = %v", rep.Gaps[0].Errors)
	}

	// Never recovered: the open tail must show up even though the gaps
	// between successes are all short.
	rep = buildFailoverReport(cfg, time.Now(), msd(1000), 3, []time.Duration{msd(1), msd(2)}, nil)
	if len(rep.Gaps) != 1 || !rep.Gaps[0].Unrecovered || rep.TailMs != 998 {
		t.Fatalf("tail gaps = %+v tail=%v", rep.Gaps, rep.TailMs)
	}
	rep = buildFailoverReport(cfg, time.Now(), msd(1000), 3, nil, nil)
	if len(rep.Gaps) != 1 || !rep.Gaps[0].Unrecovered || rep.Successes != 0 {
		t.Fatalf("no-success gaps = %+v", rep.Gaps)
	}
}

// TestLoadAgainstBaseline is the end-to-end check: the load generator
// against the in-process baseline must see no errors and no overlaps, and
// two targets (round-robin) must both be used.
func TestLoadAgainstBaseline(t *testing.T) {
	addr := testBaseline(t)
	url := "http://" + addr.String()

	cfg := loadConfig{
		Targets: []string{url, url + "/"}, Sequence: "t", Count: 100,
		Levels: []int{1, 4}, Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond,
		Timeout: 2 * time.Second, Label: "test",
	}
	cfg.Targets, _ = parseTargets(cfg.Targets[0] + "," + cfg.Targets[1])
	rep, err := runLoadLevels(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := loadVerdict(rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Levels) != 2 {
		t.Fatalf("levels = %d", len(rep.Levels))
	}
	for _, l := range rep.Levels {
		if l.Requests == 0 || l.ErrorsTotal != 0 || l.Check.Overlaps != 0 || l.P50Ms <= 0 {
			t.Fatalf("level %+v", l)
		}
	}
	// Every range handed out (warmup included) is checked, so the overall
	// count exceeds the measured requests.
	measured := rep.Levels[0].Requests + rep.Levels[1].Requests
	if rep.Overall.Ranges <= measured || rep.Overall.Overlaps != 0 || rep.Overall.MinFirst != 1 {
		t.Fatalf("overall %+v, measured %d", rep.Overall, measured)
	}
	// IDs are dense on the baseline: the last ID is ranges*count.
	if rep.Overall.MaxLast != uint64(rep.Overall.Ranges)*cfg.Count {
		t.Fatalf("max last %d, want %d", rep.Overall.MaxLast, uint64(rep.Overall.Ranges)*cfg.Count)
	}

	// A bad request is a counted error, not a crash or an overlap.
	resp, err := http.Post(url+rangesPath("t"), "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("empty body: status %d", resp.StatusCode)
	}
}

// TestFailoverProbeAgainstBaseline runs the probe with one dead target in
// front of a live one: every attempt must fall through to the live target.
func TestFailoverProbeAgainstBaseline(t *testing.T) {
	addr := testBaseline(t)
	// A port that was just free: nothing listens, so connect is refused.
	dead, deadAddr, deadDone, err := startBaseline("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead.Close()
	<-deadDone

	cfg := failoverConfig{
		Targets:  []string{fmt.Sprintf("http://%s", deadAddr), fmt.Sprintf("http://%s", addr)},
		Sequence: "fo", Interval: time.Millisecond, Duration: 300 * time.Millisecond,
		Timeout: 200 * time.Millisecond, Threshold: 50 * time.Millisecond,
	}
	rep, err := probe(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Successes == 0 || rep.Check.Overlaps != 0 || rep.Check.BadSize != 0 {
		t.Fatalf("report %+v", rep)
	}
	// After the first fall-through the probe sticks to the live target,
	// so only the first attempt pays for the dead one.
	if rep.ErrorsByKind["conn_refused"] != 1 {
		t.Fatalf("errors %v, want exactly one conn_refused", rep.ErrorsByKind)
	}
}

// testBaseline starts the bare Echo baseline on a free port for one test
// and shuts it down when the test ends.
func testBaseline(t *testing.T) net.Addr {
	t.Helper()
	srv, addr, done, err := startBaseline("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	})
	return addr
}
