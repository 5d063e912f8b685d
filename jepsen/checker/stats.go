package checker

import (
	"math"
	"sort"
)

// Quantiles of latencies in milliseconds.
type Quantiles struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
	Max  float64 `json:"max_ms"`
}

// quantiles of durations in ns.
func quantiles(ns []int64) Quantiles {
	if len(ns) == 0 {
		return Quantiles{}
	}
	s := append([]int64(nil), ns...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		return ms(s[min(max(i, 0), len(s)-1)])
	}
	return Quantiles{N: len(s), P50: at(0.5), P90: at(0.9), P99: at(0.99), P999: at(0.999), Max: ms(s[len(s)-1])}
}

// opKind is the operation kind counts and latencies are kept under: the
// kind, its workload if not the main one ("reserve/many"), and for a
// restored cluster its name ("reserve@B1").
func opKind(o *Op) string {
	f := o.F
	if o.Protocol != "" {
		f += "/" + o.Protocol
	}
	if o.Workload != "" {
		f += "/" + o.Workload
	}
	if o.Cluster != "" {
		f += "@" + o.Cluster
	}
	return f
}

// Latency returns latency quantiles per operation kind and outcome (final
// reads excluded).
func Latency(ops []Op) map[string]map[string]Quantiles {
	lat := map[string]map[string][]int64{}
	for i := range ops {
		o := &ops[i]
		if o.Final {
			continue
		}
		f := opKind(o)
		if lat[f] == nil {
			lat[f] = map[string][]int64{}
		}
		lat[f][o.Outcome] = append(lat[f][o.Outcome], o.Complete-o.Invoke)
	}
	out := map[string]map[string]Quantiles{}
	for f, m := range lat {
		out[f] = map[string]Quantiles{}
		for oc, v := range m {
			out[f][oc] = quantiles(v)
		}
	}
	return out
}

// Counts returns operation counts per kind and outcome (final reads
// excluded) and the IDs in acknowledged ranges.
func Counts(ops []Op) (map[string]map[string]int, int64) {
	c := map[string]map[string]int{}
	var ids int64
	for i := range ops {
		o := &ops[i]
		if o.Final {
			continue
		}
		f := opKind(o)
		if c[f] == nil {
			c[f] = map[string]int{OK: 0, Fail: 0, Unknown: 0}
		}
		c[f][o.Outcome]++
		if o.IsRange() {
			ids += o.Last - o.First + 1
		}
	}
	return c, ids
}

// KindAvailability aggregates the nemeses of one kind.
type KindAvailability struct {
	Runs int `json:"runs"`
	// MaxGapMs is the longest stretch inside any window of this kind
	// (injection to recovery) with no successful reservation.
	MaxGapMs  float64 `json:"max_gap_ms"`
	MeanGapMs float64 `json:"mean_gap_ms"`
	// Recovery: from the heal to the completion of the first successful
	// reservation invoked after it.
	MaxRecoveryMs  float64 `json:"max_recovery_ms"`
	MeanRecoveryMs float64 `json:"mean_recovery_ms"`
	// Unrecovered counts heals after which no reservation succeeded before
	// the workload ended; ClusterUnrecovered those after which the cluster
	// was not seen healthy within the harness's bound.
	Unrecovered        int `json:"unrecovered,omitempty"`
	ClusterUnrecovered int `json:"cluster_unrecovered,omitempty"`
}

// NemesisAvailability is one nemesis window's figures.
type NemesisAvailability struct {
	Kind       string  `json:"kind"`
	StartMs    float64 `json:"start_ms"`
	HealedMs   float64 `json:"healed_ms"`
	GapMs      float64 `json:"gap_ms"`
	RecoveryMs float64 `json:"recovery_ms"` // -1: no success after the heal
}

