package httpapi_test

// Fuzz targets of the HTTP API: every route that takes a body, a path
// segment or a query, fed arbitrary bytes.
//
//   - FuzzAPIRequest (fast, in-process): the real Service — routing,
//     middleware, decodeBody with each request struct, every handler's
//     checks, the mapping of Store errors to problems — called through
//     ServeHTTP over a recording Store that checks what reaches it and can
//     fail with any error the real Store returns. No network, no Raft:
//     about 5,000 inputs per second with -parallel 1 on a shared 2-core VM.
//     It also carries the membership routes' bodies, which must never reach
//     a real node's Join (see FuzzAPINode).
//   - FuzzAPINode (slow, end to end): the same kinds of requests over HTTP
//     to one real single-node server (Raft, bolt, issuer) started once per
//     fuzz process; a few hundred to 1,500 inputs per second (each is three
//     HTTP requests: the input, a probe reservation, /livez).
//
// Both check properties, not only the absence of panics; each check says
// which promise of docs/http-api.md or of httpapi's doc it holds.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/httpapi"
	"github.com/ticketd/ticketd/internal/testkit"
)

// ---------------------------------------------------------------------------
// What both targets share: the routes, how a fuzzed input becomes a request,
// an independent model of the JSON bodies, and the shape of every answer.

// bodyKind names the JSON body a route decodes.
type bodyKind int

const (
	noBody        bodyKind = iota
	createSeqBody          // api.CreateSequenceRequest, optional
	reserveBody            // {"count": int64}, required
	memberBody             // api.JoinRequest
	namespaceBody          // api.NamespaceRequest, optional
	leaseBody              // api.LeaseRequest
	tokenBody              // api.LeaseTokenRequest
	backupBody             // raw bytes (POST /v1/restore)
	raiseBody              // {"at_least": int64}, required
	idsBody                // {"count": int64}, optional (blank: 1)
	leaderBody             // {"to": string}, required (POST /v1/cluster/leader)
)

// fuzzRoute is one route under fuzzing; "{1}" and "{2}" in path stand for the
// two fuzzed path segments. Every route also gets the fuzzed query.
type fuzzRoute struct {
	method, path string
	body         bodyKind
}

const (
	rCreateSequence = iota
	rReserve
	rJoin
	rUpdateMember
	rRemoveMember
	rCreateNamespace
	rAcquireLease
	rRenewLease
	rReleaseLease
	rRevokeLease
	rRestore
	rAudit
	rInspectSequence
	rInspectSnowflake
	rGetSequence
	rGetNamespace
	rListLeases
	rListSequences
	rRaiseSequence
	rSnowflakeIDs
	rTransferLeader
	numRoutes
)

var fuzzRoutes = [numRoutes]fuzzRoute{
	rCreateSequence:   {http.MethodPut, "/v1/sequences/{1}", createSeqBody},
	rReserve:          {http.MethodPost, "/v1/sequences/{1}/ranges", reserveBody},
	rJoin:             {http.MethodPost, "/v1/cluster/members", memberBody},
	rUpdateMember:     {http.MethodPut, "/v1/cluster/members/{1}", memberBody},
	rRemoveMember:     {http.MethodDelete, "/v1/cluster/members/{1}", noBody},
	rCreateNamespace:  {http.MethodPut, "/v1/namespaces/{1}", namespaceBody},
	rAcquireLease:     {http.MethodPost, "/v1/namespaces/{1}/leases", leaseBody},
	rRenewLease:       {http.MethodPut, "/v1/namespaces/{1}/leases/{2}", tokenBody},
	rReleaseLease:     {http.MethodDelete, "/v1/namespaces/{1}/leases/{2}", tokenBody},
	rRevokeLease:      {http.MethodPost, "/v1/namespaces/{1}/leases/{2}/revoke", noBody},
	rRestore:          {http.MethodPost, "/v1/restore", backupBody},
	rAudit:            {http.MethodGet, "/v1/audit", noBody},
	rInspectSequence:  {http.MethodGet, "/v1/inspect/sequence/{1}/{2}", noBody},
	rInspectSnowflake: {http.MethodGet, "/v1/inspect/snowflake/{1}/{2}", noBody},
	rGetSequence:      {http.MethodGet, "/v1/sequences/{1}", noBody},
	rGetNamespace:     {http.MethodGet, "/v1/namespaces/{1}", noBody},
	rListLeases:       {http.MethodGet, "/v1/namespaces/{1}/leases", noBody},
	rListSequences:    {http.MethodGet, "/v1/sequences", noBody},
	rRaiseSequence:    {http.MethodPost, "/v1/sequences/{1}/raise", raiseBody},
	rSnowflakeIDs:     {http.MethodPost, "/v1/namespaces/{1}/ids", idsBody},
	rTransferLeader:   {http.MethodPost, "/v1/cluster/leader", leaderBody},
}

// pathSegment keeps a fuzzed segment one segment of one request line: no
// '/', '?', '#', spaces or control bytes (percent escapes such as %2F or
// %20 still reach every byte), at most 100 bytes.
func pathSegment(s string) string {
	b := make([]byte, 0, min(len(s), 100))
	for i := 0; i < len(s) && len(b) < 100; i++ {
		if c := s[i]; c > ' ' && c != 0x7f && c != '/' && c != '?' && c != '#' {
			b = append(b, c)
		}
	}
	return string(b)
}

// queryString keeps a fuzzed query within one request line.
func queryString(s string) string {
	b := make([]byte, 0, min(len(s), 200))
	for i := 0; i < len(s) && len(b) < 200; i++ {
		if c := s[i]; c > ' ' && c != 0x7f && c != '#' {
			b = append(b, c)
		}
	}
	return string(b)
}

// request is a fuzzed input as a request: the target as sent, the URL as the
// server parses it, and the path parameters a handler must see (the
// segments percent-decoded).
type request struct {
	route        int
	method       string
	target       string // path?query, escaped as sent
	url          *url.URL
	seg1, seg2   string // decoded
	raw1, raw2   string // as sent
	p1, p2       string // the path parameters a handler must see
	query        url.Values
	body         []byte
	emptySegment bool // a segment is empty: the route may not match
}

// buildRequest returns false for inputs no HTTP client could send (a bad
// percent escape: Go's client refuses it, and a server would answer 400
// before any handler).
func buildRequest(route int, seg1, seg2, query string, body []byte) (request, bool) {
	r := request{route: route, method: fuzzRoutes[route].method, body: body}
	r.raw1, r.raw2 = pathSegment(seg1), pathSegment(seg2)
	p := strings.NewReplacer("{1}", r.raw1, "{2}", r.raw2).Replace(fuzzRoutes[route].path)
	if q := queryString(query); q != "" {
		p += "?" + q
	}
	u, err := url.Parse(p)
	if err != nil {
		return r, false
	}
	// What the server sees: the request line the client writes, parsed.
	r.target = u.RequestURI()
	if r.url, err = url.ParseRequestURI(r.target); err != nil {
		return r, false
	}
	var err1, err2 error
	r.seg1, err1 = url.PathUnescape(r.raw1)
	r.seg2, err2 = url.PathUnescape(r.raw2)
	if err1 != nil || err2 != nil {
		return r, false
	}
	// Go's client re-escapes a path it finds not validly escaped (a '"'
	// next to a "%2F" turns the %2F into a '/'): keep only inputs whose
	// request line still holds the segments meant.
	if !sameSegments(r.url, fuzzRoutes[route].path, r.seg1, r.seg2) {
		return r, false
	}
	// The handler sees each segment decoded (RFC 3986: "%2D" is "-"; "%2E"
	// is ".", which reaches a sequence named so by an earlier release).
	r.p1, r.p2 = r.seg1, r.seg2
	r.query = r.url.Query()
	r.emptySegment = (strings.Contains(fuzzRoutes[route].path, "{1}") && r.raw1 == "") ||
		(strings.Contains(fuzzRoutes[route].path, "{2}") && r.raw2 == "")
	return r, true
}

// sameSegments reports whether the path of u, as the server sees it, has
// the shape of pattern with decoded segments seg1 and seg2.
func sameSegments(u *url.URL, pattern, seg1, seg2 string) bool {
	escaped := u.RawPath != ""
	p := u.Path
	if escaped {
		p = u.RawPath
	}
	parts, want := strings.Split(p, "/"), strings.Split(pattern, "/")
	if len(parts) != len(want) {
		return false
	}
	for i, w := range want {
		d := parts[i]
		if escaped {
			var err error
			if d, err = url.PathUnescape(d); err != nil {
				return false
			}
		}
		switch w {
		case "{1}":
			if d != seg1 {
				return false
			}
		case "{2}":
			if d != seg2 {
				return false
			}
		default:
			if d != w {
				return false
			}
		}
	}
	return true
}

// ---- An independent model of the strict JSON bodies ----------------------
//
// decodeBody promises: a body is one JSON value (an object, or null), no
// unknown field, no value of the wrong type, nothing after it. The model
// below says the same with other means (json.Valid, a walk over the keys,
// strconv on each literal), so that a slip in decodeBody shows as a
// disagreement.

type fieldKind int

const (
	kInt64 fieldKind = iota
	kUint8
	kUint64
	kString
)

type fieldSpec struct {
	name string
	kind fieldKind
}

