package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/api"
)

// The disaster-recovery standby in `ticketd status` (issue #34): a line
// above everything when the cluster is fenced (its standby was promoted, it
// serves nothing), the standby's row in the members table marked "standby"
// rather than "no" voter, a section with its recorded state and, from the
// leader's answer, its replication, and the promotions this data went
// through.

// clusterStandby is what the members' answers say of the standby, the
// fence and the promotions. All three come from the log, which every member
// applies; the leader's answer is preferred (it alone has the standby's
// replication, and it is the most recent), then the gathering node's own,
// then any member's that answered.
type clusterStandby struct {
	standby    *api.StandbyStatus
	fence      *api.Fence
	promotions []api.Promotion
}

func standbyOf(nodes api.NodesStatus) clusterStandby {
	var answers []*api.ClusterStatus
	for _, n := range nodes.Nodes {
		if n.Status != nil {
			answers = append(answers, n.Status)
		}
	}
	rank := func(st *api.ClusterStatus) int {
		switch {
		case st.Standby != nil && st.Standby.Seen != nil:
			return 0
		case st.State == "Leader":
			return 1
		case st.Node == nodes.Node:
			return 2
		}
		return 3
	}
	slices.SortStableFunc(answers, func(a, b *api.ClusterStatus) int { return rank(a) - rank(b) })
	var out clusterStandby
	if len(answers) > 0 {
		out.standby = answers[0].Standby
	}
	for _, st := range answers {
		if out.fence == nil {
			out.fence = st.Fence
		}
		if len(st.Promotions) > len(out.promotions) {
			out.promotions = st.Promotions
		}
	}
	return out
}

// fenceLine says, first thing, that this cluster serves nothing.
func fenceLine(f *api.Fence) string {
	var b strings.Builder
	fmt.Fprintf(&b, "FENCED: standby %s was promoted (recorded at index %d", f.Standby, f.Index)
	if f.At != "" {
		b.WriteString(", " + f.At)
	}
	if f.Reason != "" {
		b.WriteString(": " + f.Reason)
	}
	b.WriteString("); this cluster serves nothing: point clients at the promoted node")
	return b.String()
}

// cellVoter is a member's VOTER cell: the standby is a non-voter of its own
// kind.
func cellVoter(n api.NodeStatus, sb *api.StandbyStatus) string {
	if !n.Voter && ((sb != nil && n.ID == sb.ID) || (n.Status != nil && n.Status.ThisNodeStandby)) {
		return "standby"
	}
	return cellBool(n.Voter)
}

// writeStandby prints, after a blank line, the standby's row: its state as
// the log records it, since which entry and when, why it fell out of sync
// and how often, its bound and timeout, and from the leader's answer what
// it acknowledged, how far it lags and how long ago it last made progress
// ("-" when no leader answered, "never" when it made none in this term),
// and the latest certificate it stored: the horizon a promotion would weigh
// the primary's loss against, before the clock skew ("-" when none yet).
func writeStandby(b *strings.Builder, sb *api.StandbyStatus) error {
	if sb == nil {
		return nil
	}
	t := newTable(left("STANDBY"), left("STATE"), right("BOUND"), right("TIMEOUT"), right("SINCE INDEX"), left("SINCE"),
		right("OUT OF SYNC"), right("ACK INDEX"), right("LAG"), right("LAST PROGRESS"), left("CERTIFIED UNTIL"), left("REASON"))
	ack, lag, progress, certified := "-", "-", "-", "-"
	if s := sb.Seen; s != nil {
		ack, lag, progress, certified = cellUint(s.AckIndex), cellUint(s.LagEntries), "never", orDash(s.CertifiedUntil)
		if s.LastProgressMs >= 0 {
			progress = cellMs(s.LastProgressMs)
		}
	}
	t.row(sb.ID, sb.State, cellInt(sb.Bound), cellMs(sb.TimeoutMs), cellUint(sb.SinceIndex), orDash(sb.Since),
		cellInt(sb.OutOfSyncCount), ack, lag, progress, certified, sb.Reason)
	b.WriteString("\n")
	return t.write(b)
}

// writePromotions prints, after a blank line, the promotions this data
// went through: which standby, at which entry, by how much every sequence
// was advanced, the state it was recorded in then, and the fencing floor.
func writePromotions(b *strings.Builder, ps []api.Promotion) error {
	if len(ps) == 0 {
		return nil
	}
	t := newTable(left("PROMOTED"), right("AT INDEX"), right("ADVANCE"), left("STATE THEN"), right("TOKEN FLOOR"), left("AT"))
	for _, p := range ps {
		t.row(p.Standby, cellUint(p.AtIndex), cellInt(p.Advance), p.State, cellUint(p.TokenFloor), orDash(p.At))
	}
	b.WriteString("\n")
	return t.write(b)
}
