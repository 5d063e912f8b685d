package client_test

// Fuzz targets of the SDK's side of the wire: what it makes of the answers a
// server (or whatever stands between it and the server) sends back, and its
// offline decoding of Snowflake IDs.
//
//   - FuzzClientAnswer: every call of the SDK against a real HTTP server
//     (httptest, in-process) that answers with a fuzzed status, content
//     type and body.
//   - FuzzDecodeSnowflake: DecodeSnowflake over arbitrary layouts and IDs.
//
// fuzz_internal_test.go has the targets that need the package's internals
// (one attempt's decoding, a lease renewal's answer).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
)

// answerServer answers the first request of each fuzz input with the fuzzed
// answer, and every later one (the SDK's retries, a Snowflake's release)
// with a final 418 problem of type stopType, so that an answer the SDK
// retries ends the call at once instead of at its timeout.
type answerServer struct {
	srv *httptest.Server

	mu       sync.Mutex
	status   int
	ctype    string
	body     []byte
	requests int
	methods  []string
	// hang, when not nil, holds every later POST until it is closed or
	// the request ends: a Snowflake retrying its acquire then leaves the
	// first answer's outcome in its LastError.
	hang chan struct{}
}

const stopType = "urn:fuzz:stop"

func newAnswerServer(tb testing.TB) *answerServer {
	a := &answerServer{}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		n := a.requests
		a.requests++
		a.methods = append(a.methods, r.Method+" "+r.URL.Path)
		status, ctype, body, hang := a.status, a.ctype, a.body, a.hang
		a.mu.Unlock()
		if n > 0 && hang != nil && r.Method == http.MethodPost {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		}
		if n > 0 {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusTeapot)
			_ = json.NewEncoder(w).Encode(api.Problem{Type: stopType, Title: "stop", Status: http.StatusTeapot, Detail: "the fuzzed answer was the first one"})
			return
		}
		if ctype == "" {
			w.Header()["Content-Type"] = nil // no sniffing either
		} else {
			w.Header().Set("Content-Type", ctype)
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	tb.Cleanup(a.srv.Close)
	return a
}

func (a *answerServer) set(status int, ctype string, body []byte) {
	a.mu.Lock()
	a.status, a.ctype, a.body, a.requests, a.methods = status, ctype, body, 0, nil
	a.mu.Unlock()
}

// hangRetries makes later POSTs of this input hang; the returned func ends
// the hang.
func (a *answerServer) hangRetries() func() {
	ch := make(chan struct{})
	a.mu.Lock()
	a.hang = ch
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		a.hang = nil
		a.mu.Unlock()
		close(ch)
	}
}

func (a *answerServer) seen() (int, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.requests, append([]string(nil), a.methods...)
}

// SDK calls under fuzzing.
const (
	cReserve = iota
	cCreateSequence
	cSequenceInfo
	cSequences
	cCluster
	cAddMember
	cRemoveMember
	cCreateNamespace
	cInspectSnowflake
	cLeases
	cRevokeLease
	cSequenceNext
	cSnowflakeAcquire
	numCalls
)

var contentTypes = []string{"application/json", "application/problem+json", "", "text/html; charset=utf-8",
	"text/plain", "application/json; charset=utf-8", "application/octet-stream"}

// retried are the statuses the SDK retries (client.go's package doc).
func retried(status int) bool {
	switch status {
	case 429, 500, 502, 503, 504:
		return true
	}
	return false
}

// problemFields reads the members of a problem document that the SDK must
// carry: type, title and detail, each by its exact name (RFC 9457's members
// are case-sensitive) when it is a JSON string. ok reports that the body
// is a JSON object holding at least one of them.
func problemFields(body []byte) (typ, title, detail string, ok bool) {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return "", "", "", false
	}
	typ, _ = m["type"].(string)
	title, _ = m["title"].(string)
	detail, _ = m["detail"].(string)
	return typ, title, detail, typ != "" || title != "" || detail != ""
}