var bodyFields = map[bodyKind][]fieldSpec{
	createSeqBody: {{"start", kInt64}, {"max", kInt64}},
	reserveBody:   {{"count", kInt64}},
	memberBody:    {{"id", kString}, {"raft_addr", kString}, {"http_addr", kString}},
	namespaceBody: {{"epoch_ms", kInt64}, {"timestamp_bits", kUint8}, {"worker_bits", kUint8}, {"sequence_bits", kUint8},
		{"tick_ms", kInt64}, {"max_workers", kInt64}, {"lease_ttl_ms", kInt64}, {"recycle_delay_ms", kInt64},
		{"preset", kString}, {"worker_role", kString}, {"horizon_years", kInt64}},
	leaseBody:  {{"holder", kString}, {"request_id", kString}, {"client_time_ms", kInt64}, {"worker_id", kInt64}},
	tokenBody:  {{"token", kUint64}, {"client_time_ms", kInt64}},
	raiseBody:  {{"at_least", kInt64}},
	idsBody:    {{"count", kInt64}},
	leaderBody: {{"to", kString}},
}

// jsonValue is one field of a modelled body: absent (or null), a number or
// a string.
type jsonValue struct {
	set bool
	i   int64
	u   uint64
	s   string
}

// jsonFold is how encoding/json matches a key to a field name: each rune
// upper-cased (so "COUNT" is "count", while the Kelvin sign is not 'k').
func jsonFold(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// modelBody returns the fields of body as decodeBody should see them, and
// false when decodeBody must refuse it.
func modelBody(kind bodyKind, body []byte, optional bool) (map[string]jsonValue, bool) {
	out := map[string]jsonValue{}
	// The Snowflake route reads a body of only white space as none.
	if len(body) == 0 || (kind == idsBody && len(bytes.TrimSpace(body)) == 0) {
		return out, optional
	}
	if !json.Valid(body) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, false
	}
	if tok == nil {
		return out, true // null: every field stays as it was
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, false
	}
	valid := true
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key := kt.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		var spec *fieldSpec
		for i, fs := range bodyFields[kind] {
			if jsonFold(key) == jsonFold(fs.name) {
				spec = &bodyFields[kind][i]
				break
			}
		}
		if spec == nil {
			valid = false // unknown field
			continue
		}
		lit := string(raw)
		if lit == "null" {
			delete(out, spec.name) // null leaves the field as it was: absent
			continue
		}
		var v jsonValue
		v.set = true
		switch spec.kind {
		case kInt64:
			v.i, err = strconv.ParseInt(lit, 10, 64)
		case kUint8:
			v.u, err = strconv.ParseUint(lit, 10, 8)
		case kUint64:
			v.u, err = strconv.ParseUint(lit, 10, 64)
		case kString:
			if lit[0] != '"' {
				err = errors.New("not a string")
			} else {
				err = json.Unmarshal(raw, &v.s)
			}
		}
		if err != nil {
			valid = false // wrong type
			continue
		}
		out[spec.name] = v
	}
	return out, valid
}

// validSequenceName is docs/http-api.md's naming rule, written out again.
func validSequenceName(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// creatableName is docs/http-api.md's rule for a new sequence or namespace: a
// valid name that is not a dot segment ("." or "..").
func creatableName(s string) bool { return validSequenceName(s) && s != "." && s != ".." }

// hostPort is a loose check of "host:port" for what reached a Store.
func hostPort(addr string) bool {
	h, p, err := net.SplitHostPort(addr)
	if err != nil || h == "" {
		return false
	}
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}

// knownProblemTypes are the stable problem types (api.Problem*).
var knownProblemTypes = map[string]bool{
	api.ProblemBadRequest: true, api.ProblemNotFound: true, api.ProblemExhausted: true, api.ProblemConflict: true,
	api.ProblemTooLarge: true, api.ProblemUnavailable: true, api.ProblemMemberNotFound: true, api.ProblemInternal: true,
	api.ProblemRouteNotFound: true, api.ProblemMethodNotAllowed: true, api.ProblemUnsupportedMedium: true,
	api.ProblemUnauthorized: true, api.ProblemForbidden: true, api.ProblemTooManyRequests: true,
	api.ProblemNamespaceNotFound: true, api.ProblemNoWorkerFree: true, api.ProblemLeaseLost: true,
	api.ProblemWorkerUnavailable: true, api.ProblemClockBehind: true, api.ProblemWorkersExhausted: true,
	api.ProblemNoWorkerLease: true, api.ProblemTimestampExhausted: true,
}

// checkAnswer checks the shape every answer promises: an error is an RFC
// 9457 problem (application/problem+json) with a known type, a title, a
// detail and the HTTP status; a success with a body is JSON. It returns the
// problem of an error answer.
func checkAnswer(t *testing.T, what string, status int, h http.Header, body []byte) api.Problem {
	t.Helper()
	var p api.Problem
	if status < 400 {
		if status != http.StatusNoContent && !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
			t.Errorf("%s: %d with Content-Type %q, want application/json: %.200s", what, status, h.Get("Content-Type"), body)
		}
		if status != http.StatusNoContent && !json.Valid(body) {
			t.Errorf("%s: %d with a body that is not JSON: %.200q", what, status, body)
		}
		return p
	}
	if ct := h.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%s: %d with Content-Type %q, want application/problem+json: %.200q", what, status, ct, body)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Errorf("%s: %d with a body that is not a problem: %v: %.200q", what, status, err, body)
		return p
	}
	switch {
	case !knownProblemTypes[p.Type]:
		t.Errorf("%s: %d: problem type %q is not one of the stable types", what, status, p.Type)
	case p.Title == "":
		t.Errorf("%s: %d: problem without a title: %s", what, status, body)
	case strings.TrimSpace(p.Detail) == "":
		t.Errorf("%s: %d: problem without a detail: %s", what, status, body)
	case p.Status != status:
		t.Errorf("%s: problem status %d, HTTP status %d", what, p.Status, status)
	case status == http.StatusServiceUnavailable && h.Get("Retry-After") == "":
		t.Errorf("%s: 503 without Retry-After", what)
	}
	return p
}

// routed reports whether an answer came from the route's handler: Echo's
// own 404 and 405 have their own problem types.
func routed(status int, p api.Problem) bool {
	return !(status == http.StatusNotFound && p.Type == api.ProblemRouteNotFound) &&
		!(status == http.StatusMethodNotAllowed && p.Type == api.ProblemMethodNotAllowed)
}

// fuzzSeed is one seed of both targets.
type fuzzSeed struct {
	route      int
	seg1, seg2 string
	query      string
	body       string
}

