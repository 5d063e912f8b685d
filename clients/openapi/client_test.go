package openapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/clients/openapi"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/server"
)

const (
	adminToken   = "admin-openapiclient-0123456789abcdef"
	reserveToken = "reserve-openapiclient-0123456789abcd"
)

// newClient is the generated client of node n's API, sending token as a
// bearer token (the generated client's own hook for headers).
func newClient(t *testing.T, tc *testcluster.Cluster, n *testcluster.Node, token string) *openapi.ClientWithResponses {
	t.Helper()
	c, err := openapi.NewClientWithResponses(tc.URL(n),
		openapi.WithHTTPClient(&http.Client{Timeout: 10 * time.Second}),
		openapi.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+token)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGeneratedClient_CreateReserveAndNotFound_OnARealCluster uses only the
// client generated from openapi.json against a real 3-node cluster with
// authentication on: it creates a sequence through a follower, reserves a
// range through a follower and one through the leader (disjoint, of the
// sizes asked, the follower's answer naming the leader), and reads the 404
// problem of an unknown sequence.
func TestGeneratedClient_CreateReserveAndNotFound_OnARealCluster(t *testing.T) {
	tokens := testcluster.Tokens(t, adminToken, reserveToken)
	tc := testcluster.NewWithOptions(t, 3, testcluster.Options{
		Token: adminToken,
		Tweak: func(id string, cfg *server.Config) { cfg.Tokens = tokens },
	})
	leader := tc.Leader(10 * time.Second)
	var follower *testcluster.Node
	for _, n := range tc.Running() {
		if n != leader {
			follower = n
			break
		}
	}
	ctx := context.Background()

	start := int64(1000)
	created, err := newClient(t, tc, follower, adminToken).CreateSequenceWithResponse(ctx, "orders", openapi.CreateSequenceJSONRequestBody{Start: &start})
	if err != nil {
		t.Fatal(err)
	}
	if created.StatusCode() != http.StatusCreated || created.JSON201 == nil {
		t.Fatalf("create through %s: %d %s", follower.ID, created.StatusCode(), created.Body)
	}
	if s := created.JSON201; s.Name != "orders" || s.Start != start || s.Next == nil || *s.Next != start {
		t.Fatalf("created %+v", s)
	}

	reserve := func(n *testcluster.Node, count int64) (openapi.Range, *openapi.ReserveRangeResponse200Headers) {
		t.Helper()
		r, err := newClient(t, tc, n, reserveToken).ReserveRangeWithResponse(ctx, "orders", openapi.ReserveRangeJSONRequestBody{Count: count})
		if err != nil {
			t.Fatal(err)
		}
		if r.StatusCode() != http.StatusOK || r.JSON200 == nil || r.Headers200 == nil {
			t.Fatalf("reserve %d through %s: %d %s", count, n.ID, r.StatusCode(), r.Body)
		}
		got := *r.JSON200
		if got.Sequence != "orders" || got.Last-got.First+1 != count || got.First < start {
			t.Fatalf("reserve %d through %s: %+v", count, n.ID, got)
		}
		return got, r.Headers200
	}
	viaFollower, h := reserve(follower, 7)
	if h.XTicketdLeader == nil || *h.XTicketdLeader != leader.HTTPAddr {
		t.Errorf("through the follower: leader header %v, want %s", h.XTicketdLeader, leader.HTTPAddr)
	}
	viaLeader, h := reserve(leader, 11)
	if h.XTicketdLeader != nil {
		t.Errorf("on the leader: leader header %q", *h.XTicketdLeader)
	}
	if viaFollower.Last >= viaLeader.First && viaLeader.Last >= viaFollower.First {
		t.Errorf("ranges overlap: %+v and %+v", viaFollower, viaLeader)
	}
	// The leader acknowledged the follower's range first.
	if viaLeader.First <= viaFollower.Last {
		t.Errorf("the later range %+v does not lie above the earlier %+v", viaLeader, viaFollower)
	}

	for _, n := range []*testcluster.Node{follower, leader} {
		nf, err := newClient(t, tc, n, reserveToken).ReserveRangeWithResponse(ctx, "nope", openapi.ReserveRangeJSONRequestBody{Count: 1})
		if err != nil {
			t.Fatal(err)
		}
		p := nf.ApplicationproblemJSON404
		if nf.StatusCode() != http.StatusNotFound || p == nil {
			t.Fatalf("reserve from an unknown sequence through %s: %d %s", n.ID, nf.StatusCode(), nf.Body)
		}
		if p.Type != openapi.SequenceNotFoundTypeUrnTicketdProblemSequenceNotFound || p.Status != openapi.SequenceNotFoundStatusN404 || p.Detail == nil || !strings.Contains(*p.Detail, "nope") {
			t.Errorf("404 problem through %s: %+v", n.ID, p)
		}
	}
}
