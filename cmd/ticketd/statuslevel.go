package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ticketd/ticketd/api"
)

// The feature levels in `ticketd status`: each member's release and level
// (from its own GET /v1/cluster), and one line saying the cluster's level
// and, while it is below the highest a member knows, that the cluster is
// upgrading and which members hold it back.

// memberLevel is the level a member counts as: what it reports, or the
// base level for a binary from before feature levels (it answers without
// one), which is how the leader counts it too.
func memberLevel(st *api.ClusterStatus) int {
	if st.FeatureLevel > 0 {
		return st.FeatureLevel
	}
	return api.BaseFeatureLevel
}

// cellVersion and cellLevel are a member's release and level in the table:
// "-" for a member that did not answer or whose binary reports none.
func cellVersion(st *api.ClusterStatus) string {
	if st == nil {
		return "-"
	}
	return orDash(st.Version)
}

func cellLevel(st *api.ClusterStatus) string {
	if st == nil || st.FeatureLevel == 0 {
		return "-"
	}
	return strconv.Itoa(st.FeatureLevel)
}

// levelSummary is the line under the cluster summary, for example
//
//	cluster feature level 1 of 3: upgrading, 2 of 5 nodes behind (n3 v0.30.0 level 1, n5 old binary level 1)
//	cluster feature level 3 (every node at 3)
//
// The cluster's level is the highest any member that answered has applied
// (the level only rises, and a member that lags has not applied it yet);
// "of N" is the highest level a member knows. A member that did not answer
// is named, since the level cannot rise past a member the leader cannot
// ask either.
func levelSummary(nodes api.NodesStatus) string {
	clusterLevel, highest, answered := 0, 0, 0
	var unreachable []string
	for _, n := range nodes.Nodes {
		if n.Status == nil {
			unreachable = append(unreachable, n.ID)
			continue
		}
		answered++
		clusterLevel = max(clusterLevel, n.Status.ClusterFeatureLevel)
		highest = max(highest, memberLevel(n.Status))
	}
	if answered == 0 {
		return "cluster feature level unknown: no member answered"
	}
	if clusterLevel == 0 {
		// Only binaries from before feature levels answered: their
		// cluster is at the base level by definition.
		clusterLevel = api.BaseFeatureLevel
	}
	var behind []string
	for _, n := range nodes.Nodes {
		if n.Status != nil && memberLevel(n.Status) < highest {
			behind = append(behind, behindName(n.ID, n.Status))
		}
	}
	var b strings.Builder
	switch {
	case len(behind) > 0:
		fmt.Fprintf(&b, "cluster feature level %d of %d: upgrading, %d of %d nodes behind (%s)",
			clusterLevel, highest, len(behind), len(nodes.Nodes), strings.Join(behind, ", "))
	case clusterLevel < highest:
		fmt.Fprintf(&b, "cluster feature level %d of %d: upgrading, every node that answered knows %d; the leader raises the level within seconds",
			clusterLevel, highest, highest)
	case len(unreachable) > 0:
		fmt.Fprintf(&b, "cluster feature level %d (every node that answered at %d)", clusterLevel, highest)
	default:
		fmt.Fprintf(&b, "cluster feature level %d (every node at %d)", clusterLevel, highest)
	}
	if len(unreachable) > 0 {
		fmt.Fprintf(&b, "; level of %s unknown (did not answer)", strings.Join(unreachable, ", "))
	}
	return b.String()
}

// behindName names a member behind the highest level: its release and
// level, or "old binary" for one that reports neither.
func behindName(id string, st *api.ClusterStatus) string {
	if st.FeatureLevel == 0 {
		return fmt.Sprintf("%s old binary level %d", id, api.BaseFeatureLevel)
	}
	return fmt.Sprintf("%s %s level %d", id, orDash(st.Version), st.FeatureLevel)
}
