package checker

import (
	"fmt"
	"math"
	"sort"
)

// Raises whose outcome is unknown (issue #30, bug 1).
//
// A raise whose caller hung up may still commit and apply; once it applied,
// the promise is the one of an acknowledged raise: nothing at or below its
// at_least X is handed out to a reservation invoked afterwards. The history
// alone cannot say when, or whether, such a raise applied: a read's next
// above X is also explained by blocks granted to the leader, which the
// history does not see (the leader serves the IDs of those blocks below
// the mark). So CheckRaises and porcupine leave unknown raises out, and a
// server that never cuts the leader for an abandoned raise passed them.
//
// The allocation audit settles it. The mark of a sequence only moves by
// block grants and raises, each with a record, and never goes down. A raise
// to X that has a record moved the mark from below X to X; a read Q
// answering next = N > X saw a mark N-1 >= X, so the state Q read lay at or
// after that record's entry: the raise had applied before Q completed, and
// every raw reservation invoked after Q completed must start above X. (The
// lead's version compares the index of the record ending at N-1 with the
// raise record's; by monotonicity of the mark that index is never below the
// raise's, so the raise record's presence is all it takes.) A raise to X
// without a record moved no mark: it never applied, or applied as a no-op
// above a mark already at X or more, and then the state it left is the one
// of a history without it. Absence counts only when the harness read every
// record that could be the raise's: made after the raise was invoked and
// before Q completed (Audit.readThrough, readAfter, complete); otherwise
// the pair is unchecked.
//
// Porcupine is not given unknown raises: an unknown operation may be
// linearized at the end, after every other, and in the model nothing in
// the history ever forces an unknown raise earlier (reads do not bound
// later ranges, for the same reason as above), so it would only widen the
// search without catching anything.

// UnknownRaiseResult: once a raise whose outcome is unknown has applied,
// nothing at or below it is handed out to a reservation invoked afterwards.
type UnknownRaiseResult struct {
	Valid bool `json:"valid"`
	// Unknown counts the raises of the main cluster with an unknown
	// outcome; Applied those the audit shows moved a mark.
	Unknown int `json:"unknown"`
	Applied int `json:"applied"`
	// Audited is false when the history holds no audit (every pair is
	// then unchecked).
	Audited bool `json:"audited"`
	// A pair is an unknown raise to X and the first read of next above X
	// completed after the raise was invoked (later reads tell nothing
	// more: by then the mark had passed X, so the raise had applied or
	// never would move it). Checked when the audit told whether the raise
	// had applied, Unchecked when it no longer held every record that
	// could be the raise's. Unknown raises without such a read make no
	// pair.
	Checked   int `json:"checked"`
	Unchecked int `json:"unchecked"`
	// Pinned counts the pairs whose raise had applied; Held the
	// (reservation invoked after the read, pinned raise) pairs.
	Pinned int `json:"pinned"`
	Held   int `json:"held"`
	// Below counts raw reservations at or below a raise that a read
	// completed before they were invoked showed applied.
	Below       int         `json:"below"`
	Examples    []Violation `json:"examples,omitempty"`
	FirstSeenMs float64     `json:"first_seen_ms,omitempty"`
}

