package main

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// ev makes a parsed event of a command sent at ms and answered took ms later.
func ev(lane, line, answer string, sent, took int) Event {
	f := strings.Split(line, " ")
	e := Event{Lane: lane, Line: lane + " " + line, Op: f[0], Sent: at(sent), Recv: at(sent + took), Answer: lane + " " + answer, N: 1}
	switch e.Op {
	case "next", "snext":
		e.Handle = f[1]
	case "nextn", "snextn", "fork":
		e.Handle = f[1]
		e.N = atoi(f[2])
	case "reserve":
		e.Target = "seq:" + f[1]
		e.N = atoi(f[2])
	}
	if e.Handle != "" {
		if strings.HasPrefix(e.Op, "s") || e.Op == "fork" && strings.HasPrefix(e.Handle, "s") {
			e.Target = "ns:conf"
		} else {
			e.Target = "seq:conf"
		}
	}
	e.Parse()
	return e
}

func atoi(s string) int64 {
	var n int64
	for _, c := range s {
		n = n*10 + int64(c-'0')
	}
	return n
}

// good is a valid run: two handles of one sequence, a reservation, a
// Snowflake handle, faults, recovery, close.
func good() Run {
	return Run{
		Bound: 6 * time.Second,
		Events: []Event{
			ev("1", "next h1", "ok 1", 0, 5),
			ev("2", "next h1", "ok 2", 1, 5),
			ev("1", "next h1", "ok 3", 10, 1),
			ev("3", "nextn h1 5", "ok 4-6 1001-1002", 12, 3),
			ev("4", "next h2", "ok 2001", 2, 2),
			ev("5", "reserve conf 10", "ok 3001-3010", 3, 4),
			ev("6", "snextn s1 3", "ok 10 20 30", 0, 2),
			ev("6", "snext s1", "ok 5", 5, 2), // snowflake: unique, not ordered across answers
			ev("1", "next h1", "err unavailable no leader", 100, 4000),
			ev("1", "next h1", "ok 1003", 10_000, 1), // below the reservation answered before: h1 serves from its cache, which is allowed
			ev("4", "next h2", "ok 2002", 10_000, 1),
			ev("6", "snext s1", "ok 40", 10_000, 1),
		},
		Recovered:   at(3_000),
		RecoveryEnd: at(11_000),
		Handles:     []string{"h1", "h2", "s1"},
		Close:       "threads=0",
		Exit:        "exit 0",
	}
}

func TestCheck_ValidRun_NoFailure(t *testing.T) {
	if f := Check(good()); len(f) != 0 {
		t.Fatalf("want no failure, got %v", f)
	}
}

// Each case breaks one promise of a valid run; the named check must report it.
func TestCheck_EachViolation_Caught(t *testing.T) {
	cases := []struct {
		name, check string
		breakIt     func(r *Run)
	}{
		{"duplicate across handles", "ID twice", func(r *Run) { r.Events = append(r.Events, ev("4", "next h2", "ok 2", 0, 1)) }},
		{"reserve overlaps a handle's range", "ID twice", func(r *Run) { r.Events = append(r.Events, ev("7", "reserve conf 3", "ok 1000-1002", 0, 20)) }},
		{"snowflake ID twice", "ID twice", func(r *Run) { r.Events = append(r.Events, ev("7", "snext s1", "ok 20", 20, 1)) }},
		{"order within a handle", "order", func(r *Run) { r.Events = append(r.Events, ev("2", "next h1", "ok 7", 20_000, 1)) }},
		// Issue 48: a reservation sent after an answer of its sequence was
		// received (any lane, any handle) lies above every ID of it.
		{"reservation below a handle's answer received before it", "order", func(r *Run) {
			r.Events = append(r.Events, ev("5", "reserve conf 2", "ok 1500-1501", 20_000, 1))
		}},
		{"reservations answered in descending ranges", "order", func(r *Run) {
			r.Events = append(r.Events, ev("5", "reserve conf 10", "ok 4011-4020", 20_000, 1), ev("5", "reserve conf 10", "ok 4001-4010", 20_010, 1))
		}},
		{"order within an answer", "order", func(r *Run) { r.Events = append(r.Events, ev("6", "snextn s1 2", "ok 90 80", 20, 1)) }},
		{"bound", "bound", func(r *Run) { r.Events = append(r.Events, ev("2", "next h1", "err unavailable slow", 200, 6001)) }},
		{"untyped", "untyped error", func(r *Run) {
			r.Events = append(r.Events, ev("2", "next h1", "err untyped java.lang.IllegalStateException: boom", 200, 10))
		}},
		{"unexpected kind", "unexpected error", func(r *Run) { r.Events = append(r.Events, ev("2", "next h1", "err not_found x", 200, 10)) }},
		// unsupported answers only an open mode the library lacks: on a
		// command of a handle that was opened, it is the driver's bug.
		{"unsupported outside open", "unexpected error", func(r *Run) {
			r.Events = append(r.Events, ev("2", "next h1", "err unsupported what", 200, 10))
		}},
		{"missing answer", "missing answer", func(r *Run) {
			e := ev("2", "next h1", "ok 9999", 200, 1)
			e.Recv, e.Answer = time.Time{}, ""
			r.Events = append(r.Events, e)
		}},
		{"malformed: wrong count", "malformed answer", func(r *Run) { r.Events = append(r.Events, ev("3", "nextn h1 5", "ok 5000-5001", 20, 1)) }},
		{"malformed: ID zero", "malformed answer", func(r *Run) { r.Events = append(r.Events, ev("2", "next h1", "ok 0", 20, 1)) }},
		{"malformed: range from zero", "malformed answer", func(r *Run) { r.Events = append(r.Events, ev("5", "reserve conf 2", "ok 0-1", 20, 1)) }},
		{"malformed: stray line", "malformed answer", func(r *Run) { r.Stray = append(r.Stray, "9 ok 1") }},
		{"no recovery: fails after the cluster is back", "recovery", func(r *Run) {
			r.Events = append(r.Events, ev("4", "next h2", "err unavailable gave up", 10_500, 4000))
		}},
		{"no recovery: never served", "recovery", func(r *Run) { r.Handles = append(r.Handles, "h3") }},
		{"threads left after close", "close", func(r *Run) { r.Close = "threads=2" }},
		{"bad exit", "close", func(r *Run) { r.Exit = "still running 10s after stdin was closed" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := good()
			c.breakIt(&r)
			fs := Check(r)
			if len(fs) == 0 {
				t.Fatalf("no failure reported")
			}
			for _, f := range fs {
				if f.Check != c.check {
					t.Errorf("unexpected failure %v", f)
				}
			}
		})
	}
}