// fuzzSeeds are valid requests of every route and the edge cases the tests
// of this package pin (trailing data, case-folded keys, overflowing numbers,
// escapes in path segments, ...).
var fuzzSeeds = []fuzzSeed{
	{rCreateSequence, "orders", "", "", ""},
	{rCreateSequence, "orders", "", "", `{}`},
	{rCreateSequence, "small", "", "", `{"start":100,"max":200}`},
	{rCreateSequence, "top", "", "", `{"start":9223372036854775800}`},
	{rCreateSequence, "x", "", "", `{"start":9223372036854775808}`},
	{rCreateSequence, "x", "", "", `{"start":0}`},
	{rCreateSequence, "x", "", "", `{"start":10,"max":5}`},
	{rCreateSequence, "x", "", "", `{"start":1}}`},
	{rCreateSequence, "x", "", "", `null`},
	{rCreateSequence, "x", "", "", "  \n"},
	{rCreateSequence, "a%2Fb", "", "", ""},
	{rCreateSequence, "n%61me", "", "", ""},
	{rCreateSequence, "%2E%2E", "", "", ""},
	{rCreateSequence, "..", "", "", ""},
	{rCreateSequence, strings.Repeat("a", 65), "", "", ""},
	{rReserve, "orders", "", "", `{"count":1}`},
	{rReserve, "orders", "", "", `{"count":10000000}`},
	{rReserve, "orders", "", "", `{"COUNT":7}`},
	{rReserve, "orders", "", "", `{"count":5,"Count":6}`},
	{rReserve, "orders", "", "", `{"count":0}`},
	{rReserve, "orders", "", "", `{"count":-9223372036854775808}`},
	{rReserve, "orders", "", "", `{"count":1e3}`},
	{rReserve, "orders", "", "", `{"count":"5"}`},
	{rReserve, "orders", "", "", `{"count":null}`},
	{rReserve, "orders", "", "", `{"count":5}]`},
	{rReserve, "orders", "", "", `{"count":5} 6`},
	{rReserve, "orders", "", "", `[5]`},
	{rReserve, "orders", "", "", ``},
	{rReserve, "no%20such", "", "", `{"count":1}`},
	{rReserve, "top", "", "", `{"count":3}`},
	{rJoin, "", "", "", `{"id":"n9","raft_addr":"127.0.0.1:7001","http_addr":"127.0.0.1:8001"}`},
	{rJoin, "", "", "", `{"id":"n9","raft_addr":"127.0.0.1:0","http_addr":"127.0.0.1:8001"}`},
	{rJoin, "", "", "", `{"id":"n9","raft_addr":"[::1]:7001","http_addr":"localhost:8001"}`},
	{rJoin, "", "", "", `{"id":"n9","raft_addr":"127.0.0.1:7001"}`},
	{rJoin, "", "", "", `{"id":"n1","raft_addr":"127.0.0.1:7001","http_addr":"127.0.0.1:8001","voter":false}`},
	{rUpdateMember, "n9", "", "", `{"id":"n9","raft_addr":"127.0.0.1:7001","http_addr":"127.0.0.1:8001"}`},
	{rUpdateMember, "n%2F9", "", "", `{"id":"n/9","raft_addr":"127.0.0.1:7001","http_addr":"127.0.0.1:8001"}`},
	{rUpdateMember, "n%3B9", "", "", `{"id":"n;9","raft_addr":"127.0.0.1:7001","http_addr":"127.0.0.1:8001"}`},
	{rRemoveMember, "nobody", "", "", ""},
	{rRemoveMember, "no%20body", "", "", ""},
	{rRemoveMember, "n%31", "", "", ""},
	{rCreateNamespace, "ids", "", "", ""},
	{rCreateNamespace, "ids", "", "", `{"epoch_ms":1577836800000,"timestamp_bits":41,"worker_bits":10,"sequence_bits":12,"tick_ms":1}`},
	{rCreateNamespace, "ids", "", "", `{"lease_ttl_ms":1000,"max_workers":4,"worker_bits":2,"timestamp_bits":49}`},
	{rCreateNamespace, "ids", "", "", `{"timestamp_bits":256}`},
	{rCreateNamespace, "ids", "", "", `{"worker_bits":63,"timestamp_bits":0,"sequence_bits":0}`},
	{rAcquireLease, "ids", "", "", `{"holder":"host/1","request_id":"r1","client_time_ms":1700000000000}`},
	{rAcquireLease, "ids", "", "", `{"holder":""}`},
	{rAcquireLease, "ids", "", "", `{"holder":"h","client_time_ms":-1}`},
	{rAcquireLease, "ids", "", "", `{"holder":"` + strings.Repeat("h", 257) + `"}`},
	{rRenewLease, "ids", "0", "", `{"token":5,"client_time_ms":1700000000000}`},
	{rRenewLease, "ids", "-1", "", `{"token":5}`},
	{rRenewLease, "ids", "3", "", `{"token":0}`},
	{rRenewLease, "ids", "3", "", `{"token":18446744073709551615}`},
	{rRenewLease, "ids", "3", "", `{"token":18446744073709551616}`},
	{rReleaseLease, "ids", "1", "", `{"token":2}`},
	{rReleaseLease, "ids", "9223372036854775808", "", `{"token":2}`},
	{rRevokeLease, "ids", "1", "", ""},
	{rRestore, "", "", "advance=1000", `{}`},
	{rRestore, "", "", "advance=0", ``},
	{rRestore, "", "", "advance=-5", `x`},
	{rRestore, "", "", "", `x`},
	{rAudit, "", "", "after_seq=0&limit=10", ""},
	{rAudit, "", "", "limit=10001", ""},
	{rAudit, "", "", "after_index=3", ""},
	{rAudit, "", "", "after_seq=-1", ""},
	{rInspectSequence, "orders", "1", "", ""},
	{rInspectSequence, "orders", "0", "", ""},
	{rInspectSnowflake, "ids", "1234567890123", "", ""},
	{rInspectSnowflake, "ids", "9223372036854775807", "", ""},
	{rGetSequence, "orders", "", "", ""},
	{rGetNamespace, "ids", "", "", ""},
	{rListLeases, "ids", "", "", ""},
	{rListSequences, "", "", "", ""},
	{rListSequences, "", "", "after=orders&limit=5000", ""},
	{rListSequences, "", "", "after=&limit=1", ""},
	{rListSequences, "", "", "limit=0", ""},
	{rListSequences, "", "", "limit=5001", ""},
	{rListSequences, "", "", "after=a%2Fb", ""},
	{rRaiseSequence, "orders", "", "", `{"at_least":1000}`},
	{rRaiseSequence, "orders", "", "", `{"at_least":9223372036854775807}`},
	{rRaiseSequence, "orders", "", "", `{"at_least":0}`},
	{rRaiseSequence, "orders", "", "", `{"at_least":-1}`},
	{rRaiseSequence, "orders", "", "", `{"AT_LEAST":5}`},
	{rRaiseSequence, "orders", "", "", `{}`},
	{rRaiseSequence, "orders", "", "", ``},
	{rRaiseSequence, "orders", "", "", `{"at_least":5,"count":1}`},
	{rSnowflakeIDs, "ids", "", "", `{"count":3}`},
	{rSnowflakeIDs, "ids", "", "", ``},
	{rSnowflakeIDs, "ids", "", "", " \n"},
	{rSnowflakeIDs, "ids", "", "", `{}`},
	{rSnowflakeIDs, "ids", "", "", `{"count":10000}`},
	{rSnowflakeIDs, "ids", "", "", `{"count":10001}`},
	{rSnowflakeIDs, "ids", "", "", `{"count":0}`},
	{rSnowflakeIDs, "ids", "", "", `{"count":1,"n":2}`},
	{rSnowflakeIDs, "no%20such", "", "", `{"count":1}`},
	{rTransferLeader, "", "", "", `{"to":"n2"}`},
	{rTransferLeader, "", "", "", `{"to":""}`},
	{rTransferLeader, "", "", "", `{"To":"n2","to":"n3"}`},
	{rTransferLeader, "", "", "", `{"to":["n2"]}`},
}

// ---------------------------------------------------------------------------
// FuzzAPIRequest: the Service in-process over a recording Store.

// recStore is a Store that records the one call a request makes, checks the
// values the handlers promise to have validated, and answers with canned
// values or with fault.
type recStore struct {
	fault error
	call  string   // the call made, with its arguments
	bad   []string // promises broken by what reached the store
}

func (s *recStore) record(call string) {
	if s.call != "" {
		s.bad = append(s.bad, "a second store call "+call+" after "+s.call)
	}
	s.call = call
}

func (s *recStore) expect(ok bool, format string, args ...any) {
	if !ok {
		s.bad = append(s.bad, fmt.Sprintf(format, args...))
	}
}

func (s *recStore) ID() string                                 { return "fz" }
func (s *recStore) Serving() bool                              { return true }
func (s *recStore) LeaderHTTPAddr() (id, addr string, ok bool) { return "fz", "127.0.0.1:1", true }
func (s *recStore) Ready() error                               { return nil }
func (s *recStore) Status() (domain.ClusterStatus, error) {
	return domain.ClusterStatus{Node: "fz"}, nil
}
func (s *recStore) Snapshot(context.Context) error              { s.record("Snapshot"); return s.fault }
func (s *recStore) Backup(_ context.Context, w io.Writer) error { s.record("Backup"); return s.fault }

func (s *recStore) Reserve(_ context.Context, name string, count int64) (int64, int64, error) {
	s.record(fmt.Sprintf("Reserve(%q,%d)", name, count))
	s.expect(validSequenceName(name), "Reserve with invalid name %q", name)
	s.expect(count >= 1 && count <= api.MaxReserveCount, "Reserve with count %d", count)
	if s.fault != nil {
		return 0, 0, s.fault
	}
	return 1000, 1000 + count - 1, nil
}

func (s *recStore) CreateSequence(_ context.Context, c domain.SequenceSettings) (domain.Sequence, bool, error) {
	s.record(fmt.Sprintf("CreateSequence(%q,%d,%d)", c.Name, c.Start, c.Max))
	s.expect(validSequenceName(c.Name), "CreateSequence with invalid name %q", c.Name)
	s.expect(c.Start >= 1 && c.Max >= c.Start, "CreateSequence with bounds %d..%d", c.Start, c.Max)
	return domain.Sequence{Name: c.Name, Start: c.Start, Max: c.Max, Next: c.Start, Remaining: c.Max - c.Start + 1}, true, s.fault
}

func (s *recStore) RaiseSequence(_ context.Context, name string, atLeast int64) (domain.RaiseResult, error) {
	s.record(fmt.Sprintf("RaiseSequence(%q,%d)", name, atLeast))
	s.expect(validSequenceName(name), "RaiseSequence with invalid name %q", name)
	s.expect(atLeast >= 1, "RaiseSequence with at_least %d", atLeast)
	seq := domain.Sequence{Name: name, Start: 1, Max: api.DefaultMax, Next: atLeast + 1, Remaining: api.DefaultMax - atLeast}
	if atLeast == api.DefaultMax {
		seq.Exhausted, seq.Next = true, 0
	}
	return domain.RaiseResult{Sequence: seq, Raised: true, Skipped: atLeast}, s.fault
}

func (s *recStore) Sequence(_ context.Context, name string) (domain.Sequence, error) {
	s.record(fmt.Sprintf("Sequence(%q)", name))
	s.expect(validSequenceName(name), "Sequence with invalid name %q", name)
	return domain.Sequence{Name: name, Start: 1, Max: 10, Exhausted: true}, s.fault
}

func (s *recStore) Sequences(_ context.Context, after string, limit int) ([]domain.Sequence, bool, error) {
	s.record(fmt.Sprintf("Sequences(%q,%d)", after, limit))
	s.expect(after == "" || validSequenceName(after), "Sequences after invalid name %q", after)
	s.expect(limit >= 1 && limit <= api.MaxSequencePage, "Sequences with limit %d", limit)
	return []domain.Sequence{{Name: "zz", Start: 1, Max: 10, Next: 1, Remaining: 10}}, true, s.fault
}

