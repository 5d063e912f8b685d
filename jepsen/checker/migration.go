package checker

import (
	"fmt"
	"sort"
)

// Migration: a backup of the main cluster, taken under load, restored into
// a new cluster with an advance; both clusters then keep issuing IDs of the
// same sequences and leases of the same namespaces.

// RestoreRecord is one restore attempt, for the report.
type RestoreRecord struct {
	Cluster  string  `json:"cluster"`
	Second   bool    `json:"second"`
	Outcome  string  `json:"outcome"`
	Status   int     `json:"status,omitempty"`
	Err      string  `json:"error,omitempty"`
	Advance  int64   `json:"advance"`
	AtMs     float64 `json:"at_ms"`
	Accepted bool    `json:"accepted"`
}

// MigrationResult: the restored clusters never issued an ID the main
// cluster issued, nor one twice, and their lease tokens lie above every
// token the main cluster granted before the backup.
type MigrationResult struct {
	Valid bool `json:"valid"`
	// Migrations counts the backups taken (ok), Restores the restores
	// that were accepted.
	Migrations int             `json:"migrations"`
	Restores   int             `json:"restores"`
	Attempts   []RestoreRecord `json:"attempts,omitempty"`
	// Ranges and IDs count what the restored clusters acknowledged,
	// Leases their ok lease grants.
	Ranges int   `json:"ranges"`
	IDs    int64 `json:"ids"`
	Leases int   `json:"leases"`
	// CrossDuplicates: IDs acknowledged by both the main and a restored
	// cluster; Duplicates: IDs acknowledged twice by one restored cluster;
	// NotLifted: ranges of a restored cluster at or below what the main
	// cluster acknowledged before the backup plus the advance;
	// SecondAccepted: restores accepted by a cluster that had already
	// issued IDs; TokensNotAbove: grants of a restored cluster whose token
	// is not above every token the main cluster granted (in that
	// namespace) before the backup was invoked.
	CrossDuplicates int64       `json:"cross_duplicates"`
	Duplicates      int64       `json:"duplicates"`
	NotLifted       int         `json:"not_lifted"`
	SecondAccepted  int         `json:"second_accepted"`
	TokensNotAbove  int         `json:"tokens_not_above"`
	Examples        []Violation `json:"examples,omitempty"`
	FirstSeenMs     float64     `json:"first_seen_ms,omitempty"`
}

