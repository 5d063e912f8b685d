package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
)

// nodesStatus asks n for GET /v1/cluster/nodes.
func nodesStatus(t *testing.T, tc *testcluster.Cluster, n *testcluster.Node) api.NodesStatus {
	t.Helper()
	var out api.NodesStatus
	if code, err := tc.Do(http.MethodGet, tc.URL(n)+"/v1/cluster/nodes", nil, &out); err != nil || code != http.StatusOK {
		t.Fatalf("GET /v1/cluster/nodes via %s: %d %v", n.ID, code, err)
	}
	return out
}

// TestNodesStatus_EveryMemberFromAnyNode_AndAKilledOneUnreachable: the
// status page's one request shows every member's own status, from any node;
// a killed member shows as unreachable with a reason, and the survivors'
// leadership changes name the new leader once one is elected.
func TestNodesStatus_EveryMemberFromAnyNode_AndAKilledOneUnreachable(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	leader := tc.Leader(10 * time.Second)
	testkit.EventuallyErr(t, 10*time.Second, 20*time.Millisecond, "every member's status through every node", func() error {
		for _, n := range tc.Running() {
			got := nodesStatus(t, tc, n)
			if got.Node != n.ID || len(got.Nodes) != 3 {
				return fmt.Errorf("via %s: node %q, %d members", n.ID, got.Node, len(got.Nodes))
			}
			for _, m := range got.Nodes {
				if !m.Reachable || m.Status == nil || m.Status.Node != m.ID || m.Status.Leader != leader.ID || m.HTTPAddr == "" {
					return fmt.Errorf("via %s: member %+v", n.ID, m)
				}
				st := m.Status
				wantState := "Follower"
				if m.ID == leader.ID {
					wantState = "Leader"
				}
				if st.State != wantState || st.Term == 0 || st.AppliedIndex == 0 || len(st.LeaderChanges) == 0 || st.LeaderChanges[0].Leader != leader.ID || st.LeaderChanges[0].Term != st.Term {
					return fmt.Errorf("via %s: %s is %s in term %d, applied %d, changes %+v", n.ID, m.ID, st.State, st.Term, st.AppliedIndex, st.LeaderChanges)
				}
				if (m.ID == leader.ID) != (st.LastContactMs == 0) || st.LastContactMs < 0 {
					return fmt.Errorf("via %s: %s last contact %d ms", n.ID, m.ID, st.LastContactMs)
				}
			}
		}
		return nil
	})

	tc.Kill(leader.ID)
	newLeader := tc.Leader(10 * time.Second)
	testkit.EventuallyErr(t, 10*time.Second, 20*time.Millisecond, "the killed leader unreachable, the new one named", func() error {
		got := nodesStatus(t, tc, newLeader)
		for _, m := range got.Nodes {
			switch {
			case m.ID == leader.ID && (m.Reachable || m.Status != nil || m.Error == ""):
				return fmt.Errorf("killed %s: %+v", m.ID, m)
			case m.ID != leader.ID && (!m.Reachable || m.Status.Leader != newLeader.ID):
				return fmt.Errorf("survivor %s: %+v", m.ID, m)
			case m.ID != leader.ID && m.Status.LeaderChanges[0].Leader != newLeader.ID:
				return fmt.Errorf("survivor %s's latest change: %+v", m.ID, m.Status.LeaderChanges)
			}
		}
		return nil
	})
}

// A wrong token is refused by the node asked, before it asks anyone.
func TestNodesStatus_WrongTokenRefused(t *testing.T) {
	tc := authCluster(t, 1)
	r := asWrong.MustCall(t, http.MethodGet, tc.URL(tc.Running()[0])+"/v1/cluster/nodes", nil)
	if r.Status != http.StatusUnauthorized || !strings.Contains(string(r.Body), api.ProblemUnauthorized) {
		t.Fatalf("wrong token: %d %s", r.Status, r.Body)
	}
}