func (s *recStore) checkMember(what string, r domain.Member) {
	s.expect(r.ID != "" && hostPort(r.RaftAddr) && hostPort(r.HTTPAddr), "%s with %+v", what, r)
}

func (s *recStore) Join(_ context.Context, r domain.Member) error {
	s.record(fmt.Sprintf("Join(%q,%q,%q)", r.ID, r.RaftAddr, r.HTTPAddr))
	s.checkMember("Join", r)
	return s.fault
}

func (s *recStore) UpdateMember(_ context.Context, r domain.Member) error {
	s.record(fmt.Sprintf("UpdateMember(%q,%q,%q)", r.ID, r.RaftAddr, r.HTTPAddr))
	s.checkMember("UpdateMember", r)
	return s.fault
}

func (s *recStore) TransferLeadershipTo(_ context.Context, to string) (string, error) {
	s.record(fmt.Sprintf("TransferLeadershipTo(%q)", to))
	s.expect(to != "", "TransferLeadershipTo with no target")
	return to, s.fault
}

func (s *recStore) Remove(_ context.Context, id string) error {
	s.record(fmt.Sprintf("Remove(%q)", id))
	return s.fault
}

func (s *recStore) Restore(_ context.Context, backup []byte, advance int64) error {
	s.record(fmt.Sprintf("Restore(%d bytes,%d)", len(backup), advance))
	s.expect(advance >= 1, "Restore with advance %d", advance)
	return s.fault
}

func fuzzNamespace(name string) domain.Namespace {
	return domain.Namespace{Name: name, EpochMs: api.DefaultEpochMs, TimestampBits: 41, WorkerBits: 10, SequenceBits: 12,
		TickMs: 1, MaxWorkers: 1024, LeaseTTLMs: 30_000, RecycleDelayMs: 60_000}
}

func (s *recStore) CreateNamespace(_ context.Context, n domain.NamespaceSettings) (domain.NamespaceCreated, error) {
	s.record(fmt.Sprintf("CreateNamespace(%+v)", n))
	// The layout rules are the state machine's (fsm validates); the
	// handler only decodes. Answer with what was asked, however odd, so
	// that the views see odd layouts too.
	return domain.NamespaceCreated{Namespace: domain.Namespace{Name: n.Name, EpochMs: n.EpochMs, TimestampBits: n.TimestampBits, WorkerBits: n.WorkerBits,
		SequenceBits: n.SequenceBits, TickMs: n.TickMs, MaxWorkers: n.MaxWorkers, LeaseTTLMs: n.LeaseTTLMs,
		RecycleDelayMs: n.RecycleDelayMs, WorkerRole: n.WorkerRole, HorizonYears: n.HorizonYears}, Created: true, Warnings: []string{"a warning"}}, s.fault
}

func (s *recStore) Namespace(_ context.Context, name string) (domain.Namespace, error) {
	s.record(fmt.Sprintf("Namespace(%q)", name))
	return fuzzNamespace(name), s.fault
}

func (s *recStore) Namespaces(context.Context) ([]domain.Namespace, error) {
	s.record("Namespaces")
	return nil, s.fault
}

func (s *recStore) AcquireLease(_ context.Context, ns string, r domain.LeaseRequest) (domain.LeaseGrant, error) {
	s.record(fmt.Sprintf("AcquireLease(%q,%q,%q,%d,%v,%d)", ns, r.Holder, r.RequestID, r.ClientTimeMs, r.Chosen, r.WorkerID))
	s.expect(r.Holder != "" && len(r.Holder) <= 256 && len(r.RequestID) <= 128 && r.ClientTimeMs >= 0 && r.WorkerID >= 0 && (r.Chosen || r.WorkerID == 0),
		"AcquireLease with %+v", r)
	return domain.LeaseGrant{Lease: domain.Lease{Namespace: ns, WorkerID: 3, Holder: r.Holder, Token: 7, State: "held"}, Namespace: fuzzNamespace(ns)}, s.fault
}

func (s *recStore) RenewLease(_ context.Context, ns string, worker int64, token uint64, clientTimeMs int64) (domain.LeaseGrant, error) {
	s.record(fmt.Sprintf("RenewLease(%q,%d,%d,%d)", ns, worker, token, clientTimeMs))
	s.expect(worker >= 0 && token != 0 && clientTimeMs >= 0, "RenewLease with worker %d token %d client time %d", worker, token, clientTimeMs)
	return domain.LeaseGrant{Lease: domain.Lease{Namespace: ns, WorkerID: worker, Token: token, State: "held"}, Namespace: fuzzNamespace(ns)}, s.fault
}

func (s *recStore) ReleaseLease(_ context.Context, ns string, worker int64, token uint64) (domain.LeaseGrant, error) {
	s.record(fmt.Sprintf("ReleaseLease(%q,%d,%d)", ns, worker, token))
	s.expect(worker >= 0, "ReleaseLease with worker %d", worker)
	return domain.LeaseGrant{Lease: domain.Lease{Namespace: ns, WorkerID: worker, Token: token, State: "ended"}, Namespace: fuzzNamespace(ns)}, s.fault
}

func (s *recStore) Leases(_ context.Context, ns string) ([]domain.Lease, domain.Namespace, error) {
	s.record(fmt.Sprintf("Leases(%q)", ns))
	return []domain.Lease{{Namespace: ns, WorkerID: 1, Token: 9}}, fuzzNamespace(ns), s.fault
}

func (s *recStore) Audit(_ context.Context, afterSeq uint64, limit int) (domain.AuditPage, error) {
	s.record(fmt.Sprintf("Audit(%d,%d)", afterSeq, limit))
	s.expect(limit >= 1 && limit <= 10_000, "Audit with limit %d", limit)
	return domain.AuditPage{Retention: 20_000}, s.fault
}

func (s *recStore) CheckAudit(context.Context) (domain.AuditCheck, error) {
	s.record("CheckAudit")
	return domain.AuditCheck{}, s.fault
}

func (s *recStore) InspectSequence(_ context.Context, name string, id int64) (domain.RangeInspection, error) {
	s.record(fmt.Sprintf("InspectSequence(%q,%d)", name, id))
	s.expect(id >= 1, "InspectSequence with id %d", id)
	return domain.RangeInspection{Sequence: name, ID: id}, s.fault
}

func (s *recStore) InspectSnowflake(_ context.Context, ns string, id int64) (domain.SnowflakeInspection, error) {
	s.record(fmt.Sprintf("InspectSnowflake(%q,%d)", ns, id))
	s.expect(id >= 1, "InspectSnowflake with id %d", id)
	return domain.SnowflakeInspection{Namespace: ns, ID: id}, s.fault
}

func (s *recStore) SnowflakeIDs(_ context.Context, ns string, count int) (domain.SnowflakeIDs, error) {
	s.record(fmt.Sprintf("SnowflakeIDs(%q,%d)", ns, count))
	s.expect(count >= 1 && count <= api.MaxSnowflakeIDs, "SnowflakeIDs with count %d", count)
	ids := make([]int64, count)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	return domain.SnowflakeIDs{Namespace: ns, Node: "fz", WorkerID: 1, IDs: ids}, s.fault
}

// storeFault is an error of one of the kinds the Store contract names
// (wrapped, as the real Store wraps its errors) and the problem it must
// become: its status, and its type, which for a missing thing depends on
// what the route is about.
type storeFault struct {
	err    error
	status int
	typ    func(route int) string
}

func always(typ string) func(int) string { return func(int) string { return typ } }

// notFoundType is the documented type of a 404 on a route.
func notFoundType(route int) string {
	switch route {
	case rCreateNamespace, rAcquireLease, rRenewLease, rReleaseLease, rRevokeLease, rInspectSnowflake, rGetNamespace, rListLeases, rSnowflakeIDs:
		return api.ProblemNamespaceNotFound
	case rJoin, rUpdateMember, rRemoveMember, rTransferLeader:
		return api.ProblemMemberNotFound
	}
	return api.ProblemNotFound
}

var storeFaults = []storeFault{
	{domain.Kindf(domain.ErrNotFound, "the thing is not there"), 404, notFoundType},
	{domain.Kindf(domain.ErrExhausted, "sequence passes its max"), 409, always(api.ProblemExhausted)},
	{domain.Kindf(domain.ErrConflict, "exists with other settings"), 409, always(api.ProblemConflict)},
	{domain.Kindf(domain.ErrInvalid, "the state machine refuses it"), 400, always(api.ProblemBadRequest)},
	{domain.Kindf(domain.ErrNoWorkerFree, "every worker id is held"), 409, always(api.ProblemNoWorkerFree)},
	{domain.Kindf(domain.ErrLeaseLost, "the lease ended"), 409, always(api.ProblemLeaseLost)},
	{domain.Wrap(domain.ErrWorkerUnavailable, &domain.WorkerUnavailableError{WorkerID: 17, Holder: "h", State: "held", Message: "worker 17 is held"}),
		409, always(api.ProblemWorkerUnavailable)},
	{domain.Kindf(domain.ErrTimestampExhausted, "the timestamp bits ran out"), 409, always(api.ProblemTimestampExhausted)},
	{domain.Wrap(domain.ErrClockBehind, &domain.ClockBehindError{Namespace: "ids", BehindMs: 1500, Message: "the clock is 1.5 s behind"}),
		503, always(api.ProblemClockBehind)},
	{domain.Kindf(domain.ErrWorkersExhausted, "every worker id is held"), 503, always(api.ProblemWorkersExhausted)},
	{domain.Kindf(domain.ErrNoWorkerLease, "no valid lease"), 503, always(api.ProblemNoWorkerLease)},
	{domain.Kindf(domain.ErrUnavailable, "not the leader"), 503, always(api.ProblemUnavailable)},
	{context.DeadlineExceeded, 503, always(api.ProblemUnavailable)},
	{context.Canceled, 503, always(api.ProblemUnavailable)},
	{errors.New("disk on fire"), 500, always(api.ProblemInternal)}, // of no kind: the only 500
}

