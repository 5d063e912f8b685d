package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
	"github.com/ticketd/ticketd/server"
)

// rateValue reads a RATE cell back as IDs per second ("1.2k/s" is 1200).
func rateValue(t *testing.T, cell string) float64 {
	t.Helper()
	num, ok := strings.CutSuffix(cell, "/s")
	if !ok {
		t.Fatalf("RATE cell %q does not end in /s", cell)
	}
	scale := 1.0
	if i := strings.IndexAny(num, "kMGTP"); i >= 0 {
		scale = map[byte]float64{'k': 1e3, 'M': 1e6, 'G': 1e9, 'T': 1e12, 'P': 1e15}[num[i]]
		num = num[:i]
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		t.Fatalf("RATE cell %q: %v", cell, err)
	}
	return v * scale
}

func TestSequencesTable_LoadOnOneSequence_RateAboveZeroForItZeroForTheIdle(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	tc.CreateSequence("busy", nil)
	tc.CreateSequence("idle", nil)
	leader := tc.Leader(10 * time.Second)
	// --addr names one follower only: the command finds the leader itself.
	var follower string
	for _, n := range tc.Running() {
		if n.ID != leader.ID {
			follower = "--addr=" + tc.URL(n)
			break
		}
	}

	// The load generator: reservations of 10 from "busy", bounded in count
	// and time, until the command below is done.
	ctx, stop := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop()
	var reserved atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 200_000 && ctx.Err() == nil; i++ {
			if _, code, err := testcluster.Reserve(leader, "busy", 10); err == nil && code == http.StatusOK {
				reserved.Add(10)
			}
		}
	}()
	testkit.Eventually(t, 10*time.Second, 10*time.Millisecond, "the load generator reserving", func() bool { return reserved.Load() > 0 })
	before, start := reserved.Load(), time.Now()
	out := mustRun(t, "sequences", "--rate-window", "1s", follower)
	after, took := reserved.Load(), time.Since(start)
	stop()
	wg.Wait()

	headers, rows := tableRows(t, out)
	if strings.Join(headers, " ") != "SEQUENCE NEXT REMAINING LEFT RATE START MAX" || len(rows) != 2 {
		t.Fatalf("sequences: headers %q, %d rows", headers, len(rows))
	}
	busy, idle := rows[0], rows[1]
	if busy["SEQUENCE"] != "busy" || idle["SEQUENCE"] != "idle" {
		t.Fatalf("rows: %v", rows)
	}
	if idle["RATE"] != "0/s" {
		t.Errorf("the idle sequence's RATE: %q, want 0/s", idle["RATE"])
	}
	// The two samples are at least 1s apart and within the command's run:
	// the rate counts no more IDs than the generator got meanwhile (plus
	// one reservation in flight at the start), and cells round to 3
	// significant digits.
	rate := rateValue(t, busy["RATE"])
	limit := float64(after-before+10) / 1.0 * 1.05
	t.Logf("busy: %s (%.0f IDs/s); the generator got %d IDs in the %v the command took", busy["RATE"], rate, after-before, took)
	if rate <= 0 || rate > limit {
		t.Errorf("the busy sequence's RATE: %q; want above 0 and at most %.0f/s", busy["RATE"], limit)
	}
	if took < time.Second {
		t.Errorf("sequences took %v: the samples were not --rate-window apart", took)
	}

	// --rate-window 0: no RATE column, and no waiting.
	start = time.Now()
	headers, rows = tableRows(t, mustRun(t, "sequences", "--rate-window", "0", follower))
	if strings.Join(headers, " ") != "SEQUENCE NEXT REMAINING LEFT START MAX" || len(rows) != 2 {
		t.Errorf("--rate-window 0: headers %q, %d rows", headers, len(rows))
	}
	if took := time.Since(start); took >= time.Second {
		t.Errorf("--rate-window 0 took %v", took)
	}
	// A negative window is a usage error.
	if code, _, errs := runCLI(t, "sequences", "--rate-window", "-1s", follower); code != 2 || !strings.Contains(errs, "--rate-window") {
		t.Errorf("--rate-window -1s: exit %d, %q", code, errs)
	}
}

func TestSequencesTable_MetricsRefused_DashesAndANoteNotAnError(t *testing.T) {
	const admin, reserve = "rate-test-admin-token-0123456789", "rate-test-reserve-token-0123456789"
	tokens := testcluster.Tokens(t, admin, reserve)
	tc := testcluster.NewWithOptions(t, 1, testcluster.Options{
		Token: admin,
		Tweak: func(id string, cfg *server.Config) { cfg.Tokens = tokens },
	})
	tc.CreateSequence("orders", nil)
	leader := tc.Leader(10 * time.Second)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(reserve+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// With the reserve token the leader's /metrics answers.
	_, rows := tableRows(t, mustRun(t, "sequences", "--token-file", tokenFile, "--addr="+tc.URL(leader)))
	if len(rows) != 1 || rows[0]["RATE"] != "0/s" {
		t.Errorf("with a reserve token: %v", rows)
	}

	// Without one, it refuses: the sample says why and what lets it in.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := sampleIssued(ctx, http.DefaultClient, "", leader.ID, tc.URL(leader))
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Fatalf("scraping without a token: %v, want the node's 401", err)
	}
	note := rateErrText(err)
	t.Logf("note: %s", note)
	if strings.Contains(note, "\n") || !strings.Contains(note, "401 from "+tc.URL(leader)+"/metrics") || !strings.Contains(note, "--metrics-public") {
		t.Errorf("the note on a refused /metrics: %q", note)
	}
	// The command turns any failed sample into dashes and that note.
	co := clientOpts{addr: ptr(tc.URL(leader)), tokenFile: ptr(""), ca: ptr(""), cert: ptr(""), key: ptr(""), timeout: ptr(10 * time.Second)}
	t.Setenv("TICKETD_TOKEN", "")
	cells, note := leaderRates(ctx, &co, 100*time.Millisecond, []string{"orders"})
	if cells["orders"] != "-" || !strings.HasPrefix(note, "RATE shows - for every sequence: ") || !strings.Contains(note, "401") {
		t.Errorf("leaderRates without a token: %v, %q", cells, note)
	}
}

