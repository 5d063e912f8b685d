package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestReportManySequences checks the many-sequences table and issue 17's
// targets on made-up runs.
func TestReportManySequences(t *testing.T) {
	dir := t.TempDir()
	run := func(seqs int, rate16, p99at16, rate64, p99at64 float64) {
		rep := &loadReport{
			Label: "ticketd-seqs", Kind: "http", System: "ticketd-manyseq", Group: manySeqGroup, Nodes: 3,
			Sequence: "x", Sequences: seqs, Count: 1000, SetupS: float64(seqs) / 1000,
			Levels: []levelResult{
				{Concurrency: 16, Requests: 100, ReservationsPerSec: rate16, P99Ms: p99at16},
				{Concurrency: 64, Requests: 100, ReservationsPerSec: rate64, P99Ms: p99at64},
			},
		}
		if seqs == 1 {
			rep.Sequences = 0 // as a file from before --sequences reads
		}
		if err := writeJSON(filepath.Join(dir, "load-manyseq-s"+strconv.Itoa(seqs)+".json"), rep); err != nil {
			t.Fatal(err)
		}
	}
	run(1, 10000, 4, 12000, 10)
	run(100, 9000, 5, 11000, 12)
	run(2000, 8500, 7.9, 9000, 25)  // c16 met; c64 rate 0.75 and p99 2.5 missed
	run(10000, 2500, 30, 12000, 20) // c16 missed both; c64 met both (p99 exactly 2)
	rep, err := collect(dir)
	if err != nil {
		t.Fatal(err)
	}
	judge(rep)
	if len(rep.Problems) != 0 {
		t.Fatalf("problems %v", rep.Problems)
	}
	rows := manySeqRows(rep)
	if len(rows) != 8 || rows[0][2] != "1" || rows[3][2] != "10000" || rows[4][1] != "64" {
		t.Fatalf("rows %v", rows)
	}
	if !strings.Contains(rows[2][3], "(0.85×)") || !strings.Contains(rows[3][5], "(7.50×)") || !strings.Contains(rows[0][3], "(1.00×)") {
		t.Fatalf("ratios in rows %v", rows)
	}
	met := map[string]bool{}
	for _, tg := range rep.Targets {
		met[tg.What] = tg.Met
	}
	want := map[string]bool{
		"2000 sequences / one, res/s, count=1000 c=16":  true,
		"2000 sequences / one, p99, count=1000 c=16":    true,
		"2000 sequences / one, res/s, count=1000 c=64":  false,
		"2000 sequences / one, p99, count=1000 c=64":    false,
		"10000 sequences / one, res/s, count=1000 c=16": false,
		"10000 sequences / one, p99, count=1000 c=16":   false,
		"10000 sequences / one, res/s, count=1000 c=64": true,
		"10000 sequences / one, p99, count=1000 c=64":   true,
	}
	if len(met) != len(want) {
		t.Fatalf("targets %+v", rep.Targets)
	}
	for what, m := range want {
		if got, ok := met[what]; !ok || got != m {
			t.Errorf("target %q: met=%v (present %v), want %v", what, got, ok, m)
		}
	}
	// The many-sequences runs stay out of the side-by-side table.
	if rows := mainRows(rep); len(rows) != 0 {
		t.Fatalf("main rows %v", rows)
	}
	var md strings.Builder
	writeMarkdown(&md, rep)
	if !strings.Contains(md.String(), "| 1000 | 16 | 2000 | 8500 (0.85×) |") {
		t.Fatalf("results.md:\n%s", md.String())
	}
}