// expectation is what a request must do: whether it reaches the Store, and
// with which call ("" when the model cannot tell the arguments exactly).
type expectation struct {
	call  bool
	args  string
	maybe bool // the model cannot tell whether it reaches the Store
}

// expectFor is the model of each handler: which inputs reach the Store, and
// how. It is written from docs/http-api.md and the handlers' doc, not from their
// code paths.
func expectFor(r request) expectation {
	kind := fuzzRoutes[r.route].body
	optional := kind == createSeqBody || kind == namespaceBody || kind == idsBody
	body, bodyOK := map[string]jsonValue{}, true
	if kind != noBody && kind != backupBody {
		if len(r.body) > api.MaxBodyBytes {
			bodyOK = false
		} else {
			body, bodyOK = modelBody(kind, r.body, optional)
		}
	}
	no := expectation{}
	switch r.route {
	case rCreateSequence:
		start, max := api.DefaultStart, api.DefaultMax
		if v := body["start"]; v.set {
			start = v.i
		}
		if v := body["max"]; v.set {
			max = v.i
		}
		if !creatableName(r.p1) || !bodyOK || start < 1 || max < start {
			return no
		}
		return expectation{call: true, args: fmt.Sprintf("CreateSequence(%q,%d,%d)", r.p1, start, max)}
	case rRaiseSequence:
		a := body["at_least"]
		if !validSequenceName(r.p1) || !bodyOK || !a.set || a.i < 1 {
			return no
		}
		return expectation{call: true, args: fmt.Sprintf("RaiseSequence(%q,%d)", r.p1, a.i)}
	case rReserve:
		c := body["count"]
		if !validSequenceName(r.p1) || !bodyOK || !c.set || c.i < 1 || c.i > api.MaxReserveCount {
			return no
		}
		return expectation{call: true, args: fmt.Sprintf("Reserve(%q,%d)", r.p1, c.i)}
	case rJoin, rUpdateMember:
		id, ra, ha := body["id"].s, body["raft_addr"].s, body["http_addr"].s
		if !bodyOK || id == "" || ra == "" || ha == "" || (r.route == rUpdateMember && id != r.p1) {
			return no
		}
		// Whether the addresses pass is the handler's stricter rule;
		// what reaches the Store is checked by recStore.
		return expectation{maybe: true}
	case rRemoveMember:
		return expectation{call: true, args: fmt.Sprintf("Remove(%q)", r.p1)}
	case rCreateNamespace:
		if !creatableName(r.p1) || !bodyOK {
			return no
		}
		n, ok := namespaceFrom(r.p1, body)
		if !ok {
			return no
		}
		return expectation{call: true, args: fmt.Sprintf("CreateNamespace(%+v)", n)}
	case rAcquireLease:
		h, id, ct, w := body["holder"].s, body["request_id"].s, body["client_time_ms"].i, body["worker_id"]
		if !bodyOK || h == "" || len(h) > 256 || len(id) > 128 || ct < 0 || (w.set && w.i < 0) {
			return no
		}
		return expectation{call: true, args: fmt.Sprintf("AcquireLease(%q,%q,%q,%d,%v,%d)", r.p1, h, id, ct, w.set, w.i)}
	case rRenewLease, rReleaseLease, rRevokeLease:
		w, err := strconv.ParseInt(r.p2, 10, 64)
		if err != nil || w < 0 {
			return no
		}
		if r.route == rRevokeLease {
			return expectation{call: true, args: fmt.Sprintf("ReleaseLease(%q,%d,0)", r.p1, w)}
		}
		tok, ct := body["token"].u, body["client_time_ms"].i
		if !bodyOK || tok == 0 || ct < 0 {
			return no
		}
		if r.route == rReleaseLease {
			return expectation{call: true, args: fmt.Sprintf("ReleaseLease(%q,%d,%d)", r.p1, w, tok)}
		}
		return expectation{call: true, args: fmt.Sprintf("RenewLease(%q,%d,%d,%d)", r.p1, w, tok, ct)}
	case rRestore:
		adv, err := strconv.ParseInt(r.query.Get("advance"), 10, 64)
		if err != nil || adv < 1 || len(r.body) > api.MaxBackupBytes {
			return no
		}
		return expectation{call: true, args: fmt.Sprintf("Restore(%d bytes,%d)", len(r.body), adv)}
	case rAudit:
		if r.query.Get("after_index") != "" {
			return no
		}
		var after uint64
		if v := r.query.Get("after_seq"); v != "" {
			a, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return no
			}
			after = a
		}
		limit := 1000
		if v := r.query.Get("limit"); v != "" {
			l, err := strconv.ParseInt(v, 10, 64)
			if err != nil || l < 1 || l > 10_000 {
				return no
			}
			limit = int(l)
		}
		return expectation{call: true, args: fmt.Sprintf("Audit(%d,%d)", after, limit)}
	case rInspectSequence, rInspectSnowflake:
		id, err := strconv.ParseInt(r.p2, 10, 64)
		if err != nil || id < 1 {
			return no
		}
		f := "InspectSequence(%q,%d)"
		if r.route == rInspectSnowflake {
			f = "InspectSnowflake(%q,%d)"
		}
		return expectation{call: true, args: fmt.Sprintf(f, r.p1, id)}
	case rGetSequence:
		if !validSequenceName(r.p1) {
			return no
		}
		return expectation{call: true, args: fmt.Sprintf("Sequence(%q)", r.p1)}
	case rGetNamespace:
		return expectation{call: true, args: fmt.Sprintf("Namespace(%q)", r.p1)}
	case rListLeases:
		return expectation{call: true, args: fmt.Sprintf("Leases(%q)", r.p1)}
	case rListSequences:
		after := r.query.Get("after")
		if after != "" && !validSequenceName(after) {
			return no
		}
		limit := api.DefaultSequencePage
		if v := r.query.Get("limit"); v != "" {
			l, err := strconv.ParseInt(v, 10, 64)
			if err != nil || l < 1 || l > api.MaxSequencePage {
				return no
			}
			limit = int(l)
		}
		return expectation{call: true, args: fmt.Sprintf("Sequences(%q,%d)", after, limit)}
	case rSnowflakeIDs:
		count := int64(1)
		if c := body["count"]; c.set {
			count = c.i
		}
		if !validSequenceName(r.p1) || !bodyOK || count < 1 || count > api.MaxSnowflakeIDs {
			return no
		}
		return expectation{call: true, args: fmt.Sprintf("SnowflakeIDs(%q,%d)", r.p1, count)}
	case rTransferLeader:
		to := body["to"].s
		if !bodyOK || to == "" {
			return no
		}
		return expectation{call: true, args: fmt.Sprintf("TransferLeadershipTo(%q)", to)}
	}
	panic("unknown route")
}

// namespaceFrom is the namespace a PUT /v1/namespaces/{name} body asks for,
// with the documented defaults: Twitter's layout, max_workers all the worker
// ids, recycle delay twice a given TTL; or the "instagram" preset's layout
// (40/13/10 bits, 1 ms ticks, worker role shard, its own epoch), which the
// body's bits, tick and role may only repeat. False: the body is refused
// (an unknown preset or role, a contradiction, a horizon out of 1..10000).
func namespaceFrom(name string, body map[string]jsonValue) (domain.NamespaceSettings, bool) {
	d := fuzzNamespace(name)
	n := domain.NamespaceSettings{Name: d.Name, EpochMs: d.EpochMs, TimestampBits: d.TimestampBits, WorkerBits: d.WorkerBits,
		SequenceBits: d.SequenceBits, TickMs: d.TickMs, LeaseTTLMs: d.LeaseTTLMs, RecycleDelayMs: d.RecycleDelayMs}
	n.MaxWorkers = 0 // set below from worker_bits, or given
	switch role := body["worker_role"]; {
	case !role.set || role.s == "" || role.s == "worker":
	case role.s == "shard":
		n.WorkerRole = "shard"
	default:
		return n, false
	}
	if p := body["preset"]; p.set && p.s != "" {
		if p.s != "instagram" {
			return n, false
		}
		for k, want := range map[string]uint64{"timestamp_bits": 40, "worker_bits": 13, "sequence_bits": 10} {
			if v := body[k]; v.set && v.u != want {
				return n, false
			}
		}
		if v := body["tick_ms"]; v.set && v.i != 1 {
			return n, false
		}
		if v := body["worker_role"]; v.set && v.s != "" && v.s != "shard" {
			return n, false
		}
		n.EpochMs, n.TimestampBits, n.WorkerBits, n.SequenceBits, n.TickMs, n.WorkerRole = 1767225600000, 40, 13, 10, 1, "shard"
	}
	if h := body["horizon_years"]; h.set {
		if h.i < 1 || h.i > 10_000 {
			return n, false
		}
		n.HorizonYears = h.i
	}
	i := func(k string, dst *int64) {
		if v := body[k]; v.set {
			*dst = v.i
		}
	}
	u := func(k string, dst *uint8) {
		if v := body[k]; v.set {
			*dst = uint8(v.u)
		}
	}
	i("epoch_ms", &n.EpochMs)
	i("tick_ms", &n.TickMs)
	i("lease_ttl_ms", &n.LeaseTTLMs)
	i("recycle_delay_ms", &n.RecycleDelayMs)
	u("timestamp_bits", &n.TimestampBits)
	u("worker_bits", &n.WorkerBits)
	u("sequence_bits", &n.SequenceBits)
	if !body["recycle_delay_ms"].set && body["lease_ttl_ms"].set {
		n.RecycleDelayMs = 2 * n.LeaseTTLMs
	}
	if n.WorkerBits < 63 {
		n.MaxWorkers = int64(1) << n.WorkerBits
	}
	i("max_workers", &n.MaxWorkers)
	return n, true
}

