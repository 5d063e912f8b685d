package httpapi_test

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/testkit"
)

// badCase is a request that must be refused with a problem and must change
// nothing.
type badCase struct {
	name   string
	method string
	path   string
	body   string
	status int
	typ    string
	// detail lists what the problem's detail must mention (the offending
	// field or value), case-insensitively.
	detail []string
}

// TestHTTPAPI runs every case against one real single-node server, in order,
// and checks at the end that every successful reservation of the whole test
// is disjoint from every other one of its sequence.
func TestHTTPAPI(t *testing.T) {
	n := startNode(t)
	log := newRangeLog()

	t.Run("health", func(t *testing.T) { testHealth(t, n) })
	t.Run("routing", func(t *testing.T) { testRouting(t, n) })
	t.Run("create_sequence", func(t *testing.T) { testCreateSequence(t, n) })
	t.Run("create_sequence_bad_input", func(t *testing.T) { testCreateSequenceBadInput(t, n) })
	t.Run("reserve_bad_input", func(t *testing.T) { testReserveBadInput(t, n, log) })
	t.Run("reserve_limits", func(t *testing.T) { testReserveLimits(t, n, log) })
	t.Run("sequence_names", func(t *testing.T) { testSequenceNames(t, n, log) })
	t.Run("exhaustion", func(t *testing.T) { testExhaustion(t, n, log) })
	t.Run("near_int64_max", func(t *testing.T) { testNearInt64Max(t, n, log) })
	t.Run("members", func(t *testing.T) { testMembers(t, n) })

	if got := log.checkDisjoint(t); got == 0 {
		t.Errorf("no reservation succeeded")
	}
}

// runBad sends c and checks the problem, then that GET of seq, the list of
// sequences and the members are what they were before. A 200 to a
// reservation that should have failed is still logged, since its range was
// handed out.
func runBad(t *testing.T, n *node, log *rangeLog, seq string, c badCase) {
	t.Helper()
	before := n.state(t, seq)
	r := n.MustCall(t, c.method, c.path, c.body)
	if r.Status == http.StatusOK && strings.HasSuffix(c.path, "/ranges") {
		var rg api.Range
		if json.Unmarshal(r.Body, &rg) == nil && rg.Sequence != "" {
			log.add(rg)
			t.Errorf("%s %s with body %.80q reserved %d IDs (%+v); want %d", c.method, c.path, c.body, rg.Last-rg.First+1, rg, c.status)
		}
	}
	expectProblem(t, c.name, r, c.status, c.typ, c.detail...)
	after := n.state(t, seq)
	if after.seq != before.seq {
		t.Errorf("%s changed sequence %s:\nbefore %s\nafter  %s", c.name, seq, before.seq, after.seq)
	}
	if after.list != before.list {
		t.Errorf("%s changed the list of sequences:\nbefore %s\nafter  %s", c.name, before.list, after.list)
	}
	if after.members != before.members {
		t.Errorf("%s changed the members:\nbefore %s\nafter  %s", c.name, before.members, after.members)
	}
}

func testHealth(t *testing.T, n *node) {
	r := n.MustCall(t, http.MethodGet, "/livez", nil)
	expectJSON(t, "livez", r, http.StatusOK)
	var live map[string]string
	testkit.DecodeStrict(t, r.Body, &live)
	if live["status"] != "ok" || live["node"] != "n1" {
		t.Errorf("livez body %s", r.Body)
	}
	r = n.MustCall(t, http.MethodGet, "/readyz", nil)
	expectJSON(t, "readyz", r, http.StatusOK)
	var ready map[string]string
	testkit.DecodeStrict(t, r.Body, &ready)
	if ready["status"] != "ready" || ready["node"] != "n1" {
		t.Errorf("readyz body %s", r.Body)
	}
	r = n.MustCall(t, http.MethodGet, "/v1/cluster", nil)
	expectJSON(t, "cluster", r, http.StatusOK)
	var cs api.ClusterStatus
	testkit.DecodeStrict(t, r.Body, &cs)
	if cs.Node != "n1" || cs.Leader != "n1" || len(cs.Members) != 1 || cs.Members[0].ID != "n1" || !cs.Members[0].Voter {
		t.Errorf("cluster status %s", r.Body)
	}
}