func TestLeaderRates_LeaderIsolatedDuringTheWindow_DashesAndWhy(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	tc.CreateSequence("orders", nil)
	leader := tc.Leader(10 * time.Second)
	co := clientOpts{addr: ptr(strings.Join(tc.URLs(), ",")), tokenFile: ptr(""), ca: ptr(""), cert: ptr(""), key: ptr(""), timeout: ptr(10 * time.Second)}
	t.Setenv("TICKETD_TOKEN", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type result struct {
		cells map[string]string
		note  string
	}
	done := make(chan result, 1)
	go func() {
		cells, note := leaderRates(ctx, &co, 3*time.Second, []string{"orders"})
		done <- result{cells, note}
	}()

	// Wait for the first sample: the leader counts each answered scrape
	// after answering it, so the k-th of this test's own scrapes reads k-1
	// of them plus those of leaderRates.
	scrapes := regexp.MustCompile(`ticketd_http_requests_total\{code="200",method="GET",route="/metrics"\} (\d+)`)
	mine := 0
	testkit.Eventually(t, 10*time.Second, 20*time.Millisecond, "leaderRates' first scrape of the leader", func() bool {
		resp, err := http.Get(tc.URL(leader) + "/metrics")
		if err != nil {
			return false
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return false
		}
		mine++
		m := scrapes.FindSubmatch(body)
		if m == nil {
			return false
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n >= mine
	})
	// Cut the leader off: it steps down within its lease, answering HTTP
	// still, and the others elect a new leader.
	tc.Net.Isolate(leader.ID)
	r := <-done
	t.Logf("cells %v, note %q", r.cells, r.note)
	if r.cells["orders"] != "-" || !strings.Contains(r.note, "the leader changed during --rate-window: "+leader.ID+" led term") {
		t.Errorf("the leader isolated during the window: %v, %q; want - and why", r.cells, r.note)
	}
}

func TestRateCells_OnlyOneLeaderTermCountsAndSharedSeriesAreDashesWhenTheyGrew(t *testing.T) {
	t0 := time.Unix(1000, 0)
	sample := func(leader bool, term uint64, at time.Duration, issued map[string]float64) issuedSample {
		return issuedSample{node: "n1", at: t0.Add(at), leader: leader, term: term, issued: issued}
	}
	names := []string{"busy", "idle", "late", "_other"}
	for _, c := range []struct {
		name     string
		a, b     issuedSample
		want     map[string]string
		noteHas  string
		noteNone bool
	}{
		{"one leader, one term",
			sample(true, 3, 0, map[string]float64{"busy": 100}),
			sample(true, 3, 2*time.Second, map[string]float64{"busy": 2500, "late": 1}),
			map[string]string{"busy": "1.2k/s", "idle": "0/s", "late": "0.5/s", "_other": "0/s"}, "", true},
		{"the leader stepped down in the window",
			sample(true, 3, 0, map[string]float64{"busy": 100}),
			sample(false, 4, time.Second, map[string]float64{"busy": 100}),
			map[string]string{"busy": "-", "idle": "-", "late": "-", "_other": "-"}, "the leader changed", false},
		{"a new term, the same node leading again",
			sample(true, 3, 0, map[string]float64{"busy": 100}),
			sample(true, 5, time.Second, map[string]float64{"busy": 100}),
			map[string]string{"busy": "-", "idle": "-", "late": "-", "_other": "-"}, "the leader changed", false},
		{"the node scraped no longer led",
			sample(false, 3, 0, nil), sample(false, 3, time.Second, nil),
			map[string]string{"busy": "-", "idle": "-", "late": "-", "_other": "-"}, "no longer the leader", false},
		{"_other grew: sequences without a series of their own cannot tell",
			sample(true, 3, 0, map[string]float64{"busy": 100, "_other": 7}),
			sample(true, 3, time.Second, map[string]float64{"busy": 130, "_other": 9}),
			map[string]string{"busy": "30/s", "idle": "-", "late": "-", "_other": "-"}, "RATE shows - for 3 sequences", false},
	} {
		cells, note := rateCells(c.a, c.b, names)
		for n, want := range c.want {
			if cells[n] != want {
				t.Errorf("%s: %s is %q, want %q", c.name, n, cells[n], want)
			}
		}
		if c.noteNone != (note == "") || !strings.Contains(note, c.noteHas) || strings.Contains(note, "\n") {
			t.Errorf("%s: note %q, want one with %q", c.name, note, c.noteHas)
		}
	}
}

func TestCellRate_ThreeDigitsAndAPrefix(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0/s", 0.01: "<0.1/s", 0.5: "0.5/s", 3: "3.0/s", 9.96: "10/s", 12.4: "12/s", 999.4: "999/s",
		999.6: "1.0k/s", 1234: "1.2k/s", 56_780: "57k/s", 350_000: "350k/s", 4_100_000: "4.1M/s", 2.5e9: "2.5G/s",
	} {
		if got := cellRate(v); got != want {
			t.Errorf("cellRate(%v) = %q, want %q", v, got, want)
		}
	}
}
