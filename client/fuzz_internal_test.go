package client

// Fuzz targets that need the package's internals: one attempt's decoding of
// an answer, whatever its status (FuzzClientAnswer, outside, sees the
// retried statuses only through the retry loop), a Snowflake's handling
// of a renewal's answer, and a SnowflakeRemote's check of nodes' answers.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ticketd/ticketd/api"
)

// fixedAnswer is an httptest server that answers every request with the
// current answer.
type fixedAnswer struct {
	srv *httptest.Server

	mu         sync.Mutex
	status     int
	ctype      string
	retryAfter string
	body       []byte
}

func newFixedAnswer(tb testing.TB) *fixedAnswer {
	a := &fixedAnswer{}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		status, ctype, ra, body := a.status, a.ctype, a.retryAfter, a.body
		a.mu.Unlock()
		if ctype == "" {
			w.Header()["Content-Type"] = nil
		} else {
			w.Header().Set("Content-Type", ctype)
		}
		if ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	tb.Cleanup(a.srv.Close)
	return a
}

func (a *fixedAnswer) set(status int, ctype, retryAfter string, body []byte) {
	a.mu.Lock()
	a.status, a.ctype, a.retryAfter, a.body = status, ctype, retryAfter, body
	a.mu.Unlock()
}

// headerValue keeps a fuzzed header value sendable: visible ASCII and
// spaces, at most 100 bytes.
func headerValue(s string) string {
	b := make([]byte, 0, min(len(s), 100))
	for i := 0; i < len(s) && len(b) < 100; i++ {
		if c := s[i]; c >= ' ' && c < 0x7f {
			b = append(b, c)
		}
	}
	return strings.TrimSpace(string(b))
}

