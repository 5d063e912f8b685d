package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
)

// An error's words for the person at the terminal: the problem once (the
// server's RFC 9457 problem details, not its Go wrapping), then what to do
// about it when there is something to say. The exit codes do not depend on
// it: 2 for a usage error, 1 for everything else.

// hinted is an error together with what to do about it, known where the
// command still has its arguments (the sequence's name, say).
type hinted struct {
	err  error
	hint string
}

func (h hinted) Error() string { return h.err.Error() }
func (h hinted) Unwrap() error { return h.err }

// withHint attaches hint(answer) to err when err is the server's answer and
// hint has something to say about it.
func withHint(err error, hint func(*client.APIError) string) error {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		if h := hint(apiErr); h != "" {
			return hinted{err: err, hint: h}
		}
	}
	return err
}

// createHint says how to create the sequence seq when it was not found.
func createHint(seq string) func(*client.APIError) string {
	return func(e *client.APIError) string {
		if e.Problem.Type == api.ProblemNotFound {
			return "create it with `ticketd create " + seq + "`"
		}
		return ""
	}
}

// namespaceHint says how to create the namespace ns when it was not found.
func namespaceHint(ns string) func(*client.APIError) string {
	return func(e *client.APIError) string {
		if e.Problem.Type == api.ProblemNamespaceNotFound {
			return "create it with `ticketd namespaces " + ns + " --create`"
		}
		return ""
	}
}

// apiError turns a node's non-2xx answer into the SDK's error, so that the
// commands that speak HTTP themselves (adminCall) report it as the SDK's do.
func apiError(endpoint string, status int, body []byte) *client.APIError {
	var p api.Problem
	if json.Unmarshal(body, &p) != nil || (p.Type == "" && p.Title == "" && p.Detail == "") {
		p = api.Problem{Detail: strings.TrimSpace(string(body))}
		if len(p.Detail) > 200 {
			p.Detail = strings.ToValidUTF8(p.Detail[:200], "") + "..."
		}
	}
	if p.Title == "" {
		p.Title = http.StatusText(status)
	}
	return &client.APIError{Endpoint: endpoint, StatusCode: status, Problem: p}
}

// ownPrefix is the "ticketd: " that the SDK's errors start with; the
// command line says it once, in front.
var ownPrefix = regexp.MustCompile(`(?m)(^|: |; )ticketd: `)

// explain returns what went wrong, in one line without the "ticketd:" in
// front, and a hint ("" when there is none). cmd is the command that
// failed: a hint never sends the person to the command they just ran.
func explain(err error, cmd string) (msg, hint string) {
	var u usageError
	if errors.As(err, &u) {
		return err.Error(), ""
	}
	msg = err.Error()
	var h hinted
	if errors.As(err, &h) {
		hint = h.hint
	}
	var apiErr *client.APIError
	var opErr *net.OpError
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	switch {
	case errors.As(err, &apiErr):
		for _, e := range answers(err) {
			msg = strings.Replace(msg, e.Error(), answerText(e), 1)
		}
		if hint == "" {
			hint = answerHint(apiErr, cmd)
		}
	case errors.Is(err, syscall.ECONNREFUSED) && errors.As(err, &opErr) && opErr.Addr != nil:
		msg = "no node answers at " + opErr.Addr.String() + ": connection refused"
		hint = "the cluster may be down, or --addr (TICKETD_ADDR) may name the wrong nodes: it takes each node's API URL, comma-separated, such as https://127.0.0.1:8081"
	case errors.As(err, &unknownCA):
		hint = "the node's certificate is signed by a CA this machine does not trust: pass the cluster's CA with --ca FILE (or TICKETD_CA)"
	case errors.As(err, &badHost):
		hint = "the node's certificate does not name the host in --addr: use a name or IP address its certificate has"
	case strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		hint = "that node serves plain HTTP: use http:// in --addr (TICKETD_ADDR)"
	case errors.Is(err, context.DeadlineExceeded):
		hint = "no node answered within --timeout (10s unless given): the cluster may be down or without a leader" + seeStatus(cmd)
	}
	return ownPrefix.ReplaceAllString(msg, "$1"), hint
}

