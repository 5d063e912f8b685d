package checker

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// maxExamples bounds the example violations each checker reports.
const maxExamples = 10

// OpRef is a short description of an operation for violation reports.
type OpRef struct {
	Index      int64   `json:"index"`
	F          string  `json:"f"`
	Node       string  `json:"node,omitempty"`
	Worker     int     `json:"worker"`
	First      int64   `json:"first,omitempty"`
	Last       int64   `json:"last,omitempty"`
	Next       int64   `json:"next,omitempty"`
	InvokeMs   float64 `json:"invoke_ms"`
	CompleteMs float64 `json:"complete_ms"`
}

func ref(o *Op) OpRef {
	return OpRef{Index: o.Index, F: o.F, Node: o.Node, Worker: o.Worker, First: o.First, Last: o.Last, Next: o.Next,
		InvokeMs: ms(o.Invoke), CompleteMs: ms(o.Complete)}
}

// Violation is one example of a broken promise.
type Violation struct {
	Seq    string `json:"seq"`
	A      OpRef  `json:"a"`
	B      *OpRef `json:"b,omitempty"`
	Detail string `json:"detail"`
	// SeenAtMs is when the violation became visible in the history: the
	// completion of the later of the two operations.
	SeenAtMs float64 `json:"seen_at_ms"`
}

func ms(ns int64) float64 { return math.Round(float64(ns)/1e3) / 1e3 }