// FuzzAttemptAnswer sends one attempt whose answer has a fuzzed status
// (200..999: Go's server sends no other), content type, Retry-After
// header and body, decoded into the type out selects. Properties:
//
//   - No panic.
//   - The Retry-After the attempt reports is parseRetryAfter of the header:
//     between 0 and 30 s (maxRetryAfter), whatever the header says.
//   - A non-2xx answer is an *APIError with the status and the endpoint,
//     a title, and a message naming the status; a problem document's type
//     and detail are carried as they came; the message is valid UTF-8 when
//     the body is. Only 429, 500, 502, 503 and 504 are retryable.
//   - A 2xx answer decodes into out or fails with a fatalError (not
//     retried); it is never an *APIError.
func FuzzAttemptAnswer(f *testing.F) {
	problem := `{"type":"urn:ticketd:problem:unavailable","title":"service unavailable","status":503,"detail":"no leader is known","leader":"n2"}`
	f.Add(uint16(503), "application/problem+json", "1", []byte(problem), uint8(0))
	f.Add(uint16(503), "application/problem+json", "Wed, 21 Oct 2015 07:28:00 GMT", []byte(problem), uint8(0))
	f.Add(uint16(429), "application/problem+json", "86400", []byte(`{"type":"urn:ticketd:problem:too-many-requests","detail":"slow down"}`), uint8(0))
	f.Add(uint16(500), "text/plain", "-3", []byte("internal error"), uint8(0))
	f.Add(uint16(409), "application/problem+json", "", []byte(`{"type":"urn:ticketd:problem:sequence-exhausted","status":409}`), uint8(0))
	f.Add(uint16(404), "application/json", "", []byte(`{"title":"","detail":"x"}`), uint8(0))
	f.Add(uint16(400), "text/html", "", []byte(strings.Repeat("ü", 101)+"x"), uint8(0))
	f.Add(uint16(200), "application/json", "", []byte(`{"sequence":"s","first":1,"last":5}`), uint8(0))
	f.Add(uint16(200), "application/json", "", []byte(`{"first":"1"}`), uint8(0))
	f.Add(uint16(201), "application/json", "", []byte(`{"name":"ns","timestamp_bits":300}`), uint8(3))
	f.Add(uint16(200), "", "", []byte(`{"node":"n1","members":[{"id":"n1"}]}`), uint8(2))
	f.Add(uint16(204), "", "", []byte(nil), uint8(1))
	f.Add(uint16(999), "", "", []byte(`{}`), uint8(0))
	f.Add(uint16(302), "", "", []byte(`moved`), uint8(0))

	srv := newFixedAnswer(f)
	c, err := New([]string{srv.srv.URL})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = c.Close() })
	outs := []func() any{
		func() any { return &api.Range{} },
		func() any { return nil },
		func() any { return &api.ClusterStatus{} },
		func() any { return &api.Namespace{} },
		func() any { return &api.Lease{} },
		func() any { return &api.SequenceList{} },
		func() any { return &api.SnowflakeInspection{} },
		func() any { return &api.SnowflakeIDs{} },
	}

	f.Fuzz(func(t *testing.T, status uint16, ctype, retryAfter string, body []byte, outSel uint8) {
		st := int(status)
		if st < 200 || st > 999 || len(body) > 1<<16 {
			return // 1xx is informational: Go's server sends the real answer after it
		}
		if st == http.StatusNoContent || st == http.StatusNotModified {
			body = nil // Go's server sends no body with these
		}
		ra := headerValue(retryAfter)
		srv.set(st, headerValue(ctype), ra, body)
		out := outs[int(outSel)%len(outs)]()
		gotSt, meta, err := c.attempt(t.Context(), c.endpoints[0], http.MethodPost, "/v1/x", nil, out)
		gotRA := meta.retryAfter
		what := strconv.Itoa(st) + " " + strconv.Quote(string(body[:min(len(body), 200)]))
		if gotSt != st {
			t.Fatalf("answer %s: status %d", what, gotSt)
		}
		if gotRA < 0 || gotRA > maxRetryAfter {
			t.Fatalf("answer %s with Retry-After %q: wait %v", what, ra, gotRA)
		}
		var ae *APIError
		var fe *fatalError
		if st/100 == 2 {
			if errors.As(err, &ae) || (err != nil && !errors.As(err, &fe)) {
				t.Fatalf("answer %s: %v; a 2xx decodes or is a fatalError", what, err)
			}
			return
		}
		if gotRA != parseRetryAfter(ra, time.Now()) && gotRA != parseRetryAfter(ra, time.Now().Add(-time.Second)) {
			t.Fatalf("answer %s with Retry-After %q: wait %v", what, ra, gotRA)
		}
		if !errors.As(err, &ae) || ae.StatusCode != st || ae.Endpoint != srv.srv.URL || ae.Problem.Title == "" ||
			!strings.Contains(ae.Error(), strconv.Itoa(st)) {
			t.Fatalf("answer %s became %#v", what, err)
		}
		if ae.retryable() != (st == 429 || st == 500 || st == 502 || st == 503 || st == 504) {
			t.Fatalf("answer %s: retryable %v", what, ae.retryable())
		}
		if utf8.Valid(body) && !utf8.ValidString(ae.Error()) {
			t.Fatalf("answer %s: message %q is not valid UTF-8", what, ae.Error())
		}
		var m map[string]any
		if json.Unmarshal(body, &m) == nil {
			typ, _ := m["type"].(string)
			title, _ := m["title"].(string)
			detail, _ := m["detail"].(string)
			if (typ != "" || title != "" || detail != "") && (ae.Problem.Type != typ || ae.Problem.Detail != detail || (title != "" && ae.Problem.Title != title)) {
				t.Fatalf("answer %s: the error carries type %q title %q detail %q", what, ae.Problem.Type, ae.Problem.Title, ae.Problem.Detail)
			}
		}
	})
}