// FuzzAPIRequest sends one fuzzed request (route, two path segments, query,
// body; pad makes the body exceed api.MaxBodyBytes) through the real
// Service over a recStore that fails with storeFaults[fault] when
// fault indexes one. Properties:
//
//   - The answer's shape (checkAnswer): every 4xx/5xx is a problem with a
//     stable type, a title and a detail; nothing answers 500 except an
//     unknown Store error.
//   - The Store is reached exactly when the model (expectFor, written from
//     docs/http-api.md) says the request is valid, with exactly the values of the
//     body and the percent-decoded path: a malformed body never does
//     anything, a valid one is never refused.
//   - What reaches the Store is valid (recStore.expect): names, counts,
//     bounds, member addresses, lease fields.
//   - A Store error becomes its documented status and problem type.
//   - A 200 reservation is a range of exactly count IDs.
func FuzzAPIRequest(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(uint8(s.route), s.seg1, s.seg2, s.query, []byte(s.body), uint8(255), false)
	}
	f.Add(uint8(rReserve), "orders", "", "", []byte(`{"count":5}`), uint8(0), false)
	f.Add(uint8(rReserve), "orders", "", "", []byte(`{"count":5}`), uint8(len(storeFaults)-1), false)
	f.Add(uint8(rReserve), "orders", "", "", []byte(`{"count":5}`), uint8(255), true)
	f.Add(uint8(rJoin), "", "", "", []byte(`{"id":"n9","raft_addr":"127.0.0.1:7001","http_addr":"127.0.0.1:8001"}`), uint8(2), false)

	st := &recStore{}
	svc := httpapi.New(httpapi.Config{Store: st, Logger: slog.New(slog.DiscardHandler), RequestTimeout: time.Second})
	h := svc.Handler()

	f.Fuzz(func(t *testing.T, route uint8, seg1, seg2, query string, body []byte, fault uint8, pad bool) {
		if len(body) > 1<<12 {
			return // larger bodies teach nothing a padded one does not
		}
		r, ok := buildRequest(int(route)%numRoutes, seg1, seg2, query, body)
		if !ok {
			return
		}
		if pad {
			r.body = append(append([]byte(nil), r.body...), bytes.Repeat([]byte(" "), api.MaxBodyBytes)...)
		}
		*st = recStore{}
		var sf *storeFault
		if int(fault) < len(storeFaults) {
			sf = &storeFaults[fault]
			st.fault = fmt.Errorf("store: %w", sf.err)
		}
		req := (&http.Request{
			Method: r.method, URL: r.url, RequestURI: r.target, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, Host: "fuzz", RemoteAddr: "192.0.2.1:1234",
			Body: io.NopCloser(bytes.NewReader(r.body)), ContentLength: int64(len(r.body)),
		}).WithContext(t.Context())
		if len(r.body) > 0 {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		what := fmt.Sprintf("%s %s with body %.200q", r.method, r.target, r.body)
		status := rec.Code
		p := checkAnswer(t, what, status, rec.Header(), rec.Body.Bytes())
		for _, b := range st.bad {
			t.Errorf("%s: %s", what, b)
		}
		if !routed(status, p) {
			if !r.emptySegment {
				t.Errorf("%s: answered %d %s; the route should have matched", what, status, p.Type)
			}
			if st.call != "" {
				t.Errorf("%s: unrouted, yet called %s", what, st.call)
			}
			return
		}
		want := expectFor(r)
		switch {
		case want.maybe:
		case want.call && st.call == "":
			t.Fatalf("%s: valid by docs/http-api.md, refused with %d: %s", what, status, rec.Body.Bytes())
		case !want.call && st.call != "":
			t.Fatalf("%s: invalid by docs/http-api.md, yet reached the store: %s (answer %d %.200s)", what, st.call, status, rec.Body.Bytes())
		case want.call && st.call != want.args:
			t.Fatalf("%s: called %s, want %s", what, st.call, want.args)
		}
		switch {
		case st.call == "":
			if status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge {
				t.Errorf("%s: refused before the store with %d, want 400 or 413", what, status)
			}
			if status == http.StatusRequestEntityTooLarge && len(r.body) <= api.MaxBodyBytes {
				t.Errorf("%s: 413 for a body of %d bytes", what, len(r.body))
			}
		case sf != nil:
			if typ := sf.typ(r.route); status != sf.status || p.Type != typ {
				t.Errorf("%s: store error %v answered %d %s, want %d %s", what, sf.err, status, p.Type, sf.status, typ)
			}
		case status >= 300:
			t.Errorf("%s: the store succeeded, the answer is %d: %s", what, status, rec.Body.Bytes())
		case r.route == rReserve:
			var rg api.Range
			fields, _ := modelBody(reserveBody, r.body, false)
			if err := json.Unmarshal(rec.Body.Bytes(), &rg); err != nil || rg.Sequence != r.p1 || rg.Last-rg.First+1 != fields["count"].i {
				t.Errorf("%s: range answer %s (%v)", what, rec.Body.Bytes(), err)
			}
		}
	})
}

// ---------------------------------------------------------------------------
// FuzzAPINode: a real single-node server.

// Names the fuzzer's valid names map onto, so that one fuzz process creates
// at most these sequences and namespaces. The first ones are created with
// known settings before fuzzing; the others are left for the fuzzer to
// create with whatever settings it sends first.
var (
	fuzzSequences  = []string{"fz-def", "fz-ten", "fz-top", "fz-big", "fz-c0", "fz-c1", "fz-c2", "fz-c3"}
	fuzzNamespaces = []string{"fz-ns", "fz-ns0", "fz-ns1", "fz-ns2"}
)

// nodeHarness is the state of FuzzAPINode in one process: the node, its
// membership as it must stay, and every range it handed out.
type nodeHarness struct {
	n        *node
	raftAddr string
	members  string // GET /v1/cluster's members, which must never change

	mu     sync.Mutex
	ranges map[string][]api.Range // per sequence, sorted by First
	bounds map[string][2]int64    // start, max of the sequences seen
	inputs int
}

func newNodeHarness(tb testing.TB) *nodeHarness {
	n := startNode(tb)
	h := &nodeHarness{n: n, ranges: map[string][]api.Range{}, bounds: map[string][2]int64{}}
	for _, c := range []struct{ name, body string }{
		{"fz-def", ""}, {"fz-ten", `{"start":1,"max":10}`}, {"fz-top", `{"start":9223372036854775800}`}, {"fz-big", `{"start":1000000,"max":1000000000000}`},
		{"fz-raise", ""},
	} {
		r := n.MustCall(tb, http.MethodPut, "/v1/sequences/"+c.name, c.body)
		expectJSON(tb, "create "+c.name, r, http.StatusCreated)
		h.noteSequence(r.Body)
	}
	if r := n.MustCall(tb, http.MethodPut, "/v1/namespaces/fz-ns", nil); r.Status != http.StatusCreated {
		tb.Fatalf("create namespace: %d %s", r.Status, r.Body)
	}
	var cs api.ClusterStatus
	r := n.MustCall(tb, http.MethodGet, "/v1/cluster", nil)
	testkit.DecodeStrict(tb, r.Body, &cs)
	if len(cs.Members) != 1 {
		tb.Fatalf("members %+v", cs.Members)
	}
	h.raftAddr = cs.Members[0].RaftAddr
	h.members = h.currentMembers(tb)
	return h
}

func (h *nodeHarness) currentMembers(tb testing.TB) string {
	r := h.n.MustCall(tb, http.MethodGet, "/v1/cluster", nil)
	if r.Status != http.StatusOK {
		tb.Fatalf("GET /v1/cluster: %d %s", r.Status, r.Body)
	}
	var cs api.ClusterStatus
	testkit.DecodeStrict(tb, r.Body, &cs)
	if cs.Leader != "n1" {
		tb.Fatalf("leader is %q, want n1", cs.Leader)
	}
	sort.Slice(cs.Members, func(i, j int) bool { return cs.Members[i].ID < cs.Members[j].ID })
	m, _ := json.Marshal(cs.Members)
	return string(m)
}

