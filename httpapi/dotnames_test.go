package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/internal/testkit"
)

// Names "." and ".." are dot segments: curl, browsers and many proxies
// resolve them away before a request leaves (curl turns PUT
// /v1/sequences/./ranges into /v1/sequences/ranges), so such a sequence could
// be created by a client that sends the path as is and then not be reached
// by others. Creation refuses them; one that exists from an earlier release
// keeps working, reachable as %2E and %2E%2E.

func TestHTTPAPI_DotNames_CreationRefusedWithTheReason(t *testing.T) {
	n := startNode(t)
	for _, c := range []struct{ what, path string }{
		{"sequence . as is", "/v1/sequences/."},
		{"sequence .. as is", "/v1/sequences/.."},
		{"sequence . escaped", "/v1/sequences/%2E"},
		{"sequence .. escaped", "/v1/sequences/%2e%2E"},
		{"namespace . as is", "/v1/namespaces/."},
		{"namespace .. escaped", "/v1/namespaces/%2E%2E"},
	} {
		for _, body := range []any{nil, `{}`} {
			r := n.MustCall(t, http.MethodPut, c.path, body)
			expectProblem(t, c.what, r, http.StatusBadRequest, api.ProblemBadRequest, "dot segment", "%2E")
		}
	}
	// Names that only hold dots among other characters stay valid.
	for _, name := range []string{"...", "a.b", ".x", "x.", "._"} {
		expectJSON(t, "create "+name, n.MustCall(t, http.MethodPut, "/v1/sequences/"+name, nil), http.StatusCreated)
	}
	// Nothing was created: reads of the names answer "not found", not 400,
	// since a sequence of that name may exist from an earlier release.
	for _, path := range []string{"/v1/sequences/.", "/v1/sequences/%2E%2E"} {
		expectProblem(t, "GET "+path, n.MustCall(t, http.MethodGet, path, nil), http.StatusNotFound, api.ProblemNotFound)
	}
}

func TestHTTPAPI_DotNames_ExistingOnesKeepWorking_AsIsAndEscaped(t *testing.T) {
	n := startNode(t)
	r := n.MustCall(t, http.MethodPost, "/v1/restore?advance=1", testkit.LegacyDotNamesBackup(t))
	if r.Status != http.StatusNoContent {
		t.Fatalf("restore of a backup holding dot names: status %d: %s", r.Status, r.Body)
	}
	log := newRangeLog()
	for _, s := range []struct{ name, escaped string }{{".", "%2E"}, {"..", "%2E%2E"}, {"..", "%2e%2e"}} {
		for _, seg := range []string{s.name, s.escaped} {
			n.reserveAs(t, log, s.name, seg, 3)
			if got := n.sequence(t, seg); got.Name != s.name {
				t.Errorf("GET /v1/sequences/%s names %q, want %q", seg, got.Name, s.name)
			}
		}
		r := n.MustCall(t, http.MethodPost, "/v1/sequences/"+s.escaped+"/raise", `{"at_least":5000}`)
		expectJSON(t, "raise "+s.escaped, r, http.StatusOK)
		n.reserveAs(t, log, s.name, s.escaped, 1)
		// Creating it again with its settings confirms it, as for any name,
		// is refused: the rule is about creation, and says why.
		expectProblem(t, "create existing "+s.escaped, n.MustCall(t, http.MethodPut, "/v1/sequences/"+s.escaped, nil),
			http.StatusBadRequest, api.ProblemBadRequest, "dot segment")
	}
	log.checkDisjoint(t)

	// Listing names them, and a listing's cursor may be one of them.
	r = n.MustCall(t, http.MethodGet, "/v1/sequences?limit=1", nil)
	expectJSON(t, "list", r, http.StatusOK)
	var page api.SequenceList
	testkit.DecodeStrict(t, r.Body, &page)
	if len(page.Sequences) != 1 || page.Sequences[0].Name != "." || page.Next != "." {
		t.Fatalf("first page = %+v, want sequence \".\" and next \".\"", page)
	}
	r = n.MustCall(t, http.MethodGet, "/v1/sequences?after=.", nil)
	expectJSON(t, "list after .", r, http.StatusOK)
	testkit.DecodeStrict(t, r.Body, &page)
	if len(page.Sequences) != 1 || page.Sequences[0].Name != ".." {
		t.Fatalf("page after \".\" = %+v, want sequence \"..\"", page)
	}

	// The namespace serves leases under either spelling.
	for _, seg := range []string{".", "%2E"} {
		r = n.MustCall(t, http.MethodGet, "/v1/namespaces/"+seg, nil)
		expectJSON(t, "namespace "+seg, r, http.StatusOK)
		r = n.MustCall(t, http.MethodPost, "/v1/namespaces/"+seg+"/leases", `{"holder":"h-`+seg+`"}`)
		expectJSON(t, "lease in namespace "+seg, r, http.StatusCreated)
	}

	// A backup of this cluster still holds them.
	r = n.MustCall(t, http.MethodGet, "/v1/backup", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("backup: status %d: %s", r.Status, r.Body)
	}
	if err := fsm.ValidateBackup(r.Body, 1); err != nil {
		t.Fatalf("the backup of a cluster with dot names does not restore: %v", err)
	}
}

// reserveAs reserves count IDs of sequence name through the path segment
// seg (the name as is, or escaped).
func (n *node) reserveAs(tb testing.TB, log *rangeLog, name, seg string, count int64) {
	tb.Helper()
	r := n.MustCall(tb, http.MethodPost, "/v1/sequences/"+seg+"/ranges", `{"count":`+itoa(count)+`}`)
	expectJSON(tb, "reserve "+seg, r, http.StatusOK)
	var rg api.Range
	if err := json.NewDecoder(strings.NewReader(string(r.Body))).Decode(&rg); err != nil {
		tb.Fatal(err)
	}
	checkRange(tb, rg, name, count)
	log.add(rg)
}
