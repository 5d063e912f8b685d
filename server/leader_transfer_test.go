package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/testcluster"
)

// A real node serves POST /v1/cluster/leader (issue 43, G4): asked through
// a follower, leadership goes to the voter named, which then serves; the
// node that leads already is answered 200 without a move.
func TestCluster_LeaderTransfer_ToTheNamedVoter_ThroughAnyNode(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	tc.WaitReady(10 * time.Second)
	l := tc.Leader(10 * time.Second)
	var target, via *testcluster.Node
	for _, n := range tc.Running() {
		if n == l {
			continue
		}
		if target == nil {
			target = n
		} else {
			via = n
		}
	}
	var got struct {
		Leader      string `json:"leader"`
		From        string `json:"from"`
		Transferred bool   `json:"transferred"`
	}
	status, err := tc.Do(http.MethodPost, tc.URL(via)+"/v1/cluster/leader", map[string]string{"to": target.ID}, &got)
	if err != nil || status != http.StatusOK {
		t.Fatalf("transfer to %s through %s: status %d, %v", target.ID, via.ID, status, err)
	}
	if got.Leader != target.ID || got.From != l.ID || !got.Transferred {
		t.Fatalf("answer %+v, want leader %s from %s, transferred", got, target.ID, l.ID)
	}
	if nl := tc.Leader(10 * time.Second); nl != target {
		t.Fatalf("the cluster is led by %s, want %s", nl.ID, target.ID)
	}
	tc.CreateSequence("after-transfer", map[string]any{})
	if _, status, err := testcluster.Reserve(target, "after-transfer", 10); err != nil || status != http.StatusOK {
		t.Fatalf("the new leader does not serve: status %d, %v", status, err)
	}

	status, err = tc.Do(http.MethodPost, tc.URL(l)+"/v1/cluster/leader", map[string]string{"to": target.ID}, &got)
	if err != nil || status != http.StatusOK || got.Transferred || got.Leader != target.ID {
		t.Fatalf("asking again for the leader it has: status %d, %+v, %v; want 200, not transferred", status, got, err)
	}
}