// noteSequence records the bounds of a sequence from a PUT or GET answer.
func (h *nodeHarness) noteSequence(body []byte) {
	var s api.Sequence
	if json.Unmarshal(body, &s) == nil && s.Name != "" {
		h.mu.Lock()
		h.bounds[s.Name] = [2]int64{s.Start, s.Max}
		h.mu.Unlock()
	}
}

// addRange records rg and reports the range of the same sequence it
// overlaps, if any.
func (h *nodeHarness) addRange(rg api.Range) (api.Range, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rs := h.ranges[rg.Sequence]
	i := sort.Search(len(rs), func(i int) bool { return rs[i].First > rg.First })
	if i > 0 && rs[i-1].Last >= rg.First {
		return rs[i-1], true
	}
	if i < len(rs) && rs[i].First <= rg.Last {
		return rs[i], true
	}
	rs = append(rs, api.Range{})
	copy(rs[i+1:], rs[i:])
	rs[i] = rg
	h.ranges[rg.Sequence] = rs
	return api.Range{}, false
}

// mapName maps a valid decoded name onto one of names (so the fuzzer cannot
// create unboundedly many); an invalid one is sent as it came, to be
// refused.
func mapName(raw, decoded string, names []string) string {
	if !validSequenceName(decoded) {
		return raw
	}
	hf := fnv.New32a()
	hf.Write([]byte(decoded))
	return names[hf.Sum32()%uint32(len(names))]
}

// joinBody makes a fuzzed join body harmless. The node is the cluster's only
// voter: a join that got through (a probe that reached some other ticketd
// node on this machine, say another engineer's test cluster) would add a
// voter and cost the cluster its quorum. The server calls Store.Join only
// for a body that its strict decoder accepts and that has a non-empty id,
// raft_addr and http_addr; a strict decode that succeeds gives the same
// struct as a lenient one. So a body whose lenient decode lacks one of the
// three is sent as it is (the server must refuse it before Join), and any
// other is rewritten to a new id ("fz-" + id, never "n1") at the node's own
// Raft address, which Join refuses as a conflict before any probe or
// configuration change. The bodies that reach the validation are covered by
// FuzzAPIRequest.
func (h *nodeHarness) joinBody(body []byte) ([]byte, bool) {
	var lenient api.JoinRequest
	_ = json.NewDecoder(bytes.NewReader(body)).Decode(&lenient)
	if lenient.ID == "" || lenient.RaftAddr == "" || lenient.HTTPAddr == "" {
		return body, false
	}
	b, _ := json.Marshal(api.JoinRequest{ID: "fz-" + lenient.ID, RaftAddr: h.raftAddr, HTTPAddr: lenient.HTTPAddr})
	return b, true
}

// FuzzAPINode sends one fuzzed request to a real single-node server, started
// once per fuzz process. Valid sequence and namespace names are mapped onto
// a few fixed ones; membership requests are kept harmless (joinBody; the
// member id in a path is prefixed "fz-", so never the node's own "n1").
// Properties, for every input:
//
//   - The node stays up: /livez answers 200 after every input; every 20
//     inputs, and after every membership or restore request, /readyz
//     comes back to 200 within 5 s, n1 still leads and the members are
//     unchanged.
//   - The answer's shape (checkAnswer); nothing answers 5xx on a single
//     healthy node, whatever the input.
//   - A body the model (modelBody) calls malformed is refused with 400 by a
//     routed handler and changes nothing visible here.
//   - Each route answers only with its documented statuses; membership
//     changes and restores never succeed.
//   - A reservation that succeeds is a range of exactly count IDs of the
//     named sequence, within its bounds, and overlaps no range handed out
//     before in this process (per sequence, as api_test.go's rangeLog).
//     After every input the harness also makes a reservation of its own
//     (probeReserve), so that grants keep interleaving with the fuzzed
//     requests.
func FuzzAPINode(f *testing.F) {
	h := newNodeHarness(f)
	for _, s := range fuzzSeeds {
		f.Add(uint8(s.route), s.seg1, s.seg2, s.query, []byte(s.body))
	}
	// A real backup as a restore seed: valid, refused (409) on this
	// non-empty node.
	if r := h.n.MustCall(f, http.MethodGet, "/v1/backup", nil); r.Status == http.StatusOK && len(r.Body) < 4096 {
		f.Add(uint8(rRestore), "", "", "advance=1000", r.Body)
	}
	// A real lease, so that renew and release seeds carry its token.
	if r := h.n.MustCall(f, http.MethodPost, "/v1/namespaces/fz-ns/leases", `{"holder":"seed"}`); r.Status == http.StatusCreated {
		var l api.Lease
		testkit.DecodeStrict(f, r.Body, &l)
		w, tok := strconv.FormatInt(l.WorkerID, 10), strconv.FormatUint(l.Token, 10)
		f.Add(uint8(rRenewLease), "fz-ns", w, "", []byte(`{"token":`+tok+`,"client_time_ms":1700000000000}`))
		f.Add(uint8(rReleaseLease), "fz-ns", w, "", []byte(`{"token":`+tok+`}`))
	}

	f.Fuzz(func(t *testing.T, route uint8, seg1, seg2, query string, body []byte) {
		if len(body) > 1<<12 {
			return // bounded work per input; FuzzAPIRequest covers large bodies
		}
		rt := int(route) % numRoutes
		// Map names before building the request; membership ids get
		// their prefix.
		switch rt {
		case rCreateSequence, rReserve, rGetSequence, rInspectSequence:
			if d, err := url.PathUnescape(pathSegment(seg1)); err == nil {
				seg1 = mapName(pathSegment(seg1), d, fuzzSequences)
			}
		case rCreateNamespace, rAcquireLease, rRenewLease, rReleaseLease, rRevokeLease, rInspectSnowflake, rGetNamespace, rListLeases, rSnowflakeIDs:
			if d, err := url.PathUnescape(pathSegment(seg1)); err == nil {
				seg1 = mapName(pathSegment(seg1), d, fuzzNamespaces)
			}
		case rUpdateMember, rRemoveMember:
			seg1 = "fz-" + seg1
		case rRaiseSequence:
			// A sequence of its own: a raise may use up the sequence it
			// names, and the probes need theirs.
			if d, err := url.PathUnescape(pathSegment(seg1)); err == nil {
				seg1 = mapName(pathSegment(seg1), d, []string{"fz-raise"})
			}
		}
		rewritten := false
		if rt == rJoin {
			body, rewritten = h.joinBody(body)
		}
		r, ok := buildRequest(rt, seg1, seg2, query, body)
		if !ok {
			return
		}
		if rt == rUpdateMember && !strings.HasPrefix(r.raw1, "fz-") {
			t.Fatalf("member id %q lost its prefix", r.raw1)
		}
		res := h.n.MustCall(t, r.method, r.target, string(r.body))
		what := fmt.Sprintf("%s %s with body %.200q", r.method, r.target, r.body)
		p := checkAnswer(t, what, res.Status, res.Header, res.Body)
		if res.Status >= 500 {
			t.Errorf("%s: %d on a healthy single node: %s", what, res.Status, res.Body)
		}
		h.check(t, what, r, res, p, rewritten)

		// A probe reservation after every input, interleaved with the
		// fuzzer's own: most inputs are refused early, and the overlap
		// property needs a steady stream of grants to bite.
		h.probeReserve(t, what, []string{"fz-def", "fz-big"}[int(route)%2], int64(1+len(body)%1000))

		if live := h.n.MustCall(t, http.MethodGet, "/livez", nil); live.Status != http.StatusOK {
			t.Fatalf("after %s: /livez answered %d: %s", what, live.Status, live.Body)
		}
		h.mu.Lock()
		h.inputs++
		periodic := h.inputs%20 == 0
		h.mu.Unlock()
		if periodic || rt == rJoin || rt == rUpdateMember || rt == rRemoveMember || rt == rRestore {
			// Not every answer: /readyz is 503 for the moment between
			// an entry's commit and its apply, which background writes
			// (prefetch, lease expiry) make happen on a leader too.
			testkit.EventuallyErr(t, 5*time.Second, 10*time.Millisecond, "/readyz 200 after "+what, func() error {
				if ready := h.n.MustCall(t, http.MethodGet, "/readyz", nil); ready.Status != http.StatusOK {
					return fmt.Errorf("/readyz answered %d: %s", ready.Status, ready.Body)
				}
				return nil
			})
			if m := h.currentMembers(t); m != h.members {
				t.Fatalf("after %s the members changed:\nbefore %s\nafter  %s", what, h.members, m)
			}
		}
	})
}

// probeReserve reserves count IDs of seq, one of the sequences created with
// known bounds and room for every probe, and checks the range as any other:
// exactly count IDs, within the bounds, overlapping nothing before. (Not
// fz-ten or fz-top: they run out at once, and a refused reservation of an
// exhausted sequence takes about 200 ms.)
func (h *nodeHarness) probeReserve(t *testing.T, after, seq string, count int64) {
	t.Helper()
	res := h.n.MustCall(t, http.MethodPost, "/v1/sequences/"+seq+"/ranges", `{"count":`+strconv.FormatInt(count, 10)+`}`)
	what := fmt.Sprintf("reserving %d of %s after %s", count, seq, after)
	checkAnswer(t, what, res.Status, res.Header, res.Body)
	if res.Status != http.StatusOK {
		t.Fatalf("%s: %d %s", what, res.Status, res.Body)
	}
	var rg api.Range
	testkit.DecodeStrict(t, res.Body, &rg)
	h.mu.Lock()
	b := h.bounds[seq]
	h.mu.Unlock()
	if rg.Sequence != seq || rg.First < b[0] || rg.Last > b[1] || rg.Last < rg.First || rg.Last-rg.First+1 != count {
		t.Fatalf("%s: answered %+v; want exactly %d IDs within %d..%d", what, rg, count, b[0], b[1])
	}
	if prev, overlap := h.addRange(rg); overlap {
		t.Fatalf("%s: range %+v overlaps %+v, handed out before", what, rg, prev)
	}
}

