//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPlanClock_StepsFromSecondsToHoursBothWays(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	targets := map[string]int{}
	changes := map[string]int{}
	sizes := map[time.Duration]bool{}
	var fwd, back, multi int
	for range 3000 {
		p := planClock(rnd, 5, clockSizes)
		targets[p.Target]++
		changes[p.Change]++
		steps := p.Steps
		if p.Target == clockSpread {
			if len(p.Spread) != 5 || len(p.Steps) != 0 {
				t.Fatalf("spread over 5 nodes: %+v", p)
			}
			steps = p.Spread
		} else {
			if len(p.Steps) < 1 || len(p.Steps) > 3 || len(p.Spread) != 0 {
				t.Fatalf("steps: %+v", p)
			}
			if p.Change != "" && len(p.Steps) != 1 {
				t.Fatalf("a leadership change follows the first step at once: %+v", p)
			}
			if len(p.Steps) > 1 {
				multi++
			}
		}
		for _, s := range steps {
			if !slices.Contains(clockSizes, s.Abs()) {
				t.Fatalf("step %v is not one of the sizes", s)
			}
			sizes[s.Abs()] = true
			if s > 0 {
				fwd++
			} else {
				back++
			}
		}
	}
	for _, tg := range clockTargets {
		if targets[tg.name] == 0 {
			t.Errorf("target %s never drawn: %v", tg.name, targets)
		}
	}
	if len(targets) != len(clockTargets) {
		t.Errorf("unknown targets drawn: %v", targets)
	}
	if changes["kill"] == 0 || changes["term"] == 0 || changes[""] < changes["kill"]+changes["term"] {
		t.Errorf("leadership changes: %v (want kill and term, in about a third)", changes)
	}
	if len(sizes) != len(clockSizes) || multi == 0 {
		t.Errorf("sizes drawn %v, plans with several steps %d", sizes, multi)
	}
	if fwd == 0 || back == 0 || float64(fwd)/float64(fwd+back) < 0.45 || float64(fwd)/float64(fwd+back) > 0.55 {
		t.Errorf("forward %d, back %d: want about even", fwd, back)
	}
	if clockSizes[0] > 2*time.Second || clockSizes[len(clockSizes)-1] < time.Hour {
		t.Errorf("sizes %v: want seconds to hours", clockSizes)
	}
	// Some step must pass the suite's lease TTL plus recycle delay (3 s +
	// 6 s in jep-sf): that is what a wall-clock expiry gets wrong.
	if !slices.ContainsFunc(clockSizes, func(d time.Duration) bool { return d > 9*time.Second && d < time.Minute }) {
		t.Errorf("sizes %v: none just past a TTL plus recycle delay", clockSizes)
	}
}

func TestPlanClock_SameSeedSamePlan(t *testing.T) {
	a, b := rand.New(rand.NewPCG(7, 7)), rand.New(rand.NewPCG(7, 7))
	for range 100 {
		pa, pb := planClock(a, 3, clockSizes), planClock(b, 3, clockSizes)
		if pa.Target != pb.Target || pa.Change != pb.Change || !slices.Equal(pa.Steps, pb.Steps) || !slices.Equal(pa.Spread, pb.Spread) {
			t.Fatalf("%+v != %+v", pa, pb)
		}
	}
}

func TestClockPlan_OffsetsAreRunningSums(t *testing.T) {
	p := clockPlan{Steps: []time.Duration{30 * time.Second, -time.Hour, 2 * time.Minute}}
	want := []time.Duration{30 * time.Second, 30*time.Second - time.Hour, 150*time.Second - time.Hour}
	if got := p.offsets(); !slices.Equal(got, want) {
		t.Fatalf("offsets %v, want %v", got, want)
	}
}