// FuzzClientAnswer makes one SDK call (call) whose first request the server
// answers with status (mapped onto 200..599), one of contentTypes and body.
// Properties:
//
//   - No panic, and every call returns (no hang: the server answers).
//   - An answer the SDK retries (429, 500, 502, 503, 504) never becomes a
//     result: the call ends with the next answer, the final 418.
//   - Any other non-2xx answer is an *APIError with that status and the
//     server's endpoint; when the body is a problem document its type and
//     detail are carried as they came (so errors.Is matches the sentinels
//     by type), and without one the error still names the status and
//     quotes the start of the body; its message is valid UTF-8 when the
//     body is.
//   - A 2xx answer is either refused with an error, or describes what was
//     asked: a Reserve's range is exactly count IDs of the named sequence,
//     positive and increasing; a Sequence hands out the first ID of such a
//     range; a lease that a Snowflake keeps has a usable layout, a worker id
//     that fits it, a token, and the TTL the server sent; an answer with no
//     body is refused by calls that expect one.
func FuzzClientAnswer(f *testing.F) {
	rng := func(seq string, first, last int64) []byte {
		b, _ := json.Marshal(api.Range{Sequence: seq, First: first, Last: last})
		return b
	}
	lease, _ := json.Marshal(api.Lease{Namespace: "ns", WorkerID: 3, Holder: "fz", Token: 42, TTLMs: 30_000, GrantedMs: 1700000000000,
		Layout: api.Namespace{Name: "ns", EpochMs: api.DefaultEpochMs, TimestampBits: 41, WorkerBits: 10, SequenceBits: 12, TickMs: 1, MaxWorkers: 1024, LeaseTTLMs: 30_000}})
	problem := func(status int, typ, title, detail string) []byte {
		b, _ := json.Marshal(api.Problem{Type: typ, Title: title, Status: status, Detail: detail})
		return b
	}
	for _, s := range []struct {
		call   int
		count  int64
		status int
		ctype  int
		body   []byte
	}{
		{cReserve, 5, 200, 0, rng("s", 1, 5)},
		{cReserve, 5, 200, 0, rng("s", 5, 1)},
		{cReserve, 5, 200, 0, rng("s", 1, 6)},
		{cReserve, 5, 200, 0, rng("s", -4, 0)},
		{cReserve, 5, 200, 0, rng("other", 1, 5)},
		{cReserve, 5, 200, 0, []byte(`{"sequence":"s","first":9223372036854775808,"last":9223372036854775812}`)},
		{cReserve, 3, 200, 0, []byte(`{"sequence":"s","first":9223372036854775805,"last":9223372036854775807}`)},
		{cReserve, 1, 200, 0, []byte(`{"sequence":"s","first":1.5,"last":1.5}`)},
		{cReserve, 1, 200, 0, []byte(`{}`)},
		{cReserve, 1, 200, 0, []byte(`null`)},
		{cReserve, 1, 204, 0, nil},
		{cReserve, 1, 200, 3, []byte(`<html>ok</html>`)},
		{cReserve, 1, 409, 1, problem(409, api.ProblemExhausted, "sequence exhausted", "only 3 left")},
		{cReserve, 1, 409, 1, []byte(`{"type":"urn:ticketd:problem:sequence-exhausted","status":409,"detail":"only 3 left"}`)},
		{cReserve, 1, 404, 1, []byte(`{"type":"urn:ticketd:problem:sequence-not-found"}`)},
		{cReserve, 1, 400, 1, []byte(`{"type":7,"title":"x"}`)},
		{cReserve, 1, 418, 3, []byte("<html>I'm a teapot</html>")},
		{cReserve, 1, 502, 3, []byte("bad gateway")},
		{cReserve, 1, 503, 1, problem(503, api.ProblemUnavailable, "service unavailable", "no leader is known")},
		{cReserve, 1, 301, 2, nil},
		{cReserve, 1, 404, 4, []byte(strings.Repeat("é", 150))},
		{cCreateSequence, 0, 201, 0, []byte(`{"name":"s","next":1,"start":1,"max":9223372036854775807,"remaining":9223372036854775807}`)},
		{cCreateSequence, 0, 409, 1, problem(409, api.ProblemConflict, "conflict", "other settings")},
		{cSequenceInfo, 0, 200, 0, []byte(`{"name":"s","next":null,"start":1,"max":10,"remaining":0}`)},
		{cSequenceInfo, 0, 200, 0, nil},
		{cSequences, 0, 200, 0, []byte(`{"sequences":[{"name":"s","start":1,"max":10}]}`)},
		{cCluster, 0, 200, 0, []byte(`{"node":"n1","state":"Leader","leader":"n1","term":2,"members":[{"id":"n1","raft_addr":"127.0.0.1:7001","voter":true}]}`)},
		{cCluster, 0, 200, 0, []byte(`{"term":-1}`)},
		{cAddMember, 0, 200, 0, []byte(`{"id":"n9"}`)},
		{cAddMember, 0, 409, 1, problem(409, api.ProblemConflict, "member conflict", "n9")},
		{cRemoveMember, 0, 204, 2, nil},
		{cRemoveMember, 0, 404, 1, problem(404, api.ProblemMemberNotFound, "member not found", "n9")},
		{cCreateNamespace, 0, 201, 0, []byte(`{"name":"ns","epoch_ms":1577836800000,"timestamp_bits":41,"worker_bits":10,"sequence_bits":12,"tick_ms":1}`)},
		{cCreateNamespace, 0, 200, 0, []byte(`{"timestamp_bits":256}`)},
		{cInspectSnowflake, 0, 200, 0, []byte(`{"namespace":"ns","id":1,"time_ms":1,"worker_id":3,"sequence":0,"lease_found":true}`)},
		{cInspectSnowflake, 0, 404, 1, problem(404, api.ProblemNamespaceNotFound, "namespace not found", "ns")},
		{cLeases, 0, 200, 0, []byte(`{"leases":[` + string(lease) + `]}`)},
		{cRevokeLease, 0, 200, 0, lease},
		{cRevokeLease, 0, 409, 1, problem(409, api.ProblemLeaseLost, "lease lost", "not held")},
		{cSequenceNext, 0, 200, 0, rng("s", 1, 1000)},
		{cSequenceNext, 0, 200, 0, rng("s", 1, 999)},
		{cSequenceNext, 0, 409, 1, problem(409, api.ProblemExhausted, "sequence exhausted", "")},
		{cSnowflakeAcquire, 0, 201, 0, lease},
		{cSnowflakeAcquire, 0, 201, 0, bytes.Replace(lease, []byte(`"ttl_ms":30000`), []byte(`"ttl_ms":18446744073710`), 1)},
		{cSnowflakeAcquire, 0, 201, 0, bytes.Replace(lease, []byte(`"ttl_ms":30000`), []byte(`"ttl_ms":9223372036855`), 1)},
		{cSnowflakeAcquire, 0, 201, 0, bytes.Replace(lease, []byte(`"worker_id":3`), []byte(`"worker_id":1024`), 1)},
		{cSnowflakeAcquire, 0, 201, 0, bytes.Replace(lease, []byte(`"timestamp_bits":41`), []byte(`"timestamp_bits":42`), 1)},
		{cSnowflakeAcquire, 0, 409, 1, problem(409, api.ProblemNoWorkerFree, "no worker id free", "all 1024 are leased")},
	} {
		f.Add(uint8(s.call), s.count, uint16(s.status-200), uint8(s.ctype), s.body)
	}

	srv := newAnswerServer(f)
	c, err := client.New([]string{srv.srv.URL}, client.WithBackoff(time.Microsecond, time.Microsecond),
		client.WithTimeout(5*time.Second), client.WithCallTimeout(10*time.Second))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = c.Close() })

	f.Fuzz(func(t *testing.T, call uint8, count int64, status uint16, ctype uint8, body []byte) {
		if len(body) > 1<<16 {
			return
		}
		st := int(status) + 200
		if st > 599 {
			st = 200 + st%400
		}
		if st == http.StatusNoContent || st == http.StatusNotModified {
			body = nil // Go's server sends no body with these
		}
		srv.set(st, contentTypes[int(ctype)%len(contentTypes)], body)
		if count = (count & math.MaxInt64) % api.MaxReserveCount; count == 0 {
			count = api.MaxReserveCount
		}
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()

		var (
			callErr  error
			gotRange client.Range
			checkOK  func() // the 2xx consistency check of a successful call
		)
		wantsBody := true
		switch int(call) % numCalls {
		case cReserve:
			gotRange, callErr = c.Reserve(ctx, "s", count)
			checkOK = func() {
				var r api.Range
				dec := json.NewDecoder(bytes.NewReader(body))
				if err := dec.Decode(&r); err != nil || r.Sequence != "s" || r.First != gotRange.First || r.Last != gotRange.Last ||
					gotRange.First < 1 || gotRange.Last < gotRange.First || gotRange.Len() != count {
					t.Fatalf("Reserve(s, %d) answered %d %q returned %+v; want exactly %d IDs of s, as answered", count, st, body, gotRange, count)
				}
			}
		case cCreateSequence:
			_, _, callErr = c.CreateSequence(ctx, "s", client.SequenceSettings{})
		case cSequenceInfo:
			_, callErr = c.SequenceInfo(ctx, "s")
		case cSequences:
			_, callErr = c.Sequences(ctx)
		case cCluster:
			_, callErr = c.Cluster(ctx)
		case cAddMember:
			wantsBody = false
			callErr = c.AddMember(ctx, api.JoinRequest{ID: "n9", RaftAddr: "127.0.0.1:7009", HTTPAddr: "127.0.0.1:8009"})
		case cRemoveMember:
			wantsBody = false
			callErr = c.RemoveMember(ctx, "n9")
		case cCreateNamespace:
			_, _, callErr = c.CreateNamespace(ctx, "ns", api.NamespaceRequest{})
		case cInspectSnowflake:
			_, callErr = c.InspectSnowflake(ctx, "ns", 12345)
		case cLeases:
			_, callErr = c.Leases(ctx, "ns")
		case cRevokeLease:
			_, callErr = c.RevokeLease(ctx, "ns", 3)
		case cSequenceNext:
			seq := c.Sequence("s")
			var id int64
			id, callErr = seq.Next(ctx)
			// The next input's first answer is that input's: let the
			// refill that Next may have started (a prefetch, or asking
			// for fewer IDs after "exhausted") end first.
			for deadline := time.Now().Add(10 * time.Second); seq.Stats().Refilling; time.Sleep(50 * time.Microsecond) {
				if time.Now().After(deadline) {
					t.Fatalf("a refill still runs after 10 s")
				}
			}
			if typ, _, _, _ := problemFields(body); callErr != nil && st/100 != 2 && typ == api.ProblemExhausted {
				// Exhausted (by type, whatever the status): a Sequence
				// asks for fewer IDs, and the next answer, 418, ends it.
				return
			}
			checkOK = func() {
				var r api.Range
				if err := json.Unmarshal(body, &r); err != nil || r.Sequence != "s" || r.First < 1 || r.Last-r.First+1 != client.DefaultMinRangeSize || id != r.First {
					t.Fatalf("Sequence.Next on an answer %d %q returned %d; want the first ID of a range of %d IDs of s", st, body, id, client.DefaultMinRangeSize)
				}
			}
		case cSnowflakeAcquire:
			callErr = fuzzAcquire(t, c, srv, st, body)
			if callErr == errSkip {
				return
			}
			if retried(st) {
				// The generator's retry hangs (hangRetries): its last
				// failure is this answer, as an *APIError.
				var ae *client.APIError
				if !errors.As(callErr, &ae) {
					t.Fatalf("acquire answered %d %q: last failure %v", st, body, callErr)
				}
				checkAPIError(t, strconv.Itoa(st)+" "+strconvQuote(body), ae, st, body, srv.srv.URL)
				return
			}
		}
		checkCallResult(t, srv, st, body, wantsBody, callErr, checkOK)
	})
}