// A handle opened unordered promises unique IDs, each answer's in
// increasing order, and nothing across answers: one lane's later answer
// below its earlier one is valid there, and the same history on a handle in
// the default mode is an order failure.
func TestCheck_UnorderedHandle_OrderAcrossAnswersNotRequired_RestStillChecked(t *testing.T) {
	below := func(r *Run) { // lane 1: 5000, then 4000 sent after 5000 arrived
		r.Events = append(r.Events,
			ev("1", "next h1", "ok 5000", 20_000, 1),
			ev("1", "nextn h1 3", "ok 4000-4002", 20_010, 1))
	}
	cases := []struct {
		name      string
		unordered []string
		breakIt   func(r *Run)
		check     string // "" for a valid run
	}{
		{"unordered: a later answer below an earlier one", []string{"h1", "h2"}, below, ""},
		{"ordered: the same history", nil, below, "order"},
		{"ordered h2 beside unordered h1: the same history on h1", []string{"h2"}, below, "order"},
		{"unordered: an ID twice", []string{"h1", "h2"}, func(r *Run) {
			below(r)
			r.Events = append(r.Events, ev("2", "next h1", "ok 4001", 20_020, 1))
		}, "ID twice"},
		{"unordered: an ID twice across the two handles", []string{"h1", "h2"}, func(r *Run) {
			r.Events = append(r.Events, ev("4", "next h2", "ok 1002", 20_000, 1))
		}, "ID twice"},
		{"unordered: the ranges of one answer not increasing", []string{"h1", "h2"}, func(r *Run) {
			r.Events = append(r.Events, ev("3", "nextn h1 5", "ok 5000-5002 4000-4001", 20_000, 1))
		}, "order"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := good()
			r.Unordered = c.unordered
			c.breakIt(&r)
			wantOnly(t, Check(r), c.check)
		})
	}
}

// A fork's child (PROTOCOL.md's fork) takes IDs from its copy of a handle:
// they must be unique against every answer of the parent and of other
// children, a sequence handle's increase within the answer, and nothing
// orders them against the parent's answers (another cache, another process).
func TestCheck_Fork_ChildsIDsUniqueAgainstTheParents_NotOrderedWithThem(t *testing.T) {
	cases := []struct {
		name    string
		breakIt func(r *Run)
		check   string // "" for a valid run
	}{
		{"a child's range above, a later parent answer below it", func(r *Run) {
			r.Events = append(r.Events,
				ev("10", "fork h1 3", "ok 9001 9002 9003", 20_000, 5),
				ev("1", "next h1", "ok 1004", 20_010, 1))
		}, ""},
		{"a Snowflake child's IDs from two batches", func(r *Run) {
			r.Events = append(r.Events, ev("10", "fork s1 3", "ok 70 80 50", 20_000, 5))
		}, ""},
		{"a child hands out the parent's cached ID", func(r *Run) {
			r.Events = append(r.Events,
				ev("10", "fork h1 2", "ok 1004 1005", 20_000, 5),
				ev("1", "next h1", "ok 1004", 20_010, 1))
		}, "ID twice"},
		{"two children share IDs", func(r *Run) {
			r.Events = append(r.Events,
				ev("10", "fork h1 2", "ok 9001 9002", 20_000, 5),
				ev("10", "fork h1 2", "ok 9002 9003", 20_100, 5))
		}, "ID twice"},
		{"a Snowflake child repeats the parent's ID", func(r *Run) {
			r.Events = append(r.Events, ev("10", "fork s1 2", "ok 40 41", 20_000, 5))
		}, "ID twice"},
		{"a sequence child's IDs do not increase", func(r *Run) {
			r.Events = append(r.Events, ev("10", "fork h1 2", "ok 9002 9001", 20_000, 5))
		}, "order"},
		{"a child answers the wrong count", func(r *Run) {
			r.Events = append(r.Events, ev("10", "fork h1 3", "ok 9001 9002", 20_000, 5))
		}, "malformed answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := good()
			c.breakIt(&r)
			wantOnly(t, Check(r), c.check)
		})
	}
}

// wantOnly: no failure when check is "", else at least one, each of check
// and each with the time the history first showed it, where the check has one.
func wantOnly(t *testing.T, fs []Failure, check string) {
	t.Helper()
	if check == "" {
		if len(fs) != 0 {
			t.Fatalf("want no failure, got %v", fs)
		}
		return
	}
	if len(fs) == 0 {
		t.Fatalf("no failure reported")
	}
	for _, f := range fs {
		if f.Check != check {
			t.Errorf("unexpected failure %v", f)
		}
		if f.At.IsZero() && (check == "ID twice" || check == "order") {
			t.Errorf("%v: no time at which it was seen", f)
		}
	}
}