func testRouting(t *testing.T, n *node) {
	n.MustCall(t, http.MethodPut, "/v1/sequences/routing", nil) // so that a wrong method finds a real resource
	cases := []struct {
		name   string
		method string
		path   string
		status int
		typ    string
		detail []string
		allow  []string // for 405: methods the Allow header must list
	}{
		{name: "unknown_route_root", method: http.MethodGet, path: "/nope", status: 404, typ: api.ProblemRouteNotFound, detail: []string{"/nope"}},
		{name: "unknown_route_v1", method: http.MethodGet, path: "/v1/nope", status: 404, typ: api.ProblemRouteNotFound, detail: []string{"/v1/nope"}},
		{name: "unknown_route_v2", method: http.MethodGet, path: "/v2/sequences", status: 404, typ: api.ProblemRouteNotFound, detail: []string{"/v2/sequences"}},
		{name: "unknown_route_below_sequence", method: http.MethodGet, path: "/v1/sequences/routing/nope", status: 404, typ: api.ProblemRouteNotFound, detail: []string{"/v1/sequences/routing/nope"}},
		{name: "wrong_method_post_livez_is_405", method: http.MethodPost, path: "/livez", status: 405, typ: api.ProblemMethodNotAllowed, allow: []string{"GET"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := n.state(t, "routing")
			r := n.MustCall(t, c.method, c.path, nil)
			expectProblem(t, c.method+" "+c.path, r, c.status, c.typ, c.detail...)
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

// expectSequenceBody checks a sequence answer: exactly the five documented
// keys, with these values (next nil: null).
func expectSequenceBody(t *testing.T, what string, body []byte, name string, next *int64, start, max, remaining int64) {
	t.Helper()
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(body, &keys); err != nil {
		t.Fatalf("%s: %v: %s", what, err, body)
	}
	var got []string
	for k := range keys {
		got = append(got, k)
	}
	sort.Strings(got)
	if strings.Join(got, ",") != "max,name,next,remaining,start" {
		t.Errorf("%s: keys %v, want name,next,start,max,remaining", what, got)
	}
	var s api.Sequence
	testkit.DecodeStrict(t, body, &s)
	if s.Name != name || s.Start != start || s.Max != max || s.Remaining != remaining ||
		(s.Next == nil) != (next == nil) || (next != nil && *s.Next != *next) {
		t.Errorf("%s: got %s; want name %q next %v start %d max %d remaining %d", what, body, name, fmtPtr(next), start, max, remaining)
	}
	if next == nil && string(keys["next"]) != "null" {
		t.Errorf("%s: next is %s, want null", what, keys["next"])
	}
}

func fmtPtr(p *int64) string {
	if p == nil {
		return "null"
	}
	return itoa(*p)
}

func ptr(v int64) *int64 { return &v }

func testCreateSequence(t *testing.T, n *node) {
	// Defaults: start 1, max 2^63-1.
	r := n.MustCall(t, http.MethodPut, "/v1/sequences/orders", nil)
	expectJSON(t, "create orders", r, http.StatusCreated)
	expectSequenceBody(t, "create orders", r.Body, "orders", ptr(1), 1, math.MaxInt64, math.MaxInt64)
	if !bytes.Contains(r.Body, []byte(`"max":9223372036854775807`)) {
		t.Errorf("max is not 9223372036854775807 exactly: %s", r.Body)
	}
	for _, body := range []string{"", "{}", `{"start":1}`, `{"max":9223372036854775807}`, `{"start":1,"max":9223372036854775807}`} {
		r = n.MustCall(t, http.MethodPut, "/v1/sequences/orders", body)
		expectJSON(t, "create orders again with "+body, r, http.StatusOK)
		expectSequenceBody(t, "create orders again with "+body, r.Body, "orders", ptr(1), 1, math.MaxInt64, math.MaxInt64)
	}
	r = n.MustCall(t, http.MethodGet, "/v1/sequences/orders", nil)
	expectJSON(t, "get orders", r, http.StatusOK)
	expectSequenceBody(t, "get orders", r.Body, "orders", ptr(1), 1, math.MaxInt64, math.MaxInt64)

	r = n.MustCall(t, http.MethodPut, "/v1/sequences/small", `{"start":100,"max":200}`)
	expectJSON(t, "create small", r, http.StatusCreated)
	expectSequenceBody(t, "create small", r.Body, "small", ptr(100), 100, 200, 101)
	r = n.MustCall(t, http.MethodPut, "/v1/sequences/small", `{"max":200,"start":100}`)
	expectJSON(t, "create small again", r, http.StatusOK)
	expectSequenceBody(t, "create small again", r.Body, "small", ptr(100), 100, 200, 101)

	// Different settings: 409 conflict, and the original settings stay.
	conflicts := []badCase{
		{name: "orders_other_start", path: "/v1/sequences/orders", body: `{"start":2}`},
		{name: "orders_other_max", path: "/v1/sequences/orders", body: `{"max":100}`},
		{name: "small_defaults", path: "/v1/sequences/small", body: ``},
		{name: "small_default_max", path: "/v1/sequences/small", body: `{"start":100}`},
		{name: "small_default_start", path: "/v1/sequences/small", body: `{"max":200}`},
		{name: "small_other_both", path: "/v1/sequences/small", body: `{"start":101,"max":201}`},
	}
	for _, c := range conflicts {
		t.Run("conflict_"+c.name, func(t *testing.T) {
			c.method, c.status, c.typ = http.MethodPut, http.StatusConflict, api.ProblemConflict
			seq := strings.TrimPrefix(c.path, "/v1/sequences/")
			c.detail = []string{seq}
			runBad(t, n, newRangeLog(), seq, c)
		})
	}
	expectSequenceBody(t, "orders after conflicts", n.MustCall(t, http.MethodGet, "/v1/sequences/orders", nil).Body, "orders", ptr(1), 1, math.MaxInt64, math.MaxInt64)
	expectSequenceBody(t, "small after conflicts", n.MustCall(t, http.MethodGet, "/v1/sequences/small", nil).Body, "small", ptr(100), 100, 200, 101)

	r = n.MustCall(t, http.MethodGet, "/v1/sequences", nil)
	expectJSON(t, "list", r, http.StatusOK)
	var list api.SequenceList
	testkit.DecodeStrict(t, r.Body, &list)
	var names []string
	for _, s := range list.Sequences {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "orders,routing,small" {
		t.Errorf("list names %v, want orders,routing,small (sorted)", names)
	}
}

func testCreateSequenceBadInput(t *testing.T, n *node) {
	n.settled(t, "small")
	bad := func(name, body string, detail ...string) badCase {
		return badCase{name: name, method: http.MethodPut, body: body, status: http.StatusBadRequest, typ: api.ProblemBadRequest, detail: detail}
	}
	cases := []badCase{
		bad("start_zero", `{"start":0}`, "start", "0"),
		bad("start_negative", `{"start":-5}`, "start", "-5"),
		bad("max_zero", `{"max":0}`, "max", "0"),
		bad("max_negative", `{"max":-1}`, "max", "-1"),
		bad("max_below_start", `{"start":10,"max":5}`, "max", "start"),
		bad("max_below_default_start", `{"max":0,"start":1}`, "max"),
		bad("start_string", `{"start":"1"}`, "start", "string"),
		bad("max_string", `{"max":"9"}`, "max", "string"),
		bad("start_fraction", `{"start":1.5}`, "start", "1.5"),
		bad("start_overflows_int64", `{"start":9223372036854775808}`, "start", "9223372036854775808"),
		bad("max_bool", `{"max":true}`, "max", "bool"),
		bad("unknown_field", `{"start":1,"begin":2}`, "begin"),
		bad("unknown_field_only", `{"step":2}`, "step"),
		bad("trailing_data", `{"start":1}{"start":2}`, "after"),
		bad("array", `[1]`, "object"),
		bad("string_body", `"x"`, "object"),
		bad("not_json", `not json`, "invalid character"),
		bad("truncated", `{"start":1`, "end"),
		{name: "body_over_64KiB", method: http.MethodPut, body: `{"start":1}` + strings.Repeat(" ", api.MaxBodyBytes), status: http.StatusRequestEntityTooLarge, typ: api.ProblemTooLarge, detail: []string{"65536"}},
	}
	// Each case against a name that does not exist (it must not appear)
	// and one that does (its settings must stay).
	for _, target := range []string{"never-created", "small"} {
		for _, c := range cases {
			t.Run(target+"/"+c.name, func(t *testing.T) {
				c.path = "/v1/sequences/" + target
				runBad(t, n, newRangeLog(), target, c)
			})
		}
	}
	if r := n.MustCall(t, http.MethodGet, "/v1/sequences/never-created", nil); r.Status != http.StatusNotFound {
		t.Errorf("never-created exists after bad input: %d %s", r.Status, r.Body)
	}
	expectSequenceBody(t, "small after bad input", n.MustCall(t, http.MethodGet, "/v1/sequences/small", nil).Body, "small", ptr(100), 100, 200, 101)
}

func testReserveBadInput(t *testing.T, n *node, log *rangeLog) {
	const seq = "victim"
	const path = "/v1/sequences/" + seq + "/ranges"
	r := n.MustCall(t, http.MethodPut, "/v1/sequences/"+seq, nil)
	expectJSON(t, "create victim", r, http.StatusCreated)
	// One reservation of 1 gets a block of at least 1,024 IDs; the probes
	// below take one ID each, too few to make the leader fetch another
	// block in the background, so the state is still from case to case.
	last := n.reserve(t, log, seq, 1).Last
	n.settled(t, seq)

	bad := func(name, body string, detail ...string) badCase {
		return badCase{name: name, method: http.MethodPost, path: path, body: body, status: http.StatusBadRequest, typ: api.ProblemBadRequest, detail: detail}
	}
	cases := []badCase{
		bad("empty_body", ``, "empty"),
		bad("empty_object", `{}`, `"count"`, "required"),
		bad("count_zero", `{"count":0}`, `"count"`, "got 0"),
		bad("count_negative", `{"count":-1}`, `"count"`, "got -1"),
		bad("count_min_int64", `{"count":-9223372036854775808}`, `"count"`, "-9223372036854775808"),
		bad("count_over_max", `{"count":10000001}`, `"count"`, "10000001"),
		bad("count_max_int64", `{"count":9223372036854775807}`, `"count"`, "9223372036854775807"),
		bad("count_overflows_int64", `{"count":9223372036854775808}`, `"count"`, "9223372036854775808"),
		bad("count_fraction", `{"count":1.5}`, `"count"`, "1.5"),
		bad("count_exponent", `{"count":1e3}`, `"count"`, "1e3"),
		bad("count_string", `{"count":"5"}`, `"count"`, "string"),
		bad("count_null", `{"count":null}`, `"count"`, "required"),
		bad("count_bool", `{"count":true}`, `"count"`, "bool"),
		bad("count_object", `{"count":{}}`, `"count"`, "object"),
		bad("count_array", `{"count":[5]}`, `"count"`, "array"),
		bad("unknown_field", `{"count":5,"extra":1}`, "extra"),
		bad("unknown_field_only", `{"extra":1}`, "extra"),
		bad("trailing_data", `{"count":5}{"count":6}`, "after"),
		bad("trailing_number", `{"count":5} 6`, "after"),
		bad("array", `[5]`, "object", "array"),
		bad("bare_number", `5`, "object", "number"),
		bad("null_body", `null`, `"count"`, "required"),
		bad("not_json", `not json`, "invalid character"),
		bad("truncated", `{"count":5`, "end"),
		bad("whitespace_only", "  \n", "JSON"),
		{name: "body_over_64KiB", method: http.MethodPost, path: path, body: `{"count":5}` + strings.Repeat(" ", api.MaxBodyBytes), status: http.StatusRequestEntityTooLarge, typ: api.ProblemTooLarge, detail: []string{"65536"}},
		{name: "body_1MiB_garbage", method: http.MethodPost, path: path, body: strings.Repeat("x", 1<<20), status: http.StatusRequestEntityTooLarge, typ: api.ProblemTooLarge, detail: []string{"65536"}},
		{name: "unknown_sequence", method: http.MethodPost, path: "/v1/sequences/no-such-seq/ranges", body: `{"count":5}`, status: http.StatusNotFound, typ: api.ProblemNotFound, detail: []string{"no-such-seq"}},
		{name: "unknown_sequence_bad_count", method: http.MethodPost, path: "/v1/sequences/no-such-seq/ranges", body: `{"count":0}`, status: http.StatusBadRequest, typ: api.ProblemBadRequest, detail: []string{`"count"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runBad(t, n, log, seq, c)
			// Nothing was consumed: the leader's next range follows the
			// last good one without a gap.
			rg := n.reserve(t, log, seq, 1)
			if rg.First != last+1 {
				t.Errorf("after %s the next range is %+v; want it to start at %d (IDs were consumed)", c.name, rg, last+1)
			}
			last = rg.Last
		})
	}
}

func testReserveLimits(t *testing.T, n *node, log *rangeLog) {
	r := n.MustCall(t, http.MethodPut, "/v1/sequences/big", nil)
	expectJSON(t, "create big", r, http.StatusCreated)

	// count = 1 and count = exactly MaxReserveCount.
	a := n.reserve(t, log, "big", 1)
	b := n.reserve(t, log, "big", api.MaxReserveCount)
	if b.First <= a.Last {
		t.Errorf("range %+v not above %+v", b, a)
	}
	c := n.reserve(t, log, "big", 1)
	if c.First <= b.Last {
		t.Errorf("range %+v not above %+v", c, b)
	}

	// A body of exactly MaxBodyBytes is read; one byte more is not.
	body := `{"count":3}`
	body += strings.Repeat(" ", api.MaxBodyBytes-len(body))
	r = n.MustCall(t, http.MethodPost, "/v1/sequences/big/ranges", body)
	expectJSON(t, "body of exactly 64 KiB", r, http.StatusOK)
	var rg api.Range
	testkit.DecodeStrict(t, r.Body, &rg)
	checkRange(t, rg, "big", 3)
	log.add(rg)

	// Surrounding whitespace, field order and a Content-Type other than
	// JSON do not matter.
	r = n.MustCall(t, http.MethodPost, "/v1/sequences/big/ranges", " \n\t{ \"count\" : 2 }\n")
	expectJSON(t, "whitespace", r, http.StatusOK)
	testkit.DecodeStrict(t, r.Body, &rg)
	checkRange(t, rg, "big", 2)
	log.add(rg)

	// GET next moves forward with what the leader was handed.
	s := n.sequence(t, "big")
	if s.Next == nil || *s.Next <= rg.Last || s.Remaining != math.MaxInt64-(*s.Next-1) {
		t.Errorf("big after reservations up to %d: %+v (next %s)", rg.Last, s, fmtPtr(s.Next))
	}
}

func testSequenceNames(t *testing.T, n *node, log *rangeLog) {
	name64 := strings.Repeat("a", 63) + "Z"
	name65 := strings.Repeat("b", 65)

	// Valid names, including the edges of the rule.
	// Dots are fine inside a name; "." and ".." alone are dot segments,
	// refused below (dotnames_test.go covers them).
	for _, name := range []string{name64, "...", ".x", "x.", "_", "-", "A.b_c-9", "0"} {
		r := n.MustCall(t, http.MethodPut, "/v1/sequences/"+name, nil)
		expectJSON(t, "create "+name, r, http.StatusCreated)
		var s api.Sequence
		testkit.DecodeStrict(t, r.Body, &s)
		if s.Name != name {
			t.Errorf("created %q, answer names %q", name, s.Name)
		}
		rg := n.reserve(t, log, name, 2)
		if rg.First != 1 || rg.Last != 2 {
			t.Errorf("first range of %q is %+v, want 1..2", name, rg)
		}
		if got := n.sequence(t, name); got.Name != name {
			t.Errorf("GET %q names %q", name, got.Name)
		}
	}
	n.settled(t, "orders")

	type badName struct {
		name   string
		escped string // as it goes in the path
		detail []string
	}
	badNames := []badName{
		{"65_chars", name65, []string{"65"}},
		{"100_chars", strings.Repeat("c", 100), []string{"100"}},
		{"space", "a%20b", []string{"sequence name", "' '"}},
		{"escaped_slash", "a%2Fb", []string{"sequence name"}},
		{"unicode_e_acute", "%C3%A9", []string{"sequence name", "byte 0"}},
		{"unicode_in_middle", "ab%C3%A9", []string{"sequence name", "byte 2"}},
		{"plus", "a+b", []string{"sequence name", "'+'"}},
		{"colon", "a:b", []string{"sequence name", "':'"}},
		{"tilde", "a~b", []string{"sequence name", "'~'"}},
		{"at", "a@b", []string{"sequence name", "'@'"}},
		{"percent", "a%25b", []string{"sequence name", "'%'"}},
		{"nul", "a%00b", []string{"sequence name"}},
		{"tab", "a%09b", []string{"sequence name"}},
	}
	for _, b := range badNames {
		for _, m := range []struct{ method, suffix, body string }{
			{http.MethodPost, "/ranges", `{"count":1}`},
			{http.MethodPut, "", `{"start":1}`},
			{http.MethodPut, "", ``},
			{http.MethodGet, "", ``},
		} {
			c := badCase{
				name:   b.name + "/" + m.method + m.suffix,
				method: m.method, path: "/v1/sequences/" + b.escped + m.suffix, body: m.body,
				status: http.StatusBadRequest, typ: api.ProblemBadRequest, detail: b.detail,
			}
			t.Run(c.name, func(t *testing.T) { runBad(t, n, log, "orders", c) })
		}
	}

	// A dot segment, as is or escaped, may not be created; as the name of
	// a sequence an earlier release may hold, it is looked up.
	for _, seg := range []string{".", "..", "%2E", "%2E%2E"} {
		for _, body := range []string{``, `{"start":1}`} {
			c := badCase{name: "dot_segment_" + seg + "/PUT_" + body, method: http.MethodPut, path: "/v1/sequences/" + seg, body: body,
				status: http.StatusBadRequest, typ: api.ProblemBadRequest, detail: []string{"dot segment"}}
			t.Run(c.name, func(t *testing.T) { runBad(t, n, log, "orders", c) })
		}
	}

	// A well-formed name that does not exist.
	for _, c := range []badCase{
		{name: "unknown_dot_dot/GET", method: http.MethodGet, path: "/v1/sequences/%2E%2E", status: http.StatusNotFound, typ: api.ProblemNotFound, detail: []string{`".."`}},
		{name: "unknown_dot/POST_ranges", method: http.MethodPost, path: "/v1/sequences/./ranges", body: `{"count":1}`, status: http.StatusNotFound, typ: api.ProblemNotFound, detail: []string{`"."`}},
		{name: "valid_name_plus_one/POST", method: http.MethodPost, path: "/v1/sequences/" + name64 + "x/ranges", body: `{"count":1}`, status: http.StatusBadRequest, typ: api.ProblemBadRequest, detail: []string{"65"}},
		{name: "unknown/GET", method: http.MethodGet, path: "/v1/sequences/nope", status: http.StatusNotFound, typ: api.ProblemNotFound, detail: []string{"nope"}},
		{name: "unknown/POST_ranges", method: http.MethodPost, path: "/v1/sequences/nope/ranges", body: `{"count":1}`, status: http.StatusNotFound, typ: api.ProblemNotFound, detail: []string{"nope"}},
		{name: "unknown_case_differs/POST_ranges", method: http.MethodPost, path: "/v1/sequences/ORDERS/ranges", body: `{"count":1}`, status: http.StatusNotFound, typ: api.ProblemNotFound, detail: []string{"ORDERS"}},
	} {
		t.Run(c.name, func(t *testing.T) { runBad(t, n, log, "nope", c) })
	}
}

func testExhaustion(t *testing.T, n *node, log *rangeLog) {
	const seq = "ten"
	r := n.MustCall(t, http.MethodPut, "/v1/sequences/"+seq, `{"start":1,"max":10}`)
	expectJSON(t, "create ten", r, http.StatusCreated)
	expectSequenceBody(t, "create ten", r.Body, seq, ptr(1), 1, 10, 10)

	exhausted := func(count int64) {
		t.Helper()
		before := n.settled(t, seq)
		runBad(t, n, log, seq, badCase{
			name: "reserve " + itoa(count) + " of ten", method: http.MethodPost, path: "/v1/sequences/" + seq + "/ranges",
			body: `{"count":` + itoa(count) + `}`, status: http.StatusConflict, typ: api.ProblemExhausted, detail: []string{seq},
		})
		if after := n.state(t, seq); after != before {
			t.Errorf("exhausted reservation of %d changed state:\nbefore %+v\nafter  %+v", count, before, after)
		}
	}

	exhausted(11)
	exhausted(api.MaxReserveCount)
	if rg := n.reserve(t, log, seq, 7); rg.First != 1 || rg.Last != 7 {
		t.Errorf("reserve 7 = %+v, want 1..7", rg)
	}
	exhausted(4)
	if rg := n.reserve(t, log, seq, 3); rg.First != 8 || rg.Last != 10 {
		t.Errorf("reserve 3 = %+v, want 8..10", rg)
	}
	exhausted(1)
	exhausted(api.MaxReserveCount)
	exhausted(1)
	r = n.MustCall(t, http.MethodGet, "/v1/sequences/"+seq, nil)
	expectJSON(t, "get ten", r, http.StatusOK)
	expectSequenceBody(t, "exhausted ten", r.Body, seq, nil, 1, 10, 0)
	// Creating it again with the same settings is still 200 and does not
	// revive it.
	r = n.MustCall(t, http.MethodPut, "/v1/sequences/"+seq, `{"start":1,"max":10}`)
	expectJSON(t, "create ten again", r, http.StatusOK)
	expectSequenceBody(t, "create ten again", r.Body, seq, nil, 1, 10, 0)
	exhausted(1)
}

func testNearInt64Max(t *testing.T, n *node, log *rangeLog) {
	const seq = "top"
	const start int64 = math.MaxInt64 - 7 // 9223372036854775800: 8 IDs
	r := n.MustCall(t, http.MethodPut, "/v1/sequences/"+seq, `{"start":9223372036854775800}`)
	expectJSON(t, "create top", r, http.StatusCreated)
	expectSequenceBody(t, "create top", r.Body, seq, ptr(start), start, math.MaxInt64, 8)

	exhausted := func(count int64) {
		t.Helper()
		n.settled(t, seq)
		runBad(t, n, log, seq, badCase{
			name: "reserve " + itoa(count) + " of top", method: http.MethodPost, path: "/v1/sequences/" + seq + "/ranges",
			body: `{"count":` + itoa(count) + `}`, status: http.StatusConflict, typ: api.ProblemExhausted, detail: []string{seq},
		})
	}
	// Asking far more than is left must not overflow into a grant.
	exhausted(api.MaxReserveCount)
	exhausted(9)
	a := n.reserve(t, log, seq, 5)
	if a.First != start || a.Last != start+4 {
		t.Errorf("reserve 5 = %+v, want %d..%d", a, start, start+4)
	}
	exhausted(4)
	exhausted(api.MaxReserveCount)
	r = n.MustCall(t, http.MethodPost, "/v1/sequences/"+seq+"/ranges", `{"count":3}`)
	expectJSON(t, "reserve the last 3", r, http.StatusOK)
	if !bytes.Contains(r.Body, []byte(`"last":9223372036854775807`)) {
		t.Errorf("last range does not end at 9223372036854775807 exactly: %s", r.Body)
	}
	var b api.Range
	testkit.DecodeStrict(t, r.Body, &b)
	checkRange(t, b, seq, 3)
	log.add(b)
	if b.First != start+5 || b.Last != math.MaxInt64 {
		t.Errorf("reserve 3 = %+v, want %d..%d", b, start+5, int64(math.MaxInt64))
	}
	exhausted(1)
	exhausted(api.MaxReserveCount)
	r = n.MustCall(t, http.MethodGet, "/v1/sequences/"+seq, nil)
	expectJSON(t, "get top", r, http.StatusOK)
	expectSequenceBody(t, "exhausted top", r.Body, seq, nil, start, math.MaxInt64, 0)

	// A sequence of exactly one ID, the largest.
	r = n.MustCall(t, http.MethodPut, "/v1/sequences/last-one", `{"start":9223372036854775807}`)
	expectJSON(t, "create last-one", r, http.StatusCreated)
	expectSequenceBody(t, "create last-one", r.Body, "last-one", ptr(math.MaxInt64), math.MaxInt64, math.MaxInt64, 1)
	if rg := n.reserve(t, log, "last-one", 1); rg.First != math.MaxInt64 {
		t.Errorf("reserve 1 of last-one = %+v", rg)
	}
	n.settled(t, "last-one")
	runBad(t, n, log, "last-one", badCase{
		name: "reserve past the largest ID", method: http.MethodPost, path: "/v1/sequences/last-one/ranges",
		body: `{"count":1}`, status: http.StatusConflict, typ: api.ProblemExhausted, detail: []string{"last-one"},
	})
	expectSequenceBody(t, "exhausted last-one", n.MustCall(t, http.MethodGet, "/v1/sequences/last-one", nil).Body, "last-one", nil, math.MaxInt64, math.MaxInt64, 0)
}

func testMembers(t *testing.T, n *node) {
	n.settled(t, "orders")
	cs := n.MustCall(t, http.MethodGet, "/v1/cluster", nil)
	var st api.ClusterStatus
	testkit.DecodeStrict(t, cs.Body, &st)
	if len(st.Members) != 1 {
		t.Fatalf("members %+v", st.Members)
	}
	self := st.Members[0]

	bad := func(name, method, path, body string, detail ...string) badCase {
		return badCase{name: name, method: method, path: path, body: body, status: http.StatusBadRequest, typ: api.ProblemBadRequest, detail: detail}
	}
	const join = "/v1/cluster/members"
	cases := []badCase{
		bad("join/empty_body", http.MethodPost, join, ``, "empty"),
		bad("join/empty_object", http.MethodPost, join, `{}`, `"id"`),
		bad("join/missing_id", http.MethodPost, join, `{"raft_addr":"127.0.0.1:7001","http_addr":"127.0.0.1:8001"}`, `"id"`),
		bad("join/missing_raft_addr", http.MethodPost, join, `{"id":"n9","http_addr":"127.0.0.1:8001"}`, `"raft_addr"`),
		bad("join/missing_http_addr", http.MethodPost, join, `{"id":"n9","raft_addr":"127.0.0.1:7001"}`, `"http_addr"`),
		bad("join/raft_addr_no_port", http.MethodPost, join, `{"id":"n9","raft_addr":"localhost","http_addr":"127.0.0.1:8001"}`, `"raft_addr"`, "localhost"),
		bad("join/raft_addr_port_0", http.MethodPost, join, `{"id":"n9","raft_addr":"127.0.0.1:0","http_addr":"127.0.0.1:8001"}`, `"raft_addr"`, "127.0.0.1:0"),
		bad("join/raft_addr_port_70000", http.MethodPost, join, `{"id":"n9","raft_addr":"127.0.0.1:70000","http_addr":"127.0.0.1:8001"}`, `"raft_addr"`, "70000"),
		bad("join/raft_addr_port_not_number", http.MethodPost, join, `{"id":"n9","raft_addr":"127.0.0.1:abc","http_addr":"127.0.0.1:8001"}`, `"raft_addr"`, "abc"),
		bad("join/raft_addr_no_host", http.MethodPost, join, `{"id":"n9","raft_addr":":7001","http_addr":"127.0.0.1:8001"}`, `"raft_addr"`, ":7001"),
		bad("join/raft_addr_url", http.MethodPost, join, `{"id":"n9","raft_addr":"tcp://127.0.0.1:7001","http_addr":"127.0.0.1:8001"}`, `"raft_addr"`),
		bad("join/raft_addr_with_path", http.MethodPost, join, `{"id":"n9","raft_addr":"127.0.0.1:7001/x","http_addr":"127.0.0.1:8001"}`, `"raft_addr"`),
		bad("join/http_addr_port_0", http.MethodPost, join, `{"id":"n9","raft_addr":"127.0.0.1:7001","http_addr":"127.0.0.1:0"}`, `"http_addr"`),
		bad("join/http_addr_port_70000", http.MethodPost, join, `{"id":"n9","raft_addr":"127.0.0.1:7001","http_addr":"127.0.0.1:70000"}`, `"http_addr"`, "70000"),
		bad("join/http_addr_url", http.MethodPost, join, `{"id":"n9","raft_addr":"127.0.0.1:7001","http_addr":"http://127.0.0.1:8001"}`, `"http_addr"`),
		bad("join/unknown_field", http.MethodPost, join, `{"id":"n9","raft_addr":"127.0.0.1:7001","http_addr":"127.0.0.1:8001","voter":false}`, "voter"),
		bad("join/id_number", http.MethodPost, join, `{"id":9,"raft_addr":"127.0.0.1:7001","http_addr":"127.0.0.1:8001"}`, `"id"`),
		bad("join/trailing_data", http.MethodPost, join, `{"id":"n9","raft_addr":"127.0.0.1:7001","http_addr":"127.0.0.1:8001"}{}`, "after"),
		bad("join/not_json", http.MethodPost, join, `id=n9`, "invalid character"),
		{name: "join/body_over_64KiB", method: http.MethodPost, path: join, body: `{"id":"n9","raft_addr":"127.0.0.1:7001","http_addr":"127.0.0.1:8001"}` + strings.Repeat(" ", api.MaxBodyBytes), status: http.StatusRequestEntityTooLarge, typ: api.ProblemTooLarge},

		bad("update/id_differs_from_path", http.MethodPut, join+"/n9", `{"id":"n8","raft_addr":"127.0.0.1:7001","http_addr":"127.0.0.1:8001"}`, `"id"`, "n8", "n9"),
		bad("update/self_id_differs_from_path", http.MethodPut, join+"/n1", `{"id":"n2","raft_addr":"`+self.RaftAddr+`","http_addr":"`+self.HTTPAddr+`"}`, `"id"`, "n1", "n2"),
		bad("update/missing_http_addr", http.MethodPut, join+"/n1", `{"id":"n1","raft_addr":"`+self.RaftAddr+`"}`, `"http_addr"`),
		bad("update/raft_addr_port_0", http.MethodPut, join+"/n1", `{"id":"n1","raft_addr":"127.0.0.1:0","http_addr":"`+self.HTTPAddr+`"}`, `"raft_addr"`),
		bad("update/empty_body", http.MethodPut, join+"/n1", ``, "empty"),
		{name: "update/unknown_member", method: http.MethodPut, path: join + "/n9", body: `{"id":"n9","raft_addr":"127.0.0.1:7001","http_addr":"127.0.0.1:8001"}`,
			status: http.StatusNotFound, typ: api.ProblemMemberNotFound, detail: []string{"n9"}},
		{name: "update/self_other_raft_addr", method: http.MethodPut, path: join + "/n1", body: `{"id":"n1","raft_addr":"127.0.0.1:1","http_addr":"` + self.HTTPAddr + `"}`,
			status: http.StatusConflict, typ: api.ProblemConflict, detail: []string{"n1", "127.0.0.1:1"}},

		{name: "remove/unknown_member", method: http.MethodDelete, path: join + "/nobody", status: http.StatusNotFound, typ: api.ProblemMemberNotFound, detail: []string{"nobody"}},
		{name: "remove/unknown_member_escaped", method: http.MethodDelete, path: join + "/no%20body", status: http.StatusNotFound, typ: api.ProblemMemberNotFound, detail: []string{"no body"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runBad(t, n, newRangeLog(), "orders", c) })
	}

	// The node's own record is untouched and it still serves.
	r := n.MustCall(t, http.MethodGet, "/v1/cluster", nil)
	testkit.DecodeStrict(t, r.Body, &st)
	if len(st.Members) != 1 || st.Members[0] != self || st.Leader != "n1" {
		t.Errorf("members after bad input: %+v, leader %q; want [%+v]", st.Members, st.Leader, self)
	}
	// Registering the same addresses again is a no-op success.
	r = n.MustCall(t, http.MethodPut, join+"/n1", `{"id":"n1","raft_addr":"`+self.RaftAddr+`","http_addr":"`+self.HTTPAddr+`"}`)
	expectJSON(t, "update self unchanged", r, http.StatusOK)
}