// nodeStatuses are the statuses each route may answer with on a healthy
// node when it is routed.
var nodeStatuses = [numRoutes][]int{
	rCreateSequence:   {200, 201, 400, 409},
	rReserve:          {200, 400, 404, 409},
	rJoin:             {400, 409}, // never 200: see joinBody
	rUpdateMember:     {400, 404}, // "fz-…" is no member
	rRemoveMember:     {404},
	rCreateNamespace:  {200, 201, 400, 409},
	rAcquireLease:     {201, 400, 404, 409},
	rRenewLease:       {200, 400, 404, 409},
	rReleaseLease:     {200, 400, 404, 409},
	rRevokeLease:      {200, 400, 404, 409},
	rRestore:          {400, 409}, // never 204: the node holds sequences
	rAudit:            {200, 400},
	rInspectSequence:  {200, 400, 404},
	rInspectSnowflake: {200, 400, 404},
	rGetSequence:      {200, 400, 404},
	rGetNamespace:     {200, 404},
	rListLeases:       {200, 404},
	rListSequences:    {200, 400},
	rRaiseSequence:    {200, 400, 409},
	rSnowflakeIDs:     {200, 400, 404},
	// A one-node cluster: only its own id is a voter (200, nothing
	// moves); any other id is no member (404).
	rTransferLeader: {200, 400, 404},
}

func (h *nodeHarness) check(t *testing.T, what string, r request, res testkit.Response, p api.Problem, rewritten bool) {
	t.Helper()
	if !routed(res.Status, p) {
		if !r.emptySegment {
			t.Errorf("%s: answered %d %s; the route should have matched", what, res.Status, p.Type)
		}
		return
	}
	allowed := false
	for _, s := range nodeStatuses[r.route] {
		allowed = allowed || s == res.Status
	}
	if !allowed {
		t.Errorf("%s: status %d is not one of %v: %s", what, res.Status, nodeStatuses[r.route], res.Body)
	}
	if r.route == rJoin && !rewritten && res.Status != http.StatusBadRequest {
		// joinBody's argument: such a body lacks an id or an address.
		t.Errorf("%s: a join body without id, raft_addr and http_addr answered %d, want 400: %s", what, res.Status, res.Body)
	}
	kind := fuzzRoutes[r.route].body
	if kind != noBody && kind != backupBody && !rewritten {
		if _, ok := modelBody(kind, r.body, kind == createSeqBody || kind == namespaceBody || kind == idsBody); !ok && res.Status != http.StatusBadRequest {
			t.Errorf("%s: a malformed body answered %d, want 400: %s", what, res.Status, res.Body)
		}
	}
	if res.Status/100 != 2 {
		return
	}
	switch r.route {
	case rCreateSequence, rGetSequence:
		h.noteSequence(res.Body)
	case rRaiseSequence:
		fields, _ := modelBody(raiseBody, r.body, false)
		var rr api.RaiseSequenceResult
		testkit.DecodeStrict(t, res.Body, &rr)
		if rr.Sequence.Name != r.p1 || (rr.Sequence.Next != nil && *rr.Sequence.Next <= fields["at_least"].i) {
			t.Fatalf("%s: answered %+v; want %q with its next ID above %d", what, rr, r.p1, fields["at_least"].i)
		}
	case rReserve:
		fields, ok := modelBody(reserveBody, r.body, false)
		count := fields["count"].i
		var rg api.Range
		testkit.DecodeStrict(t, res.Body, &rg)
		if !ok || rg.Sequence != r.p1 || rg.First < 1 || rg.Last < rg.First || rg.Last-rg.First+1 != count {
			t.Fatalf("%s: answered range %+v; want exactly %d IDs of %q", what, rg, count, r.p1)
		}
		h.mu.Lock()
		b, known := h.bounds[rg.Sequence]
		h.mu.Unlock()
		if known && (rg.First < b[0] || rg.Last > b[1]) {
			t.Fatalf("%s: range %+v outside the sequence's bounds %d..%d", what, rg, b[0], b[1])
		}
		if prev, overlap := h.addRange(rg); overlap {
			t.Fatalf("%s: range %+v overlaps %+v, handed out before", what, rg, prev)
		}
	}
}

// TestPathParams_PercentEncoded_AreDecoded (found by FuzzAPIRequest, seed
// inputs "n%31" and "n%61me"): Echo matches a route against the request's
// RawPath when the client escaped the path otherwise than Go would (Go keeps
// RawPath only then), and hands the path parameters out still escaped;
// against Path they come decoded. So the handlers saw "n%31" for
// /v1/cluster/members/n%31 but "no body" for /v1/cluster/members/no%20body.
// RFC 3986 makes "%2D" and "-" the same URI; and the SDK's RemoveMember
// escapes ids with url.PathEscape, which escapes ';', ',' and '/' where Go's
// default does not: a member with such an id could never be removed or
// re-registered.
func TestPathParams_PercentEncoded_AreDecoded(t *testing.T) {
	n := startNode(t)
	r := n.MustCall(t, http.MethodPut, "/v1/sequences/p%2Dq", nil)
	expectJSON(t, "create p%2Dq", r, http.StatusCreated)
	if s := n.sequence(t, "p-q"); s.Name != "p-q" {
		t.Errorf("created %+v, want p-q", s)
	}
	r = n.MustCall(t, http.MethodPost, "/v1/sequences/p%2dq/ranges", `{"count":3}`)
	expectJSON(t, "reserve p%2dq", r, http.StatusOK)
	var rg api.Range
	testkit.DecodeStrict(t, r.Body, &rg)
	checkRange(t, rg, "p-q", 3)

	var cs api.ClusterStatus
	testkit.DecodeStrict(t, n.MustCall(t, http.MethodGet, "/v1/cluster", nil).Body, &cs)
	self := cs.Members[0]
	r = n.MustCall(t, http.MethodPut, "/v1/cluster/members/n%31", `{"id":"n1","raft_addr":"`+self.RaftAddr+`","http_addr":"`+self.HTTPAddr+`"}`)
	expectJSON(t, "re-register n%31", r, http.StatusOK)
	r = n.MustCall(t, http.MethodDelete, "/v1/cluster/members/no%3Bbody", nil)
	expectProblem(t, "remove no%3Bbody", r, http.StatusNotFound, api.ProblemMemberNotFound, "no;body")
	r = n.MustCall(t, http.MethodGet, "/v1/namespaces/ns%2F1/leases", nil)
	expectProblem(t, "leases of ns%2F1", r, http.StatusNotFound, api.ProblemNamespaceNotFound, "ns/1")
}

// TestFuzzHelpers pins the fuzz targets' own models, so that a wrong model
// does not pass for a server bug or hide one.
func TestFuzzHelpers(t *testing.T) {
	for _, c := range []struct {
		body string
		ok   bool
		n    int64
		set  bool
	}{
		{`{"count":5}`, true, 5, true},
		{`{"COUNT":5}`, true, 5, true},
		{` {"count":5} `, true, 5, true},
		{`null`, true, 0, false},
		{`{"count":null}`, true, 0, false},
		{`{"count":5,"count":null}`, true, 0, false},
		{`{"count":5}}`, false, 0, false},
		{`{"count":5} 6`, false, 0, false},
		{`{"count":1e3}`, false, 0, false},
		{`{"count":"5"}`, false, 0, false},
		{`{"count":5,"x":1}`, false, 0, false},
		{`{"\u212aount":5}`, false, 0, false},
		{`[5]`, false, 0, false},
		{``, false, 0, false},
		{` `, false, 0, false},
		{`{"count":9223372036854775808}`, false, 0, false},
	} {
		got, ok := modelBody(reserveBody, []byte(c.body), false)
		if ok != c.ok || (ok && (got["count"].set != c.set || got["count"].i != c.n)) {
			t.Errorf("modelBody(%q) = %+v, %v; want ok %v count %d (set %v)", c.body, got, ok, c.ok, c.n, c.set)
		}
	}
	if _, ok := modelBody(createSeqBody, nil, true); !ok {
		t.Errorf("an empty optional body is valid")
	}
	if got, ok := modelBody(namespaceBody, []byte(`{"worker_bits":256}`), true); ok {
		t.Errorf("worker_bits 256 fits no uint8: %+v", got)
	}
	if mapName("a%2Fb", "a/b", fuzzSequences) != "a%2Fb" || !strings.HasPrefix(mapName("orders", "orders", fuzzSequences), "fz-") {
		t.Errorf("mapName")
	}
	if jsonFold("count") != "COUNT" || jsonFold("\u017ftart") != "START" {
		t.Errorf("jsonFold")
	}
}