// FuzzRenewAnswer renews a Snowflake's lease (worker 3, token 42, TTL 30 s,
// safety margin 1 s) against a server that answers the renewal with a fuzzed
// status and body. Properties:
//
//   - No panic.
//   - A renewal that succeeds was answered 2xx for this worker and token,
//     and leaves a usable lease: a TTL that is the shorter of the two and
//     above twice the margin, deadlines that did not move back, the next
//     renewal in the future.
//   - A renewal that fails leaves the lease exactly as it was (so the next
//     renewal, or the deadline, decides), unless it reports the lease lost.
func FuzzRenewAnswer(f *testing.F) {
	lease := func(worker int64, token uint64, ttlMs int64) []byte {
		b, _ := json.Marshal(api.Lease{Namespace: "ns", WorkerID: worker, Token: token, TTLMs: ttlMs, State: "held"})
		return b
	}
	f.Add(uint16(200), lease(3, 42, 30_000))
	f.Add(uint16(200), lease(3, 42, 10_000))
	f.Add(uint16(200), lease(3, 42, 1_500))
	f.Add(uint16(200), lease(3, 42, 0))
	f.Add(uint16(200), lease(3, 42, 18446744073710))
	f.Add(uint16(200), lease(3, 42, 9223372036855))
	f.Add(uint16(200), lease(4, 42, 30_000))
	f.Add(uint16(200), lease(3, 43, 30_000))
	f.Add(uint16(200), []byte(`{"worker_id":3,"token":42,"ttl_ms":30000,"timestamp_floor_ms":9223372036854775807}`))
	f.Add(uint16(200), []byte(`<html>ok</html>`))
	f.Add(uint16(200), []byte(nil))
	f.Add(uint16(409), []byte(`{"type":"urn:ticketd:problem:lease-lost","title":"lease lost","status":409,"detail":"expired"}`))
	f.Add(uint16(404), []byte(`{"type":"urn:ticketd:problem:namespace-not-found","title":"namespace not found","status":404}`))
	f.Add(uint16(401), []byte(`{"type":"urn:ticketd:problem:unauthorized","title":"unauthorized","status":401}`))

	srv := newFixedAnswer(f)
	c, err := New([]string{srv.srv.URL}, WithBackoff(time.Microsecond, time.Microsecond))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = c.Close() })
	layout, err := newLayout(api.Namespace{Name: "ns", EpochMs: api.DefaultEpochMs, TimestampBits: 41, WorkerBits: 10, SequenceBits: 12, TickMs: 1})
	if err != nil {
		f.Fatal(err)
	}
	const margin = time.Second

	f.Fuzz(func(t *testing.T, status uint16, body []byte) {
		st := int(status)
		if st < 200 || st > 599 {
			st = 200 + st%400
		}
		if retryableStatus(st) {
			return // retried until the renewal's time is up: covered by FuzzAttemptAnswer
		}
		srv.set(st, "application/json", "", body)
		g := &Snowflake{c: c, ns: "ns", leaseCh: make(chan struct{}), lastTick: -1, layout: layout,
			cfg: sfConfig{holder: "fz", clock: systemClock{base: time.Now()}, maxBackward: DefaultMaxClockBackward, margin: margin}}
		g.ctx, g.cancel = context.WithCancel(c.ctx)
		defer g.cancel()
		l := &sfLease{worker: 3, token: 42, ttl: 30 * time.Second}
		sendW, sendM := g.cfg.clock.Now()
		if err := g.setDeadlineLocked(l, sendW, sendM, time.Now()); err != nil {
			t.Fatal(err)
		}
		g.lease = l
		before := *l

		err := g.renew(l)
		what := strconv.Itoa(st) + " " + strconv.Quote(string(body[:min(len(body), 200)]))
		if err != nil {
			if errors.Is(err, ErrLeaseLost) {
				return // run drops the lease at once
			}
			if *l != before {
				t.Fatalf("answer %s: the renewal failed (%v) yet changed the lease from %+v to %+v", what, err, before, *l)
			}
			return
		}
		var out api.Lease
		if st/100 != 2 || json.Unmarshal(body, &out) != nil || out.WorkerID != 3 || out.Token != 42 {
			t.Fatalf("answer %s renewed the lease", what)
		}
		want := before.ttl // a longer TTL is not taken; a shorter one is
		if out.TTLMs < int64(before.ttl/time.Millisecond) {
			want = time.Duration(out.TTLMs) * time.Millisecond
		}
		if l.ttl != want || margin >= l.ttl/2 ||
			l.deadlineMono < before.deadlineMono || l.deadlineWall < before.deadlineWall || !l.renewAt.After(time.Now()) {
			t.Fatalf("answer %s left the lease %+v (before %+v)", what, *l, before)
		}
	})
}