// CheckMigration checks every restored cluster against the main one.
func CheckMigration(ops []Op) MigrationResult {
	r := MigrationResult{Valid: true}
	vs := newViolations()
	note := vs.note
	backups := map[string]*Op{}
	mainRanges := map[string][]*Op{}
	restored := map[string]map[string][]*Op{} // cluster -> seq -> ranges
	var mainTokens, bGrants []*Op
	var restores []*Op
	for i := range ops {
		o := &ops[i]
		switch {
		case o.F == FBackup && o.Outcome == OK:
			if b := backups[o.Migration]; b == nil || o.Invoke < b.Invoke {
				backups[o.Migration] = o
			}
		case o.F == FRestore:
			restores = append(restores, o)
		case o.isRangeAny() && o.Cluster == "":
			mainRanges[o.Seq] = append(mainRanges[o.Seq], o)
		case o.isRangeAny():
			if restored[o.Cluster] == nil {
				restored[o.Cluster] = map[string][]*Op{}
			}
			restored[o.Cluster][o.Seq] = append(restored[o.Cluster][o.Seq], o)
		case (o.F == FAcquire || o.F == FSFLease) && o.Outcome == OK && o.Malformed == "" && o.Token != 0:
			if o.Cluster == "" {
				mainTokens = append(mainTokens, o)
			} else if o.F == FAcquire {
				bGrants = append(bGrants, o)
			}
		}
	}
	r.Migrations = len(backups)
	advance := map[string]int64{}
	sort.Slice(restores, func(i, j int) bool { return restores[i].Invoke < restores[j].Invoke })
	for _, o := range restores {
		rec := RestoreRecord{Cluster: o.Cluster, Second: o.Second, Outcome: o.Outcome, Status: o.Status, Err: o.Err,
			Advance: o.Advance, AtMs: ms(o.Invoke), Accepted: o.Outcome == OK}
		r.Attempts = append(r.Attempts, rec)
		if o.Outcome != OK {
			continue
		}
		r.Restores++
		advance[o.Cluster] = max(advance[o.Cluster], o.Advance)
		if o.Second {
			r.SecondAccepted++
			note(o.Complete, Violation{Seq: o.Cluster, A: ref(o), Detail: fmt.Sprintf(
				"cluster %s accepted a restore after it had issued IDs (it must refuse: 409 conflict)", o.Cluster)})
		}
	}

	// Main ranges by first ID, with the running maximum of last IDs, to
	// find any that a restored range overlaps.
	type sorted struct {
		rs      []*Op
		maxLast []int64
	}
	mainSorted := map[string]*sorted{}
	for seq, rs := range mainRanges {
		sort.Slice(rs, func(i, j int) bool { return rs[i].First < rs[j].First })
		s := &sorted{rs: rs, maxLast: make([]int64, len(rs))}
		m := int64(-1 << 63)
		for i, o := range rs {
			m = max(m, o.Last)
			s.maxLast[i] = m
		}
		mainSorted[seq] = s
	}
	for _, cl := range sortedKeys(restored) {
		bk := backups[cl]
		for _, seq := range sortedKeys(restored[cl]) {
			rs := restored[cl][seq]
			sort.Slice(rs, func(i, j int) bool { return rs[i].First < rs[j].First })
			// What the main cluster acknowledged before the backup was
			// invoked is in the backup: the restored marks lie above it
			// plus the advance.
			lifted := int64(-1)
			if bk != nil && advance[cl] > 0 {
				var top int64
				for _, o := range mainRanges[seq] {
					if o.Complete < bk.Invoke {
						top = max(top, o.Last)
					}
				}
				if top > 0 {
					lifted = top + advance[cl]
				}
			}
			var cover *Op
			for _, o := range rs {
				r.Ranges++
				r.IDs += o.Last - o.First + 1
				if cover != nil && o.First <= cover.Last {
					n := min(o.Last, cover.Last) - o.First + 1
					r.Duplicates += n
					b := ref(cover)
					note(max(o.Complete, cover.Complete), Violation{Seq: seq, A: ref(o), B: &b, Detail: fmt.Sprintf(
						"cluster %s handed out IDs %d..%d twice", cl, o.First, min(o.Last, cover.Last))})
				}
				if cover == nil || o.Last > cover.Last {
					cover = o
				}
				if lifted >= 0 && o.First <= lifted {
					r.NotLifted++
					note(o.Complete, Violation{Seq: seq, A: ref(o), Detail: fmt.Sprintf(
						"cluster %s handed out %d..%d, not above %d (the main cluster's last ID acknowledged before the backup, plus the advance %d)",
						cl, o.First, o.Last, lifted, advance[cl])})
				}
				mr := mainSorted[seq]
				if mr == nil {
					continue
				}
				// the last main range starting at or below o.Last
				k := sort.Search(len(mr.rs), func(i int) bool { return mr.rs[i].First > o.Last }) - 1
				if k >= 0 && mr.maxLast[k] >= o.First {
					// find one overlapping main range for the example
					var m *Op
					for j := k; j >= 0; j-- {
						if mr.rs[j].Last >= o.First {
							m = mr.rs[j]
							break
						}
					}
					lo, hi := max(o.First, m.First), min(o.Last, m.Last)
					r.CrossDuplicates += hi - lo + 1
					b := ref(m)
					note(max(o.Complete, m.Complete), Violation{Seq: seq, A: ref(o), B: &b, Detail: fmt.Sprintf(
						"IDs %d..%d were handed out by both the main cluster and cluster %s", lo, hi, cl)})
				}
			}
		}
	}

	// Tokens of the restored clusters' grants against the main cluster's
	// grants completed before the backup was invoked.
	r.Leases = len(bGrants)
	for _, g := range bGrants {
		bk := backups[g.Cluster]
		if bk == nil {
			continue
		}
		var top *Op
		for _, m := range mainTokens {
			if m.Seq == g.Seq && m.Complete < bk.Invoke && (top == nil || m.Token > top.Token) {
				top = m
			}
		}
		if top != nil && g.Token <= top.Token {
			r.TokensNotAbove++
			b := ref(top)
			note(g.Complete, Violation{Seq: g.Seq, A: ref(g), B: &b, Detail: fmt.Sprintf(
				"cluster %s granted worker %d token %d, not above token %d that the main cluster granted (worker %d) before the backup",
				g.Cluster, g.worker(), g.Token, top.Token, top.worker())})
		}
	}
	r.Valid, r.Examples, r.FirstSeenMs = vs.verdict()
	return r
}
