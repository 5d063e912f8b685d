package main

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The checker: pure functions over a recorded run, so that each check can be
// shown failing on a synthetic history in a unit test without a cluster.

// Range is an inclusive range of IDs; a Snowflake ID is a range of one.
type Range struct{ First, Last int64 }

// Event is one command the harness sent and the answer it got.
type Event struct {
	Lane   string
	Line   string // the command as sent
	Op     string
	Handle string // the handle the op uses; "" for reserve and close
	Target string // "seq:<name>" or "ns:<name>": where the IDs come from
	N      int64  // the count asked (nextn, reserve, snextn); 1 for next/snext
	Sent   time.Time
	Recv   time.Time // zero: no answer came
	Answer string    // the answer line as read
	OK     bool
	Kind   string  // the error kind of an err answer
	IDs    []Range // the IDs of an ok answer, in the order answered
	Bad    string  // why the answer is malformed ("" if it is not)
}

// Run is everything the checks look at.
type Run struct {
	Events []Event
	// Bound is the longest wait allowed for one answer.
	Bound time.Duration
	// Recovered is when every node was back and ready after the last
	// fault; RecoveryEnd is when the harness stopped the load.
	Recovered, RecoveryEnd time.Time
	// Handles are the handles that must serve again after Recovered.
	Handles []string
	// Unordered are the sequence handles opened in unordered mode
	// (PROTOCOL.md): their IDs are unique, but not ordered across answers.
	Unordered []string
	// Close is the close answer ("" if none came), Exit how the driver
	// ended after stdin was closed: "exit 0" is the only passing one.
	Close, Exit string
	// Stray are lines the driver wrote that answered no pending command.
	Stray []string
}

// Failure is one violated promise, with the lines that show it.
type Failure struct {
	Check  string
	Detail string
	// At is when the history first showed the violation (the later
	// answer's arrival), for the report's "caught after"; zero when the
	// check has no such moment.
	At time.Time
}

func (f Failure) String() string { return f.Check + ": " + f.Detail }

// kinds are the error kinds of the protocol.
var kinds = []string{"unavailable", "not_found", "exhausted", "unauthorized", "forbidden", "invalid_argument", "conflict", "closed", "unsupported", "untyped"}

// Parse fills OK, Kind, IDs and Bad of e from e.Answer, which starts with
// the lane and a space (the caller matched the lane).
func (e *Event) Parse() {
	rest := strings.TrimPrefix(e.Answer, e.Lane+" ")
	f := strings.Split(rest, " ")
	switch f[0] {
	case "err":
		if len(f) < 2 || !slices.Contains(kinds, f[1]) {
			e.Bad = "err answer without a known kind"
			return
		}
		e.Kind = f[1]
		return
	case "ok":
	default:
		e.Bad = "neither ok nor err"
		return
	}
	e.OK = true
	vals := f[1:]
	var err error
	switch e.Op {
	case "open", "snowflake":
		if len(vals) != 0 {
			e.Bad = "ok of " + e.Op + " takes no values"
		}
	case "next", "snext":
		if len(vals) != 1 {
			e.Bad = "want one ID"
			return
		}
		var id int64
		if id, err = strconv.ParseInt(vals[0], 10, 64); err != nil || id <= 0 { // IDs are positive (invariant 5)
			e.Bad = "not an ID: " + vals[0]
			return
		}
		e.IDs = []Range{{id, id}}
	case "nextn", "reserve":
		var total int64
		for _, v := range vals {
			a, b, ok := strings.Cut(v, "-")
			first, err1 := strconv.ParseInt(a, 10, 64)
			last, err2 := strconv.ParseInt(b, 10, 64)
			if !ok || err1 != nil || err2 != nil || first <= 0 || last < first {
				e.Bad = "not a range: " + v
				return
			}
			// Each size fits an int64 (1 <= first <= last), but a sum of
			// them can wrap around to the count asked: compare before adding.
			size := last - first + 1
			if size > e.N-total {
				e.Bad = fmt.Sprintf("more IDs than the %d asked", e.N)
				return
			}
			e.IDs = append(e.IDs, Range{first, last})
			total += size
		}
		if e.Op == "reserve" && len(e.IDs) != 1 {
			e.Bad = "reserve answers one range"
			return
		}
		if total != e.N {
			e.Bad = fmt.Sprintf("%d IDs for %d asked", total, e.N)
		}
	case "snextn", "fork":
		for _, v := range vals {
			id, err := strconv.ParseInt(v, 10, 64)
			if err != nil || id <= 0 {
				e.Bad = "not an ID: " + v
				return
			}
			e.IDs = append(e.IDs, Range{id, id})
		}
		if int64(len(e.IDs)) != e.N {
			e.Bad = fmt.Sprintf("%d IDs for %d asked", len(e.IDs), e.N)
		}
	case "close":
		if len(vals) != 1 || !strings.HasPrefix(vals[0], "threads=") {
			e.Bad = "close answers threads=<k>"
		}
	}
}

