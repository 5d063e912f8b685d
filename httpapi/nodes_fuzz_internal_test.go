package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/api"
)

// FuzzMemberStatus: whatever another member answers GET /v1/cluster with,
// GET /v1/cluster/nodes shows either its status (only from a 200 that is a
// cluster status) or a reason naming the status code, never both or
// neither, and never panics.
func FuzzMemberStatus(f *testing.F) {
	for _, seed := range []struct {
		code int
		body string
	}{
		{200, `{"node":"n2","state":"Follower","leader":"n1","term":3,"commit_index":9,"applied_index":9,"members":[],"last_contact_ms":4,"leader_changes":[{"term":3,"leader":"n1","at":"2026-11-25T19:00:00Z"}]}`},
		{200, `{"leader_changes":[{"at":"yesterday"}]}`},
		{200, `{"term":-1}`},
		{200, `null`},
		{200, ``},
		{401, `{"type":"urn:ticketd:problem:unauthorized","title":"unauthorized","status":401,"detail":"wrong token"}`},
		{503, `not json`},
		{0, `{}`},
	} {
		f.Add(seed.code, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, code int, body []byte) {
		st, why := readMemberStatus(code, body)
		if (st == nil) == (why == "") {
			t.Fatalf("code %d body %q: status %v and reason %q: want exactly one", code, body, st, why)
		}
		if st != nil {
			var again api.ClusterStatus
			if code != http.StatusOK || json.Unmarshal(body, &again) != nil {
				t.Fatalf("a status from code %d, body %q, which is not a 200 cluster status", code, body)
			}
		} else if code != http.StatusOK && !strings.Contains(why, "answered") {
			t.Fatalf("reason %q for code %d does not name the answer", why, code)
		}
	})
}