func TestFmtOffset(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                 "0",
		time.Second:                       "+1s",
		-1500 * time.Millisecond:          "-1.5s",
		-10 * time.Minute:                 "-10m",
		6 * time.Hour:                     "+6h",
		-(time.Hour + 30*time.Minute):     "-1h30m",
		time.Hour + 30*time.Second:        "+1h0m30s",
		-(2*time.Minute + 30*time.Second): "-2m30s",
	} {
		if got := fmtOffset(d); got != want {
			t.Errorf("fmtOffset(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestParseKinds_AllButSome(t *testing.T) {
	got, err := parseKinds("all,-clock")
	if err != nil || len(got) != len(nemesisKinds)-1 || slices.Contains(got, "clock") {
		t.Fatalf("all,-clock: %v %v", got, err)
	}
	got, err = parseKinds("all, -membership, -kill")
	if err != nil || slices.Contains(got, "member-add") || slices.Contains(got, "kill-all") || !slices.Contains(got, "clock") {
		t.Fatalf("all,-membership,-kill: %v %v", got, err)
	}
	if got, err := parseKinds("clock,kill-leader"); err != nil || !slices.Equal(got, []string{"clock", "kill-leader"}) {
		t.Fatalf("clock,kill-leader: %v %v", got, err)
	}
	if _, err := parseKinds("all,-clocks"); err == nil {
		t.Fatal("unknown kind to leave out accepted")
	}
	if all, _ := parseKinds("all"); !slices.Contains(all, "clock") {
		t.Fatal("all does not include clock")
	}
}

func TestConfig_ClockNeedsTheFaultsBuild(t *testing.T) {
	for _, c := range []struct {
		cfg  config
		want bool
	}{
		{config{}, false},
		{config{Nemeses: []string{"kill-leader"}}, false},
		{config{Nemeses: []string{"clock", "kill-leader"}}, true},
		{config{Faults: "skip-verify"}, true},
	} {
		if got := c.cfg.faultsBuild(); got != c.want {
			t.Errorf("%+v: faultsBuild %v, want %v", c.cfg, got, c.want)
		}
	}
	if !slices.Contains(knownFaults, "lease-wall-clock-expiry") {
		t.Error("lease-wall-clock-expiry is not a known fault")
	}
}

// fakeClockBackend serves nodes' HTTP from test servers; nothing else of
// the backend is used by the clock control.
type fakeClockBackend struct {
	backend
	addrs map[*Node]string
	down  map[*Node]bool
}

func (f *fakeClockBackend) apiHostPort(n *Node) string { return f.addrs[n] }
func (f *fakeClockBackend) alive(n *Node) bool         { return !f.down[n] }

// clockNode is a node's /unsafe/clock as the faults build serves it.
func clockNode(t *testing.T, calls *int) *httptest.Server {
	var mu sync.Mutex
	var off int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		*calls++
		if r.URL.Path != "/unsafe/clock" {
			http.NotFound(w, r)
			return
		}
		if r.Method == http.MethodPut {
			var in clockState
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			off = in.OffsetMs
		}
		_ = json.NewEncoder(w).Encode(clockState{OffsetMs: off, NowMs: time.Now().UnixMilli() + off})
	}))
	t.Cleanup(s.Close)
	return s
}

func TestClockControl_SetResetAndRefuseAProductionBuild(t *testing.T) {
	var calls1, calls2 int
	s1, s2 := clockNode(t, &calls1), clockNode(t, &calls2)
	prod := httptest.NewServer(http.NotFoundHandler()) // no /unsafe/ at all
	t.Cleanup(prod.Close)
	n1, n2, n3 := &Node{ID: "n1"}, &Node{ID: "n2"}, &Node{ID: "n3"}
	fb := &fakeClockBackend{addrs: map[*Node]string{
		n1: strings.TrimPrefix(s1.URL, "http://"), n2: strings.TrimPrefix(s2.URL, "http://"), n3: strings.TrimPrefix(prod.URL, "http://"),
	}, down: map[*Node]bool{}}
	c := &Cluster{b: fb, cfg: &config{}, hc: &http.Client{}, members: []*Node{n1, n2}, all: []*Node{n1, n2}}
	ctx := context.Background()

	note, err := c.checkClockControl(ctx)
	if err != nil || !strings.Contains(note, "clock control on every member") {
		t.Fatalf("check on faults builds: %q %v", note, err)
	}
	if err := c.setClocks(ctx, []*Node{n1, n2}, []time.Duration{time.Hour, -30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if st, err := c.getClock(ctx, n2); err != nil || st.OffsetMs != -30_000 {
		t.Fatalf("n2 clock %+v %v", st, err)
	}
	// A node that is down is skipped by the reset; the others go to 0.
	fb.down[n2] = true
	before := calls2
	if err := c.resetClocks(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := c.getClock(ctx, n1); st.OffsetMs != 0 {
		t.Fatalf("n1 not reset: %+v", st)
	}
	if calls2 != before {
		t.Fatal("reset sent to a node that is down")
	}

	// A production build answers 404: a clear error, before the run.
	c.members = []*Node{n1, n3}
	_, err = c.checkClockControl(ctx)
	if !errors.Is(err, errNoClockControl) || !strings.Contains(err.Error(), "not a faults build") || !strings.Contains(err.Error(), "all,-clock") {
		t.Fatalf("production build not refused clearly: %v", err)
	}
	if err := c.setClock(ctx, n3, time.Second); !errors.Is(err, errNoClockControl) {
		t.Fatalf("set on a production build: %v", err)
	}
}

func TestClockSteps_Flag(t *testing.T) {
	got, err := parseDurations(joinDurations(clockSizes))
	if err != nil || !slices.Equal(got, clockSizes) {
		t.Fatalf("default sizes do not round-trip: %v %v (%q)", got, err, joinDurations(clockSizes))
	}
	if got, err := parseDurations("10s, 30s"); err != nil || !slices.Equal(got, []time.Duration{10 * time.Second, 30 * time.Second}) {
		t.Fatalf("10s,30s: %v %v", got, err)
	}
	for _, bad := range []string{"", "0s", "-5s", "25h", "ten"} {
		if _, err := parseDurations(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	rnd := rand.New(rand.NewPCG(3, 3))
	for range 200 {
		p := planClock(rnd, 3, []time.Duration{10 * time.Second})
		for _, s := range append(p.Steps, p.Spread...) {
			if s.Abs() != 10*time.Second {
				t.Fatalf("step %v not of the given size", s)
			}
		}
	}
}