// Check runs every check and returns the failures, grouped by check in a
// fixed order.
func Check(r Run) []Failure {
	var out []Failure
	out = append(out, CheckAnswers(r)...)
	out = append(out, CheckBound(r)...)
	out = append(out, CheckUnique(r)...)
	out = append(out, CheckOrder(r)...)
	out = append(out, CheckRecovery(r)...)
	out = append(out, CheckClose(r)...)
	return out
}

func show(e Event) string {
	if e.Recv.IsZero() {
		return fmt.Sprintf("%q -> (no answer)", e.Line)
	}
	a := e.Answer
	if len(a) > 160 {
		a = a[:160] + "…"
	}
	return fmt.Sprintf("%q -> %q", e.Line, a)
}

// CheckAnswers: every command got one well-formed answer; no untyped error;
// and, since the harness made every sequence, namespace and token the
// driver uses, no error but "unavailable" (the faults' one expected error).
func CheckAnswers(r Run) []Failure {
	var out []Failure
	for _, e := range r.Events {
		switch {
		case e.Recv.IsZero():
			out = append(out, Failure{Check: "missing answer", Detail: show(e)})
		case e.Bad != "":
			out = append(out, Failure{Check: "malformed answer", Detail: e.Bad + ": " + show(e)})
		case e.Kind == "untyped":
			out = append(out, Failure{Check: "untyped error", Detail: show(e)})
		case !e.OK && e.Kind != "unavailable":
			out = append(out, Failure{Check: "unexpected error", Detail: show(e)})
		}
	}
	for _, s := range r.Stray {
		out = append(out, Failure{Check: "malformed answer", Detail: fmt.Sprintf("a line that answers no command: %q", s)})
	}
	return out
}

// CheckBound: no answer took longer than the bound.
func CheckBound(r Run) []Failure {
	var out []Failure
	for _, e := range r.Events {
		if !e.Recv.IsZero() && e.Recv.Sub(e.Sent) > r.Bound {
			out = append(out, Failure{Check: "bound", Detail: fmt.Sprintf("answered after %v > %v: %s", e.Recv.Sub(e.Sent).Round(time.Millisecond), r.Bound, show(e))})
		}
	}
	return out
}

