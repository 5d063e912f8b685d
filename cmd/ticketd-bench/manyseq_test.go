package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSequenceNames(t *testing.T) {
	if got := sequenceNames("bench", 1); !slices.Equal(got, []string{"bench"}) {
		t.Fatalf("one sequence: %v", got)
	}
	got := sequenceNames("bench", 10000)
	if len(got) != 10000 || got[0] != "bench-00000" || got[9999] != "bench-09999" {
		t.Fatalf("10000 sequences: %d names, %s..%s", len(got), got[0], got[len(got)-1])
	}
	if !slices.IsSorted(got) {
		t.Fatal("names do not sort in index order")
	}
	if got := sequenceNames("s", 7); got[6] != "s-6" {
		t.Fatalf("7 sequences: %v", got)
	}
	if d := manySeqSetupTimeout(15*time.Second, 10000); d < 60*time.Second || d > 5*time.Minute {
		t.Fatalf("setup timeout for 10,000 sequences %v", d)
	}
	if d := manySeqSetupTimeout(15*time.Second, 1); d != 15*time.Second {
		t.Fatalf("setup timeout for one sequence %v", d)
	}
}

func TestCheckRangesPerSequence(t *testing.T) {
	// Two sequences hand out the same IDs: legitimate.
	rs := []idRange{{1, 10}, {1, 10}, {11, 20}, {11, 20}}
	seqs := []uint32{0, 1, 1, 0}
	if c := checkRangesPerSequence(slices.Clone(rs), seqs, 3, 10); c.Overlaps != 0 || c.BadSize != 0 || c.Ranges != 4 || c.MinFirst != 1 || c.MaxLast != 20 {
		t.Fatalf("distinct sequences: %+v", c)
	}
	if c := checkRanges(slices.Clone(rs), 10); c.Overlaps != 2 {
		t.Fatalf("one-sequence check of the same ranges: %+v, want 2 overlaps", c)
	}
	// The same ID twice in one sequence is an overlap; a wrong size counts.
	rs = append(rs, idRange{15, 24}, idRange{30, 31})
	seqs = append(seqs, 1, 2)
	c := checkRangesPerSequence(rs, seqs, 3, 10)
	if c.Overlaps != 1 || c.BadSize != 1 || c.MaxLast != 31 {
		t.Fatalf("one overlap in sequence 1, one bad size in 2: %+v", c)
	}
	if c := checkRangesPerSequence(nil, nil, 5, 10); c != (rangeCheck{}) {
		t.Fatalf("no ranges: %+v", c)
	}
}

// TestLoadManySequencesAgainstBaseline runs --sequences against the
// baseline, whose sequences all start at 1: the per-sequence check must
// pass where a check over all ranges at once would see overlaps.
func TestLoadManySequencesAgainstBaseline(t *testing.T) {
	addr := testBaseline(t)
	cfg := loadConfig{
		Targets: []string{"http://" + addr.String()}, Sequence: "many", Sequences: 50, Count: 100,
		Levels: []int{1, 4}, Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond,
		Timeout: 2 * time.Second, Label: "many",
	}
	rep, err := runLoadLevels(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := loadVerdict(rep); err != nil {
		t.Fatal(err)
	}
	if rep.Sequences != 50 || rep.Sequence != "many" || rep.Overall.MinFirst != 1 {
		t.Fatalf("report: sequences %d %q, overall %+v", rep.Sequences, rep.Sequence, rep.Overall)
	}
	// About ranges/50 per sequence: far fewer IDs than one sequence would
	// have reached (half of them in one of 50 is all but impossible).
	if n := uint64(rep.Overall.Ranges); n < 20 || rep.Overall.MaxLast*2 > n*cfg.Count {
		t.Fatalf("overall %+v: were the requests spread over the sequences?", rep.Overall)
	}
	// The baseline answers 200 to every PUT: nothing was new.
	if !strings.Contains(rep.Note, "50 sequences") || !strings.Contains(rep.Note, "NOT fresh") {
		t.Fatalf("note %q", rep.Note)
	}

	// Primed: every sequence reserved once before the levels, those
	// ranges in the check (the baseline's sequences start at 1 again for
	// a new prefix).
	cfg.Prime, cfg.Sequence = true, "primed"
	rep, err = runLoadLevels(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := loadVerdict(rep); err != nil {
		t.Fatal(err)
	}
	if rep.PrimeS <= 0 || rep.Overall.Ranges < 50 {
		t.Fatalf("primed run: prime %.3fs, %d ranges checked", rep.PrimeS, rep.Overall.Ranges)
	}

	// Only http drives many sequences.
	cfg.Prime = false
	cfg.Kind, cfg.Targets = "redis", []string{"127.0.0.1:1"}
	if _, err := runLoadLevels(context.Background(), cfg, nil); !errors.Is(err, errManyKinds) {
		t.Fatalf("redis with 50 sequences: %v", err)
	}
}
