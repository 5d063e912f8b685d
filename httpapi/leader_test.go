package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/httpapi"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
)

// transferStub answers leadership transfers as its transfer says, on a
// stub that leads (ID "stub"); asked records every target it was given.
type transferStub struct {
	stubStore
	transfer func(to string) (string, error)
	asked    []string
}

func (s *transferStub) TransferLeadershipTo(_ context.Context, to string) (string, error) {
	s.asked = append(s.asked, to)
	return s.transfer(to)
}

func postLeader(t *testing.T, h http.Handler, body string) testkit.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/v1/cluster/leader", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return testkit.Response{Status: w.Code, Header: w.Header(), Body: w.Body.Bytes()}
}

// The answer says who leads now and who led before; a transfer to the node
// that leads already is a 200 that says nothing moved.
func TestTransferLeader_AnswersWhoLeads(t *testing.T) {
	st := &transferStub{transfer: func(to string) (string, error) { return to, nil }}
	h := httpapi.New(httpapi.Config{Store: st, Logger: slog.New(slog.DiscardHandler)}).Handler()
	for _, c := range []struct {
		to   string
		want string
	}{
		{"n2", `{"leader":"n2","from":"stub","transferred":true}`},
		{"stub", `{"leader":"stub","from":"stub","transferred":false}`},
	} {
		r := postLeader(t, h, `{"to":"`+c.to+`"}`)
		expectJSON(t, "transfer to "+c.to, r, http.StatusOK)
		if got := strings.TrimSpace(string(r.Body)); got != c.want {
			t.Errorf("transfer to %s: %s, want %s", c.to, got, c.want)
		}
	}
}

// Bad input is a problem document that names what is wrong, and never
// reaches the store; what the store refuses keeps its kind.
func TestTransferLeader_ProblemsNameWhatIsWrong(t *testing.T) {
	st := &transferStub{}
	h := httpapi.New(httpapi.Config{Store: st, Logger: slog.New(slog.DiscardHandler)}).Handler()
	for _, c := range []struct{ body, detail string }{
		{``, "request body is empty"},
		{`{}`, `field "to" is required`},
		{`{"to":""}`, `field "to" is required`},
		{`{"to":7}`, `field "to" must be a string`},
		{`{"to":"n2","from":"n1"}`, `unknown field "from"`},
		{`{"to":"n2"} {}`, "data after the JSON object"},
		{`["n2"]`, "must be a JSON object"},
	} {
		expectProblem(t, "body "+c.body, postLeader(t, h, c.body), http.StatusBadRequest, api.ProblemBadRequest, c.detail)
	}
	if len(st.asked) != 0 {
		t.Fatalf("bad requests reached the store: %q", st.asked)
	}

	for _, c := range []struct {
		err    error
		status int
		typ    string
	}{
		{domain.Kindf(domain.ErrNotFound, `member not found: "n9" is not in the raft configuration`), http.StatusNotFound, api.ProblemMemberNotFound},
		{domain.Kindf(domain.ErrConflict, `member conflict: "n9" is a non-voting member: leadership goes only to voters`), http.StatusConflict, api.ProblemConflict},
		{domain.Kindf(domain.ErrInvalid, `member unreachable: leadership transfer to "n9": failed to make TimeoutNow RPC`), http.StatusBadRequest, api.ProblemBadRequest},
		{domain.Kindf(domain.ErrUnavailable, `timed out; outcome unknown: leadership transfer to "n9" did not finish`), http.StatusServiceUnavailable, api.ProblemUnavailable},
	} {
		st.transfer = func(string) (string, error) { return "", c.err }
		expectProblem(t, c.err.Error(), postLeader(t, h, `{"to":"n9"}`), c.status, c.typ, `"n9"`)
	}
}

// A store that cannot transfer to a named voter says so: 501, not a 500.
func TestTransferLeader_StoreWithoutTransfer_NotImplemented(t *testing.T) {
	h := httpapi.New(httpapi.Config{Store: &stubStore{}, Logger: slog.New(slog.DiscardHandler)}).Handler()
	r := postLeader(t, h, `{"to":"n2"}`)
	expectProblem(t, "transfer on a store without it", r, http.StatusNotImplemented, api.ProblemBadRequest, "cannot transfer leadership")
}

// Moving leadership is an admin's call: a reserve token is refused before
// the store hears of it.
func TestTransferLeader_NeedsAdminScope(t *testing.T) {
	const adminTok, reserveTok = "admin-token-0123456789abcdef", "reserve-token-0123456789abcdef"
	st := &transferStub{transfer: func(to string) (string, error) { return to, nil }}
	h := httpapi.New(httpapi.Config{Store: st, Tokens: testcluster.Tokens(t, adminTok, reserveTok), Logger: slog.New(slog.DiscardHandler)}).Handler()
	for _, c := range []struct {
		token string
		want  int
	}{{"", http.StatusUnauthorized}, {reserveTok, http.StatusForbidden}, {adminTok, http.StatusOK}} {
		req := httptest.NewRequest(http.MethodPost, "/v1/cluster/leader", strings.NewReader(`{"to":"n2"}`))
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != c.want {
			t.Errorf("token %q: %d, want %d (%s)", c.token, w.Code, c.want, w.Body.Bytes())
		}
	}
	if len(st.asked) != 1 {
		t.Fatalf("the store was asked %d times, want once (the admin's request)", len(st.asked))
	}
}