// answers are the nodes' answers err holds: one, or one per node tried.
func answers(err error) []*client.APIError {
	if e, ok := err.(*client.APIError); ok {
		return []*client.APIError{e}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if inner := u.Unwrap(); inner != nil {
			return answers(inner)
		}
	case interface{ Unwrap() []error }:
		var all []*client.APIError
		for _, inner := range u.Unwrap() {
			all = append(all, answers(inner)...)
		}
		return all
	}
	return nil
}

// answerText is a node's answer in words: the problem's detail, with its
// title only when the detail does not already say it, then the status and
// who answered.
func answerText(e *client.APIError) string {
	p := e.Problem
	text := p.Detail
	switch {
	case text == "":
		text = p.Title
	case p.Title != "" && !strings.Contains(strings.ToLower(text), strings.ToLower(p.Title)):
		text = p.Title + ": " + text
	}
	return fmt.Sprintf("%s (%s from %s)", text, strconv.Itoa(e.StatusCode), e.Endpoint)
}

// answerHint is what to do about a node's answer, by its problem type or,
// for the answers that carry none (a proxy's), its status.
func answerHint(e *client.APIError, cmd string) string {
	switch e.Problem.Type {
	case api.ProblemNotFound:
		return "`ticketd sequences` lists the sequences; `ticketd create NAME` creates one"
	case api.ProblemNamespaceNotFound:
		return "`ticketd namespaces` lists the namespaces; `ticketd namespaces NAME --create` creates one"
	case api.ProblemMemberNotFound:
		return "`ticketd status` lists the members"
	case api.ProblemExhausted:
		return "a sequence never gets IDs back: create a new sequence that starts above this one's max and move its clients"
	case api.ProblemClusterUpgrading:
		return upgradingHint(e.Problem, cmd)
	}
	switch e.StatusCode {
	case http.StatusUnauthorized:
		return "send a token the cluster accepts: --token-file FILE, or the token itself in TICKETD_TOKEN"
	case http.StatusForbidden:
		return "the token is valid but its scope does not allow this: changes, audits and backups need an admin token"
	case http.StatusServiceUnavailable:
		return "the cluster may have no leader or no quorum now" + seeStatus(cmd)
	case http.StatusTooManyRequests:
		return "the cluster is shedding load: try again shortly"
	}
	return ""
}

// upgradingHint explains a cluster-upgrading answer: the feature asked for
// needs a level some members' binaries do not know yet, so the cluster
// (which keeps a rolling upgrade safe to go back from until every member
// has the new binary) does not use it yet.
func upgradingHint(p api.Problem, cmd string) string {
	var behind []string
	for _, m := range p.Behind {
		switch {
		case m.LevelReport == "unreachable":
			behind = append(behind, m.ID+" (unreachable)")
		case m.FeatureLevel == 0:
			behind = append(behind, fmt.Sprintf("%s (old binary, level %d)", m.ID, api.BaseFeatureLevel))
		case m.Version != "":
			behind = append(behind, fmt.Sprintf("%s (%s, level %d)", m.ID, m.Version, m.FeatureLevel))
		default:
			behind = append(behind, fmt.Sprintf("%s (level %d)", m.ID, m.FeatureLevel))
		}
	}
	who := "the members still on an older binary"
	if len(behind) > 0 {
		who = strings.Join(behind, ", ")
	}
	need := "a newer feature level"
	if p.NeedFeatureLevel > 0 {
		need = fmt.Sprintf("feature level %d", p.NeedFeatureLevel)
		if p.ClusterFeatureLevel > 0 {
			need += fmt.Sprintf(" and the cluster is at %d", p.ClusterFeatureLevel)
		}
	}
	return "a rolling upgrade is not finished: this needs " + need + ". Finish replacing " + who +
		" with the new binary, one at a time; once every member reports the level, the leader raises it by itself within seconds and this works" + seeStatus(cmd)
}

// seeStatus points at `ticketd status` from every command but status itself,
// whose table (when it got one) already shows each member.
func seeStatus(cmd string) string {
	if cmd == "status" {
		return ""
	}
	return "; `ticketd status` shows each member"
}