var errSkip = errors.New("skip")

// fuzzAcquire starts a Snowflake whose first acquire gets the fuzzed
// answer, waits until that answer has been dealt with, checks the lease it
// kept if any, and closes it. It returns the acquire's outcome as an error
// for checkCallResult, or errSkip when the answer is a 2xx the generator
// kept (checked here).
func fuzzAcquire(t *testing.T, c *client.Client, srv *answerServer, st int, body []byte) error {
	unhang := srv.hangRetries() // before the generator's first acquire
	g, err := c.Snowflake("ns", client.WithHolder("fz"), client.WithLeaseWait(0))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	defer unhang()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// Dealt with: a lease kept, a fatal error, or a second request
		// (a retry, or the release of a lease given back).
		if _, held := g.Lease(); held {
			break
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		werr := g.Wait(ctx)
		if !errors.Is(werr, client.ErrLeaseExpired) {
			return werr // fatal: the answer was refused
		}
		if n, _ := srv.seen(); n >= 2 {
			return g.Stats().LastError
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Snowflake did nothing with the answer %d %q in 10 s", st, body)
		}
		time.Sleep(100 * time.Microsecond)
	}
	l, _ := g.Lease()
	var out api.Lease
	if st/100 != 2 || json.Unmarshal(body, &out) != nil {
		t.Fatalf("a lease %+v kept from the answer %d %q", l, st, body)
	}
	lay := out.Layout
	usable := lay.TimestampBits >= 1 && lay.WorkerBits >= 1 && lay.SequenceBits >= 1 &&
		int(lay.TimestampBits)+int(lay.WorkerBits)+int(lay.SequenceBits) == 63 &&
		lay.TickMs >= 1 && lay.TickMs <= 60_000 && lay.EpochMs >= 0
	if !usable || l.Layout != lay || l.WorkerID != out.WorkerID || l.WorkerID < 0 || l.WorkerID >= int64(1)<<lay.WorkerBits ||
		l.Token == 0 || l.Token != out.Token || l.TTL <= 0 || l.TTL != time.Duration(out.TTLMs)*time.Millisecond ||
		l.TTL/time.Millisecond != time.Duration(out.TTLMs) || l.TimestampFloorMs != out.TimestampFloorMs {
		t.Fatalf("the Snowflake kept lease %+v from the answer %d %q", l, st, body)
	}
	if id, err := g.Next(t.Context()); err == nil {
		if p := client.DecodeSnowflake(lay, id); id <= 0 || p.WorkerID != l.WorkerID {
			t.Fatalf("ID %d under lease %+v decodes to %+v", id, l, p)
		}
	}
	return errSkip
}

