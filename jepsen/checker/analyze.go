package checker

import (
	"fmt"
	"sort"
)

// Options tune Analyze.
type Options struct {
	Porcupine     PorcupineOptions
	SkipPorcupine bool
}

// Results is every figure of a run; results.json holds it.
type Results struct {
	Valid bool `json:"valid"`
	// InvalidReasons says which checks failed.
	InvalidReasons []string `json:"invalid_reasons,omitempty"`
	// FirstViolationMs is the earliest moment (ms since the start) at which
	// any violation was visible in the history.
	FirstViolationMs float64                   `json:"first_violation_ms,omitempty"`
	Ops              int                       `json:"ops"`
	Counts           map[string]map[string]int `json:"counts"`
	IDsIssued        int64                     `json:"ids_issued"`
	Sequences        []string                  `json:"sequences"`
	WellFormed       WellFormedResult          `json:"well_formed"`
	Uniqueness       UniquenessResult          `json:"uniqueness"`
	Lost             LostResult                `json:"lost"`
	Linearizable     RealTimeResult            `json:"linearizable_sorted"`
	Reads            ReadResult                `json:"reads"`
	Raises           RaiseResult               `json:"raises"`
	UnknownRaises    UnknownRaiseResult        `json:"unknown_raises"`
	Porcupine        *PorcupineResult          `json:"porcupine,omitempty"`
	Leases           LeaseResult               `json:"leases"`
	Snowflake        SnowflakeResult           `json:"snowflake"`
	NodeSnowflake    NodeSnowflakeResult       `json:"node_snowflake"`
	Migration        MigrationResult           `json:"migration"`
	Availability     AvailabilityResult        `json:"availability"`
	// Workloads are the figures of each workload tagged in the history
	// (the many-sequences workload: "many").
	Workloads   map[string]WorkloadFigures      `json:"workloads,omitempty"`
	Latency     map[string]map[string]Quantiles `json:"latency"`
	NemesisRuns map[string]int                  `json:"nemesis_runs"`
}

