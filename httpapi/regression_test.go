package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/api"
)

// Regression tests: each pins a bug that was found and fixed, named in the
// test's comment.

// TestDecode_TrailingCloseBraceOrBracket_Is400: decodeBody
// (then in httpapi/service.go, now request.go) used to check dec.More() after dec.Decode, which let a stray
// '}' or ']' after the JSON object through, because json.Decoder.More
// reports false when the next byte is '}' or ']'. So `{"count":5}}` reserves
// 5 IDs and `{"start":1}}` creates a sequence, where docs/http-api.md promises
// 400 for a malformed body and decodeBody's own comment promises "trailing
// data ... are 400s".
func TestDecode_TrailingCloseBraceOrBracket_Is400(t *testing.T) {
	n := startNode(t)
	log := newRangeLog()
	const seq = "victim"
	if r := n.MustCall(t, http.MethodPut, "/v1/sequences/"+seq, nil); r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	last := n.reserve(t, log, seq, 1).Last
	n.settled(t, seq)

	bad := func(name, method, path, body string) badCase {
		return badCase{name: name, method: method, path: path, body: body, status: http.StatusBadRequest, typ: api.ProblemBadRequest, detail: []string{"after"}}
	}
	cases := []badCase{
		bad("reserve_trailing_brace", http.MethodPost, "/v1/sequences/victim/ranges", `{"count":5}}`),
		bad("reserve_trailing_bracket", http.MethodPost, "/v1/sequences/victim/ranges", `{"count":5}]`),
		bad("reserve_trailing_brace_after_space", http.MethodPost, "/v1/sequences/victim/ranges", `{"count":5} }`),
		bad("create_trailing_brace", http.MethodPut, "/v1/sequences/never-created", `{"start":1}}`),
		bad("create_trailing_bracket", http.MethodPut, "/v1/sequences/never-created-2", `{"start":1}]`),
		bad("update_member_trailing_brace", http.MethodPut, "/v1/cluster/members/n9", `{"id":"n9","raft_addr":"127.0.0.1:7001","http_addr":"127.0.0.1:8001"}}`),
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			target := seq
			if strings.HasPrefix(c.path, "/v1/sequences/never") {
				target = strings.TrimPrefix(c.path, "/v1/sequences/")
			}
			runBad(t, n, log, target, c)
			rg := n.reserve(t, log, seq, 1)
			if rg.First != last+1 {
				t.Errorf("after %s the next range is %+v; want it to start at %d (IDs were consumed)", c.name, rg, last+1)
			}
			last = rg.Last
		})
	}
	log.checkDisjoint(t)
}

// TestRouting_WrongMethodUnderV1_Is405: every wrong method on a /v1 path
// answered 404 route-not-found without an Allow header, though
// api.ProblemMethodNotAllowed exists and handleEchoError maps 405 to it
// (outside /v1, POST /livez is a proper 405). Cause: httpapi/service.go
// builds the leader-only routes with `lead := v1.Group("", s.leaderOnly)`;
// Echo v4.16's Group.Use then registers RouteNotFound handlers for "/v1" and
// "/v1/*", and the router prefers such a handler over its 405 fallback.
// Side effect: on a follower, an unknown /v1 route or wrong method runs
// leaderOnly and is forwarded to the leader. Registering leaderOnly per
// route (v1.PUT(path, h, s.leaderOnly)) avoids the catch-all.
func TestRouting_WrongMethodUnderV1_Is405(t *testing.T) {
	n := startNode(t)
	if r := n.MustCall(t, http.MethodPut, "/v1/sequences/routing", nil); r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	cases := []struct {
		method, path string
		allow        []string
	}{
		{http.MethodDelete, "/v1/sequences/routing", []string{"GET", "PUT"}},
		{http.MethodPost, "/v1/sequences/routing", []string{"GET", "PUT"}},
		{http.MethodGet, "/v1/sequences/routing/ranges", []string{"POST"}},
		{http.MethodPut, "/v1/sequences/routing/ranges", []string{"POST"}},
		{http.MethodPost, "/v1/sequences", []string{"GET"}},
		{http.MethodGet, "/v1/cluster/snapshot", []string{"POST"}},
		{http.MethodDelete, "/v1/cluster", []string{"GET"}},
		{http.MethodGet, "/v1/cluster/members", []string{"POST"}},
		{http.MethodGet, "/v1/cluster/members/n1", []string{"PUT", "DELETE"}},
	}
	for _, c := range cases {
		t.Run(c.method+strings.ReplaceAll(c.path, "/", "_"), func(t *testing.T) {
			before := n.state(t, "routing")
			r := n.MustCall(t, c.method, c.path, nil)
			expectProblem(t, c.method+" "+c.path, r, http.StatusMethodNotAllowed, api.ProblemMethodNotAllowed)
			for _, m := range c.allow {
				if !strings.Contains(r.Header.Get("Allow"), m) {
					t.Errorf("%s %s: Allow %q does not list %s", c.method, c.path, r.Header.Get("Allow"), m)
				}
			}
			if after := n.state(t, "routing"); after != before {
				t.Errorf("%s %s changed state:\nbefore %+v\nafter  %+v", c.method, c.path, before, after)
			}
		})
	}
}
