package main

import (
	"strings"
	"testing"

	"github.com/ticketd/ticketd/api"
)

// member is a member's own answer to GET /v1/cluster as the status table
// reads it; version "" and level 0 are a binary from before feature levels,
// which answers without them.
func member(id, state, version string, level, clusterLevel int) api.NodeStatus {
	return api.NodeStatus{ID: id, HTTPAddr: "10.0.0." + id[1:] + ":8080", Voter: true, Reachable: true,
		Status: &api.ClusterStatus{
			Node: id, State: state, Leader: "n1", Term: 4, CommitIndex: 120, AppliedIndex: 120, Ready: true,
			LastContactMs: 12, Storage: api.NodeStorage{Healthy: true, FreeBytes: 80 << 30, LogBytes: 4 << 20, SnapshotBytes: 1 << 20},
			Version: version, FeatureLevel: level, ClusterFeatureLevel: clusterLevel,
		}}
}

func unreachable(id string) api.NodeStatus {
	return api.NodeStatus{ID: id, HTTPAddr: "10.0.0." + id[1:] + ":8080", Voter: true, Error: "connection refused"}
}

// During a rolling upgrade the table shows each member's release and level
// ("-" for an older binary, which answers without them), and the line under
// the summary says the cluster is upgrading and who holds it back.
func TestStatusTable_RollingUpgrade_VersionsLevelsAndWhoIsBehind(t *testing.T) {
	for _, c := range []struct {
		golden, wantLine string
		nodes            []api.NodeStatus
	}{
		{
			"status-upgrading.txt",
			"cluster feature level 1 of 3: upgrading, 2 of 5 nodes behind (n3 old binary level 1, n5 old binary level 1); level of n4 unknown (did not answer)",
			[]api.NodeStatus{
				member("n1", "Leader", "v0.31.0", 3, 1), member("n2", "Follower", "v0.31.0-2-g1a2b3c4", 3, 1),
				member("n3", "Follower", "", 0, 0), unreachable("n4"), member("n5", "Follower", "", 0, 0),
			},
		},
		{
			"status-upgraded-level-rising.txt",
			"cluster feature level 1 of 3: upgrading, every node that answered knows 3; the leader raises the level within seconds",
			[]api.NodeStatus{member("n1", "Leader", "v0.31.0", 3, 1), member("n2", "Follower", "v0.31.0", 3, 1), member("n3", "Follower", "v0.31.0", 3, 1)},
		},
		{
			"status-upgraded.txt",
			"cluster feature level 3 (every node at 3)",
			// n3 has not applied the raise yet: the cluster's level is
			// the highest any member applied.
			[]api.NodeStatus{member("n1", "Leader", "v0.31.0", 3, 3), member("n2", "Follower", "v0.31.0", 3, 3), member("n3", "Follower", "v0.31.0", 3, 1)},
		},
		{
			"status-old-cluster.txt",
			"cluster feature level 1 (every node at 1)",
			[]api.NodeStatus{member("n1", "Leader", "", 0, 0), member("n2", "Follower", "", 0, 0), member("n3", "Follower", "", 0, 0)},
		},
	} {
		var b strings.Builder
		if err := writeStatusTable(&b, api.NodesStatus{Node: "n1", Nodes: c.nodes}, capacity{}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		t.Logf("%s:\n%s", c.golden, out)
		sec := sections(out)
		if lines := strings.Split(sec[0], "\n"); len(lines) != 2 || lines[1] != c.wantLine {
			t.Errorf("%s: summary\n%s\nwant its second line %q", c.golden, sec[0], c.wantLine)
		}
		_, rows := tableRows(t, sec[1])
		for i, r := range rows {
			st := c.nodes[i].Status
			wantVersion, wantLevel := "-", "-"
			if st != nil && st.Version != "" {
				wantVersion = st.Version
			}
			if st != nil && st.FeatureLevel != 0 {
				wantLevel = strings.TrimSpace(cellLevel(st))
			}
			if r["MEMBER"] != c.nodes[i].ID || r["VERSION"] != wantVersion || r["LEVEL"] != wantLevel {
				t.Errorf("%s: row %d: %v; want VERSION %q and LEVEL %q", c.golden, i, r, wantVersion, wantLevel)
			}
		}
		checkGolden(t, c.golden, out)
	}
}

func TestLevelSummary_NoMemberAnswered(t *testing.T) {
	got := levelSummary(api.NodesStatus{Node: "n1", Nodes: []api.NodeStatus{unreachable("n1"), unreachable("n2")}})
	if got != "cluster feature level unknown: no member answered" {
		t.Errorf("levelSummary = %q", got)
	}
}
