package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/internal/testcluster"
)

func TestErrors_OnePrefixTheProblemOnceAndAHint(t *testing.T) {
	tc := testcluster.New(t, 1, nil)
	url := tc.URLs()[0]
	addr := "--addr=" + url
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sequences", "nope", addr},
			"ticketd: sequence not found: \"nope\" (404 from " + url + ")\nhint: create it with `ticketd create nope`\n"},
		{[]string{"reserve", "nope", "3", addr},
			"ticketd: sequence not found: \"nope\" (404 from " + url + ")\nhint: create it with `ticketd create nope`\n"},
		// The commands that speak HTTP themselves read the problem too.
		{[]string{"namespaces", "nope", "--leases", addr},
			"ticketd: namespace not found: \"nope\" (404 from " + url + ")\nhint: create it with `ticketd namespaces nope --create`\n"},
	} {
		code, out, errs := runCLI(t, c.args...)
		if code != 1 || out != "" || errs != c.want {
			t.Errorf("%q: exit %d, stdout %q\nstderr: %q\nwant:   %q", c.args, code, out, errs, c.want)
		}
	}
	code, _, errs := runCLI(t, "sequences", "--addr=http://127.0.0.1:1", "--timeout=1s")
	if code != 1 || !strings.HasPrefix(errs, "ticketd: no node answers at 127.0.0.1:1: connection refused\nhint: ") ||
		!strings.Contains(errs, "TICKETD_ADDR") || strings.Count(errs, "ticketd:") != 1 {
		t.Errorf("connection refused: exit %d, %q", code, errs)
	}
}

func TestExplain_AnswerWithoutContext_HintByStatusAndType(t *testing.T) {
	answer := func(status int, typ, title, detail string) error {
		e := &client.APIError{Endpoint: "https://n1:8081", StatusCode: status, Problem: api.Problem{Type: typ, Title: title, Detail: detail}}
		return fmt.Errorf("%w: %w", client.ErrUnauthorized, e) // wrapped, as the SDK may
	}
	for _, c := range []struct {
		err       error
		msg, hint string
	}{
		{answer(401, api.ProblemUnauthorized, "unauthorized", "missing bearer token"),
			"unauthorized: missing bearer token (401 from https://n1:8081)", "TICKETD_TOKEN"},
		{answer(403, api.ProblemForbidden, "forbidden", "this token's scope does not allow admin"),
			"forbidden: this token's scope does not allow admin (403 from https://n1:8081)", "admin token"},
		{answer(404, api.ProblemMemberNotFound, "member not found", "member not found: n9"),
			"member not found: n9 (404 from https://n1:8081)", "`ticketd status` lists the members"},
		{usageError{"usage: ticketd reserve SEQ N"}, "usage: ticketd reserve SEQ N", ""},
	} {
		msg, hint := explain(c.err, "reserve")
		if !strings.HasSuffix(msg, c.msg) || strings.Contains(msg, "ticketd:") || !strings.Contains(hint, c.hint) || (c.hint == "") != (hint == "") {
			t.Errorf("explain(%v) = %q, %q; want the message %q and a hint with %q", c.err, msg, hint, c.msg, c.hint)
		}
	}
}

func TestExplain_NoQuorumAnswer_PointsAtStatusExceptFromStatus(t *testing.T) {
	e := &client.APIError{Endpoint: "http://n1:8080", StatusCode: 503, Problem: api.Problem{Type: api.ProblemUnavailable, Title: "unavailable", Detail: "no leader is known"}}
	for cmd, want := range map[string]bool{"reserve": true, "sequences": true, "status": false} {
		_, hint := explain(e, cmd)
		if !strings.Contains(hint, "no quorum") || strings.Contains(hint, "`ticketd status`") != want {
			t.Errorf("%s: hint %q; want it to point at `ticketd status`: %v", cmd, hint, want)
		}
	}
}

// A feature the cluster's level does not have yet: the hint says the
// upgrade is unfinished, who holds it back, and that the level rises by
// itself.
func TestExplain_ClusterUpgrading_NamesTheMembersBehindAndWhatToDo(t *testing.T) {
	e := &client.APIError{Endpoint: "http://n1:8080", StatusCode: 409, Problem: api.Problem{
		Type: api.ProblemClusterUpgrading, Title: "cluster upgrading",
		Detail:           "raise needs feature level 2; the cluster is at 1",
		NeedFeatureLevel: 2, ClusterFeatureLevel: 1,
		Behind: []api.Member{
			{ID: "n3", LevelReport: "no-report"},
			{ID: "n4", Version: "v0.31.0", FeatureLevel: 1, LevelReport: "reported"},
			{ID: "n5", LevelReport: "unreachable"},
		},
	}}
	msg, hint := explain(e, "raise")
	if msg != "cluster upgrading: raise needs feature level 2; the cluster is at 1 (409 from http://n1:8080)" {
		t.Errorf("message %q", msg)
	}
	for _, want := range []string{"feature level 2 and the cluster is at 1", "n3 (old binary, level 1), n4 (v0.31.0, level 1), n5 (unreachable)",
		"one at a time", "raises it by itself within seconds", "`ticketd status`"} {
		if !strings.Contains(hint, want) {
			t.Errorf("hint %q: want %q in it", hint, want)
		}
	}
	// Without the fields (a proxy's or an unforeseen answer) the hint still says what to do.
	_, hint = explain(&client.APIError{Endpoint: "http://n1:8080", StatusCode: 409, Problem: api.Problem{Type: api.ProblemClusterUpgrading}}, "status")
	if !strings.Contains(hint, "the members still on an older binary") || strings.Contains(hint, "`ticketd status`") {
		t.Errorf("hint without fields: %q", hint)
	}
}
