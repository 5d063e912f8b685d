package checker

import (
	"fmt"
	"sort"
)

// RaiseResult: once a raise to X is acknowledged, nothing at or below X is
// handed out, and nothing reads a next at or below it (issue #16).
type RaiseResult struct {
	Valid bool `json:"valid"`
	// Raises counts the acknowledged raises; Checked the (reservation or
	// read, earlier raise) pairs in which the raise completed before the
	// other was invoked.
	Raises  int `json:"raises"`
	Checked int `json:"checked"`
	// Below counts ranges and reads at or below a raise acknowledged
	// before they were invoked.
	Below       int         `json:"below"`
	Examples    []Violation `json:"examples,omitempty"`
	FirstSeenMs float64     `json:"first_seen_ms,omitempty"`
}

// IsRaise reports whether o is an ok raise of the main cluster.
func (o *Op) IsRaise() bool {
	return o.Cluster == "" && o.Outcome == OK && o.F == FRaise && o.Malformed == ""
}

// CheckRaises holds every raw reservation and read of a sequence against the
// raises of it acknowledged before the reservation or read was invoked: its
// range must start, and its next lie, above the highest of them. SDK ranges
// (FNext) are not held to it: a Sequence handle serves what it reserved
// before the raise. A raise with an unknown outcome asks nothing: it may
// have applied, which only ever lifts what comes after.
func CheckRaises(ops []Op) RaiseResult {
	r := RaiseResult{Valid: true}
	type done struct {
		complete, atLeast int64
		op                *Op
	}
	raises := map[string][]done{}
	for i := range ops {
		if o := &ops[i]; o.IsRaise() {
			raises[o.Seq] = append(raises[o.Seq], done{o.Complete, o.Count, o})
			r.Raises++
		}
	}
	// Per sequence, by completion, with the highest value so far: the
	// raise that binds an op is the highest among those completed before
	// it was invoked.
	for _, rs := range raises {
		sort.Slice(rs, func(i, j int) bool { return rs[i].complete < rs[j].complete })
		for i := 1; i < len(rs); i++ {
			if rs[i].atLeast < rs[i-1].atLeast {
				rs[i].atLeast, rs[i].op = rs[i-1].atLeast, rs[i-1].op
			}
		}
	}
	first := int64(-1)
	for i := range ops {
		o := &ops[i]
		if !(o.IsRange() && o.F == FReserve) && !o.IsRead() {
			continue
		}
		rs := raises[o.Seq]
		k := sort.Search(len(rs), func(i int) bool { return rs[i].complete >= o.Invoke }) - 1
		if k < 0 {
			continue
		}
		r.Checked++
		b := rs[k]
		var detail string
		switch {
		case o.F == FReserve && o.First <= b.atLeast:
			detail = fmt.Sprintf("range %d..%d was invoked %.3f ms after a raise to %d was acknowledged, yet starts at or below it", o.First, o.Last, ms(o.Invoke-b.complete), b.atLeast)
		case o.F == FRead && !o.Exhausted && o.Next <= b.atLeast:
			detail = fmt.Sprintf("read next=%d was invoked %.3f ms after a raise to %d was acknowledged", o.Next, ms(o.Invoke-b.complete), b.atLeast)
		default:
			continue
		}
		r.Valid = false
		r.Below++
		if first < 0 || o.Complete < first {
			first = o.Complete
		}
		if len(r.Examples) < maxExamples {
			br := ref(b.op)
			r.Examples = append(r.Examples, Violation{Seq: o.Seq, A: ref(o), B: &br, SeenAtMs: ms(o.Complete), Detail: detail})
		}
	}
	if first >= 0 {
		r.FirstSeenMs = ms(first)
	}
	return r
}
