package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/httpapi"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
)

// A follower forwards to the leader and names it in the answer, so that a
// client can go there directly next time; the leader's own answers need no
// such hint.
func TestForwardedAnswerNamesTheLeader(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	tc.CreateSequence("fwd", nil)
	l := tc.Leader(15 * time.Second)
	cl := tc.Client()
	log := newRangeLog()
	for _, n := range tc.Running() {
		for range 3 {
			r := cl.MustCall(t, http.MethodPost, tc.URL(n)+"/v1/sequences/fwd/ranges", `{"count":7}`)
			expectJSON(t, "reserve via "+n.ID, r, http.StatusOK)
			var rg api.Range
			testkit.DecodeStrict(t, r.Body, &rg)
			checkRange(t, rg, "fwd", 7)
			log.add(rg)
			got := r.Header.Get(api.LeaderHeader)
			switch {
			case n == l && got != "":
				t.Errorf("the leader's own answer carries %s: %q", api.LeaderHeader, got)
			case n != l && got != l.HTTPAddr:
				t.Errorf("answer forwarded by %s: %s %q, want the leader's %q", n.ID, api.LeaderHeader, got, l.HTTPAddr)
			}
		}
	}
	if n := log.checkDisjoint(t); n != 9 {
		t.Fatalf("%d ranges, want 9", n)
	}
}

// A forwarded answer carries the request id once: the follower set it on its
// answer, and the leader's copy (the same id, which the forwarded request
// carried) is not added to it a second time.
func TestForwardedAnswer_RequestIDOnce(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	tc.CreateSequence("rid", nil)
	l := tc.Leader(15 * time.Second)
	cl := tc.Client()
	cl.Header = http.Header{httpapi.RequestIDHeader: {"trace-42"}}
	for _, n := range tc.Running() {
		if n == l {
			continue
		}
		for _, c := range []struct{ method, path, body string }{
			{http.MethodGet, "/v1/sequences/rid", ""},
			{http.MethodPost, "/v1/sequences/rid/ranges", `{"count":1}`},
			{http.MethodGet, "/v1/sequences/missing", ""},
		} {
			r := cl.MustCall(t, c.method, tc.URL(n)+c.path, c.body)
			if got := r.Header.Values(httpapi.RequestIDHeader); len(got) != 1 || got[0] != "trace-42" {
				t.Errorf("%s %s via %s (status %d): X-Request-Id %q, want once \"trace-42\"", c.method, c.path, n.ID, r.Status, got)
			}
		}
	}
}