// checkCallResult checks a call's outcome against the answer it got.
func checkCallResult(t *testing.T, srv *answerServer, st int, body []byte, wantsBody bool, err error, checkOK func()) {
	t.Helper()
	what := strconv.Itoa(st) + " " + strconvQuote(body)
	var ae *client.APIError
	switch {
	case retried(st):
		if !errors.As(err, &ae) || ae.Problem.Type != stopType {
			t.Fatalf("answer %s is retried, yet the call returned %v", what, err)
		}
	case st/100 != 2:
		if !errors.As(err, &ae) {
			t.Fatalf("answer %s: the call returned %v, want an *APIError", what, err)
		}
		checkAPIError(t, what, ae, st, body, srv.srv.URL)
	case err != nil:
		if errors.As(err, &ae) {
			t.Fatalf("answer %s: a 2xx became an *APIError %v", what, err)
		}
		if err.Error() == "" {
			t.Fatalf("answer %s: an error without a message", what)
		}
	default:
		if wantsBody && (len(bytes.TrimSpace(body)) == 0 || string(bytes.TrimSpace(body)) == "null") {
			t.Fatalf("answer %s has no body, yet the call succeeded", what)
		}
		if checkOK != nil {
			checkOK()
		}
	}
}

// checkAPIError checks the error made of a non-2xx answer.
func checkAPIError(t *testing.T, what string, ae *client.APIError, st int, body []byte, endpoint string) {
	t.Helper()
	msg := ae.Error()
	if ae.StatusCode != st || ae.Endpoint != endpoint || !strings.Contains(msg, strconv.Itoa(st)) || ae.Problem.Title == "" {
		t.Fatalf("answer %s became %#v (%q)", what, ae, msg)
	}
	if utf8.Valid(body) && !utf8.ValidString(msg) {
		t.Fatalf("answer %s: the error's message is not valid UTF-8: %q", what, msg)
	}
	typ, title, detail, isProblem := problemFields(body)
	if isProblem {
		if ae.Problem.Type != typ || ae.Problem.Detail != detail || (title != "" && ae.Problem.Title != title) {
			t.Fatalf("answer %s: the error carries type %q title %q detail %q, want %q %q %q", what, ae.Problem.Type, ae.Problem.Title, ae.Problem.Detail, typ, title, detail)
		}
		for _, m := range []struct {
			sentinel error
			want     bool
		}{
			{client.ErrNotFound, typ == api.ProblemNotFound || typ == api.ProblemMemberNotFound},
			{client.ErrExhausted, typ == api.ProblemExhausted},
			{client.ErrConflict, typ == api.ProblemConflict},
		} {
			if errors.Is(ae, m.sentinel) != m.want {
				t.Fatalf("answer %s: errors.Is(%v) = %v", what, m.sentinel, !m.want)
			}
		}
		return
	}
	if text := strings.TrimSpace(string(body)); text != "" && !isProblem && utf8.ValidString(text) {
		// No problem document: the start of the body, for a human.
		start := []rune(text)
		start = start[:min(len(start), 20)]
		if !strings.Contains(ae.Problem.Detail, string(start)) {
			t.Fatalf("answer %s: the error's detail %q does not quote the body", what, ae.Problem.Detail)
		}
	}
}