// AvailabilityResult holds the availability figures of a run.
type AvailabilityResult struct {
	// LongestGapMs is the longest stretch of the workload with no
	// successful reservation, and where it started.
	LongestGapMs     float64                     `json:"longest_gap_ms"`
	LongestGapFromMs float64                     `json:"longest_gap_from_ms"`
	ByKind           map[string]KindAvailability `json:"by_kind"`
	Windows          []NemesisAvailability       `json:"windows"`
}

// Availability measures gaps between successful reservations (raw and SDK):
// over the whole workload, and inside each nemesis window from injection to
// recovery, plus the time from each heal to the first success after it.
func Availability(h *History) AvailabilityResult {
	var done []int64
	var okOps []*Op
	for i := range h.Ops {
		o := &h.Ops[i]
		if o.IsRange() && !o.Final {
			okOps = append(okOps, o)
			done = append(done, o.Complete)
		}
	}
	sort.Slice(done, func(i, j int) bool { return done[i] < done[j] })
	sort.Slice(okOps, func(i, j int) bool { return okOps[i].Invoke < okOps[j].Invoke })
	end := h.Meta.WorkloadEnd
	if end == 0 && len(done) > 0 {
		end = done[len(done)-1]
	}
	res := AvailabilityResult{ByKind: map[string]KindAvailability{}}
	res.LongestGapMs, res.LongestGapFromMs = longestGap(done, 0, end)

	type acc struct {
		gaps, recs []float64
		unrec, cl  int
	}
	per := map[string]*acc{}
	for i := range h.Nemeses {
		n := &h.Nemeses[i]
		a := per[n.Kind]
		if a == nil {
			a = &acc{}
			per[n.Kind] = a
		}
		wEnd := min(n.End(), end)
		gap, _ := longestGap(done, n.Start, max(wEnd, n.Start))
		rec := -1.0
		j := sort.Search(len(okOps), func(k int) bool { return okOps[k].Invoke >= n.Healed })
		best := int64(-1)
		for ; j < len(okOps); j++ {
			if best < 0 || okOps[j].Complete < best {
				best = okOps[j].Complete
			}
			if okOps[j].Invoke > best {
				break // later invocations cannot complete earlier than best
			}
		}
		if best >= 0 {
			rec = ms(best - n.Healed)
			a.recs = append(a.recs, rec)
		} else {
			a.unrec++
		}
		if n.Recovered == 0 {
			a.cl++
		}
		a.gaps = append(a.gaps, gap)
		res.Windows = append(res.Windows, NemesisAvailability{Kind: n.Kind, StartMs: ms(n.Start), HealedMs: ms(n.Healed), GapMs: gap, RecoveryMs: rec})
	}
	for k, a := range per {
		ka := KindAvailability{Runs: len(a.gaps), Unrecovered: a.unrec, ClusterUnrecovered: a.cl}
		ka.MaxGapMs, ka.MeanGapMs = maxMean(a.gaps)
		ka.MaxRecoveryMs, ka.MeanRecoveryMs = maxMean(a.recs)
		res.ByKind[k] = ka
	}
	return res
}

// longestGap is the longest interval inside [from, to] containing no time
// of done (sorted), and where it starts.
func longestGap(done []int64, from, to int64) (float64, float64) {
	if to <= from {
		return 0, ms(from)
	}
	i := sort.Search(len(done), func(k int) bool { return done[k] >= from })
	prev := from
	var best, bestFrom int64
	for ; i < len(done) && done[i] <= to; i++ {
		if d := done[i] - prev; d > best {
			best, bestFrom = d, prev
		}
		prev = done[i]
	}
	if d := to - prev; d > best {
		best, bestFrom = d, prev
	}
	return ms(best), ms(bestFrom)
}

func maxMean(v []float64) (float64, float64) {
	if len(v) == 0 {
		return 0, 0
	}
	var mx, sum float64
	for _, x := range v {
		mx = max(mx, x)
		sum += x
	}
	return mx, math.Round(sum/float64(len(v))*1000) / 1000
}