// CheckUnknownRaises holds the raw reservations of the main cluster to the
// raises with an unknown outcome that the audit a shows had applied before
// a read completed (see above). SDK ranges (FNext) are exempt, as in
// CheckRaises. It runs in O((raises + ops) log ops) plus the violations, so
// the online check can call it every few seconds on a long history.
func CheckUnknownRaises(ops []Op, a *Audit) UnknownRaiseResult {
	r := UnknownRaiseResult{Valid: true, Audited: a != nil}
	type key struct {
		seq string
		at  int64
	}
	recs := map[key]AuditRecord{}
	if a != nil {
		for _, rec := range a.Raises {
			if rec.Kind == AuditKindRaise {
				recs[key{rec.Sequence, rec.Last}] = rec
			}
		}
	}
	reads := map[string][]*Op{}
	reserves := map[string][]*Op{}
	var unknown []*Op
	for i := range ops {
		o := &ops[i]
		switch {
		case o.IsRead():
			reads[o.Seq] = append(reads[o.Seq], o)
		case o.IsRange() && o.F == FReserve:
			reserves[o.Seq] = append(reserves[o.Seq], o)
		case o.Cluster == "" && o.F == FRaise && o.Outcome == Unknown:
			unknown = append(unknown, o)
		}
	}
	// Reads by completion, with their next (an exhausted read: above
	// everything); reservations by invocation, with their first ID
	// negated, so that "first at or below X" is "above -X-1".
	nexts := map[string]chunkMax{}
	for seq, qs := range reads {
		sort.Slice(qs, func(i, j int) bool { return qs[i].Complete < qs[j].Complete })
		v := make([]int64, len(qs))
		for i, q := range qs {
			v[i] = q.Next
			if q.Exhausted {
				v[i] = math.MaxInt64
			}
		}
		nexts[seq] = newChunkMax(v)
	}
	firsts := map[string]chunkMax{}
	for seq, rs := range reserves {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Invoke < rs[j].Invoke })
		v := make([]int64, len(rs))
		for i, o := range rs {
			v[i] = -o.First
		}
		firsts[seq] = newChunkMax(v)
	}
	first := int64(-1)
	flagged := map[int64]bool{}
	for _, u := range unknown {
		r.Unknown++
		rec, applied := recs[key{u.Seq, u.Count}]
		if applied {
			r.Applied++
		}
		qs := reads[u.Seq]
		j := nexts[u.Seq].firstAbove(sort.Search(len(qs), func(i int) bool { return qs[i].Complete > u.Invoke }), u.Count)
		if j == len(qs) {
			continue // no read above X after the raise was invoked: no pair
		}
		pin := qs[j]
		switch {
		case applied:
			r.Checked++
		case a == nil:
			r.Unchecked++
			continue
		default:
			if hi, ok := a.readAfter(pin.Complete); ok && a.complete(a.readThrough(u.Invoke), hi) {
				r.Checked++ // the raise moved no mark: nothing to hold
			} else {
				r.Unchecked++
			}
			continue
		}
		r.Pinned++
		rs := reserves[u.Seq]
		k := sort.Search(len(rs), func(i int) bool { return rs[i].Invoke > pin.Complete })
		r.Held += len(rs) - k
		fm := firsts[u.Seq]
		for k = fm.firstAbove(k, -u.Count-1); k < len(rs); k = fm.firstAbove(k+1, -u.Count-1) {
			o := rs[k]
			if flagged[o.Index] {
				continue
			}
			flagged[o.Index] = true
			r.Valid = false
			r.Below++
			if first < 0 || o.Complete < first {
				first = o.Complete
			}
			if len(r.Examples) < maxExamples {
				pr := ref(pin)
				r.Examples = append(r.Examples, Violation{Seq: o.Seq, A: ref(o), B: &pr, SeenAtMs: ms(o.Complete),
					Detail: fmt.Sprintf("range %d..%d was invoked %.3f ms after a read answered next=%d, above a raise to %d whose outcome is unknown (op %d, invoked at %.3f ms) but which the audit shows applied (index %d), yet starts at or below it",
						o.First, o.Last, ms(o.Invoke-pin.Complete), pin.Next, u.Count, u.Index, ms(u.Invoke), rec.Index)})
			}
		}
	}
	if first >= 0 {
		r.FirstSeenMs = ms(first)
	}
	return r
}

// chunkMax answers "the first index at or after p whose value is above x"
// by skipping chunks whose maximum is not.
type chunkMax struct {
	v, max []int64
}

const chunk = 256

func newChunkMax(v []int64) chunkMax {
	c := chunkMax{v: v}
	for i, x := range v {
		if i%chunk == 0 {
			c.max = append(c.max, x)
		}
		c.max[i/chunk] = max(c.max[i/chunk], x)
	}
	return c
}

// firstAbove returns len(v) if no index at or after p holds a value above x.
func (c chunkMax) firstAbove(p int, x int64) int {
	for p < len(c.v) {
		if p%chunk == 0 && c.max[p/chunk] <= x {
			p += chunk
			continue
		}
		if c.v[p] > x {
			return p
		}
		p++
	}
	return len(c.v)
}
