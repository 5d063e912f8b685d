package openapi_test

// This file exercises the client that oapi-codegen generates from
// httpapi/openapi.json. It lives in testdata because the package it tests
// is not in the repository: clients/openapi's TestGeneratedClient_ copies
// this module into a temporary directory, generates the client next to this
// file, starts a real 3-node cluster and runs this test against it, naming
// the cluster in the environment below.

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"openapiclient/openapi"
)

// cluster is what the outer test tells this one about the cluster it
// started.
type cluster struct {
	leaderURL, followerURL string
	leaderAddr             string // the leader's HTTP address, as X-Ticketd-Leader names it
	adminToken             string
	reserveToken           string
}

func clusterFromEnv(t *testing.T) cluster {
	t.Helper()
	c := cluster{
		leaderURL:    os.Getenv("TICKETD_OPENAPI_LEADER_URL"),
		followerURL:  os.Getenv("TICKETD_OPENAPI_FOLLOWER_URL"),
		leaderAddr:   os.Getenv("TICKETD_OPENAPI_LEADER_ADDR"),
		adminToken:   os.Getenv("TICKETD_OPENAPI_ADMIN_TOKEN"),
		reserveToken: os.Getenv("TICKETD_OPENAPI_RESERVE_TOKEN"),
	}
	if c.leaderURL == "" || c.followerURL == "" || c.leaderAddr == "" || c.adminToken == "" || c.reserveToken == "" {
		t.Fatal("no cluster named: this test runs from clients/openapi's TestGeneratedClient_, " +
			"which sets TICKETD_OPENAPI_{LEADER_URL,FOLLOWER_URL,LEADER_ADDR,ADMIN_TOKEN,RESERVE_TOKEN}")
	}
	return c
}

// newClient is the generated client of the node at url, sending token as a
// bearer token (the generated client's own hook for headers).
func newClient(t *testing.T, url, token string) *openapi.ClientWithResponses {
	t.Helper()
	c, err := openapi.NewClientWithResponses(url,
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

// TestCreateReserveAndNotFound uses only the generated client against a
// real 3-node cluster with authentication on: it creates a sequence through
// a follower, reserves a range through a follower and one through the
// leader (disjoint, of the sizes asked, the follower's answer naming the
// leader), and reads the 404 problem of an unknown sequence.
func TestCreateReserveAndNotFound(t *testing.T) {
	tc := clusterFromEnv(t)
	ctx := context.Background()

	start := int64(1000)
	created, err := newClient(t, tc.followerURL, tc.adminToken).CreateSequenceWithResponse(ctx, "orders", openapi.CreateSequenceJSONRequestBody{Start: &start})
	if err != nil {
		t.Fatal(err)
	}
	if created.StatusCode() != http.StatusCreated || created.JSON201 == nil {
		t.Fatalf("create through the follower: %d %s", created.StatusCode(), created.Body)
	}
	if s := created.JSON201; s.Name != "orders" || s.Start != start || s.Next == nil || *s.Next != start {
		t.Fatalf("created %+v", s)
	}

	reserve := func(url string, count int64) (openapi.Range, *openapi.ReserveRangeResponse200Headers) {
		t.Helper()
		r, err := newClient(t, url, tc.reserveToken).ReserveRangeWithResponse(ctx, "orders", openapi.ReserveRangeJSONRequestBody{Count: count})
		if err != nil {
			t.Fatal(err)
		}
		if r.StatusCode() != http.StatusOK || r.JSON200 == nil || r.Headers200 == nil {
			t.Fatalf("reserve %d through %s: %d %s", count, url, r.StatusCode(), r.Body)
		}
		got := *r.JSON200
		if got.Sequence != "orders" || got.Last-got.First+1 != count || got.First < start {
			t.Fatalf("reserve %d through %s: %+v", count, url, got)
		}
		return got, r.Headers200
	}
	viaFollower, h := reserve(tc.followerURL, 7)
	if h.XTicketdLeader == nil || *h.XTicketdLeader != tc.leaderAddr {
		t.Errorf("through the follower: leader header %v, want %s", h.XTicketdLeader, tc.leaderAddr)
	}
	viaLeader, h := reserve(tc.leaderURL, 11)
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

	for _, url := range []string{tc.followerURL, tc.leaderURL} {
		nf, err := newClient(t, url, tc.reserveToken).ReserveRangeWithResponse(ctx, "nope", openapi.ReserveRangeJSONRequestBody{Count: 1})
		if err != nil {
			t.Fatal(err)
		}
		p := nf.ApplicationproblemJSON404
		if nf.StatusCode() != http.StatusNotFound || p == nil {
			t.Fatalf("reserve from an unknown sequence through %s: %d %s", url, nf.StatusCode(), nf.Body)
		}
		if p.Type != openapi.SequenceNotFoundTypeUrnTicketdProblemSequenceNotFound || p.Status != openapi.SequenceNotFoundStatusN404 || p.Detail == nil || !strings.Contains(*p.Detail, "nope") {
			t.Errorf("404 problem through %s: %+v", url, p)
		}
	}
}
