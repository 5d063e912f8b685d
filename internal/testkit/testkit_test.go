package testkit_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/testkit"
)

// echo answers with what it received, as JSON, and with the status the
// "status" query parameter asks for.
func echo(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if d := r.URL.Query().Get("sleep"); d != "" {
			pause, _ := time.ParseDuration(d)
			time.Sleep(pause)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Method", r.Method)
		switch r.URL.Query().Get("status") {
		case "404":
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"type":"not-found","status":404}`)
			return
		case "204":
			w.WriteHeader(http.StatusNoContent)
			return
		case "text":
			_, _ = io.WriteString(w, "not json")
			return
		}
		out, _ := json.Marshal(echoed{r.URL.Path, r.URL.RawPath, string(body), r.Header.Get("Content-Type"), r.Header.Get("Authorization"), r.Header.Get("X-Extra")})
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// echoed is what echo received.
type echoed struct {
	Path          string `json:"path"`
	RawPath       string `json:"raw_path"`
	Body          string `json:"body"`
	ContentType   string `json:"content_type"`
	Authorization string `json:"authorization"`
	Extra         string `json:"extra"`
}

func TestCall_Bodies(t *testing.T) {
	srv := echo(t)
	c := testkit.Client{Base: srv.URL}
	for _, tc := range []struct {
		name     string
		body     any
		wantBody string
		wantType string
	}{
		{"nil", nil, "", ""},
		{"empty string", "", "", ""},
		{"string as is", `{"count":1}}`, `{"count":1}}`, "application/json"},
		{"bytes as is", []byte("raw"), "raw", "application/json"},
		{"value as JSON", struct {
			Count int64 `json:"count"`
		}{9007199254740993}, `{"count":9007199254740993}`, "application/json"},
	} {
		var got echoed
		st, err := c.Do(http.MethodPost, "/x", tc.body, &got)
		if err != nil || st != http.StatusOK {
			t.Fatalf("%s: %d %v", tc.name, st, err)
		}
		if got.Body != tc.wantBody || got.ContentType != tc.wantType {
			t.Errorf("%s: server got body %q type %q, want %q %q", tc.name, got.Body, got.ContentType, tc.wantBody, tc.wantType)
		}
	}
}

func TestCall_TokenHeaderAndEscapedPath(t *testing.T) {
	srv := echo(t)
	c := testkit.Client{Base: srv.URL, Token: "tok", Header: http.Header{"x-extra": {"1"}}}
	r := c.MustCall(t, http.MethodGet, "/v1/members/n%2D1", nil)
	var got echoed
	testkit.DecodeStrict(t, r.Body, &got)
	if got.Authorization != "Bearer tok" || got.Extra != "1" {
		t.Errorf("headers: %+v", got)
	}
	if got.RawPath != "/v1/members/n%2D1" || got.Path != "/v1/members/n-1" {
		t.Errorf("path sent as %q (raw %q), want the escapes kept", got.Path, got.RawPath)
	}
	if r.Header.Get("X-Method") != http.MethodGet {
		t.Errorf("answer header %v", r.Header)
	}
	// Header replaces the token and the content type when it names them.
	c.Header = http.Header{"Authorization": {"Basic x"}, "Content-Type": {"text/plain"}}
	r = c.MustCall(t, http.MethodPost, "/", "body")
	testkit.DecodeStrict(t, r.Body, &got)
	if got.Authorization != "Basic x" || got.ContentType != "text/plain" {
		t.Errorf("header did not replace: %+v", got)
	}
}

// A refusal is an answer: Do decodes its problem details and returns its
// status without an error; an answer that is not JSON is an error.
func TestDo_NonSuccessIsAnAnswer(t *testing.T) {
	srv := echo(t)
	c := testkit.Client{Base: srv.URL}
	var prob struct {
		Type   string `json:"type"`
		Status int    `json:"status"`
	}
	if st, err := c.Do(http.MethodGet, "/?status=404", nil, &prob); err != nil || st != 404 || prob.Type != "not-found" || prob.Status != 404 {
		t.Errorf("404: %d %v %+v", st, err, prob)
	}
	if st, err := c.Do(http.MethodGet, "/?status=204", nil, &prob); err != nil || st != 204 {
		t.Errorf("204 with out: %d %v", st, err)
	}
	if st, err := c.Do(http.MethodGet, "/?status=text", nil, &prob); err == nil || st != 200 {
		t.Errorf("non-JSON answer: %d %v, want an error", st, err)
	}
	if st, err := c.Do(http.MethodGet, "/?status=text", nil, nil); err != nil || st != 200 {
		t.Errorf("non-JSON answer without out: %d %v", st, err)
	}
	r := c.MustCall(t, http.MethodGet, "/?status=404", nil)
	if r.Status != 404 || r.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(string(r.Body), "not-found") {
		t.Errorf("MustCall: %+v", r)
	}
}

func TestCall_NoAnswerIsAnError(t *testing.T) {
	srv := echo(t)
	if _, err := (testkit.Client{Base: srv.URL, Timeout: 50 * time.Millisecond}).Call(http.MethodGet, "/?sleep=1s", nil); err == nil {
		t.Error("a request past its timeout returned no error")
	}
	srv.Close()
	if st, err := (testkit.Client{}).Do(http.MethodGet, srv.URL, nil, nil); err == nil || st != 0 {
		t.Errorf("closed server: %d %v, want an error", st, err)
	}
	if _, err := (testkit.Client{}).Call(http.MethodGet, "http://127.0.0.1:1/", make(chan int)); err == nil {
		t.Error("a body JSON cannot encode was sent")
	}
}

// fakeTB records a failure instead of ending the test, so that the kit's
// own failures can be checked.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	panic(f)
}

// run calls fn with a fakeTB and returns its failure message ("" if none).
func run(fn func(tb testing.TB)) (msg string) {
	f := &fakeTB{}
	defer func() {
		if r := recover(); r != nil && r != any(f) {
			panic(r)
		}
		msg = f.failed
	}()
	fn(f)
	return ""
}

func TestDecodeStrict_UnknownFieldFails(t *testing.T) {
	var v struct {
		A int64 `json:"a"`
	}
	if msg := run(func(tb testing.TB) { testkit.DecodeStrict(tb, []byte(`{"a":9007199254740993}`), &v) }); msg != "" || v.A != 9007199254740993 {
		t.Errorf("exact int64: %q %d", msg, v.A)
	}
	if msg := run(func(tb testing.TB) { testkit.DecodeStrict(tb, []byte(`{"a":1,"b":2}`), &v) }); !strings.Contains(msg, `unknown field "b"`) {
		t.Errorf("unknown field: %q", msg)
	}
}

func TestEventually(t *testing.T) {
	var calls atomic.Int32
	testkit.Eventually(t, time.Second, time.Millisecond, "the third call", func() bool { return calls.Add(1) == 3 })
	if calls.Load() != 3 {
		t.Errorf("cond called %d times", calls.Load())
	}

	start := time.Now()
	msg := run(func(tb testing.TB) {
		testkit.Eventually(tb, 100*time.Millisecond, 10*time.Millisecond, "never", func() bool { return false })
	})
	if took := time.Since(start); took < 100*time.Millisecond || took > 2*time.Second {
		t.Errorf("gave up after %v, want about 100ms", took)
	}
	if !strings.Contains(msg, "waiting for never") || !strings.Contains(msg, "100ms") {
		t.Errorf("failure %q does not name what or how long", msg)
	}

	// A condition slower than the timeout is still bounded by it plus one call.
	start = time.Now()
	run(func(tb testing.TB) {
		testkit.Eventually(tb, 50*time.Millisecond, time.Hour, "slow", func() bool { return false })
	})
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("an hour-long interval was not cut at the timeout: %v", took)
	}
}

func TestEventuallyErr_ReportsLastError(t *testing.T) {
	n := 0
	msg := run(func(tb testing.TB) {
		testkit.EventuallyErr(tb, 50*time.Millisecond, 5*time.Millisecond, "ready", func() error {
			n++
			return errors.New("attempt " + strconv.Itoa(n))
		})
	})
	if !strings.Contains(msg, "waiting for ready: attempt "+strconv.Itoa(n)) {
		t.Errorf("failure %q does not report the last error (attempt %d)", msg, n)
	}
	if msg := run(func(tb testing.TB) {
		testkit.EventuallyErr(tb, time.Second, time.Millisecond, "ok", func() error { return nil })
	}); msg != "" {
		t.Errorf("a holding condition failed: %q", msg)
	}
}