// Analyze runs every checker on h.
func Analyze(h *History, opt Options) Results {
	r := Results{Ops: len(h.Ops), NemesisRuns: map[string]int{}}
	r.Counts, r.IDsIssued = Counts(h.Ops)
	seqs := map[string]bool{}
	for i := range h.Ops {
		if h.Ops[i].Seq != "" {
			seqs[h.Ops[i].Seq] = true
		}
	}
	r.Sequences = sortedKeys(seqs)
	r.WellFormed = CheckWellFormed(h.Ops)
	r.Uniqueness = CheckUniqueness(h.Ops)
	r.Lost = CheckLost(h.Ops)
	r.Linearizable = CheckRealTime(h.Ops)
	r.Reads = CheckReads(h.Ops)
	r.Raises = CheckRaises(h.Ops)
	r.UnknownRaises = CheckUnknownRaises(h.Ops, h.Audit)
	r.Leases = CheckLeases(h.Ops)
	r.Snowflake = CheckSnowflake(h.Ops)
	r.NodeSnowflake = CheckNodeSnowflake(h.Ops, h.Audit)
	r.Migration = CheckMigration(h.Ops)
	if !opt.SkipPorcupine {
		p := CheckPorcupine(h.Ops, opt.Porcupine)
		r.Porcupine = &p
	}
	r.Availability = Availability(h)
	r.Workloads = Workloads(h.Ops)
	r.Latency = Latency(h.Ops)
	for _, n := range h.Nemeses {
		r.NemesisRuns[n.Kind]++
	}

	var reasons []string
	var seen []float64
	if !r.WellFormed.Valid {
		reasons = append(reasons, fmt.Sprintf("well-formed: %d malformed answers", r.WellFormed.Malformed))
		for _, v := range r.WellFormed.Examples[:1] {
			seen = append(seen, v.SeenAtMs)
		}
	}
	if !r.Uniqueness.Valid {
		reasons = append(reasons, fmt.Sprintf("uniqueness: %d IDs handed out twice in %d overlapping ranges", r.Uniqueness.DuplicatedIDs, r.Uniqueness.OverlappingRanges))
		seen = append(seen, r.Uniqueness.FirstSeenMs)
	}
	if !r.Lost.Checked {
		reasons = append(reasons, fmt.Sprintf("lost: no successful final read of %v, the check could not be made", r.Lost.Unread))
	}
	if r.Lost.LostRanges > 0 {
		reasons = append(reasons, fmt.Sprintf("lost: %d acknowledged ranges (%d IDs) at or above the final next", r.Lost.LostRanges, r.Lost.LostIDs))
	}
	if !r.Linearizable.Valid {
		reasons = append(reasons, fmt.Sprintf("linearizable (sorted check): %d ranges below a range acknowledged before they were invoked", r.Linearizable.Violations))
		seen = append(seen, r.Linearizable.FirstSeenMs)
	}
	if !r.Reads.Valid {
		reasons = append(reasons, fmt.Sprintf("reads: %d stale and %d non-monotonic reads of next", r.Reads.Stale, r.Reads.NonMonotonic))
		seen = append(seen, r.Reads.FirstSeenMs)
	}
	if !r.Raises.Valid {
		reasons = append(reasons, fmt.Sprintf("raises: %d ranges or reads at or below a raise acknowledged before they were invoked", r.Raises.Below))
		seen = append(seen, r.Raises.FirstSeenMs)
	}
	if !r.UnknownRaises.Valid {
		reasons = append(reasons, fmt.Sprintf("unknown raises: %d ranges at or below a raise with an unknown outcome that a read completed before they were invoked showed applied", r.UnknownRaises.Below))
		seen = append(seen, r.UnknownRaises.FirstSeenMs)
	}
	if r.Porcupine != nil && !r.Porcupine.Valid {
		reasons = append(reasons, fmt.Sprintf("porcupine: %d of %d windows not linearizable", r.Porcupine.Illegal, r.Porcupine.Windows))
		seen = append(seen, r.Porcupine.FirstSeenMs)
	}
	if !r.Leases.Valid {
		reasons = append(reasons, fmt.Sprintf("leases: %d answers not idempotent per request id, %d tokens not above a grant completed before, %d worker ids granted while held",
			r.Leases.NotIdempotent, r.Leases.TokenRegressions, r.Leases.DoubleGrants))
		seen = append(seen, r.Leases.FirstSeenMs)
	}
	if !r.Snowflake.Valid {
		reasons = append(reasons, fmt.Sprintf("snowflake: %d IDs issued twice, %d not increasing per generator, %d overlapping tenures of one worker id", r.Snowflake.Duplicates, r.Snowflake.NonIncreasing, r.Snowflake.Overlaps))
		seen = append(seen, r.Snowflake.FirstSeenMs)
	}
	if ns := r.NodeSnowflake; !ns.Valid {
		reasons = append(reasons, fmt.Sprintf("server-made snowflake: %d IDs served twice, %d requests out of order in a tenure, %d requests below IDs served before they were sent, %d IDs below an earlier tenure's, %d below their floor, %d past their lease's end bound, %d requests after a later tenure of the worker id served, %d answers naming a lease not theirs",
			ns.Duplicates, ns.OutOfOrder, ns.BelowEarlierServed, ns.BelowEarlierTenure, ns.BelowFloor, ns.PastEnd, ns.AfterLease, ns.Misnamed))
		seen = append(seen, ns.FirstSeenMs)
	}
	if !r.Migration.Valid {
		m := r.Migration
		reasons = append(reasons, fmt.Sprintf("migration: %d IDs issued by both clusters, %d twice by a restored cluster, %d ranges not lifted, %d restores accepted on a non-empty cluster, %d lease tokens not above the main cluster's",
			m.CrossDuplicates, m.Duplicates, m.NotLifted, m.SecondAccepted, m.TokensNotAbove))
		seen = append(seen, m.FirstSeenMs)
	}
	r.InvalidReasons = reasons
	r.Valid = len(reasons) == 0
	if len(seen) > 0 {
		sort.Float64s(seen)
		r.FirstViolationMs = seen[0]
	}
	return r
}

// QuickCheck runs the cheap safety checks (no porcupine, no lost check) on
// a history still being written, for stopping a run at its first violation.
// It returns "" while the history is valid.
func QuickCheck(ops []Op) string {
	if r := CheckWellFormed(ops); !r.Valid {
		return fmt.Sprintf("malformed answer: %s", r.Examples[0].Detail)
	}
	if r := CheckUniqueness(ops); !r.Valid {
		return fmt.Sprintf("duplicate: %s (seq %s)", r.Examples[0].Detail, r.Examples[0].Seq)
	}
	if r := CheckRealTime(ops); !r.Valid {
		return fmt.Sprintf("not linearizable: %s (seq %s)", r.Examples[0].Detail, r.Examples[0].Seq)
	}
	if r := CheckRaises(ops); !r.Valid {
		return fmt.Sprintf("below a raise: %s (seq %s)", r.Examples[0].Detail, r.Examples[0].Seq)
	}
	if r := CheckReads(ops); !r.Valid {
		return fmt.Sprintf("stale read: %s (seq %s)", r.Examples[0].Detail, r.Examples[0].Seq)
	}
	if r := CheckLeases(ops); !r.Valid {
		return fmt.Sprintf("lease: %s (namespace %s)", r.Examples[0].Detail, r.Examples[0].Seq)
	}
	if r := CheckSnowflake(ops); !r.Valid {
		return fmt.Sprintf("snowflake: %s", r.Examples[0].Detail)
	}
	if r := CheckMigration(ops); !r.Valid {
		return fmt.Sprintf("migration: %s (%s)", r.Examples[0].Detail, r.Examples[0].Seq)
	}
	return ""
}
