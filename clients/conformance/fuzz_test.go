package main

import (
	"math/bits"
	"strings"
	"testing"
)

// FuzzEventParse: the harness reads the answer lines of drivers in other
// languages, processes of their own. Whatever a line holds, Parse must not
// panic, and an answer it takes as good must hold what the command asked
// for: positive IDs, ranges that do not run backwards, and for nextn,
// reserve and snextn exactly N IDs, counted without wrapping around.
func FuzzEventParse(f *testing.F) {
	for _, s := range []struct {
		op     string
		n      int64
		answer string
	}{
		{"next", 1, "ok 17"},
		{"snext", 1, "ok 7301234567890"},
		{"nextn", 5, "ok 1-3 10-11"},
		{"reserve", 1000, "ok 1001-2000"},
		{"snextn", 2, "ok 5 6"},
		{"open", 1, "ok"},
		{"close", 1, "ok threads=0"},
		{"next", 1, "err unavailable no leader"},
		{"nextn", 3, "err"},
		// Three ranges whose sizes add up to 2^64+1: a sum that wraps
		// reads as the 1 ID asked for.
		{"nextn", 1, "ok 1-9223372036854775807 1-9223372036854775807 1-3"},
		{"nextn", 2, "ok 9223372036854775807-9223372036854775807 1-"},
	} {
		f.Add(s.op, s.n, s.answer)
	}
	f.Fuzz(func(t *testing.T, op string, n int64, answer string) {
		e := Event{Lane: "l1", Op: op, N: n, Answer: "l1 " + answer}
		e.Parse()
		if !e.OK || e.Bad != "" {
			return
		}
		var total uint64
		carry := uint64(0)
		for _, r := range e.IDs {
			if r.First <= 0 || r.Last < r.First {
				t.Fatalf("%s %q: taken as good with range %d-%d", op, answer, r.First, r.Last)
			}
			var c uint64
			total, c = bits.Add64(total, uint64(r.Last-r.First)+1, 0)
			carry += c
		}
		switch op {
		case "nextn", "reserve", "snextn":
			if carry != 0 || total != uint64(n) {
				t.Fatalf("%s of %d: %q taken as good with %d IDs (carry %d)", op, n, answer, total, carry)
			}
		case "next", "snext":
			if len(e.IDs) != 1 || strings.Count(answer, " ") != 1 {
				t.Fatalf("%s: %q taken as good with %v", op, answer, e.IDs)
			}
		}
	})
}