// CheckUnique: no ID twice within a sequence (every handle and reserve) or a
// namespace.
func CheckUnique(r Run) []Failure {
	type owned struct {
		Range
		ev int
	}
	by := map[string][]owned{}
	for i, e := range r.Events {
		if !e.OK || e.Bad != "" || e.Recv.IsZero() {
			continue
		}
		for _, x := range e.IDs {
			by[e.Target] = append(by[e.Target], owned{x, i})
		}
	}
	var out []Failure
	targets := make([]string, 0, len(by))
	for t := range by {
		targets = append(targets, t)
	}
	sort.Strings(targets)
	for _, t := range targets {
		rs := by[t]
		sort.Slice(rs, func(i, j int) bool { return rs[i].First < rs[j].First })
		top := 0 // the range reaching highest so far
		for i := 1; i < len(rs); i++ {
			if rs[i].First <= rs[top].Last {
				a, b := r.Events[rs[top].ev], r.Events[rs[i].ev]
				out = append(out, Failure{Check: "ID twice", Detail: fmt.Sprintf("%s: %d-%d and %d-%d overlap: %s and %s", t,
					rs[top].First, rs[top].Last, rs[i].First, rs[i].Last, show(a), show(b)), At: later(a.Recv, b.Recv)})
			}
			if rs[i].Last > rs[top].Last {
				top = i
			}
		}
	}
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// CheckOrder: within one answer IDs increase (every kind of handle); on a
// sequence handle in the default mode, an answer received before a command
// was sent holds only smaller IDs than that command's answer; and a
// reservation lies above every answer of its sequence received before it
// was sent (checkReservationOrder). A handle
// opened unordered, like a Snowflake handle, promises no order across
// answers: not even one lane's, since the library may serve a thread from
// another core's sub-range on its next call.
func CheckOrder(r Run) []Failure {
	var out []Failure
	byHandle := map[string][]int{}
	for i, e := range r.Events {
		if !e.OK || e.Bad != "" || e.Recv.IsZero() || len(e.IDs) == 0 {
			continue
		}
		// A fork's child takes its IDs one next() at a time: a sequence
		// handle's increase, a Snowflake handle's need not (several batches).
		if e.Op != "fork" || strings.HasPrefix(e.Target, "seq:") {
			for j := 1; j < len(e.IDs); j++ {
				if e.IDs[j].First <= e.IDs[j-1].Last {
					out = append(out, Failure{Check: "order", Detail: "IDs of one answer do not increase: " + show(e), At: e.Recv})
					break
				}
			}
		}
		// A fork's IDs come from the child's copy of the handle, another
		// cache in another process: not ordered with the parent's answers.
		if strings.HasPrefix(e.Target, "seq:") && e.Handle != "" && e.Op != "fork" && !slices.Contains(r.Unordered, e.Handle) {
			byHandle[e.Handle] = append(byHandle[e.Handle], i)
		}
	}
	out = append(out, checkReservationOrder(r)...)
	handles := make([]string, 0, len(byHandle))
	for h := range byHandle {
		handles = append(handles, h)
	}
	sort.Strings(handles)
	for _, h := range handles {
		evs := byHandle[h]
		for _, p := range notAbove(r, evs, evs) {
			out = append(out, Failure{Check: "order", Detail: fmt.Sprintf("handle %s: %s was sent after %s was answered, but is not above it",
				h, show(r.Events[p.later]), show(r.Events[p.earlier])), At: r.Events[p.later].Recv})
		}
	}
	return out
}

// outOfOrder is a command (later) sent after an answer (earlier) was
// received, whose IDs are not all above that answer's.
type outOfOrder struct{ later, earlier int }

// notAbove sweeps the commands (event indices) in the order they were
// sent, against the answers in the order they were received, and returns
// each command whose first ID is not above the highest ID of the answers
// received before it was sent, paired with the answer holding that ID.
func notAbove(r Run, commands, answers []int) []outOfOrder {
	bySent := slices.Clone(commands)
	sort.Slice(bySent, func(i, j int) bool { return r.Events[bySent[i]].Sent.Before(r.Events[bySent[j]].Sent) })
	byRecv := slices.Clone(answers)
	sort.Slice(byRecv, func(i, j int) bool { return r.Events[byRecv[i]].Recv.Before(r.Events[byRecv[j]].Recv) })
	var out []outOfOrder
	top, j := -1, 0 // top: the answer with the highest ID received before the current command was sent
	for _, b := range bySent {
		eb := r.Events[b]
		for ; j < len(byRecv) && r.Events[byRecv[j]].Recv.Before(eb.Sent); j++ {
			if top < 0 || last(r.Events[byRecv[j]]) > last(r.Events[top]) {
				top = byRecv[j]
			}
		}
		if top >= 0 && eb.IDs[0].First <= last(r.Events[top]) {
			out = append(out, outOfOrder{later: b, earlier: top})
		}
	}
	return out
}

// checkReservationOrder: a reservation is a fresh range from the cluster,
// so one sent after any answer of its sequence was received (on any lane,
// from any handle, a fork's child included) lies above every ID of that
// answer: those IDs come from ranges the cluster granted before the answer
// arrived. This is real-time order across calls, as the fault suite checks
// it. The converse does not hold and is not checked: a handle may serve
// from a range it cached before a later reservation.
func checkReservationOrder(r Run) []Failure {
	bySeq := map[string][]int{}
	for i, e := range r.Events {
		if e.OK && e.Bad == "" && !e.Recv.IsZero() && len(e.IDs) > 0 && strings.HasPrefix(e.Target, "seq:") {
			bySeq[e.Target] = append(bySeq[e.Target], i)
		}
	}
	seqs := make([]string, 0, len(bySeq))
	for s := range bySeq {
		seqs = append(seqs, s)
	}
	sort.Strings(seqs)
	var out []Failure
	for _, s := range seqs {
		var reserves []int
		for _, i := range bySeq[s] {
			if r.Events[i].Op == "reserve" {
				reserves = append(reserves, i)
			}
		}
		for _, p := range notAbove(r, reserves, bySeq[s]) {
			out = append(out, Failure{Check: "order", Detail: fmt.Sprintf("%s: the reservation %s was sent after %s was answered, but is not above it",
				s, show(r.Events[p.later]), show(r.Events[p.earlier])), At: r.Events[p.later].Recv})
		}
	}
	return out
}

func last(e Event) int64 {
	m := e.IDs[0].Last
	for _, x := range e.IDs {
		m = max(m, x.Last)
	}
	return m
}

// CheckRecovery: after every node is back, each handle serves again within
// the bound. A command in flight when the cluster came back may still take
// up to the bound to fail, so the window checked starts one bound after
// Recovered: every command on a handle sent from then on must succeed, and
// there must be at least one.
func CheckRecovery(r Run) []Failure {
	if r.Recovered.IsZero() {
		return []Failure{{Check: "recovery", Detail: "the run never reached its recovery phase"}}
	}
	from := r.Recovered.Add(r.Bound)
	var out []Failure
	for _, h := range r.Handles {
		served := false
		for _, e := range r.Events {
			if e.Handle != h || e.Sent.Before(from) || e.Op == "open" || e.Op == "snowflake" {
				continue
			}
			if e.OK {
				served = true
			} else {
				out = append(out, Failure{Check: "recovery", Detail: fmt.Sprintf("handle %s failed %v after every node was back: %s", h, e.Sent.Sub(r.Recovered).Round(time.Millisecond), show(e))})
				break
			}
		}
		if !served {
			out = append(out, Failure{Check: "recovery", Detail: fmt.Sprintf("handle %s served nothing sent between %v and %v after every node was back",
				h, r.Bound, r.RecoveryEnd.Sub(r.Recovered).Round(time.Millisecond))})
		}
	}
	return out
}

// CheckClose: close answered threads=0 and the driver then exited 0.
func CheckClose(r Run) []Failure {
	var out []Failure
	if r.Close != "threads=0" {
		what := r.Close
		if what == "" {
			what = "no ok answer"
		}
		out = append(out, Failure{Check: "close", Detail: "close answered " + what + ", want threads=0"})
	}
	if r.Exit != "exit 0" {
		out = append(out, Failure{Check: "close", Detail: "after stdin was closed the driver's end was " + r.Exit + ", want exit 0"})
	}
	return out
}