// byRangeSeq groups the acknowledged ranges by sequence.
func byRangeSeq(ops []Op) map[string][]*Op {
	m := map[string][]*Op{}
	for i := range ops {
		if ops[i].IsRange() {
			m[ops[i].Seq] = append(m[ops[i].Seq], &ops[i])
		}
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// WellFormedResult: every ok answer was a well-formed answer to its request.
type WellFormedResult struct {
	Valid     bool        `json:"valid"`
	Malformed int         `json:"malformed"`
	Examples  []Violation `json:"examples,omitempty"`
}

// CheckWellFormed flags ok answers that break the API on their own: a range
// of the wrong length or with a non-positive first ID, a Next that is not
// one ID, or anything the client already marked malformed.
func CheckWellFormed(ops []Op) WellFormedResult {
	r := WellFormedResult{Valid: true}
	for i := range ops {
		o := &ops[i]
		if o.Outcome != OK {
			continue
		}
		why := o.Malformed
		if why == "" {
			switch o.F {
			case FReserve:
				if o.First < 1 || o.Last < o.First || o.Last-o.First+1 != o.Count {
					why = fmt.Sprintf("asked for %d IDs, got %d..%d", o.Count, o.First, o.Last)
				}
			case FNext:
				if o.First < 1 || o.First != o.Last {
					why = fmt.Sprintf("Next gave %d..%d", o.First, o.Last)
				}
			case FRead:
				if !o.Exhausted && o.Next < 1 {
					why = fmt.Sprintf("read next = %d", o.Next)
				}
			case FRaise:
				if !o.Exhausted && o.Next <= o.Count {
					why = fmt.Sprintf("raise to %d answered next = %d", o.Count, o.Next)
				}
			}
		}
		if why != "" {
			r.Valid = false
			r.Malformed++
			if len(r.Examples) < maxExamples {
				r.Examples = append(r.Examples, Violation{Seq: o.Seq, A: ref(o), Detail: why, SeenAtMs: ms(o.Complete)})
			}
		}
	}
	return r
}

// UniquenessResult: no ID is in two acknowledged ranges.
type UniquenessResult struct {
	Valid bool `json:"valid"`
	// Ranges and IDs count the acknowledged ranges and the IDs in them.
	Ranges int   `json:"ranges"`
	IDs    int64 `json:"ids"`
	// OverlappingRanges counts ranges that share an ID with a range of a
	// lower first ID; DuplicatedIDs counts the extra handouts (an ID in
	// three ranges counts twice).
	OverlappingRanges int         `json:"overlapping_ranges"`
	DuplicatedIDs     int64       `json:"duplicated_ids"`
	Examples          []Violation `json:"examples,omitempty"`
	// FirstSeenMs is when the earliest duplicate became visible.
	FirstSeenMs float64 `json:"first_seen_ms,omitempty"`
}

// CheckUniqueness sorts each sequence's acknowledged ranges (raw
// reservations and SDK Next results alike) by first ID and flags every range
// that starts at or below the highest last ID before it.
func CheckUniqueness(ops []Op) UniquenessResult {
	r := UniquenessResult{Valid: true}
	first := int64(-1)
	groups := byRangeSeq(ops)
	for _, seq := range sortedKeys(groups) {
		rs := groups[seq]
		sort.Slice(rs, func(i, j int) bool {
			if rs[i].First != rs[j].First {
				return rs[i].First < rs[j].First
			}
			return rs[i].Last < rs[j].Last
		})
		var cover *Op // the range with the highest last ID so far
		for _, o := range rs {
			r.Ranges++
			r.IDs += o.Last - o.First + 1
			if cover != nil && o.First <= cover.Last {
				r.Valid = false
				r.OverlappingRanges++
				r.DuplicatedIDs += min(o.Last, cover.Last) - o.First + 1
				seen := max(o.Complete, cover.Complete)
				if first < 0 || seen < first {
					first = seen
				}
				if len(r.Examples) < maxExamples {
					b := ref(cover)
					r.Examples = append(r.Examples, Violation{Seq: seq, A: ref(o), B: &b, SeenAtMs: ms(seen),
						Detail: fmt.Sprintf("IDs %d..%d handed out twice", o.First, min(o.Last, cover.Last))})
				}
			}
			if cover == nil || o.Last > cover.Last {
				cover = o
			}
		}
	}
	if first >= 0 {
		r.FirstSeenMs = ms(first)
	}
	return r
}

// RealTimeResult: reservations are linearizable, checked exactly.
type RealTimeResult struct {
	Valid bool `json:"valid"`
	// Violations counts the ranges that lie below a range acknowledged
	// before they were invoked.
	Violations  int         `json:"violations"`
	Examples    []Violation `json:"examples,omitempty"`
	FirstSeenMs float64     `json:"first_seen_ms,omitempty"`
}

// CheckRealTime is the exact linearizability check of reservations. Ranges
// of one sequence are disjoint (CheckUniqueness checks that), so their only
// possible linearization is by first ID; it respects real time iff no range
// B with a higher first ID than range A completed before A was invoked.
// Walking the ranges from the highest first ID down while keeping the
// earliest completion seen finds every such A in O(n log n).
//
// Raw reservations are checked per sequence. SDK Next results come from a
// client-side cache, so they are only ordered within one Sequence object
// (its documented promise: strictly increasing in the order calls take
// them); they are checked per session.
func CheckRealTime(ops []Op) RealTimeResult {
	r := RealTimeResult{Valid: true}
	first := int64(-1)
	groups := map[string][]*Op{}
	for i := range ops {
		o := &ops[i]
		if !o.IsRange() {
			continue
		}
		key := o.Seq
		if o.F == FNext {
			key = o.Seq + " (SDK session " + o.Session + ")"
		}
		groups[key] = append(groups[key], o)
	}
	for _, seq := range sortedKeys(groups) {
		rs := groups[seq]
		sort.Slice(rs, func(i, j int) bool { return rs[i].First > rs[j].First })
		var earliest *Op // earliest-completing range with a higher first ID
		for i := 0; i < len(rs); {
			j := i
			for j < len(rs) && rs[j].First == rs[i].First {
				j++
			}
			for _, a := range rs[i:j] {
				if earliest != nil && earliest.Complete < a.Invoke {
					r.Valid = false
					r.Violations++
					seen := a.Complete
					if first < 0 || seen < first {
						first = seen
					}
					if len(r.Examples) < maxExamples {
						b := ref(earliest)
						r.Examples = append(r.Examples, Violation{Seq: seq, A: ref(a), B: &b, SeenAtMs: ms(seen),
							Detail: fmt.Sprintf("range %d..%d was invoked %.3f ms after range %d..%d was acknowledged, yet lies below it",
								a.First, a.Last, ms(a.Invoke-earliest.Complete), earliest.First, earliest.Last)})
					}
				}
			}
			for _, a := range rs[i:j] {
				if earliest == nil || a.Complete < earliest.Complete {
					earliest = a
				}
			}
			i = j
		}
	}
	if first >= 0 {
		r.FirstSeenMs = ms(first)
	}
	return r
}

// ReadResult: reads of next are linearizable.
type ReadResult struct {
	Valid bool `json:"valid"`
	Reads int  `json:"reads"`
	// Stale counts reads whose next is not above a range acknowledged
	// before the read was invoked; NonMonotonic counts reads whose next is
	// below that of a read completed before they were invoked.
	Stale        int         `json:"stale"`
	NonMonotonic int         `json:"non_monotonic"`
	Examples     []Violation `json:"examples,omitempty"`
	FirstSeenMs  float64     `json:"first_seen_ms,omitempty"`
}

// CheckReads checks every ok read against what completed before it was
// invoked: next must lie above every acknowledged range (next is the lowest
// ID never handed to any leader) and must not go below an earlier read.
func CheckReads(ops []Op) ReadResult {
	r := ReadResult{Valid: true}
	first := int64(-1)
	type perSeq struct{ ranges, reads []*Op }
	m := map[string]*perSeq{}
	for i := range ops {
		o := &ops[i]
		switch {
		case o.IsRange():
		case o.IsRead():
		default:
			continue
		}
		p := m[o.Seq]
		if p == nil {
			p = &perSeq{}
			m[o.Seq] = p
		}
		if o.IsRange() {
			p.ranges = append(p.ranges, o)
		} else {
			p.reads = append(p.reads, o)
		}
	}
	for _, seq := range sortedKeys(m) {
		p := m[seq]
		r.Reads += len(p.reads)
		byInvoke := slices.Clone(p.reads)
		sort.Slice(byInvoke, func(i, j int) bool { return byInvoke[i].Invoke < byInvoke[j].Invoke })
		readsByComplete := slices.Clone(p.reads)
		sort.Slice(readsByComplete, func(i, j int) bool { return readsByComplete[i].Complete < readsByComplete[j].Complete })
		rangesByComplete := slices.Clone(p.ranges)
		sort.Slice(rangesByComplete, func(i, j int) bool { return rangesByComplete[i].Complete < rangesByComplete[j].Complete })
		var topRange, topRead *Op
		ri, di := 0, 0
		for _, rd := range byInvoke {
			for ; ri < len(rangesByComplete) && rangesByComplete[ri].Complete < rd.Invoke; ri++ {
				if topRange == nil || rangesByComplete[ri].Last > topRange.Last {
					topRange = rangesByComplete[ri]
				}
			}
			for ; di < len(readsByComplete) && readsByComplete[di].Complete < rd.Invoke; di++ {
				c := readsByComplete[di]
				if topRead == nil || readAbove(c, topRead) {
					topRead = c
				}
			}
			var why string
			var other *Op
			switch {
			case topRange != nil && !rd.Exhausted && rd.Next <= topRange.Last:
				r.Stale++
				other = topRange
				why = fmt.Sprintf("read next = %d, but range %d..%d was acknowledged %.3f ms before the read was invoked",
					rd.Next, topRange.First, topRange.Last, ms(rd.Invoke-topRange.Complete))
			case topRead != nil && readAbove(topRead, rd):
				r.NonMonotonic++
				other = topRead
				why = fmt.Sprintf("read next = %s, but an earlier read (completed %.3f ms before this one was invoked) saw %s",
					readValue(rd), ms(rd.Invoke-topRead.Complete), readValue(topRead))
			default:
				continue
			}
			r.Valid = false
			seen := rd.Complete
			if first < 0 || seen < first {
				first = seen
			}
			if len(r.Examples) < maxExamples {
				b := ref(other)
				r.Examples = append(r.Examples, Violation{Seq: seq, A: ref(rd), B: &b, Detail: why, SeenAtMs: ms(seen)})
			}
		}
	}
	if first >= 0 {
		r.FirstSeenMs = ms(first)
	}
	return r
}

// readAbove reports whether read a saw a strictly higher next than read b.
func readAbove(a, b *Op) bool {
	switch {
	case b.Exhausted:
		return false
	case a.Exhausted:
		return true
	}
	return a.Next > b.Next
}

func readValue(o *Op) string {
	if o.Exhausted {
		return "null (exhausted)"
	}
	return fmt.Sprint(o.Next)
}

// LostResult: after the final heal, every sequence's next lies above every
// acknowledged range.
type LostResult struct {
	Valid bool `json:"valid"`
	// Checked is false when some sequence with acknowledged ranges had no
	// successful final read; the check could not be made (invalid).
	Checked    bool             `json:"checked"`
	FinalNext  map[string]int64 `json:"final_next"`
	LostRanges int              `json:"lost_ranges"`
	LostIDs    int64            `json:"lost_ids"`
	Unread     []string         `json:"unread_sequences,omitempty"`
	Examples   []Violation      `json:"examples,omitempty"`
}

// CheckLost compares the final reads (ops with Final set) with every
// acknowledged range: a range at or above the final next was handed out and
// then forgotten by the cluster, so the same IDs could be handed out again.
func CheckLost(ops []Op) LostResult {
	r := LostResult{Valid: true, Checked: true, FinalNext: map[string]int64{}}
	final := map[string]*Op{}
	for i := range ops {
		o := &ops[i]
		if o.Final && o.IsRead() {
			if prev := final[o.Seq]; prev == nil || o.Complete > prev.Complete {
				final[o.Seq] = o
			}
		}
	}
	for seq, o := range final {
		if o.Exhausted {
			r.FinalNext[seq] = math.MaxInt64
		} else {
			r.FinalNext[seq] = o.Next
		}
	}
	groups := byRangeSeq(ops)
	for _, seq := range sortedKeys(groups) {
		fr := final[seq]
		if fr == nil {
			r.Valid, r.Checked = false, false
			r.Unread = append(r.Unread, seq)
			continue
		}
		if fr.Exhausted {
			continue
		}
		for _, o := range groups[seq] {
			if o.Last >= fr.Next {
				r.Valid = false
				r.LostRanges++
				r.LostIDs += o.Last - max(o.First, fr.Next) + 1
				if len(r.Examples) < maxExamples {
					b := ref(fr)
					r.Examples = append(r.Examples, Violation{Seq: seq, A: ref(o), B: &b, SeenAtMs: ms(fr.Complete),
						Detail: fmt.Sprintf("range %d..%d was acknowledged, but the final read says next = %d", o.First, o.Last, fr.Next)})
				}
			}
		}
	}
	return r
}