func retryableStatus(st int) bool { return (&APIError{StatusCode: st}).retryable() }

// FuzzRemoteAnswers feeds two answers of nodes, decoded as a fetch decodes
// them, to a SnowflakeRemote's check (accept). Whatever they hold, an
// accepted answer is exactly the count asked, of this namespace, positive
// (or zero) and strictly increasing, and becomes the batch as it came; and
// of two accepted answers under one worker id, the second starts above the
// first's last ID: nothing the remote hands out can repeat one it took.
func FuzzRemoteAnswers(f *testing.F) {
	f.Add([]byte(`{"namespace":"ns","node":"n1","worker_id":3,"ids":[10,11,12],"ids_text":["10","11","12"]}`),
		[]byte(`{"namespace":"ns","node":"n1","worker_id":3,"ids":[13,14,15]}`), uint8(3))
	f.Add([]byte(`{"namespace":"ns","worker_id":3,"ids":[10,11,12]}`), []byte(`{"namespace":"ns","worker_id":3,"ids":[12,13,14]}`), uint8(3))
	f.Add([]byte(`{"namespace":"ns","worker_id":3,"ids":[10,11,12]}`), []byte(`{"namespace":"ns","worker_id":4,"ids":[1,2,3]}`), uint8(3))
	f.Add([]byte(`{"namespace":"other","worker_id":1,"ids":[1]}`), []byte(`{"namespace":"ns","worker_id":-1,"ids":[5]}`), uint8(1))
	f.Add([]byte(`{"namespace":"ns","worker_id":1,"ids":[3,2]}`), []byte(`{"namespace":"ns","worker_id":1,"ids":[-1,0]}`), uint8(2))
	f.Add([]byte(`{"namespace":"ns","worker_id":1,"ids":[9223372036854775807]}`), []byte(`{"ids":null}`), uint8(1))
	f.Add([]byte(`{"namespace":"ns","worker_id":1,"ids":[1.5]}`), []byte(`[]`), uint8(1))
	c, err := New([]string{"http://127.0.0.1:1"})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = c.Close() })
	f.Fuzz(func(t *testing.T, a, b []byte, n uint8) {
		count := int64(n%16) + 1
		r, err := c.SnowflakeRemote("ns")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var accepted []*api.SnowflakeIDs
		for _, body := range [][]byte{a, b} {
			var out api.SnowflakeIDs
			if json.Unmarshal(body, &out) != nil {
				continue
			}
			kept := out
			kept.IDs = append([]int64(nil), out.IDs...)
			batch, err := r.accept(0, &out, count)
			if err != nil {
				if batch != nil {
					t.Fatalf("a refused answer made a batch: %v", err)
				}
				continue
			}
			if kept.Namespace != "ns" || int64(len(batch.ids)) != count || batch.block.n != count {
				t.Fatalf("accepted %s for %d IDs of ns: batch of %d (n %d)", body, count, len(batch.ids), batch.block.n)
			}
			for i, id := range batch.ids {
				if id != kept.IDs[i] || id < 0 || (i > 0 && id <= batch.ids[i-1]) {
					t.Fatalf("accepted %s: batch %v", body, batch.ids)
				}
			}
			accepted = append(accepted, &kept)
		}
		if len(accepted) == 2 && accepted[0].WorkerID == accepted[1].WorkerID && accepted[0].WorkerID >= 0 &&
			accepted[1].IDs[0] <= accepted[0].IDs[len(accepted[0].IDs)-1] {
			t.Fatalf("two answers of worker %d accepted, the second not above the first: %v then %v",
				accepted[0].WorkerID, accepted[0].IDs, accepted[1].IDs)
		}
	})
}