func strconvQuote(b []byte) string {
	if len(b) > 200 {
		return strconv.Quote(string(b[:200])) + "..."
	}
	return strconv.Quote(string(b))
}

// FuzzDecodeSnowflake takes arbitrary IDs apart with arbitrary layouts.
// Properties:
//
//   - No panic, whatever the layout (shifts of 64 bits and more, ticks of
//     zero or below): DecodeSnowflake is called on layouts read from
//     anywhere.
//   - (That it agrees with the server's decoding is
//     sdktest.FuzzDecodeSnowflake_SDKAndServerAgree, in the server's
//     module: the SDK's module holds nothing of the server.)
//   - For a usable layout (the generator's rules: bits of 1 or more making
//     63, tick 1..60000 ms, epoch from 0 to 2^62 ns) and an ID of 0 or
//     more: the worker id and sequence fit their bit widths, and the parts
//     put back together give the ID again, whenever the ID's tick starts at
//     a millisecond an int64 holds (every ID a generator can issue: its
//     clock is an int64 of nanoseconds).
func FuzzDecodeSnowflake(f *testing.F) {
	f.Add(api.DefaultEpochMs, uint8(41), uint8(10), uint8(12), int64(1), int64(1234567890123456789))
	f.Add(api.DefaultEpochMs, uint8(41), uint8(10), uint8(12), int64(1), int64(0))
	f.Add(api.DefaultEpochMs, uint8(41), uint8(10), uint8(12), int64(1), int64(math.MaxInt64))
	f.Add(api.DefaultEpochMs, uint8(41), uint8(10), uint8(12), int64(1), int64(-1))
	f.Add(int64(0), uint8(1), uint8(1), uint8(61), int64(60_000), int64(math.MaxInt64))
	f.Add(int64(0), uint8(61), uint8(1), uint8(1), int64(60_000), int64(math.MaxInt64))
	f.Add(int64(1<<62)/1_000_000, uint8(49), uint8(2), uint8(12), int64(10), int64(1<<62))
	f.Add(int64(0), uint8(0), uint8(0), uint8(0), int64(0), int64(7))
	f.Add(int64(-1), uint8(255), uint8(255), uint8(255), int64(-1), int64(math.MinInt64))
	f.Add(int64(math.MaxInt64), uint8(41), uint8(64), uint8(12), int64(math.MaxInt64), int64(12345))
	f.Fuzz(func(t *testing.T, epochMs int64, tsBits, workerBits, seqBits uint8, tickMs int64, id int64) {
		lay := api.Namespace{Name: "ns", EpochMs: epochMs, TimestampBits: tsBits, WorkerBits: workerBits, SequenceBits: seqBits, TickMs: tickMs}
		p := client.DecodeSnowflake(lay, id)
		if p.Time.UnixMilli() != p.TimeMs {
			t.Fatalf("layout %+v, id %d: Time %v is not TimeMs %d", lay, id, p.Time, p.TimeMs)
		}
		usable := tsBits >= 1 && workerBits >= 1 && seqBits >= 1 && int(tsBits)+int(workerBits)+int(seqBits) == 63 &&
			tickMs >= 1 && tickMs <= 60_000 && epochMs >= 0 && epochMs <= (1<<62)/1_000_000
		if !usable || id < 0 {
			return
		}
		if p.WorkerID < 0 || p.WorkerID >= int64(1)<<workerBits || p.Sequence < 0 || p.Sequence >= int64(1)<<seqBits {
			t.Fatalf("layout %+v, id %d: parts %+v do not fit their bits", lay, id, p)
		}
		tick := id >> (seqBits + workerBits)
		if tick < 0 || tick >= int64(1)<<tsBits {
			t.Fatalf("layout %+v, id %d: tick %d does not fit %d bits", lay, id, tick, tsBits)
		}
		if tick > (math.MaxInt64-epochMs)/tickMs {
			return // the tick starts past the last millisecond an int64 holds
		}
		if (p.TimeMs-epochMs)%tickMs != 0 {
			t.Fatalf("layout %+v, id %d: TimeMs %d is not the start of a tick", lay, id, p.TimeMs)
		}
		back := (p.TimeMs-epochMs)/tickMs<<(seqBits+workerBits) | p.WorkerID<<seqBits | p.Sequence
		if back != id {
			t.Fatalf("layout %+v, id %d: parts %+v put back together give %d", lay, id, p, back)
		}
	})
}

