package checker

import (
	"math"
	"sort"
)

// WorkloadFigures describe the operations of one workload tagged in the
// history (Op.Workload), such as the many-sequences workload: how many
// sequences it touched, how its operations ended, and how many of its
// sequences were waiting for a reservation at the same moment. They judge
// nothing: the checks go by sequence, whatever the workload.
type WorkloadFigures struct {
	// Sequences the workload operated on, and those with at least one
	// acknowledged range.
	Sequences           int `json:"sequences"`
	SequencesWithRanges int `json:"sequences_with_ranges"`
	// Reserves and Reads by outcome (final reads excluded); IDs in its
	// acknowledged ranges.
	Reserves map[string]int `json:"reserves"`
	Reads    map[string]int `json:"reads"`
	IDs      int64          `json:"ids"`
	// Refused409 counts the sequences on which a reservation was refused
	// with 409 (used up: the rest of the sequence is smaller than the
	// count asked for).
	Refused409 int `json:"sequences_refused_409,omitempty"`
	// Operations (reservations and reads) per sequence touched.
	OpsPerSeqMin    int `json:"ops_per_sequence_min"`
	OpsPerSeqMedian int `json:"ops_per_sequence_median"`
	OpsPerSeqMax    int `json:"ops_per_sequence_max"`
	// MaxSeqsInFlight is the most distinct sequences with a reservation
	// in flight at one moment; MeanSeqsInFlight the mean over the time at
	// least one was (weighted by time). Reservations of different
	// sequences in flight together are what group commit across
	// sequences batches.
	MaxSeqsInFlight  int     `json:"max_sequences_in_flight"`
	MeanSeqsInFlight float64 `json:"mean_sequences_in_flight"`
}

// Workloads returns the figures of every workload tagged in ops (the main
// workload, untagged, has none).
func Workloads(ops []Op) map[string]WorkloadFigures {
	type acc struct {
		f       WorkloadFigures
		perSeq  map[string]int
		ranged  map[string]bool
		refused map[string]bool
		events  []inflightEvent
	}
	m := map[string]*acc{}
	for i := range ops {
		o := &ops[i]
		if o.Workload == "" || o.Final || (o.F != FReserve && o.F != FRead) {
			continue
		}
		a := m[o.Workload]
		if a == nil {
			a = &acc{perSeq: map[string]int{}, ranged: map[string]bool{}, refused: map[string]bool{},
				f: WorkloadFigures{Reserves: map[string]int{OK: 0, Fail: 0, Unknown: 0}, Reads: map[string]int{OK: 0, Fail: 0, Unknown: 0}}}
			m[o.Workload] = a
		}
		a.perSeq[o.Seq]++
		if o.F == FRead {
			a.f.Reads[o.Outcome]++
			continue
		}
		a.f.Reserves[o.Outcome]++
		if o.IsRange() {
			a.f.IDs += o.Last - o.First + 1
			a.ranged[o.Seq] = true
		}
		if o.Status == 409 {
			a.refused[o.Seq] = true
		}
		a.events = append(a.events, inflightEvent{t: o.Invoke, seq: o.Seq, d: +1}, inflightEvent{t: o.Complete, seq: o.Seq, d: -1})
	}
	out := map[string]WorkloadFigures{}
	for name, a := range m {
		f := a.f
		f.Sequences, f.SequencesWithRanges, f.Refused409 = len(a.perSeq), len(a.ranged), len(a.refused)
		counts := make([]int, 0, len(a.perSeq))
		for _, n := range a.perSeq {
			counts = append(counts, n)
		}
		sort.Ints(counts)
		if len(counts) > 0 {
			f.OpsPerSeqMin, f.OpsPerSeqMedian, f.OpsPerSeqMax = counts[0], counts[len(counts)/2], counts[len(counts)-1]
		}
		f.MaxSeqsInFlight, f.MeanSeqsInFlight = seqsInFlight(a.events)
		out[name] = f
	}
	return out
}

type inflightEvent struct {
	t   int64
	seq string
	d   int
}

// seqsInFlight sweeps invocations (+1) and completions (-1) in time order
// (a completion before an invocation at the same instant) and returns the
// most distinct sequences with an operation in flight at once and their
// time-weighted mean over the time at least one was.
func seqsInFlight(ev []inflightEvent) (int, float64) {
	sort.Slice(ev, func(i, j int) bool {
		if ev[i].t != ev[j].t {
			return ev[i].t < ev[j].t
		}
		return ev[i].d < ev[j].d
	})
	open := map[string]int{}
	best, busy := 0, int64(0)
	var area float64
	for i, e := range ev {
		if i > 0 && len(open) > 0 {
			dt := e.t - ev[i-1].t
			area += float64(len(open)) * float64(dt)
			busy += dt
		}
		open[e.seq] += e.d
		if open[e.seq] <= 0 {
			delete(open, e.seq)
		}
		best = max(best, len(open))
	}
	if busy == 0 {
		return best, float64(best)
	}
	return best, math.Round(area/float64(busy)*100) / 100
}
