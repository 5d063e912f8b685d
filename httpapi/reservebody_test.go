package httpapi

import (
	"strconv"
	"testing"
)

// strictReserveCount is the reservation's body through the strict path that
// parseReserveBody stands in for: decodeBody's decoding into the handler's
// struct, then the "count is required" check.
func strictReserveCount(body []byte) (int64, bool) {
	var req struct {
		Count *int64 `json:"count"`
	}
	if err := decodeJSONBody(body, &req, false); err != nil || req.Count == nil {
		return 0, false
	}
	return *req.Count, true
}

// reserveBodyCases are bodies with what the fast path must make of them;
// they seed FuzzReserveBodyFastPath too.
var reserveBodyCases = []struct {
	body string
	n    int64
	ok   bool // the fast path takes it
}{
	{`{"count":1000}`, 1000, true},
	{`{"count":1}`, 1, true},
	{`{"count":0}`, 0, true},
	{`{"count":-0}`, 0, true},
	{`{"count":-1}`, -1, true},
	{`{"count":9223372036854775807}`, 9223372036854775807, true},
	{`{"count":-9223372036854775808}`, -9223372036854775808, true},
	{`{"count":1000000000000000000}`, 1000000000000000000, true},
	{" \t\r\n{ \t\r\n\"count\" \t\r\n: \t\r\n42 \t\r\n} \t\r\n", 42, true},
	{`{"count": 5}`, 5, true},
	{`{"count" :5}`, 5, true},
	{"{\"count\":5}\n", 5, true},

	// The strict path takes these too, but the fast path leaves them to it.
	{`{"COUNT":1}`, 0, false},
	{`{"Count":1}`, 0, false},
	{`{"count":1,"count":2}`, 0, false},
	{`{"\u0063ount":1}`, 0, false},
	{`{"count":null}`, 0, false},
	{`{}`, 0, false},

	// The strict path refuses these: so must the fast path.
	{``, 0, false},
	{` `, 0, false},
	{`{`, 0, false},
	{`{"count":`, 0, false},
	{`{"count":1`, 0, false},
	{`{"count":1e3}`, 0, false},
	{`{"count":1E3}`, 0, false},
	{`{"count":1.0}`, 0, false},
	{`{"count":1.}`, 0, false},
	{`{"count":01}`, 0, false},
	{`{"count":00}`, 0, false},
	{`{"count":-01}`, 0, false},
	{`{"count":-}`, 0, false},
	{`{"count":--1}`, 0, false},
	{`{"count":+1}`, 0, false},
	{`{"count":9223372036854775808}`, 0, false},
	{`{"count":-9223372036854775809}`, 0, false},
	{`{"count":18446744073709551616}`, 0, false},
	{`{"count":99999999999999999999}`, 0, false},
	{`{"count":00000000000000000001}`, 0, false},
	{`{"count":1}}`, 0, false},
	{`{"count":1}]`, 0, false},
	{`{"count":1} x`, 0, false},
	{`{"count":1}{}`, 0, false},
	{`{"count":1} 2`, 0, false},
	{`{"count":1,}`, 0, false},
	{`{"count":1,"extra":2}`, 0, false},
	{`{"count":"1"}`, 0, false},
	{`{"count":true}`, 0, false},
	{`{"count":[1]}`, 0, false},
	{`{"count":{"n":1}}`, 0, false},
	{`{"count" 1}`, 0, false},
	{`{count:1}`, 0, false},
	{`{'count':1}`, 0, false},
	{`{"count":0x10}`, 0, false},
	{`{"count":1 2}`, 0, false},
	{`null`, 0, false},
	{`"count"`, 0, false},
	{`[{"count":1}]`, 0, false},
	{`1`, 0, false},
	{"\ufeff{\"count\":1}", 0, false},
	{"{\"count\":1}\x00", 0, false},
	{"{\"count\":1}\v", 0, false},
	{"{\"count\":1}\f", 0, false},
	{"{\"count\":\u00a01}", 0, false},
	{"{\"count\":1}\u00a0", 0, false},
}

func TestParseReserveBody(t *testing.T) {
	for _, c := range reserveBodyCases {
		n, ok := parseReserveBody([]byte(c.body))
		if ok != c.ok || n != c.n {
			t.Errorf("parseReserveBody(%q) = %d, %v; want %d, %v", c.body, n, ok, c.n, c.ok)
		}
		if !ok {
			continue
		}
		if sn, sok := strictReserveCount([]byte(c.body)); !sok || sn != n {
			t.Errorf("%q: fast path %d, strict path %d, %v", c.body, n, sn, sok)
		}
	}
	// Every int64 spelled plainly takes the fast path.
	for _, v := range []int64{1, 9, 10, 99, 100, 1 << 31, 1<<53 + 1, 1<<63 - 2, -1 << 63} {
		body := `{"count":` + strconv.FormatInt(v, 10) + `}`
		if n, ok := parseReserveBody([]byte(body)); !ok || n != v {
			t.Errorf("parseReserveBody(%q) = %d, %v", body, n, ok)
		}
	}
}

// FuzzReserveBodyFastPath holds parseReserveBody to its promise: whatever it
// takes, the strict path (decodeBody's) takes too, with the same count. The
// reverse is not asked: the fast path may leave any body to the strict one.
func FuzzReserveBodyFastPath(f *testing.F) {
	for _, c := range reserveBodyCases {
		f.Add([]byte(c.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		n, ok := parseReserveBody(body)
		if !ok {
			if n != 0 {
				t.Fatalf("parseReserveBody(%q) refused the body but returned %d", body, n)
			}
			return
		}
		sn, sok := strictReserveCount(body)
		if !sok || sn != n {
			t.Fatalf("parseReserveBody(%q) = %d; the strict path gives %d, accepted %v", body, n, sn, sok)
		}
	})
}