// Regression tests of the bugs the fuzz targets above found. Each failed
// before its fix.

// answerFunc serves h and returns a client of it.
func answerFunc(t *testing.T, h http.HandlerFunc, opts ...client.Option) *client.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return newClient(t, []string{srv.URL}, opts...)
}

func answerWith(status int, ctype, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ctype != "" {
			w.Header().Set("Content-Type", ctype)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// TestAPIError_ProblemWithoutTitle_KeepsTypeAndDetail (FuzzClientAnswer,
// FuzzAttemptAnswer): a problem document without "title" (every member of
// RFC 9457 is optional) was thrown away whole and replaced by the raw body,
// so a 409 of type sequence-exhausted did not match ErrExhausted and the
// detail was lost; and a status Go has no text for (529, 600) gave an
// error without a title.
func TestAPIError_ProblemWithoutTitle_KeepsTypeAndDetail(t *testing.T) {
	noLeak(t)
	ctx := ctxFor(t, 10*time.Second)
	c := answerFunc(t, answerWith(409, "application/problem+json", `{"type":"urn:ticketd:problem:sequence-exhausted","status":409,"detail":"only 3 left"}`))
	_, err := c.Reserve(ctx, "s", 5)
	var ae *client.APIError
	if !errors.Is(err, client.ErrExhausted) || !errors.As(err, &ae) || ae.Problem.Detail != "only 3 left" || ae.Problem.Title == "" {
		t.Errorf("Reserve answered a problem without a title: %v (%#v); want ErrExhausted with its detail", err, ae)
	}
	c = answerFunc(t, answerWith(404, "application/problem+json", `{"type":"urn:ticketd:problem:sequence-not-found"}`))
	if _, err := c.SequenceInfo(ctx, "s"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("SequenceInfo answered a problem with only a type: %v; want ErrNotFound", err)
	}
	c = answerFunc(t, answerWith(599, "text/plain", "proxy says no"))
	_, err = c.Cluster(ctx)
	if !errors.As(err, &ae) || ae.Problem.Title == "" || !strings.Contains(err.Error(), "599") || !strings.Contains(err.Error(), "proxy says no") {
		t.Errorf("a 599 became %v (%#v); want a title, the status and the body", err, ae)
	}
}

// TestAPIError_LongBody_CutOnARuneBoundary (FuzzClientAnswer): a body that
// is not a problem document is quoted in the error, cut to 200 bytes; the
// cut fell inside a UTF-8 sequence, so a valid body made an error message
// that is not valid UTF-8.
func TestAPIError_LongBody_CutOnARuneBoundary(t *testing.T) {
	noLeak(t)
	c := answerFunc(t, answerWith(404, "text/plain", "x"+strings.Repeat("é", 150)))
	_, err := c.SequenceInfo(ctxFor(t, 10*time.Second), "s")
	var ae *client.APIError
	if !errors.As(err, &ae) || !utf8.ValidString(err.Error()) || !strings.HasPrefix(ae.Problem.Detail, "xééé") || len(ae.Problem.Detail) > 203 {
		t.Errorf("got %q; want the start of the body, valid UTF-8", err)
	}
}

// TestClient_AnswerWithoutBody_IsAnError (FuzzClientAnswer): a 2xx answer
// with an empty body (or null) was taken as a sequence, namespace or status
// of zero values: SequenceInfo reported a sequence without a name, exhausted
// (next null, nothing remaining), and no error.
func TestClient_AnswerWithoutBody_IsAnError(t *testing.T) {
	noLeak(t)
	ctx := ctxFor(t, 10*time.Second)
	for _, a := range []struct {
		status int
		body   string
	}{{200, ""}, {200, "null"}, {204, ""}, {201, " null "}} {
		c := answerFunc(t, answerWith(a.status, "application/json", a.body))
		if info, err := c.SequenceInfo(ctx, "s"); err == nil {
			t.Errorf("SequenceInfo answered %d %q = %+v, nil; want an error", a.status, a.body, info)
		}
		if st, err := c.Cluster(ctx); err == nil {
			t.Errorf("Cluster answered %d %q = %+v, nil; want an error", a.status, a.body, st)
		}
		if ns, _, err := c.CreateNamespace(ctx, "ns", api.NamespaceRequest{}); err == nil {
			t.Errorf("CreateNamespace answered %d %q = %+v, nil; want an error", a.status, a.body, ns)
		}
	}
	// Calls that expect no body still take an empty answer.
	c := answerFunc(t, answerWith(204, "", ""))
	if err := c.RemoveMember(ctx, "n9"); err != nil {
		t.Errorf("RemoveMember answered 204: %v", err)
	}
}

// TestReserve_RangeOfAnotherSequence_IsRefused (FuzzClientAnswer): a range
// answered for another sequence (a misrouted or cached answer) was handed
// out as IDs of the sequence asked for, though nothing reserved them there.
func TestReserve_RangeOfAnotherSequence_IsRefused(t *testing.T) {
	noLeak(t)
	ctx := ctxFor(t, 10*time.Second)
	for _, body := range []string{`{"sequence":"other","first":1,"last":5}`, `{"first":1,"last":5}`} {
		c := answerFunc(t, answerWith(200, "application/json", body))
		if r, err := c.Reserve(ctx, "s", 5); err == nil {
			t.Errorf("Reserve(s, 5) answered %s = %+v, nil; want an error", body, r)
		}
	}
	c := answerFunc(t, answerWith(200, "application/json", `{"sequence":"s","first":1,"last":5}`))
	if r, err := c.Reserve(ctx, "s", 5); err != nil || r != (client.Range{First: 1, Last: 5}) {
		t.Errorf("Reserve(s, 5) = %+v, %v", r, err)
	}
}

// leaseServer grants worker 3, token 42 with ttlMs to every acquire and
// answers renewals with renew; it counts the renewals.
func leaseServer(t *testing.T, ttlMs int64, renew http.HandlerFunc) (*client.Client, func() int) {
	var mu sync.Mutex
	renewals := 0
	grant, _ := json.Marshal(api.Lease{Namespace: "ns", WorkerID: 3, Holder: "fz", Token: 42, TTLMs: ttlMs,
		Layout: api.Namespace{Name: "ns", EpochMs: api.DefaultEpochMs, TimestampBits: 41, WorkerBits: 10, SequenceBits: 12, TickMs: 1}})
	c := answerFunc(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			answerWith(201, "application/json", string(grant))(w, r)
		case http.MethodPut:
			mu.Lock()
			renewals++
			mu.Unlock()
			renew(w, r)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}, client.WithBackoff(client.DefaultMinBackoff, client.DefaultMaxBackoff))
	return c, func() int {
		mu.Lock()
		defer mu.Unlock()
		return renewals
	}
}

// TestSnowflake_LeaseTTLOverflowingDuration_IsRefused (FuzzClientAnswer,
// FuzzRenewAnswer): ttl_ms was multiplied into a time.Duration unchecked.
// An acquire answered ttl_ms 18446744073710 (584 years) became a lease of
// 448 µs; one of 9223372036855 a negative TTL.
func TestSnowflake_LeaseTTLOverflowingDuration_IsRefused(t *testing.T) {
	noLeak(t)
	for _, ttl := range []int64{18446744073710, 9223372036855, 1 << 50} {
		c, _ := leaseServer(t, ttl, answerWith(500, "", ""))
		g, err := c.Snowflake("ns", client.WithHolder("fz"))
		if err != nil {
			t.Fatal(err)
		}
		err = g.Wait(ctxFor(t, 5*time.Second))
		if l, held := g.Lease(); err == nil || held {
			t.Errorf("ttl_ms %d: Wait = %v, lease %+v (held %v); want the lease refused", ttl, err, l, held)
		}
		_ = g.Close()
	}
}

// TestSnowflake_BadRenewalAnswers_NoBusyLoop (FuzzRenewAnswer): a renewal
// whose answer the generator could not use, and which did not end the lease
// (a 200 that is not JSON; a TTL too short for the safety margin, or one
// overflowing a Duration, which was also stored in the lease), was retried
// at once, without backoff and without moving the next renewal: the
// generator sent renewals in a busy loop, thousands per second, for as long
// as the answers stayed so.
func TestSnowflake_BadRenewalAnswers_NoBusyLoop(t *testing.T) {
	noLeak(t)
	for _, c := range []struct {
		name  string
		renew string
	}{
		{"not_json", `<html>ok</html>`},
		{"ttl_below_twice_the_margin", `{"namespace":"ns","worker_id":3,"token":42,"ttl_ms":900}`},
		{"ttl_overflowing_a_duration", `{"namespace":"ns","worker_id":3,"token":42,"ttl_ms":9223372036855}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, renewals := leaseServer(t, 1500, answerWith(200, "application/json", c.renew))
			g, err := cl.Snowflake("ns", client.WithHolder("fz"), client.WithSafetyMargin(500*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Wait(ctxFor(t, 5*time.Second)); err != nil {
				t.Fatal(err)
			}
			// The first renewal is due after TTL/3 = 500 ms.
			time.Sleep(1500 * time.Millisecond)
			st := g.Stats()
			_ = g.Close()
			// Renewals the server saw, and failures that never left the
			// process (a renewal bounded by a negative TTL/3).
			if n := max(renewals(), int(st.RenewFailures)); n < 1 || n > 30 {
				t.Errorf("%d renewals in 1.5 s of a 1.5 s lease (%d failed); want a few (one per TTL/3, a few retries with backoff)", n, st.RenewFailures)
			}
		})
	}
}
